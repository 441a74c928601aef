"""Row norms and row scaling for dense arrays and CSR matrices.

The private linear models bound every row to a public norm and read the
rows' norms in their solvers. A sparse row is never densified: its norm is
read from its stored values and scaling it scales those values, so a
100,000-column TF-IDF matrix costs memory in its number of stored entries,
not in ``n_samples * n_features``.

:class:`RowSpec` is how a block of raw rows becomes the rows ``Z`` and the
targets ``Y`` of a linear model's problem: every block function of
:mod:`skdp.linear_model` applies it to the block it is handed, in memory
and on dask workers alike, so no fit holds a bounded copy of ``X``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..utils._privacy import warn_data_derived

__all__ = [
    "RowSpec",
    "as_csr",
    "bound_rows",
    "bounded_rows",
    "bounded_row_norms",
    "largest",
    "largest_row_norm",
    "read_norm_bound",
    "row_norms",
    "row_terms",
    "scale_rows",
    "scaled_rows",
    "squared_entries",
    "with_constant_column",
]

_TINY = np.finfo(float).tiny
#: Below this bound a row norm computed from squared entries could have
#: underflowed; :func:`bounded_rows` then takes the overflow-safe norms.
_SMALLEST_DIRECT_BOUND = 1e-140


def as_csr(X) -> sp.csr_matrix:
    """``X`` as a canonical ``csr_matrix`` (duplicates summed, indices sorted).

    A copy is made whenever ``X`` is not already canonical, so the caller's
    matrix is never modified. Duplicate entries are summed because a row's
    norm is that of the matrix row, not of the stored values.
    """
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _per_row(ufunc, values: np.ndarray, X: sp.csr_matrix) -> np.ndarray:
    """``ufunc`` reduced over each row's stored ``values`` (0 for an empty row)."""
    out = np.zeros(X.shape[0])
    nonempty = np.diff(X.indptr) > 0
    if X.nnz:
        out[nonempty] = ufunc.reduceat(values, X.indptr[:-1][nonempty])
    return out


def row_norms(X) -> np.ndarray:
    """L2 norms of the rows of ``X`` without overflow or underflow.

    Each row is divided by its largest absolute entry first, so an entry of
    1e200 gives a norm near 1e200 (not infinity) and the row is scaled, not
    zeroed, when clipped. ``X`` may be dense or sparse (CSR is read in
    place, other formats are converted); a sparse row's norm is computed
    from its stored values only.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skdp.linear_model._rows import row_norms
    >>> X = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1e200, 0.0, 1e200]])
    >>> row_norms(X)
    array([5.00000000e+000, 0.00000000e+000, 1.41421356e+200])
    >>> bool(np.array_equal(row_norms(sp.csr_matrix(X)), row_norms(X)))
    True
    """
    if sp.issparse(X):
        X = as_csr(X)
        scale = _per_row(np.maximum, np.abs(X.data), X)
        safe = np.where(scale > 0, scale, 1.0)
        scaled = X.data / np.repeat(safe, np.diff(X.indptr))
        return np.sqrt(_per_row(np.add, scaled * scaled, X)) * scale
    scale = np.max(np.abs(X), axis=1, initial=0.0)
    safe = np.where(scale > 0, scale, 1.0)
    return np.linalg.norm(X / safe[:, None], axis=1) * scale


def scale_rows(X, factor: np.ndarray):
    """``diag(factor) X`` as a new array or CSR matrix; ``X`` is not modified."""
    if sp.issparse(X):
        X = as_csr(X)
        data = X.data * np.repeat(factor, np.diff(X.indptr))
        return sp.csr_matrix((data, X.indices.copy(), X.indptr.copy()), shape=X.shape)
    return X * factor[:, None]


def bound_rows(X, data_norm: float | None):
    """Rows scaled to L2 norm at most ``data_norm``, and the bound used.

    ``data_norm=None`` reads the largest row norm from ``X`` (with a
    :class:`~skdp.exceptions.PrivacyLeakWarning`) and returns ``X`` as it
    is; an overflowing norm is refused (before any charge). ``X`` is not
    modified.
    """
    norms = row_norms(X)
    if data_norm is None:
        return X, read_norm_bound(float(norms.max(initial=0.0)))
    bound = float(data_norm)
    return scale_rows(X, _bound_factor(norms, bound)), bound


def largest_row_norm(X, y=None) -> float:
    """The largest row norm of a block of rows (0 for none): a block function.

    A row source reads it block by block (``block_reduce(largest_row_norm,
    largest)``), never from a copy of the whole ``X``.
    """
    return float(row_norms(X).max(initial=0.0))


