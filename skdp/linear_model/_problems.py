"""The linear models' problems, written once as sums over row blocks.

Objective and output perturbation minimise

.. math::

    J(w) = \\frac{\\alpha}{2} \\|w\\|^2 + C \\sum_i \\ell(w; z_i, y_i) + b^T w

with a margin loss (:class:`~skdp.linear_model._losses.MarginLoss`: one
model, or one of ``K`` one-vs-rest models) or the multinomial softmax
loss. Everything the certified solver (:mod:`skdp.linear_model._newton`)
reads from the data is a sum over rows: the loss and its gradient, the
Hessian, Hessian-vector products and the Hessian's diagonal. Each is one
*block function* here, summed by a :class:`~skdp.utils._row_source.
RowSource` over its canonical row blocks, so the same code runs on a NumPy
array, a CSR matrix or a dask collection (on the workers) and gives bitwise
the same sums everywhere. Every block function bounds its block's rows and
reads its targets itself (:class:`~skdp.linear_model._rows.RowSpec`): no
fit holds a bounded copy of ``X``.

A change to a loss's value, gradient or Hessian is made in one place: the
loss class (:mod:`~skdp.linear_model._losses`) for a margin loss, the
``_softmax_*`` block functions here for the softmax loss.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

# The BLAS thread policy (one thread for every fit and every block) is
# skdp's, not this module's: re-exported for the gradient methods' imports.
from ..utils._threads import blas_single_thread, one_blas_thread
from ._rows import squared_entries

__all__ = ["MarginProblem", "SoftmaxProblem", "blas_single_thread", "one_blas_thread"]


def _dense(matrix) -> np.ndarray:
    """A product that is sparse when its factors are, as a dense array."""
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


def _total(nonnegative_terms, linear_term):
    """The objective's value and the magnitude of its rounding error's scale.

    The terms can cancel (the linear term is negative at the optimum), so
    the rounding error of the value is relative to the sum of the terms'
    magnitudes, not to the value.
    """
    magnitude = sum(nonnegative_terms) + abs(linear_term)
    return sum(nonnegative_terms) + linear_term, magnitude


# ------------------------------------------------------- margin loss, per block
def _margin_value_gradient(X, y, spec, k, loss, w):
    """``(sum_i l(z_i.w, t_i), sum_i l'(z_i.w, t_i) z_i)`` over the block."""
    Z, t = spec.rows(X), spec.targets(y)[:, k]
    margins = np.asarray(Z @ w)
    slope = loss.slope(margins, t)
    return loss.value(margins, t).sum(), np.asarray(Z.T @ slope).ravel()


def _margin_hessian(X, y, spec, k, loss, w, C, single):
    """``C Z^T diag(l'') Z`` over the block, in single precision if planned."""
    Z, t = spec.rows(X), spec.targets(y)[:, k]
    second = loss.second(np.asarray(Z @ w), t)
    Zs = Z.astype(np.float32) if single else Z
    root = np.sqrt(C * second).astype(Zs.dtype)
    weighted = _scale(Zs, root)
    return _dense(weighted.T @ weighted).astype(np.float64)


def _margin_product(X, y, spec, k, loss, w, C, v):
    """``C Z^T diag(l'') Z v`` over the block."""
    Z, t = spec.rows(X), spec.targets(y)[:, k]
    curvature = C * loss.second(np.asarray(Z @ w), t)
    return np.asarray(Z.T @ (curvature * np.asarray(Z @ v))).ravel()


def _margin_diagonal(X, y, spec, k, loss, w, C):
    """``C sum_i l''_i z_ij**2`` over the block."""
    Z, t = spec.rows(X), spec.targets(y)[:, k]
    curvature = C * loss.second(np.asarray(Z @ w), t)
    return np.asarray(curvature @ squared_entries(Z)).ravel()


def _scale(Z, factor):
    """``diag(factor) Z`` (dense or CSR), a new matrix."""
    if sp.issparse(Z):
        return sp.csr_matrix(
            (Z.data * np.repeat(factor, np.diff(Z.indptr)), Z.indices, Z.indptr),
            shape=Z.shape,
        )
    return Z * factor[:, None]


# ------------------------------------------------------ softmax loss, per block
def _softmax_proba(Z, W):
    logits = np.asarray(Z @ W.T)
    log_norm = logsumexp(logits, axis=1)
    return logits, log_norm, np.exp(logits - log_norm[:, None])


def _softmax_value_gradient(X, y, spec, W):
    """``sum_i (logsumexp(W z_i) - (W z_i)_{y_i})`` and its gradient, ``(K, d)``."""
    Z, Y = spec.rows(X), spec.targets(y) > 0
    logits, log_norm, proba = _softmax_proba(Z, W)
    loss = (log_norm - (logits * Y).sum(axis=1)).sum()
    residual = proba - Y
    return loss, np.asarray(residual.T @ Z)


def _softmax_hessian(X, y, spec, W, C, single):
    """``C sum_i (diag(p_i) - p_i p_i^T) kron z_i z_i^T`` over the block."""
    Z = spec.rows(X)
    K, d = W.shape
    _, _, proba = _softmax_proba(Z, W)
    Zs = Z.astype(np.float32) if single else Z
    C_proba = (C * proba).astype(Zs.dtype)
    hessian = np.empty((K * d, K * d))
    for k in range(K):
        for m in range(k, K):
            weights = C_proba[:, k] * ((k == m) - proba[:, m].astype(Zs.dtype))
            block = _dense(Zs.T @ _scale(Zs, weights)).astype(np.float64)
            hessian[k * d : (k + 1) * d, m * d : (m + 1) * d] = block
            hessian[m * d : (m + 1) * d, k * d : (k + 1) * d] = block.T
    return hessian


def _softmax_product(X, y, spec, W, V):
    """``sum_i ((diag(p_i) - p_i p_i^T) V z_i) z_i^T`` over the block."""
    Z = spec.rows(X)
    _, _, proba = _softmax_proba(Z, W)
    mixed = proba * np.asarray(Z @ V.T)
    mixed -= proba * mixed.sum(axis=1, keepdims=True)
    return np.asarray(mixed.T @ Z)


def _softmax_diagonal(X, y, spec, W):
    """``sum_i p_ik (1 - p_ik) z_ij**2`` over the block, ``(K, d)``."""
    Z = spec.rows(X)
    _, _, proba = _softmax_proba(Z, W)
    return np.asarray((proba * (1.0 - proba)).T @ squared_entries(Z))


# ----------------------------------------------------------------- problems
class MarginProblem:
    """``alpha/2 ||w||^2 + C sum_i l(z_i.w, t_ik) + linear.w`` on a row source.

    Model ``k`` of a margin loss: targets column ``k`` of ``spec.targets``.
    The interface :func:`~skdp.linear_model._newton.solve_problem` reads:
    ``value`` (one pass: the value, its rounding scale, and the data part
    of the gradient as the cache), ``gradient``, ``hessian``, and the
    Hessian-free ``curvature`` (the point itself), ``hessian_product``
    and ``hessian_diagonal`` (one pass each).
    """

    def __init__(self, rows, spec, loss, alpha, C, linear, *, k=0, single=True):
        self.rows, self.spec, self.loss, self.k = rows, spec, loss, k
        self.alpha, self.C, self.single = alpha, C, single
        self.linear = np.ravel(linear).astype(float)
        self.shape = (spec.n_coef,)

    def _sum(self, func, *args):
        return self.rows.block_sum(func, self.spec, self.k, self.loss, *args)

    def value(self, w):
        """``(J(w), sum of the terms' magnitudes, C * data gradient)``."""
        loss_sum, gradient = self._sum(_margin_value_gradient, w)
        terms = (0.5 * self.alpha * (w @ w), self.C * float(loss_sum))
        return _total(terms, self.linear @ w) + (self.C * gradient,)

    def gradient(self, w, cache):
        """``alpha w + C sum_i l'_i z_i + linear`` (the certified gradient)."""
        return self.alpha * w + cache + self.linear

    def hessian(self, w, cache):
        """``alpha I + C Z^T diag(l'') Z``."""
        hessian = self._sum(_margin_hessian, w, self.C, self.single)
        hessian.flat[:: hessian.shape[0] + 1] += self.alpha
        return hessian

    def curvature(self, w, cache):
        """What a Hessian-vector product needs: the point (each is a pass)."""
        return w

    def hessian_product(self, w, v):
        """``(alpha I + C Z^T diag(l'') Z) v`` without forming the Hessian."""
        return self.alpha * v + self._sum(_margin_product, w, self.C, v)

    def hessian_diagonal(self, w):
        """The Hessian's diagonal, ``alpha + C sum_i l''_i z_ij**2``."""
        return self.alpha + self._sum(_margin_diagonal, w, self.C)


class SoftmaxProblem:
    """``alpha/2 ||W||^2 + C sum (logsumexp(W z_i) - (W z_i)_{y_i}) + <linear, W>``.

    ``W`` has shape ``(K, d)`` and is handled raveled (row-major); the
    interface is :class:`MarginProblem`'s.
    """

    def __init__(self, rows, spec, alpha, C, linear, n_classes, *, single=True):
        self.rows, self.spec = rows, spec
        self.alpha, self.C, self.single = alpha, C, single
        self.linear = np.ravel(linear).astype(float)
        self.shape = (int(n_classes), spec.n_coef)

    def value(self, w):
        """``(J(w), sum of the terms' magnitudes, C * data gradient)``."""
        W = w.reshape(self.shape)
        loss_sum, gradient = self.rows.block_sum(_softmax_value_gradient, self.spec, W)
        terms = (0.5 * self.alpha * (w @ w), self.C * float(loss_sum))
        return _total(terms, self.linear @ w) + (self.C * np.ravel(gradient),)

    def gradient(self, w, cache):
        """``alpha w + C sum_i (p_i - e_{y_i}) z_i^T + linear``, raveled."""
        return self.alpha * w + cache + self.linear

    def hessian(self, w, cache):
        """``alpha I + C sum_i (diag(p_i) - p_i p_i^T) kron z_i z_i^T``."""
        hessian = self.rows.block_sum(
            _softmax_hessian, self.spec, w.reshape(self.shape), self.C, self.single
        )
        hessian.flat[:: hessian.shape[0] + 1] += self.alpha
        return hessian

    def curvature(self, w, cache):
        """What a Hessian-vector product needs: the point (each is a pass)."""
        return w

    def hessian_product(self, w, v):
        """``alpha v + C sum_i ((diag(p_i) - p_i p_i^T) V z_i) z_i^T``, raveled."""
        W, V = w.reshape(self.shape), v.reshape(self.shape)
        product = self.rows.block_sum(_softmax_product, self.spec, W, V)
        return self.alpha * v + self.C * np.ravel(product)

    def hessian_diagonal(self, w):
        """The Hessian's diagonal: ``alpha + C sum_i p_ik (1 - p_ik) z_ij**2``."""
        W = w.reshape(self.shape)
        diagonal = self.rows.block_sum(_softmax_diagonal, self.spec, W)
        return self.alpha + self.C * np.ravel(diagonal)


def _row_terms(X, y, intercept):
    """Most terms a row's margin sums in this block (stored entries, or d)."""
    if sp.issparse(X):
        counts = np.diff(X.indptr)
        return np.int64(counts.max(initial=0) + (1 if intercept else 0))
    return np.int64(X.shape[1] + (1 if intercept else 0))


def margin_terms(rows, spec) -> int:
    """Most terms a margin ``z.w`` sums over the rows (for the certificate).

    ``n_coef`` for dense rows; for CSR the largest count of stored entries
    in a row (plus the intercept column), read in one pass. It enters only
    the run's stopping test, never the plan (every value it can take leaves
    the residual bound valid).
    """
    if not rows.is_sparse:
        return spec.n_coef
    return int(max(rows.block_map(_row_terms, spec.intercept)))
