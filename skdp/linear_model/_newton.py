"""Exact minimisers of the regularised logistic and softmax objectives.

Objective and output perturbation are private only for the *exact*
minimiser of a strongly convex objective, so both solve

.. math::

    J(w) = \\frac{\\alpha}{2} \\|w\\|^2 + C \\sum_i \\ell(w; z_i, y_i)
           + b^T w

to machine precision with Newton's method (:func:`minimize_loss`), for the
binary logistic loss ``l = log(1 + exp(-y z.w))`` and for the multinomial
(softmax) loss ``l = logsumexp(W z) - (W z)_y``: a Cholesky solve of the
Hessian per step and a backtracking (Armijo) line search, which makes the
method globally convergent on these strongly convex functions and
quadratically convergent near the optimum. Once a step cuts the gradient
norm ten-fold the Hessian is kept (its factor reused) until progress slows,
and it is formed in single precision: neither changes the fixed point,
which only the
double-precision gradient determines.

Beyond ``MAX_DENSE_HESSIAN`` coefficients (a 100,000-column TF-IDF
matrix would need an 80 GB Hessian) the plan picks a Hessian-free
truncated Newton method instead (``_newton_cg``): each step solves the
Newton system by preconditioned conjugate gradients with Hessian-vector
products ``alpha v + C Z^T (D (Z v))``, two sparse products, so memory is
the data plus a few vectors of ``n`` and ``K d`` numbers. Both solvers stop
on the same floating-point certificate (:func:`solve`), so the guarantee
does not depend on which one ran. ``Z`` may be dense or a CSR matrix
throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp

from ._losses import LogisticLoss, MarginLoss
from ._rows import row_norms, row_terms, scale_rows, squared_entries

__all__ = [
    "MAX_DENSE_HESSIAN",
    "NewtonResult",
    "SolverPlan",
    "blocked_row_sum",
    "gradient_block_size",
    "minimize_loss",
    "plan_solver",
    "solve",
    "summation_terms",
]

# Armijo constant and step shrink factor of the backtracking line search.
_ARMIJO = 1e-4
_SHRINK = 0.5
_MAX_HALVINGS = 60
_ROUNDING = 16 * np.finfo(float).eps
# Keep the previous Hessian while each step still cuts the gradient norm by
# this factor (the iteration is then already in its fast phase).
_REUSE_BELOW = 0.1


@dataclass(frozen=True)
class NewtonResult:
    """Solution of :func:`minimize_loss`.

    Attributes
    ----------
    coef : ndarray of shape (d,) or (n_classes, d)
    n_iter : int
        Newton steps taken.
    gradient_norm : float
        ``||grad J(coef)||_2`` at the returned point. ``J`` is
        ``alpha``-strongly convex, so the exact minimiser is within
        ``gradient_norm / alpha`` of ``coef``.
    converged : bool
        Whether ``gradient_norm <= tol`` was reached.
    """

    coef: np.ndarray
    n_iter: int
    gradient_norm: float
    converged: bool


def _total(nonnegative_terms, linear_term):
    """The objective's value and the magnitude of its rounding error's scale.

    The terms can cancel (the linear term is negative at the optimum), so
    the rounding error of the value is relative to the sum of the terms'
    magnitudes, not to the value.
    """
    magnitude = sum(nonnegative_terms) + abs(linear_term)
    return sum(nonnegative_terms) + linear_term, magnitude


class _MarginProblem:
    """``alpha/2 ||w||^2 + C sum_i l(z_i.w, t_i) + linear.w`` for a margin loss."""

    def __init__(self, Z, t, loss, alpha, C, linear, single=True):
        self.Z, self.t, self.loss = Z, t, loss
        self.alpha, self.C, self.linear = alpha, C, linear
        self.Z32 = Z.astype(np.float32) if single else Z
        self.shape = (Z.shape[1],)

    def value(self, w):
        """``(J(w), sum of the terms' magnitudes, cache)``."""
        margins = self.Z @ w
        terms = (
            0.5 * self.alpha * (w @ w),
            self.C * self.loss.value(margins, self.t).sum(),
        )
        return _total(terms, self.linear @ w) + (margins,)

    def gradient(self, w, margins):
        """The certified gradient: its data sum is blocked (``blocked_row_sum``)."""
        slope = self.loss.slope(margins, self.t)
        Z = self.Z
        data = blocked_row_sum(lambda rows: Z[rows].T @ slope[rows], Z.shape[0])
        return self.alpha * w + self.C * data + self.linear

    def hessian(self, w, margins):
        """``alpha I + C Z^T diag(l'') Z``, in single precision if it can."""
        second = self.loss.second(margins, self.t)
        root = np.sqrt(self.C * second).astype(self.Z32.dtype)
        weighted = scale_rows(self.Z32, root)
        hessian = _dense(weighted.T @ weighted).astype(np.float64)
        hessian.flat[:: hessian.shape[0] + 1] += self.alpha
        return hessian

    def curvature(self, w, margins):
        """``C l''`` of each row: what a Hessian-vector product needs."""
        return self.C * self.loss.second(margins, self.t)

    def hessian_product(self, curvature, v):
        """``(alpha I + C Z^T diag(l'') Z) v`` without forming the Hessian."""
        return self.alpha * v + self.Z.T @ (curvature * (self.Z @ v))

    def hessian_diagonal(self, curvature):
        """The Hessian's diagonal, ``alpha + C sum_i l''_i z_ij**2``."""
        return self.alpha + curvature @ _squares(self)


class _SoftmaxProblem:
    """``alpha/2 ||W||^2 + C sum (logsumexp(W z_i) - (W z_i)_{y_i}) + <linear, W>``.

    ``W`` has shape ``(K, d)`` and is handled raveled (row-major).
    """

    def __init__(self, Z, Y, alpha, C, linear, single=True):
        self.Z, self.Y, self.alpha, self.C = Z, Y, alpha, C
        self.linear = linear.ravel()
        self.Z32 = Z.astype(np.float32) if single else Z
        self.shape = (Y.shape[1], Z.shape[1])

    def value(self, w):
        """``(J(w), sum of the terms' magnitudes, cache)``."""
        logits = self.Z @ w.reshape(self.shape).T
        log_norm = logsumexp(logits, axis=1)
        loss = (log_norm - (logits * self.Y).sum(axis=1)).sum()
        terms = (0.5 * self.alpha * (w @ w), self.C * loss)
        return _total(terms, self.linear @ w) + (np.exp(logits - log_norm[:, None]),)

    def gradient(self, w, proba):
        """The certified gradient: its data sum is blocked (``blocked_row_sum``)."""
        Z, residual = self.Z, proba - self.Y
        data = blocked_row_sum(lambda rows: residual[rows].T @ Z[rows], Z.shape[0])
        return self.alpha * w + self.C * np.asarray(data).ravel() + self.linear

    def hessian(self, w, proba):
        """``alpha I + C sum_i (diag(p_i) - p_i p_i^T) kron z_i z_i^T``."""
        K, d = self.shape
        hessian = np.empty((K * d, K * d))
        dtype = self.Z32.dtype
        C_proba = (self.C * proba).astype(dtype)
        for k in range(K):
            for m in range(k, K):
                weights = C_proba[:, k] * ((k == m) - proba[:, m].astype(dtype))
                block = _dense(self.Z32.T @ scale_rows(self.Z32, weights))
                block = block.astype(np.float64)
                hessian[k * d : (k + 1) * d, m * d : (m + 1) * d] = block
                hessian[m * d : (m + 1) * d, k * d : (k + 1) * d] = block.T
        hessian.flat[:: K * d + 1] += self.alpha
        return hessian

    def curvature(self, w, proba):
        """The class probabilities of each row: what a product needs."""
        return proba

    def hessian_product(self, proba, v):
        """``alpha v + C sum_i ((diag(p_i) - p_i p_i^T) V z_i) z_i^T``, raveled."""
        V = v.reshape(self.shape)
        scores = np.asarray(self.Z @ V.T)  # (n, K): V z_i for every row
        mixed = proba * scores
        mixed -= proba * mixed.sum(axis=1, keepdims=True)
        return self.alpha * v + self.C * (mixed.T @ self.Z).ravel()

    def hessian_diagonal(self, proba):
        """The Hessian's diagonal: ``alpha + C sum_i p_ik (1 - p_ik) z_ij**2``."""
        weights = self.C * proba * (1.0 - proba)  # (n, K)
        return self.alpha + (weights.T @ _squares(self)).ravel()


#: Smallest row block of the certified gradient's blocked sum.
MIN_GRADIENT_BLOCK = 1024
#: Fan-in of the tree that adds the row blocks of a dask fit
#: (:func:`skdp.utils._dask.sum_over_row_blocks`' ``split_every``).
TREE_FAN_IN = 8


def gradient_block_size(n_samples: int) -> int:
    """``B = max(1024, ceil(sqrt(n)))``: rows per block of the gradient sum.

    Public (a function of ``n`` only). With ``k = ceil(n / B)`` blocks the
    sum's rounding bound counts ``B + k - 1 <= 2 sqrt(n) + 1024`` terms
    instead of ``n`` (:func:`summation_terms`).
    """
    n = max(1, int(n_samples))
    return max(MIN_GRADIENT_BLOCK, math.isqrt(n - 1) + 1)


def blocked_row_sum(block_sum, n_rows: int, block_size: int | None = None):
    """``sum`` over row blocks: ``block_sum(rows)`` per block, added in order.

    ``block_sum(slice)`` returns the sum of the per-row terms of the rows in
    the slice (one BLAS or sparse product over at most ``block_size``
    rows); the ``k = ceil(n_rows / block_size)`` block results are added one
    after another, left to right. ``block_size`` defaults to
    :func:`gradient_block_size` of ``n_rows``. The rounding error of the
    result is bounded in :func:`summation_terms`.
    """
    block = gradient_block_size(n_rows) if block_size is None else int(block_size)
    total = block_sum(slice(0, block))
    for start in range(block, n_rows, block):
        total = total + block_sum(slice(start, start + block))
    return total


def summation_terms(
    n_samples: int, block_size: int | None = None, fan_in: int = TREE_FAN_IN
) -> int:
    """``T``: most rounding errors a row's term meets in the gradient sum.

    Public: a function of ``n``, the block size ``B``
    (:func:`gradient_block_size` by default) and the tree's fan-in ``f``
    only. ``T = min(n, min(B, n) + ceil(n / B) - 1 + (f - 1) L)`` with
    ``L`` the number of levels of a fan-in ``f`` tree over ``n`` leaves,
    ``ceil(log_f n)``.

    Notes
    -----
    Higham (2002) Lemma 3.1: a product of ``T`` factors ``(1 + delta_i)``,
    ``|delta_i| <= u``, is ``1 + theta`` with ``|theta| <= gamma_T = T u /
    (1 - T u)``. Each row's term ``x_i`` (a product of one row entry and
    its loss derivative) reaches the computed sum multiplied by such
    factors, one per rounding it meets, so the computed sum is ``sum_i
    x_i (1 + theta_i)`` and errs by at most ``gamma_T sum_i |x_i|``
    (entrywise) when no term meets more than ``T`` roundings:

    * in a block of ``m <= B`` rows, a BLAS or sparse product computes each
      entry as an inner product of length ``m``: in any order of
      summation (blocked, pairwise, with or without FMA), each term meets
      at most ``m`` roundings (its product and at most ``m - 1`` additions;
      Higham 2002, section 3.1 and Theorem 3.1 / eq. (3.5));
    * the ``k = ceil(m' / B)`` block results of a run of ``m'`` rows are
      added left to right (:func:`blocked_row_sum`): a block's result meets
      at most ``k - 1`` more roundings (recursive summation, Higham 2002,
      eq. (4.3));
    * a dask fit does that within each chunk of ``m' <= n`` rows and adds
      the chunks' results in a tree of fan-in ``f``
      (:func:`skdp.utils._dask.sum_over_row_blocks`): each node adds at
      most ``f`` values left to right, ``f - 1`` roundings per level, over
      ``L`` levels, and there are at most ``n`` (nonempty) chunks. In
      memory there is no tree, one chunk of ``n`` rows.

    So no term meets more than ``min(B, n) + ceil(n / B) - 1 + (f - 1) L``
    roundings; nor more than ``n`` in any order of summation (at most
    ``n - 1`` additions and its product), the bound of earlier releases.
    At ``n = 2e6``, ``T = 2877`` instead of ``n``: the total bound
    ``gamma_T sum_i |x_i|`` grows as ``n**1.5 u``, not ``n**2 u``.

    Examples
    --------
    >>> from skdp.linear_model._newton import summation_terms
    >>> summation_terms(1000), summation_terms(2_000_000)
    (1000, 2877)
    """
    n = max(1, int(n_samples))
    block = gradient_block_size(n) if block_size is None else int(block_size)
    levels, parts = 0, n
    while parts > 1:
        parts = -(-parts // fan_in)
        levels += 1
    return min(n, min(block, n) + -(-n // block) - 1 + (fan_in - 1) * levels)


def _squares(problem):
    """``problem.Z`` squared entrywise, computed once (the preconditioner's)."""
    if getattr(problem, "z_squared", None) is None:
        problem.z_squared = squared_entries(problem.Z)
    return problem.z_squared


def _dense(matrix) -> np.ndarray:
    """A product that is sparse when its factors are, as a dense array."""
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


def _line_search(problem, w, value, magnitude, step, slope):
    """Backtracking (Armijo) along ``step``; ``None`` when no step is taken.

    Returns ``(point, value, magnitude, cache)`` of the accepted point.
    """
    size = 1.0
    for _ in range(_MAX_HALVINGS):
        candidate = w + size * step
        new_value, new_magnitude, new_cache = problem.value(candidate)
        # Allow rounding error in the comparison at the optimum.
        slack = _ROUNDING * magnitude
        if new_value <= value + _ARMIJO * size * slope + slack:
            break
        size *= _SHRINK
    else:
        # No decrease representable in floating point: at the optimum.
        return None
    if np.array_equal(candidate, w):
        return None  # the step vanished in rounding: at the optimum
    return candidate, new_value, new_magnitude, new_cache


def _damped_newton(problem, threshold, max_iter, certified=None) -> NewtonResult:
    """Damped Newton from zero until ``||gradient|| <= threshold``.

    ``certified(w, gradient_norm)``, if given, must also hold to stop (the
    floating-point certificate of :func:`solve`).
    """
    w = np.zeros(int(np.prod(problem.shape)))
    value, magnitude, cache = problem.value(w)
    gradient_norm = previous_norm = np.inf
    factor = None
    converged = False
    for n_iter in range(max_iter + 1):
        gradient = problem.gradient(w, cache)
        gradient_norm = float(np.linalg.norm(gradient))
        converged = gradient_norm <= threshold and (
            certified is None or certified(w, gradient_norm)
        )
        if converged or n_iter == max_iter:
            break
        try:
            if factor is None or gradient_norm > _REUSE_BELOW * previous_norm:
                factor = cho_factor(problem.hessian(w, cache), check_finite=False)
            step = -cho_solve(factor, gradient, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            break  # a Hessian rounding made indefinite: the fallback takes over
        if not np.all(np.isfinite(step)):
            break
        previous_norm = gradient_norm
        accepted = _line_search(problem, w, value, magnitude, step, gradient @ step)
        if accepted is None:
            break
        w, value, magnitude, cache = accepted
    return NewtonResult(
        coef=w.reshape(problem.shape),
        n_iter=n_iter,
        gradient_norm=gradient_norm,
        converged=bool(converged),
    )


def _conjugate_gradient(product, diagonal, rhs, target, max_iter):
    """Approximately solve ``H x = rhs`` by Jacobi-preconditioned CG.

    Stops when the residual norm is at most ``target``, after ``max_iter``
    products, or when rounding makes a curvature ``p.Hp`` non-positive.
    Every iterate of CG started at zero on a positive definite ``H`` is a
    descent direction for ``rhs = -gradient`` (``x.rhs > 0``); if no
    product was taken the preconditioned gradient ``rhs / diag`` is returned.
    """
    x = np.zeros_like(rhs)
    residual = rhs.copy()
    preconditioned = residual / diagonal
    direction = preconditioned.copy()
    rho = residual @ preconditioned
    taken = 0
    for _ in range(max_iter):
        if np.linalg.norm(residual) <= target:
            break
        product_direction = product(direction)
        curvature = direction @ product_direction
        if not curvature > 0:
            break
        size = rho / curvature
        x += size * direction
        residual -= size * product_direction
        taken += 1
        preconditioned = residual / diagonal
        rho, previous = residual @ preconditioned, rho
        direction = preconditioned + (rho / previous) * direction
    return x if taken else rhs / diagonal


def _newton_cg(problem, threshold, max_iter, max_cg_iter, certified=None):
    """Truncated Newton from zero: Newton steps solved by CG, no Hessian.

    The same loop as :func:`_damped_newton` (start at zero, Armijo line
    search, stop on ``||gradient|| <= threshold`` and ``certified``); each
    Newton system is solved by ``_conjugate_gradient`` to a relative
    residual ``min(1/2, sqrt(||g|| / ||g_0||))`` (superlinear convergence,
    Nocedal & Wright 2006, Theorem 7.2), but never below a tenth of the
    threshold, at most ``max_cg_iter`` Hessian-vector products a step.
    """
    w = np.zeros(int(np.prod(problem.shape)))
    value, magnitude, cache = problem.value(w)
    gradient_norm = first_norm = np.inf
    converged = False
    for n_iter in range(max_iter + 1):
        gradient = problem.gradient(w, cache)
        gradient_norm = float(np.linalg.norm(gradient))
        converged = gradient_norm <= threshold and (
            certified is None or certified(w, gradient_norm)
        )
        if converged or n_iter == max_iter or not np.isfinite(gradient_norm):
            break
        if not np.isfinite(first_norm):
            first_norm = gradient_norm
        forcing = min(0.5, math.sqrt(gradient_norm / max(first_norm, gradient_norm)))
        curvature = problem.curvature(w, cache)
        diagonal = problem.hessian_diagonal(curvature)
        step = _conjugate_gradient(
            lambda v, c=curvature: problem.hessian_product(c, v),
            diagonal,
            -gradient,
            max(forcing * gradient_norm, 0.1 * threshold),
            max_cg_iter,
        )
        slope = gradient @ step
        if not (np.all(np.isfinite(step)) and slope < 0):
            break
        accepted = _line_search(problem, w, value, magnitude, step, slope)
        if accepted is None:
            break
        w, value, magnitude, cache = accepted
    return NewtonResult(
        coef=w.reshape(problem.shape),
        n_iter=n_iter,
        gradient_norm=gradient_norm,
        converged=bool(converged),
    )


def minimize_loss(
    Z: np.ndarray,
    Y: np.ndarray,
    *,
    alpha: float,
    C: float,
    linear: np.ndarray | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> NewtonResult:
    """Minimise ``alpha/2 ||W||^2 + C sum_i loss(W; z_i, y_i) + <linear, W>``.

    The binary logistic loss ``log(1 + exp(-y z.w))`` for one column of
    labels; the multinomial (softmax, cross-entropy) loss
    ``logsumexp(W z) - (W z)_y`` with one coefficient row per class, all
    regularised (the symmetric parameterisation), for ``K >= 3`` columns.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows ``z_i`` (intercept column already appended if wanted).
    Y : ndarray of shape (n,), (n, 1) or (n, K)
        Binary labels in ``{-1, +1}``, or for ``K >= 3`` classes
        ``Y[i, k] > 0`` if row ``i`` is in class ``k`` (``+1 / -1`` or
        one-hot).
    alpha : float
        Strong convexity of the regulariser, > 0.
    C : float
        Weight of the summed loss, > 0.
    linear : ndarray, optional
        The linear (perturbation) term, shaped like the coefficients; zero
        if omitted.
    tol : float, default=1e-12
        Stop when ``||grad J||_2 <= tol * (alpha + C * sum_i ||z_i||)``,
        i.e. relative to the scale of the gradient's terms.
    max_iter : int, default=100
        Maximum number of Newton steps.

    Returns
    -------
    NewtonResult
        ``coef`` has shape ``(d,)``, ``(1, d)`` or ``(K, d)``, following
        ``Y``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._newton import minimize_loss
    >>> Z = np.array([[1.0, 1.0], [-1.0, 1.0], [0.5, 1.0]])
    >>> res = minimize_loss(Z, np.array([1, -1, 1]), alpha=1.0, C=1.0)
    >>> res.coef.shape, res.converged, res.gradient_norm < 1e-9
    ((2,), True, True)
    >>> minimize_loss(Z, np.eye(3), alpha=1.0, C=1.0).coef.shape
    (3, 2)
    """
    Y = np.asarray(Y, dtype=float)
    d = Z.shape[1]
    if Y.ndim == 1 or Y.shape[1] == 1:
        shape = (d,) if Y.ndim == 1 else (1, d)
        linear = np.zeros(d) if linear is None else np.ravel(linear).astype(float)
        problem = _MarginProblem(Z, Y.ravel(), LogisticLoss(), alpha, C, linear)
    else:
        shape = (Y.shape[1], d)
        linear = np.zeros(shape) if linear is None else np.asarray(linear, float)
        problem = _SoftmaxProblem(Z, (Y > 0).astype(float), alpha, C, linear)
    threshold = tol * (alpha + C * row_norms(Z).sum())
    result = _damped_newton(problem, threshold, max_iter)
    return replace(result, coef=result.coef.reshape(shape))


# --- the certified solve of objective and output perturbation ---------------

#: Unit roundoff of float64.
_UNIT_ROUNDOFF = 2.0**-53
#: Largest condition bound ``beta / alpha`` for a single-precision Hessian.
_SINGLE_PRECISION_CONDITION = 1e6
#: Largest Hessian scale ``beta`` for single precision (max about 3.4e38).
_SINGLE_PRECISION_SCALE = 1e30
#: Largest condition bound ``beta / alpha`` a plan accepts (float64 Cholesky).
MAX_CONDITION = 1e13
#: Most coefficients of one solve for which the plan forms the dense Hessian
#: (``3 * 8 * 2048**2`` bytes, about 100 MB with its factor and a copy);
#: beyond it the Hessian-free Newton-CG solver runs.
MAX_DENSE_HESSIAN = 2048
#: Hessian-vector products per Newton-CG step (each costs two products with
#: ``Z``); the public cap keeps the run's work bounded.
MAX_CG_ITER = 250


@dataclass(frozen=True)
class SolverPlan:
    """How :func:`solve` reaches a point within a public radius of the minimiser.

    Built from public quantities only (:func:`plan_solver`).

    Attributes
    ----------
    alpha, C : float
        The objective ``alpha/2 ||W||^2 + C sum_i loss_i + <linear, W>``.
    threshold : float
        ``tau``: the public gradient-norm threshold of the stopping test.
    residual : float
        ``r = 2 tau / alpha``: every point :func:`solve` returns is within
        ``r`` of the exact minimiser.
    max_iter : int
        Newton steps before the accelerated-gradient fallback.
    smoothness : float
        ``beta``, a bound on the largest eigenvalue of the Hessian.
    n_samples, n_coef : int
        Rows and number of coefficients.
    row_norm : float
        ``R``, the bound on every row's norm.
    zero_value : float
        A bound on the loss of a row at ``W = 0`` (``log K`` for the
        logistic and softmax losses).
    row_gradient : float
        Bound on one row's loss gradient norm over ``R`` (1, or ``sqrt 2``
        for softmax).
    slope_lipschitz : float
        Lipschitz constant of the loss derivative in the margin (1/4, or 1
        as a safe value for softmax).
    hessian_free : bool
        ``True`` when ``n_coef > MAX_DENSE_HESSIAN``: Newton steps are
        solved by conjugate gradients with Hessian-vector products
        (``_newton_cg``) instead of a Cholesky factor of the dense
        Hessian. Public (it depends on ``n_coef`` only); the certificate and
        the fallback are the same either way.
    max_cg_iter : int
        Hessian-vector products per Newton-CG step.
    block_size : int
        ``B``: rows per block of the certified gradient's sum
        (:func:`gradient_block_size`); ``0`` means one block (the sum
        unblocked, bounded with ``n`` terms).
    summation_terms : int
        ``T``: the most roundings a row's term meets in that sum
        (:func:`summation_terms`); ``0`` means ``n_samples``.
    """

    alpha: float
    C: float
    threshold: float
    residual: float
    max_iter: int
    smoothness: float
    n_samples: int
    n_coef: int
    row_norm: float
    zero_value: float
    row_gradient: float
    slope_lipschitz: float
    hessian_free: bool = False
    max_cg_iter: int = MAX_CG_ITER
    block_size: int = 0
    summation_terms: int = 0

    def gradient_error(
        self, w_norm: float, linear_norm: float, margin_terms: int | None = None
    ) -> float:
        """Bound on the rounding error of a computed gradient at ``||W||``.

        ``margin_terms`` is the most terms a margin sums, ``d``: at most
        ``n_coef`` (the default); a CSR row with ``k`` stored entries
        sums ``k`` (:func:`solve` passes the largest ``k``).

        Notes
        -----
        With unit roundoff ``u`` and ``gamma_k = k u / (1 - k u)``, a
        computed margin ``z.w`` (``d`` terms) errs by at most
        ``gamma_d R ||w||``, which moves a loss derivative by at most
        ``slope_lipschitz`` times that; each row's gradient has norm at most
        ``row_gradient R``, and their blocked sum (:func:`blocked_row_sum`;
        a dask fit's per-chunk blocked sums added in a tree) errs by at
        most ``gamma_T`` times the sum of their entries' magnitudes, whose
        norm is at most the sum of the rows' gradient norms (Minkowski),
        ``T = summation_terms`` (:func:`summation_terms`: the most
        roundings a row's term meets; earlier releases used ``T = n``,
        Higham 2002, section 3.1). The regulariser and linear terms add
        relative ``3 u``. So the computed gradient is within

        ``C n g R (gamma_T + 2 u + gamma_d R ||w|| s) + 3 u (alpha ||w|| +
        ||linear||)``

        of the exact one, ``g = row_gradient``, ``s = slope_lipschitz``.
        """
        u = _UNIT_ROUNDOFF
        terms = self.summation_terms or self.n_samples
        gamma_n = terms * u / (1 - terms * u)
        d = self.n_coef if margin_terms is None else min(margin_terms, self.n_coef)
        d = max(1, d)
        gamma_d = d * u / (1 - d * u)
        data = (
            self.C
            * self.n_samples
            * self.row_gradient
            * self.row_norm
            * (
                gamma_n
                + 2 * u
                + gamma_d * self.row_norm * w_norm * self.slope_lipschitz
            )
        )
        return data + 3 * u * (self.alpha * w_norm + linear_norm)

    def fallback_steps(self, linear_norm: float) -> int:
        """Accelerated-gradient steps that guarantee the residual ``r``.

        Notes
        -----
        Nesterov's method for an ``alpha``-strongly convex, ``beta``-smooth
        ``J`` started at ``x_1`` satisfies ``J(y_t) - J* <= (alpha + beta)
        / 2 ||x_1 - x*||**2 exp(-(t - 1) / sqrt(kappa))``, ``kappa = beta /
        alpha`` (Bubeck 2015, Theorem 3.18), and strong convexity gives
        ``||y - x*||**2 <= 2 (J(y) - J*) / alpha``. The fallback starts
        from Newton's last point, whose value is at most ``J(0) <= C n l_0``
        (Newton's line search only decreases ``J``); the loss is
        nonnegative, so ``J* >= -||linear||**2 / (2 alpha)`` and
        ``||x_1 - x*||**2 <= 2 D / alpha`` with ``D = C n l_0 +
        ||linear||**2 / (2 alpha)``. Hence ``t = 1 + sqrt(kappa)
        log((alpha + beta) 2 D / (alpha**2 r**2))`` steps reach ``r``.
        ``||linear||`` is the norm of the (data-independent) perturbation.
        """
        gap = self.C * self.n_samples * self.zero_value
        gap += linear_norm**2 / (2.0 * self.alpha)
        ratio = (self.alpha + self.smoothness) * 2.0 * gap
        ratio /= self.alpha**2 * self.residual**2
        kappa = self.smoothness / self.alpha
        return 1 + max(0, math.ceil(math.sqrt(kappa) * math.log(max(ratio, 1.0))))


def plan_solver(
    *,
    n_samples: int,
    n_features: int,
    n_classes: int,
    row_norm: float,
    C: float,
    alpha: float,
    tol: float,
    max_iter: int,
    loss: MarginLoss | None = None,
) -> SolverPlan:
    """The public stopping rule of the exact methods' solver.

    Parameters
    ----------
    n_samples, n_features : int
        Rows and columns of ``Z`` (intercept column included).
    n_classes : int
        2 (one binary model) or more (softmax, unless ``loss`` is given:
        then each of the one-vs-rest models is solved on its own with this
        plan).
    row_norm : float
        ``R``.
    C, alpha : float
        The objective's weights.
    tol : float
        The user's relative tolerance.
    max_iter : int
        Newton steps before the fallback.
    loss : MarginLoss or None, default=None
        The loss of a single-output model; ``None`` means the logistic loss
        (two classes) or the softmax loss (more).

    Returns
    -------
    plan : SolverPlan

    Notes
    -----
    ``tau = max(tol (alpha + C n L R), 4 e)`` where ``L`` bounds the loss's
    slope and ``e`` is the rounding bound of
    :meth:`SolverPlan.gradient_error` at the largest norm a point of value
    at most ``J(0)`` can have without perturbation, ``||W|| <= sqrt(2 C n
    l_0 / alpha)`` with ``l_0 = sup_t l(0, t)`` (``log K`` for the
    logistic and softmax losses). Every number here is public: ``n`` and the
    declared bounds, never the data (the stopping test of earlier releases
    used ``sum_i ||z_i||``, which is not).

    Examples
    --------
    >>> from skdp.linear_model._newton import plan_solver
    >>> plan = plan_solver(n_samples=1000, n_features=3, n_classes=2,
    ...                    row_norm=1.0, C=1.0, alpha=1.0, tol=1e-12, max_iter=100)
    >>> plan.residual == 2 * plan.threshold, plan.threshold < 1e-8
    (True, True)
    """
    if loss is None and n_classes == 2:
        loss = LogisticLoss()
    if loss is not None:
        n_coef, curvature = n_features, loss.curvature
        zero_value, row_gradient = loss.zero_value, loss.lipschitz
        slope_lipschitz = loss.curvature
    else:  # softmax: Boehning's bound 1/2 on the Hessian, gradient sqrt(2) R
        n_coef, curvature = n_features * n_classes, 0.5
        zero_value, row_gradient, slope_lipschitz = math.log(n_classes), 2**0.5, 1.0
    plan = SolverPlan(
        alpha=float(alpha),
        C=float(C),
        threshold=0.0,
        residual=0.0,
        max_iter=int(max_iter),
        smoothness=float(alpha + C * n_samples * row_norm**2 * curvature),
        n_samples=int(n_samples),
        n_coef=int(n_coef),
        row_norm=float(row_norm),
        zero_value=float(zero_value),
        row_gradient=float(row_gradient),
        slope_lipschitz=float(slope_lipschitz),
        hessian_free=bool(n_coef > MAX_DENSE_HESSIAN),
        block_size=gradient_block_size(n_samples),
        summation_terms=summation_terms(n_samples),
    )
    w_norm = math.sqrt(2.0 * C * n_samples * plan.zero_value / alpha)
    scale = alpha + C * n_samples * row_gradient * row_norm
    threshold = max(tol * scale, 4.0 * plan.gradient_error(w_norm, 0.0))
    return replace(plan, threshold=threshold, residual=2.0 * threshold / alpha)


def _problem(Z, Y, alpha, C, linear, loss=None, single=True):
    Y = np.asarray(Y, dtype=float)
    d = Z.shape[1]
    if Y.ndim == 1 or Y.shape[1] == 1:
        linear = np.zeros(d) if linear is None else np.ravel(linear).astype(float)
        loss = LogisticLoss() if loss is None else loss
        return _MarginProblem(Z, Y.ravel(), loss, alpha, C, linear, single)
    shape = (Y.shape[1], d)
    linear = np.zeros(shape) if linear is None else np.asarray(linear, float)
    return _SoftmaxProblem(Z, (Y > 0).astype(float), alpha, C, linear, single)


def _accelerated_gradient(problem, plan, start, steps, certified):
    """Nesterov's method for strongly convex functions (Bubeck 2015, 3.7.1)."""
    beta, alpha = plan.smoothness, plan.alpha
    root = math.sqrt(beta / alpha)
    momentum = (root - 1.0) / (root + 1.0)
    x = start.copy()
    y_previous = x.copy()
    for _ in range(steps):
        _, _, cache = problem.value(x)
        gradient = problem.gradient(x, cache)
        y = x - gradient / beta
        x = (1.0 + momentum) * y - momentum * y_previous
        y_previous = y
        _, _, cache = problem.value(y)
        gradient_norm = float(np.linalg.norm(problem.gradient(y, cache)))
        if gradient_norm <= plan.threshold and certified(y, gradient_norm):
            break
    return y_previous


def solve(Z, Y, plan: SolverPlan, linear=None, loss=None) -> np.ndarray:
    """A point near the exact minimiser, within ``plan.residual``; never raises.

    Minimises ``alpha/2 ||W||^2 + C sum_i loss(W; z_i, y_i) + <linear, W>``
    (binary logistic or softmax loss, following ``Y`` as in
    :func:`minimize_loss`).

    Parameters
    ----------
    Z : ndarray or CSR matrix of shape (n, d)
        Rows of norm at most ``plan.row_norm``.
    Y : ndarray of shape (n,), (n, 1) or (n, K)
        Labels as in :func:`minimize_loss`.
    plan : SolverPlan
    linear : ndarray or None
        The perturbation's linear term.
    loss : MarginLoss or None
        A margin loss: ``Y`` of shape ``(n, K)`` then holds ``K``
        one-vs-rest targets, each model solved on its own (the objective is
        separable), every one within ``r``. ``None``: the logistic or
        softmax loss, following ``Y``.

    Returns
    -------
    coef : ndarray, shaped like :func:`minimize_loss`'s ``coef``

    Notes
    -----
    Damped Newton runs for at most ``plan.max_iter`` steps and stops once
    the computed gradient norm is at most ``tau`` and the rounding bound of
    :meth:`SolverPlan.gradient_error` at the current point is at most
    ``tau`` too: the exact gradient norm is then at most ``2 tau`` and, by
    ``alpha``-strong convexity, the exact minimiser within ``2 tau / alpha
    = r``. The Newton steps are Cholesky solves of the dense Hessian, or,
    when ``plan.hessian_free``, conjugate-gradient solves with
    Hessian-vector products (``_newton_cg``); the certificate only reads
    the point and its computed gradient, so it holds whichever solver
    produced the point. For a CSR ``Z`` the rounding bound counts the
    largest number of stored entries in a row as the margin's terms (a
    sparse dot product sums only those). If Newton has not certified that
    within ``max_iter`` steps, the
    accelerated gradient method of :meth:`SolverPlan.fallback_steps`
    continues from Newton's point for as many steps as guarantee the same
    ``r`` (stopping earlier once certified). Which branch runs, and how
    many steps it takes, depends on the data and is not released.

    The certificate is checked in floating point, so a point Newton stops
    at is within ``r``. The fallback's step count is a theorem in exact
    arithmetic: with a perturbation ``linear`` so large that its rounding
    alone exceeds ``tau`` (``||linear||`` beyond about ``tau / (3 u)``, with
    ``u`` the unit roundoff), no point can be certified and the fallback's
    guarantee is the exact-arithmetic one. skdp's objective perturbation
    raises ``alpha`` with the noise, which keeps it far from that regime.
    """
    if hasattr(Z, "solve"):
        # Row blocks of a dask collection: the same solve, its sums over the
        # data computed on the workers (``skdp.linear_model._dask``).
        return Z.solve(plan, linear, loss)
    Y = np.asarray(Y, dtype=float)
    if loss is not None and Y.ndim == 2 and Y.shape[1] > 1:
        linear = np.zeros((Y.shape[1], Z.shape[1])) if linear is None else linear
        return np.vstack(
            [
                solve(Z, Y[:, k], plan, np.asarray(linear)[k], loss)
                for k in range(Y.shape[1])
            ]
        )
    problem = _problem(Z, Y, plan.alpha, plan.C, linear, loss, single_hessian(plan))
    coef = solve_problem(problem, plan, linear, row_terms(Z))
    if Y.ndim == 1:
        return coef
    return coef.reshape(problem.shape if Y.shape[1] > 1 else (1, Z.shape[1]))


def single_hessian(plan: SolverPlan) -> bool:
    """Whether the dense Hessian may be formed in single precision."""
    # Single precision moves the Hessian by about 6e-8 of its scale; beyond
    # a condition number of 1e6 that could make it indefinite.
    return (
        not plan.hessian_free
        and plan.smoothness / plan.alpha <= _SINGLE_PRECISION_CONDITION
        and plan.smoothness <= _SINGLE_PRECISION_SCALE
    )


def solve_problem(problem, plan: SolverPlan, linear, terms: int) -> np.ndarray:
    """The certified solve of :func:`solve` on a built problem; raveled ``coef``.

    ``problem`` has the interface of ``_MarginProblem`` (``value``,
    ``gradient``, ``hessian`` or the Hessian-free ``curvature``,
    ``hessian_product``, ``hessian_diagonal``); ``terms`` is the most terms a
    margin sums (see :meth:`SolverPlan.gradient_error`).
    """
    linear_norm = 0.0 if linear is None else float(np.linalg.norm(linear))

    def certified(w, gradient_norm):
        error = plan.gradient_error(float(np.linalg.norm(w)), linear_norm, terms)
        return error <= plan.threshold

    if plan.hessian_free:
        result = _newton_cg(
            problem, plan.threshold, plan.max_iter, plan.max_cg_iter, certified
        )
    else:
        result = _damped_newton(problem, plan.threshold, plan.max_iter, certified)
    coef = result.coef.ravel()
    if not result.converged:
        steps = plan.fallback_steps(linear_norm)
        coef = _accelerated_gradient(problem, plan, coef, steps, certified)
    if not np.all(np.isfinite(coef)):  # cannot happen for finite inputs
        coef = np.zeros_like(coef)
    return coef
