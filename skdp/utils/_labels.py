"""The public label set of a classifier: declared, or read with a warning."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from ._privacy import warn_data_derived

__all__ = ["classes_from_labels", "declared_classes", "resolve_classes"]


def resolve_classes(y, classes, estimator: str, *, min_declared: int = 2) -> np.ndarray:
    """The sorted classes of a fit, checked before anything is charged.

    ``classes=None`` reads them from ``y`` with a
    :class:`~skdp.exceptions.PrivacyLeakWarning` and needs at least two.
    Declared classes need at least ``min_declared`` labels and must contain
    every label of ``y``; the labels that do not are private and are not
    shown in the error.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.utils._labels import resolve_classes
    >>> resolve_classes(np.array([0, 1, 1]), [0, 1, 2], "Model")
    array([0, 1, 2])
    """
    check_classification_targets(y)
    if classes is None:
        return classes_from_labels(np.unique(y), None, 0, estimator)
    declared = declared_classes(classes, min_declared=min_declared)
    outside = int(np.count_nonzero(~np.isin(y, declared)))
    return classes_from_labels(None, declared, outside, estimator)


def declared_classes(classes, *, min_declared: int = 2) -> np.ndarray:
    """The declared ``classes``, sorted and unique, with at least ``min_declared``.

    A missing value (NaN, None, ``pd.NA``) is not a label: it is refused,
    before anything is charged, instead of becoming a class that every
    prediction would compare unequal to.
    """
    values = np.asarray(classes)
    if values.ndim != 1:
        raise ValueError(
            f"classes must be a one-dimensional list of labels, got {classes!r}."
        )
    if any(_is_missing(v) for v in values.tolist()):
        raise ValueError(
            f"classes must not hold a missing value (NaN or None), got {classes!r}; "
            "list the labels y can take."
        )
    declared = np.unique(values)
    if declared.size < min_declared:
        what = "one label" if min_declared == 1 else f"{min_declared} distinct labels"
        raise ValueError(f"classes must hold at least {what}, got {classes!r}.")
    return declared


def classes_from_labels(found, declared, outside: int, estimator: str) -> np.ndarray:
    """The classes of a fit from what one pass over ``y`` found.

    ``declared`` (from :func:`declared_classes`) is returned when no label
    lies ``outside`` it; otherwise ``found``, the sorted labels read from
    ``y``, with a :class:`~skdp.exceptions.PrivacyLeakWarning` (at least
    two are needed).
    """
    if declared is None:
        warn_data_derived("classes")
        if found.size < 2:
            raise ValueError(
                f"{estimator} needs samples of at least 2 classes in the data, "
                "but the data contains only one class. Pass classes=[...] to "
                "fit anyway."
            )
        return found
    if outside:
        raise ValueError(
            f"y contains labels that are not in classes={list(declared)!r}; "
            "classes must list every possible label."
        )
    return declared


def _is_missing(value) -> bool:
    """Whether one label is a missing value: None, NaN or ``pd.NA``."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, float | complex) and value != value
