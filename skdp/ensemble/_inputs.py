"""The checks before a tree ensemble's charge, one for each kind of target.

Both families (boosting, forests) validate a fit the same way: the features
as a table with its public schema (:func:`~skdp.ensemble._binning.
resolve_schema`), the labels against ``classes`` or the targets against
``y_bounds``, and, for dask input, one pass over the blocks that refuses
what the in-memory fit refuses. Everything here runs before the charge and
raises only on public parameters or invalid input.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ..utils._bounds import resolve_bounds
from ..utils._dask import as_row_blocks, is_dask_collection
from ..utils._labels import declared_classes, resolve_classes
from ..utils._numbers import refuse_non_numbers
from ._binning import check_dask_rows, check_rows, resolve_schema, table

__all__ = ["label_columns", "prepare_classification", "prepare_regression"]


def label_columns(X) -> np.ndarray | None:
    """Which columns the input's *dtypes* declare as labels (public schema).

    A pandas (or dask) DataFrame's object, string, category and boolean
    columns; ``None`` for arrays, whose categorical features are only those
    declared in ``categorical_features`` (never guessed from the values).
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return None
    return np.array([dtype.kind not in "iuf" for dtype in dtypes], dtype=bool)


def _targets(X, y):
    """``y`` as a 1-D array with one entry per row of ``X`` (or a clear error)."""
    if y is None:
        raise ValueError("requires y to be passed, but the target y is None")
    y = column_or_1d(y, warn=True)
    check_consistent_length(X, y)
    return y


def _table_and_schema(estimator, X, n_bins_cap):
    labels = label_columns(X)
    X = table(estimator, X, reset=True)
    check_rows(X)
    return X, resolve_schema(estimator, X, n_bins_cap, label_columns=labels)


def prepare_classification(estimator, X, y, n_bins_cap: int) -> dict:
    """``X`` (table), ``labels`` (class indices), ``classes`` and ``schema``."""
    if is_dask_collection(y):
        if estimator.classes is None:
            raise ValueError(
                "classes must be declared for dask input: they are not read "
                "from the data. Nothing was charged."
            )
        X, schema = _table_and_schema(estimator, X, n_bins_cap)
        # Checked as in memory (at least 2, no missing label, 1-d); the pass
        # below refuses labels outside them.
        classes = declared_classes(estimator.classes)
        y = as_row_blocks(y)[0]  # a dask Series: an array
        labels = y.map_blocks(lambda b: np.searchsorted(classes, b), dtype=np.int64)
    else:
        X, schema = _table_and_schema(estimator, X, n_bins_cap)
        y = _targets(X, y)
        classes = resolve_classes(y, estimator.classes, type(estimator).__name__)
        labels = np.searchsorted(classes, y)
    if is_dask_collection(X) or is_dask_collection(y):
        check_dask_rows(X, y, schema, classes)
    return {"X": X, "labels": labels, "classes": classes, "schema": schema}


def prepare_regression(estimator, X, y, n_bins_cap: int, *, origin: str) -> dict:
    """``X``, ``labels`` (targets clipped to ``y_bounds``, less ``origin``),
    ``y_bounds`` and ``schema``; ``origin`` is ``"lower"`` or ``"middle"``."""
    if is_dask_collection(y):
        if estimator.y_bounds is None:
            raise ValueError(
                "y_bounds must be declared for dask input: they are not read "
                "from the data. Nothing was charged."
            )
        X, schema = _table_and_schema(estimator, X, n_bins_cap)
        y = as_row_blocks(y)[0]  # a dask Series: an array
        values = np.zeros((0, 1))
    else:
        X, schema = _table_and_schema(estimator, X, n_bins_cap)
        y = _targets(X, y)
        refuse_non_numbers(y, "y")
        y = np.asarray(y, dtype=float)
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite (no NaN or infinity).")
        values = y.reshape(-1, 1)
    bounds = None if estimator.y_bounds is None else tuple(estimator.y_bounds)
    lo, hi = resolve_bounds(
        None if bounds is None else ([bounds[0]], [bounds[1]]),
        values,
        what="target",
        estimator=type(estimator).__name__,
        param="y_bounds",
    )
    lo, hi = float(lo[0]), float(hi[0])
    shift = lo if origin == "lower" else (lo + hi) / 2
    if is_dask_collection(y):
        labels = y.map_blocks(lambda b: np.clip(b, lo, hi) - shift, dtype=float)
    else:
        labels = np.clip(y, lo, hi) - shift
    if is_dask_collection(X) or is_dask_collection(y):
        check_dask_rows(X, y, schema)
    return {"X": X, "labels": labels, "schema": schema, "y_bounds": (lo, hi)}