def largest(*values: float) -> float:
    """The largest of ``values``: the tree's node for :func:`largest_row_norm`."""
    return max(values)


def read_norm_bound(largest: float) -> float:
    """The bound ``data_norm=None`` reads from the data: the largest row norm.

    Warns (:class:`~skdp.exceptions.PrivacyLeakWarning`) and refuses a norm
    that overflows, before any charge; all-zero data gets the bound 1 (any
    positive bound is valid for it).
    """
    warn_data_derived("data_norm")
    if not np.isfinite(largest):
        raise ValueError(
            "data_norm=None reads the largest row norm from X, but a row "
            "norm overflows float64; pass data_norm, a public bound."
        )
    return largest if largest > 0 else 1.0


def _bound_factor(norms: np.ndarray, bound: float) -> np.ndarray:
    """``min(1, bound / norm)`` per row, without dividing by a zero norm."""
    return np.minimum(1.0, bound / np.maximum(norms, _TINY))


def _bounded_norms(X: np.ndarray, bound: float) -> np.ndarray:
    """Row norms of a dense float64 ``X``, for scaling rows to ``bound``.

    One pass (``sum_j x_ij**2``) where that cannot overflow or underflow in a
    way that matters, :func:`row_norms` for the rows where it could: a
    square that overflows (entries beyond about ``1e154``), or every row
    when ``bound`` is so small that a row above it could have squares that
    underflow. Each row's norm depends on that row only (the choice is made
    row by row), so a block function computes the same norm for a row
    whatever other rows it is handed.
    """
    if bound < _SMALLEST_DIRECT_BOUND:
        return row_norms(X)
    squares = np.einsum("ij,ij->i", X, X)
    norms = np.sqrt(squares)
    unsafe = ~np.isfinite(squares)
    if unsafe.any():
        norms[unsafe] = row_norms(X[unsafe])
    return norms


def bounded_rows(X, data_norm: float | None, intercept: float = 0.0):
    """The rows ``Z``: ``X`` scaled to norm at most ``data_norm``, intercept column.

    The one implementation of a linear model's row bounding, applied by
    every block function to the block it is handed (:class:`RowSpec`). A
    dense ``X`` becomes one new float64 array (the bounded rows and, when
    ``intercept`` is not 0, a last column of ``intercept``); a sparse one a
    new CSR matrix with the same stored entries scaled. ``data_norm=None``
    leaves the rows as they are (the bound was read from the data, so they
    are within it). ``X`` is not modified.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._rows import bounded_rows
    >>> bounded_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0, intercept=0.5)
    array([[0.6, 0.8, 0.5],
           [0.3, 0.4, 0.5]])
    """
    if sp.issparse(X):
        X = as_csr(X)
        if data_norm is not None:
            X = scale_rows(X, _bound_factor(row_norms(X), float(data_norm)))
        return with_constant_column(X, intercept) if intercept else X
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    Z = np.empty((n, d + (1 if intercept else 0)))
    Z[:, :d] = X
    if data_norm is not None:
        _, factor, beyond = _rows_beyond(X, float(data_norm))
        if beyond.size:
            Z[beyond, :d] = X[beyond] * factor[beyond, None]
    if intercept:
        Z[:, d] = intercept
    return Z


def scaled_rows(X, data_norm: float | None, *, overwrite: bool = False):
    """``X``'s rows scaled to norm at most ``data_norm``, and their norms.

    :func:`bounded_rows` without the intercept column, for the gradient
    paths, which add the intercept's part themselves: a dense ``X`` is
    copied only when a row is beyond the bound (and then only those rows
    change, by the same product :func:`bounded_rows` takes), or not at all
    with ``overwrite`` (``X`` is the caller's scratch copy, e.g. rows just
    gathered). The norms come from the pass that finds the rows beyond the
    bound, scaled with them; each row's from that row alone.
    ``data_norm=None`` leaves the rows as they are. A sparse ``X`` is
    :func:`bounded_rows` (a new CSR matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._rows import scaled_rows
    >>> rows, norms = scaled_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    >>> rows, norms
    (array([[0.6, 0.8],
           [0.3, 0.4]]), array([1. , 0.5]))
    """
    if sp.issparse(X):
        Z = bounded_rows(X, data_norm)
        return Z, bounded_row_norms(Z)
    X = np.ascontiguousarray(X, dtype=np.float64)
    if data_norm is None:
        return X, _bounded_norms(X, np.inf)
    norms, factor, beyond = _rows_beyond(X, float(data_norm))
    if beyond.size:
        if not overwrite:
            X = X.copy()
        X[beyond] = X[beyond] * factor[beyond, None]
        norms = norms * factor
    return X, norms


