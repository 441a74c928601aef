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
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit, logsumexp

__all__ = ["NewtonResult", "minimize_loss"]

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


class _LogisticProblem:
    """``alpha/2 ||w||^2 + C sum log(1 + exp(-y_i z_i.w)) + linear.w``."""

    def __init__(self, Z, y, alpha, C, linear):
        self.Z, self.y, self.alpha, self.C, self.linear = Z, y, alpha, C, linear
        self.Z32 = Z.astype(np.float32)
        self.shape = (Z.shape[1],)

    def value(self, w):
        """``(J(w), sum of the terms' magnitudes, cache)``."""
        margins = self.y * (self.Z @ w)
        terms = (0.5 * self.alpha * (w @ w), self.C * np.logaddexp(0.0, -margins).sum())
        return _total(terms, self.linear @ w) + (margins,)

    def gradient(self, w, margins):
        p = expit(-margins)  # = -dloss/dmargin, in (0, 1)
        return self.alpha * w - self.C * (self.Z.T @ (self.y * p)) + self.linear

    def hessian(self, w, margins):
        """``alpha I + C Z^T diag(p (1 - p)) Z``, in single precision."""
        p = expit(-margins)
        weighted = (
            self.Z32 * np.sqrt(self.C * p * (1.0 - p)).astype(np.float32)[:, None]
        )
        hessian = (weighted.T @ weighted).astype(np.float64)
        hessian.flat[:: hessian.shape[0] + 1] += self.alpha
        return hessian


class _SoftmaxProblem:
    """``alpha/2 ||W||^2 + C sum (logsumexp(W z_i) - (W z_i)_{y_i}) + <linear, W>``.

    ``W`` has shape ``(K, d)`` and is handled raveled (row-major).
    """

    def __init__(self, Z, Y, alpha, C, linear):
        self.Z, self.Y, self.alpha, self.C = Z, Y, alpha, C
        self.linear = linear.ravel()
        self.Z32 = Z.astype(np.float32)
        self.shape = (Y.shape[1], Z.shape[1])

    def value(self, w):
        """``(J(w), sum of the terms' magnitudes, cache)``."""
        logits = self.Z @ w.reshape(self.shape).T
        log_norm = logsumexp(logits, axis=1)
        loss = (log_norm - (logits * self.Y).sum(axis=1)).sum()
        terms = (0.5 * self.alpha * (w @ w), self.C * loss)
        return _total(terms, self.linear @ w) + (np.exp(logits - log_norm[:, None]),)

    def gradient(self, w, proba):
        return (
            self.alpha * w
            + self.C * ((proba - self.Y).T @ self.Z).ravel()
            + self.linear
        )

    def hessian(self, w, proba):
        """``alpha I + C sum_i (diag(p_i) - p_i p_i^T) kron z_i z_i^T``."""
        K, d = self.shape
        hessian = np.empty((K * d, K * d))
        C_proba = (self.C * proba).astype(np.float32)
        for k in range(K):
            for m in range(k, K):
                weights = C_proba[:, k] * ((k == m) - proba[:, m].astype(np.float32))
                block = (self.Z32.T @ (self.Z32 * weights[:, None])).astype(np.float64)
                hessian[k * d : (k + 1) * d, m * d : (m + 1) * d] = block
                hessian[m * d : (m + 1) * d, k * d : (k + 1) * d] = block.T
        hessian.flat[:: K * d + 1] += self.alpha
        return hessian


def _damped_newton(problem, threshold, max_iter) -> NewtonResult:
    """Damped Newton from zero until ``||gradient|| <= threshold``."""
    w = np.zeros(int(np.prod(problem.shape)))
    value, magnitude, cache = problem.value(w)
    gradient_norm = previous_norm = np.inf
    factor = None
    for n_iter in range(max_iter + 1):
        gradient = problem.gradient(w, cache)
        gradient_norm = float(np.linalg.norm(gradient))
        if gradient_norm <= threshold or n_iter == max_iter:
            break
        if factor is None or gradient_norm > _REUSE_BELOW * previous_norm:
            factor = cho_factor(problem.hessian(w, cache), check_finite=False)
        previous_norm = gradient_norm
        step = -cho_solve(factor, gradient)
        slope = gradient @ step
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
            break
        if np.array_equal(candidate, w):
            break  # the step vanished in rounding: at the optimum
        w, value, magnitude, cache = candidate, new_value, new_magnitude, new_cache
    return NewtonResult(
        coef=w.reshape(problem.shape),
        n_iter=n_iter,
        gradient_norm=gradient_norm,
        converged=bool(gradient_norm <= threshold),
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
        problem = _LogisticProblem(Z, Y.ravel(), alpha, C, linear)
    else:
        shape = (Y.shape[1], d)
        linear = np.zeros(shape) if linear is None else np.asarray(linear, float)
        problem = _SoftmaxProblem(Z, (Y > 0).astype(float), alpha, C, linear)
    threshold = tol * (alpha + C * np.linalg.norm(Z, axis=1).sum())
    result = _damped_newton(problem, threshold, max_iter)
    return replace(result, coef=result.coef.reshape(shape))
