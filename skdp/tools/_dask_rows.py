"""skdp.tools on dask arrays, DataFrames and Series: map-reduce over row blocks.

Sums, counts and histograms are sums over rows, so the workers compute
each row block's part and only the totals reach the client, where the
noise is drawn exactly as for a numpy array. The release follows the same
order as in memory:

1. **before the charge**, from metadata and one validation pass: the
   dtype must be numeric, the number of rows known (a dask array with
   unknown chunk sizes has them computed), bounds (or histogram ranges)
   declared, and -- for floating-point data -- one map-reduce pass counts
   the non-finite entries and refuses the input if there are any. It
   returns that count only. Bounds are never read from dask data: on data
   large enough for a cluster the public bounds are known, and reading
   them would leak the extremes and cost a pass;
2. **after the charge**, one pass computes the exact sums (clipped to the
   bounds), and the client adds the planned noise.

Quantiles and medians need the sorted data (the exponential mechanism
over the gaps between order statistics), which no map-reduce of bounded
size gives exactly; they refuse dask input.
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._dask import as_row_blocks, is_dask_collection, sum_over_row_blocks

__all__ = ["dask_rows", "exact_moments", "is_dask_collection", "nonzero_counts"]


def _nonfinite(block, _):
    return np.int64(np.count_nonzero(~np.isfinite(block)))


def _as_matrix(X):
    """A dask array of at most two dimensions as rows x columns."""
    return X.reshape(X.shape[0], 1) if X.ndim == 1 else X


def dask_rows(a, axis, what: str, *, check_finite: bool = True):
    """``a`` as a dask matrix ``(n_rows, n_columns)`` with known ``n_rows``.

    The dask counterpart of :func:`~skdp.tools._validation.rows_of`: same
    checks, same messages, run before any charge. Returns the matrix and
    the shape of ``a`` after its first axis.
    """
    X, _ = as_row_blocks(a)
    if X.dtype.kind not in "biuf":
        raise ValueError(
            f"{what} needs numeric input, got a dask collection of dtype {X.dtype}."
        )
    if X.ndim == 0:
        raise ValueError(f"{what} needs at least one row, got a scalar.")
    if X.ndim > 2:
        raise ValueError(
            f"{what} takes dask input of one or two dimensions (rows of values), "
            f"got {X.ndim}; reshape it to (n_rows, n_values)."
        )
    if axis is not None and axis not in (0, -X.ndim):
        raise ValueError(
            f"{what} supports axis=None or axis=0 (rows are the unit of "
            f"privacy), got axis={axis!r} for an array of {X.ndim} dimensions."
        )
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()  # the number of rows is public
    if X.shape[0] == 0 or math.prod(X.shape) == 0:
        raise ValueError(f"{what} needs at least one row and one value.")
    if check_finite and X.dtype.kind == "f":
        if sum_over_row_blocks(_nonfinite, X) > 0:
            raise ValueError(f"{what} needs finite input (no NaN or infinity).")
    return _as_matrix(X), tuple(X.shape[1:])


def refuse_undeclared(what: str, name: str = "bounds") -> None:
    """Dask input never has its bounds (or ranges) read from the data."""
    raise ValueError(
        f"{what} on a dask collection needs declared {name}: they are not read "
        "from the data (that would leak the extremes, with a PrivacyLeakWarning, "
        "and cost a pass over the data). Nothing was charged."
    )


def _moment_sums(block, _, lower, upper, centre):
    d = np.clip(np.asarray(block, dtype=float), lower, upper) - centre
    return d.sum(axis=0), (d * d).sum(axis=0)


def exact_moments(X, lower, upper, pooled: bool):
    """Exact means and variances (``ddof=0``) of ``X`` clipped to the bounds.

    One map-reduce pass of the sums of ``x - c`` and ``(x - c)**2`` about
    the public centre ``c`` of the bounds (the midpoint, or the pooled
    range's midpoint), which keeps the subtraction in the variance well
    conditioned: every term is at most ``(upper - lower) / 2`` in magnitude.
    Shapes as :func:`~skdp.tools._moments.noisy_moments` computes them: one
    value per column, or one for ``pooled``.
    """
    n = X.shape[0]
    if pooled:
        centre = np.full(lower.shape, (lower.min() + upper.max()) / 2)
    else:
        centre = (lower + upper) / 2
    first, second = sum_over_row_blocks(_moment_sums, X, None, lower, upper, centre)
    if pooled:
        count = n * lower.size
        mean = first.sum() / count
        return np.array([centre[0] + mean]), np.array(
            [max(second.sum() / count - mean**2, 0.0)]
        )
    mean = first / n
    return centre + mean, np.maximum(second / n - mean**2, 0.0)


def _nonzero(block, _):
    return np.count_nonzero(block.reshape(len(block), -1), axis=0).astype(np.int64)


def nonzero_counts(X):
    """Non-zero entries of each column of the dask matrix ``X`` (one pass)."""
    return np.asarray(sum_over_row_blocks(_nonzero, X)).astype(np.int64)
