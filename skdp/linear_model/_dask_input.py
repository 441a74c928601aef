"""Validation of a linear model's dask input, before the charge.

A fit on a dask array or DataFrame reads its rows through a
:class:`~skdp.utils._row_source.RowSource` like an in-memory fit: the
same block functions (:mod:`skdp.linear_model._problems`, the DP-SGD and
full-batch sums, AdaSSP's Gram matrix) run on the workers, and with the
same ``random_state`` the released model is bitwise the in-memory one.
What differs is only how the input is checked, since ``validate_data``
would bring the rows to the client: :func:`prepare_dask_input` reads the
collection's metadata, then makes one pass over the row blocks that
returns public facts only (every value finite, labels within the declared
classes) and, when the user has not declared them, the row-norm bound,
the label set or the target range, each with a
:class:`~skdp.exceptions.PrivacyLeakWarning`, exactly as the in-memory
fit reads them. Everything that can raise raises here, before the charge.

Only sums travel back to the client: the data never leaves the workers. A
worker failure after the charge surfaces as
:class:`~skdp.exceptions.ChargedFitError`: the spend stands and nothing is
released.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..utils._dask import as_row_blocks
from ..utils._labels import declared_classes
from ..utils._privacy import warn_data_derived
from ..utils._row_source import RowSource, row_source
from ._rows import largest_row_norm, read_norm_bound

__all__ = ["ValidatedInput", "prepare_dask_input"]


def _block_facts(X, y, classes, read_norm, read_labels, read_range):
    """Public facts of one raw block (plus what the user chose to read)."""
    X = np.asarray(X)
    y = np.asarray(y).ravel()
    finite = bool(np.all(np.isfinite(X)))
    if y.dtype.kind in "fc":
        finite = finite and bool(np.all(np.isfinite(y)))
    norm = largest_row_norm(X.astype(np.float64)) if read_norm else 0.0
    labels_ok = True if classes is None else bool(np.all(np.isin(y, classes)))
    labels = np.unique(y) if read_labels else None
    if read_range and y.size:
        y_range = (float(np.min(y)), float(np.max(y)))
    else:
        y_range = None
    return finite, norm, labels_ok, labels, y_range


def _combine_facts(*facts):
    finite = all(f[0] for f in facts)
    norm = max(f[1] for f in facts)
    labels_ok = all(f[2] for f in facts)
    labels = None
    if facts[0][3] is not None:
        labels = np.unique(np.concatenate([f[3] for f in facts]))
    ranges = [f[4] for f in facts if f[4] is not None]
    y_range = None
    if ranges:
        y_range = (min(r[0] for r in ranges), max(r[1] for r in ranges))
    return finite, norm, labels_ok, labels, y_range


@dataclass(frozen=True)
class ValidatedInput:
    """What the validation of a fit's input found, before the charge.

    Made by :func:`prepare_dask_input` for a dask collection, and likewise
    for in-memory input (``_BaseDPLinear._prepare_memory_input``).

    ``data_norm`` is the declared bound, or the largest row norm read from
    the data when ``read_norm`` (the rows are then within it, and left as
    they are).
    """

    rows: RowSource
    classes: np.ndarray | None
    bounds: tuple[float, float] | None
    data_norm: float
    read_norm: bool
    n_features: int


def _as_dask_pair(estimator, X, y):
    """Row-chunked dask arrays of ``X`` and ``y``; checks from metadata only."""
    name = type(estimator).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    columns = getattr(X, "columns", None)
    X, y = as_row_blocks(X, y)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D dask array or DataFrame for X, got {X.ndim}D.")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape}.")
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if any(math.isnan(c) for c in y.chunks[0]):
        y = y.compute_chunk_sizes()
    if X.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} needs numeric X; got a dask collection of dtype {X.dtype}."
        )
    if estimator._y_numeric and y.dtype.kind not in "biuf":
        raise ValueError(f"{name} needs numeric y; got dtype {y.dtype}.")
    n_samples, n_features = X.shape
    if y.shape[0] != n_samples:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{n_samples}, {y.shape[0]}]"
        )
    if n_samples < 1:
        raise ValueError(
            f"Found array with 0 sample(s) while a minimum of 1 is required by {name}."
        )
    if n_features < 1:
        raise ValueError(
            f"Found array with 0 feature(s) while a minimum of 1 is required by {name}."
        )
    return X, y, columns


def _set_input_features(estimator, n_features, columns) -> None:
    """``n_features_in_`` and ``feature_names_in_``, as ``validate_data`` does."""
    estimator.n_features_in_ = int(n_features)
    if (
        columns is not None
        and len(columns)
        and all(isinstance(c, str) for c in columns)
    ):
        estimator.feature_names_in_ = np.asarray(list(columns), dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def prepare_dask_input(estimator, X, y) -> ValidatedInput:
    """Validate a dask fit's input before the charge; one pass over the data.

    The pass returns only public facts (all values finite; every label
    within the declared classes) and, when the user has not declared them,
    the row-norm bound, the label set or the target range, each with a
    :class:`~skdp.exceptions.PrivacyLeakWarning`, exactly as the in-memory
    fit reads them. Everything that can raise raises here.
    """
    from sklearn.utils.multiclass import check_classification_targets

    name = type(estimator).__name__
    X, y, columns = _as_dask_pair(estimator, X, y)
    n_samples, n_features = (int(s) for s in X.shape)
    regression = estimator._y_numeric
    declared = None
    if not regression and estimator.classes is not None:
        declared = declared_classes(estimator.classes)
    read_labels = not regression and declared is None
    read_range = regression and estimator.y_bounds is None
    read_norm = estimator.data_norm is None
    # The rows in canonical blocks (the blocks every later pass sums over),
    # and one pass of facts over them.
    rows = row_source(X, y)
    facts = rows.block_map(_block_facts, declared, read_norm, read_labels, read_range)
    finite, norm, labels_ok, labels, y_range = _combine_facts(*facts)
    if not finite:
        raise ValueError(
            f"Input contains NaN or infinity; {name} needs finite X and y."
        )
    _set_input_features(estimator, n_features, columns)
    classes = bounds = None
    if regression:
        bounds = estimator._target_bounds(y_range)
    elif declared is not None:
        if not labels_ok:
            raise ValueError(
                f"y contains labels that are not in classes={list(declared)!r}; "
                "classes must list every possible label."
            )
        classes = declared
    else:
        check_classification_targets(labels)
        warn_data_derived("classes")
        if labels.size < 2:
            raise ValueError(
                f"{name} needs samples of at least 2 classes in the data, but "
                "the data contains only one class. Pass classes=[...] to fit anyway."
            )
        classes = labels
    data_norm = read_norm_bound(norm) if read_norm else float(estimator.data_norm)
    return ValidatedInput(
        rows=rows,
        classes=classes,
        bounds=bounds,
        data_norm=data_norm,
        read_norm=read_norm,
        n_features=n_features,
    )
