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
    """The declared ``classes``, sorted and unique, with at least ``min_declared``."""
    declared = np.unique(np.asarray(classes))
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
