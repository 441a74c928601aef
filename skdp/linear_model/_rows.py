"""Row norms and row scaling for dense arrays and CSR matrices.

The private linear models bound every row to a public norm and read the
rows' norms in their solvers. A sparse row is never densified: its norm is
read from its stored values and scaling it scales those values, so a
100,000-column TF-IDF matrix costs memory in its number of stored entries,
not in ``n_samples * n_features``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..utils._privacy import warn_data_derived

__all__ = [
    "bound_rows",
    "as_csr",
    "row_norms",
    "row_terms",
    "scale_rows",
    "squared_entries",
    "with_constant_column",
]


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
        bound = float(norms.max(initial=0.0))
        warn_data_derived("data_norm")
        if not np.isfinite(bound):
            raise ValueError(
                "data_norm=None reads the largest row norm from X, but a row "
                "norm overflows float64; pass data_norm, a public bound."
            )
        # Any positive bound is valid for all-zero data.
        return X, bound if bound > 0 else 1.0
    bound = float(data_norm)
    factor = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
    return scale_rows(X, factor), bound


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
