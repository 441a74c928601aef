"""Dask collections: recognise them and reduce over their row blocks.

skdp never imports dask unless the user handed it a dask collection (the
``skdp[dask]`` extra). The estimators plan and charge in the client; workers
only compute sums over row blocks with :func:`sum_over_row_blocks`, whose
results (gradients, Hessians, counts) come back to the client, where the
noise is drawn.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "as_row_blocks",
    "is_dask_collection",
    "sum_over_row_blocks",
    "take_rows",
    "tree_total",
]


def is_dask_collection(obj: Any) -> bool:
    """True for a dask array, DataFrame or Series (without importing dask)."""
    if "dask" not in sys.modules:
        return False
    import dask

    return dask.is_dask_collection(obj)


def as_row_blocks(X, y=None):
    """``X`` (and ``y``) as dask arrays chunked by rows only, blocks aligned.

    A dask DataFrame or Series becomes an array with known chunk sizes (one
    pass over the index). Columns are merged into one chunk, so every block
    holds whole rows. ``y`` is rechunked to ``X``'s row chunks.
    """
    import dask.array as da

    def _array(obj):
        if isinstance(obj, da.Array):
            return obj
        if hasattr(obj, "to_dask_array"):
            return obj.to_dask_array(lengths=True)
        return da.asarray(obj)

    X = _array(X)
    if X.ndim == 2 and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if y is None:
        return X, None
    y = _array(y)
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk({0: X.chunks[0]})
    return X, y


def take_rows(X, rows):
    """The rows at the sorted positions ``rows`` of ``X``, in memory or on dask.

    In memory, scikit-learn's ``_safe_indexing``. A dask array is indexed
    lazily; a dask DataFrame or Series (which has no positional ``take``)
    keeps, in each partition, the positions that fall in it (one task per
    partition, handed only its own positions, after one pass that counts
    the partitions' rows), so its columns keep their dtypes. ``rows`` must
    be sorted: a partition's rows come back in their order.
    """
    if not is_dask_collection(X):
        from ._sklearn_compat import safe_indexing

        return safe_indexing(X, rows)
    rows = np.asarray(rows, dtype=np.int64)
    if not hasattr(X, "map_partitions"):  # a dask array
        return X[rows]
    import dask
    import dask.dataframe as dd

    lengths = dask.compute(X.map_partitions(len))[0]
    starts = np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))])
    cuts = np.searchsorted(rows, starts)
    take = dask.delayed(_take_partition, pure=True)
    pieces = [
        take(part, rows[cuts[i] : cuts[i + 1]] - starts[i])
        for i, part in enumerate(X.to_delayed())
    ]
    return dd.from_delayed(pieces, meta=X._meta, verify_meta=False)


def _take_partition(part, positions):
    return part.iloc[positions]


def sum_over_row_blocks(
    func: Callable[..., Any], X, y=None, *args: Any, split_every: int = 8
) -> Any:
    """``sum(func(X_block, y_block, *args))`` over the row blocks of ``X``.

    ``func`` runs on the workers on NumPy blocks and returns a NumPy array or
    scalar (or a tuple of them, summed element-wise); the partial sums are
    added in a tree of fan-in ``split_every`` and only the total comes back.
    Uses the active dask scheduler (a ``distributed.Client`` if one is set).
    """
    import dask

    X, y = as_row_blocks(X, y)
    # Unoptimised block graphs share their keys, so a y computed from X
    # (or both read from one source) runs X's tasks once; optimising each
    # array alone would fuse a second copy of them into every y block.
    x_blocks = X.to_delayed(optimize_graph=y is None).ravel()
    if y is not None:
        y_blocks = y.to_delayed(optimize_graph=False).ravel()
        parts = [
            dask.delayed(func)(xb, yb, *args) for xb, yb in zip(x_blocks, y_blocks)
        ]
    else:
        parts = [dask.delayed(func)(xb, None, *args) for xb in x_blocks]
    return tree_total(parts, split_every=split_every)


def tree_total(parts: list, split_every: int = 8) -> Any:
    """Compute the delayed ``parts`` and add them in a tree of fan-in ``split_every``.

    Each node adds at most ``split_every`` values left to right
    (:func:`_add_all`), so a value meets at most ``split_every - 1``
    additions per level (the rounding count the solver's bound assumes);
    only the total comes back to the client.
    """
    import dask

    add = dask.delayed(_add_all, pure=True)
    while len(parts) > 1:
        parts = [
            add(*parts[i : i + split_every]) for i in range(0, len(parts), split_every)
        ]
    (total,) = dask.compute(parts[0])
    return total


def _add_all(*parts):
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(_add_all(*items) for items in zip(*parts))
    total = np.array(first, dtype=np.float64, copy=True)
    for part in parts[1:]:
        total = total + part
    return total
