"""The joint table of a labelled fit: the features, then the label's codes.

:class:`~skdp.synthesis.SyntheticDataClassifier` models the features and
the label together: the table it hands its synthesizer is ``X`` with one
more column, the label's code (its position in the sorted ``classes``). In
memory the table is built here; on dask it is built lazily, block by block
beside ``X``'s rows, so the synthesizer reads it through its row source on
the workers like any other dask table, and the client holds no row.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..utils._dask import as_row_blocks, is_dask_collection
from ..utils._labels import classes_from_labels, declared_classes
from ..utils._row_checks import known_rows
from ..utils._sklearn_compat import validate_data
from ._schema import is_dataframe

__all__ = ["dask_joint_table", "joint_table", "label_name"]


def label_name(names: list):
    """The label column's name: ``"label"`` (prefixed with ``_`` until it is
    free) among string names, else the integer after the largest one."""
    if all(isinstance(name, str) for name in names):
        label = "label"
        while label in names:
            label = "_" + label
        return label
    return int(max((n for n in names if isinstance(n, Integral)), default=-1)) + 1


def joint_table(X, codes):
    """``X`` (validated, in memory) with the label ``codes`` as a last column.

    Returns the table and the label column's name (its position for
    arrays): an object array stays an object array, a numeric one becomes
    float64, a DataFrame gains a column.
    """
    if is_dataframe(X):
        label = label_name(list(X.columns))
        joint = X.copy()
        joint[label] = codes
        return joint, label
    if X.dtype == object:
        joint = np.empty((X.shape[0], X.shape[1] + 1), dtype=object)
        joint[:, :-1] = X
        joint[:, -1] = codes
    else:
        joint = np.column_stack([X.astype(float), codes.astype(float)])
    return joint, X.shape[1]


def dask_joint_table(estimator, X, y):
    """The joint table of a dask ``X`` or ``y``, lazily, checked before the charge.

    ``classes`` must be declared (they are not read from dask data). The
    shapes, names and dtypes come from metadata; one pass over ``y``
    refuses labels outside ``classes`` with the in-memory message. ``y``
    is cut at ``X``'s row blocks (a DataFrame's partitions), so each block
    of the table is a block of ``X`` and its labels' codes, in the layout
    :func:`joint_table` gives in memory.

    Returns
    -------
    joint : dask array or DataFrame
    label : str or int
        The label column's name (position for arrays).
    names : list
        ``X``'s column names (positions for arrays).
    classes : ndarray
        The declared classes, sorted.
    n_samples : int
    """
    import dask.array as da
    import dask.dataframe as dd

    if estimator.classes is None:
        raise ValueError(
            "classes must be declared for dask input: they are not read from "
            "the data. Nothing was charged."
        )
    frame = is_dataframe(X)
    if frame:
        meta = X._meta if is_dask_collection(X) else X
        if not is_dask_collection(X):
            X = dd.from_pandas(X, npartitions=1)
        validate_data(estimator, meta, skip_check_array=True, reset=True)
        names = list(meta.columns)
        lengths = tuple(int(n) for n in X.map_partitions(len).compute())
    else:
        X = as_row_blocks(X)[0]
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2-D dask array, got {X.ndim} dimension(s); reshape "
                "your data (one row per individual)."
            )
        X = known_rows(X)  # the number of rows is public
        validate_data(estimator, X, skip_check_array=True, reset=True)
        names = list(range(X.shape[1]))
        lengths = X.chunks[0]
    n_samples = sum(lengths)
    if n_samples < 1 or not names:
        raise ValueError(
            f"Found array with shape {(n_samples, len(names))}; at least 1 sample "
            "and 1 feature are required."
        )
    classes = declared_classes(estimator.classes)
    y = as_row_blocks(y)[0]
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got a dask array of {y.ndim} dims.")
    y = known_rows(y)
    if y.shape[0] != n_samples:
        raise ValueError(
            f"X and y have inconsistent numbers of samples: {n_samples} and "
            f"{y.shape[0]}."
        )
    y = y.rechunk({0: lengths})
    missing, outside = (
        int(count) for count in da.compute((y != y).sum(), (~da.isin(y, classes)).sum())
    )
    if missing:  # NaN is the one value unequal to itself
        raise ValueError("Input y contains NaN.")
    classes_from_labels(None, classes, outside, type(estimator).__name__)
    codes = y.map_blocks(_codes, classes, dtype=np.int64)
    if frame:
        label = label_name(names)
        joint = X.copy()
        joint[label] = dd.from_dask_array(codes, index=X.index)
        return joint, label, names, classes, n_samples
    if X.dtype == object:
        column = codes.astype(object)
    else:
        X, column = X.astype(float), codes.astype(float)
    joint = da.concatenate([X, column[:, None]], axis=1)
    return joint, len(names), names, classes, n_samples


def _codes(labels, classes):
    """The labels' positions in the sorted ``classes`` (all of them listed)."""
    return np.searchsorted(classes, labels)