def _rows_beyond(X: np.ndarray, bound: float):
    """Row norms, factors ``min(1, bound / norm)`` and the rows they change.

    Only the rows beyond the bound are rescaled: a factor of 1 is exact.
    """
    norms = _bounded_norms(X, bound)
    factor = _bound_factor(norms, bound)
    return norms, factor, np.flatnonzero(factor < 1.0)


def bounded_row_norms(Z) -> np.ndarray:
    """Row norms of rows already bounded (dense or CSR): one pass, no rescaling."""
    if sp.issparse(Z):
        return np.sqrt(np.asarray(Z.multiply(Z).sum(axis=1)).ravel())
    return np.linalg.norm(Z, axis=1)


@dataclass(frozen=True)
class RowSpec:
    """How a block of raw rows becomes a linear model's rows and targets.

    Public settings only: the row bound, the intercept column, and how a
    label or target becomes the margins' targets. Every block function
    calls :meth:`rows` and :meth:`targets` on the block it is handed.

    Attributes
    ----------
    data_norm : float or None
        Rows are scaled to norm at most this; ``None`` leaves them (the
        bound was read from the data).
    intercept : float
        The value of the appended intercept column; 0 appends none.
    classes : ndarray or None
        A classifier's sorted classes: two give one column of targets
        ``+1`` (the second class) / ``-1``, more give one ``+1 / -1``
        column per class.
    bounds : tuple (low, high) or None
        A regression's target bounds: ``t = (clip(y) - middle) / half``,
        in ``[-1, 1]``, one column.
    n_features : int or None
        Columns of ``X`` (for :attr:`n_coef`).

    With neither ``classes`` nor ``bounds`` the targets are given: ``y`` is
    already the target matrix (or vector) of the problem.
    """

    data_norm: float | None = None
    intercept: float = 0.0
    classes: Any = None
    bounds: tuple[float, float] | None = None
    n_features: int | None = None

    @property
    def n_coef(self) -> int:
        """Columns of ``Z``: the features and the intercept column."""
        return int(self.n_features) + (1 if self.intercept else 0)

    def rows(self, X):
        """The block's rows ``Z`` (see :func:`bounded_rows`)."""
        if self.data_norm is None and not self.intercept:
            return as_csr(X) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        return bounded_rows(X, self.data_norm, self.intercept)

    def gradient_rows(self, X, *, overwrite: bool = False):
        """The block's rows bounded (no intercept column) and the norms of ``Z``.

        ``Z``'s rows are these with :attr:`intercept` appended, so their
        norms are ``hypot(norm, intercept)``; the gradient paths add the
        intercept's part of each product themselves instead of building
        ``Z`` (:func:`scaled_rows`; ``overwrite`` as there).
        """
        rows, norms = scaled_rows(X, self.data_norm, overwrite=overwrite)
        if self.intercept:
            norms = np.hypot(norms, self.intercept)
        return rows, norms

    def targets(self, y) -> np.ndarray:
        """The block's targets, one column per model (``m x n_outputs``)."""
        y = np.asarray(y)
        if self.bounds is not None:
            low, high = self.bounds
            middle, half = (low + high) / 2.0, (high - low) / 2.0
            t = (np.clip(y.ravel().astype(np.float64), low, high) - middle) / half
            return np.clip(t, -1.0, 1.0)[:, None]
        if self.classes is not None:
            y = y.ravel()
            classes = self.classes
            if classes.size == 2:
                return np.where(y == classes[1], 1.0, -1.0)[:, None]
            return np.where(y[:, None] == classes[None, :], 1.0, -1.0)
        y = np.asarray(y, dtype=np.float64)
        return y[:, None] if y.ndim == 1 else y


def with_constant_column(X, value: float):
    """``X`` with a column of ``value`` appended (the intercept column)."""
    n_samples = X.shape[0]
    if sp.issparse(X):
        column = sp.csr_matrix(np.full((n_samples, 1), value))
        return sp.hstack([as_csr(X), column], format="csr")
    return np.hstack([X, np.full((n_samples, 1), value)])


def row_terms(Z) -> int:
    """Most terms a row's dot product sums: stored entries (sparse) or columns."""
    if sp.issparse(Z):
        counts = np.diff(as_csr(Z).indptr)
        return int(counts.max(initial=0))
    return int(Z.shape[1])


def squared_entries(Z):
    """``Z`` with every entry squared (same sparsity for a CSR matrix)."""
    if sp.issparse(Z):
        Z = as_csr(Z)
        return sp.csr_matrix((Z.data * Z.data, Z.indices, Z.indptr), shape=Z.shape)
    return Z * Z
