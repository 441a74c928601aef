"""Exact minimiser of the regularised logistic objective (damped Newton).

Objective and output perturbation are private only for the *exact*
minimiser of a strongly convex objective, so both solve

.. math::

    J(w) = \\frac{\\alpha}{2} \\|w\\|^2 + C \\sum_i \\log(1 + e^{-y_i z_i^T w})
           + b^T w

to machine precision with Newton's method: a Cholesky solve of the Hessian
``alpha I + C Z^T diag(p (1 - p)) Z`` per step and a backtracking
(Armijo) line search, which makes the method globally convergent on this
strongly convex function and quadratically convergent near the optimum.
Once a step cuts the gradient norm ten-fold the Hessian is kept (its
factor reused) until progress slows, and it is formed in single precision:
neither changes the fixed point, which only the double-precision gradient
determines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit

__all__ = ["NewtonResult", "minimize_logistic"]

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
    """Solution of :func:`minimize_logistic`.

    Attributes
    ----------
    coef : ndarray of shape (d,)
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


def _hessian_factor(Z32, p, alpha, C):
    """Cholesky factor of ``alpha I + C Z^T diag(p (1 - p)) Z``.

    The product is formed in single precision (twice as fast); the Hessian
    only steers the steps, while the gradient, hence the point the
    iteration converges to, is computed in double precision.
    """
    weighted = Z32 * np.sqrt(C * p * (1.0 - p)).astype(np.float32)[:, None]
    hessian = (weighted.T @ weighted).astype(np.float64)
    hessian.flat[:: hessian.shape[0] + 1] += alpha
    return cho_factor(hessian, check_finite=False)


def _objective(w, Z, y, alpha, C, linear):
    margins = y * (Z @ w)
    loss = np.logaddexp(0.0, -margins).sum()
    return 0.5 * alpha * (w @ w) + C * loss + linear @ w, margins


def minimize_logistic(
    Z: np.ndarray,
    y: np.ndarray,
    *,
    alpha: float,
    C: float,
    linear: np.ndarray | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> NewtonResult:
    """Minimise ``alpha/2 ||w||^2 + C sum log(1 + exp(-y z.w)) + linear.w``.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows ``z_i`` (intercept column already appended if wanted).
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    alpha : float
        Strong convexity of the regulariser, > 0.
    C : float
        Weight of the summed loss, > 0.
    linear : ndarray of shape (d,), optional
        The linear (perturbation) term ``b``; zero if omitted.
    tol : float, default=1e-12
        Stop when ``||grad J||_2 <= tol * (alpha + C * sum_i ||z_i||)``,
        i.e. relative to the scale of the gradient's terms.
    max_iter : int, default=100
        Maximum number of Newton steps.

    Returns
    -------
    NewtonResult

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._newton import minimize_logistic
    >>> Z = np.array([[1.0, 1.0], [-1.0, 1.0], [0.5, 1.0]])
    >>> res = minimize_logistic(Z, np.array([1, -1, 1]), alpha=1.0, C=1.0)
    >>> res.converged, res.gradient_norm < 1e-9
    (True, True)
    """
    n, d = Z.shape
    y = np.asarray(y, dtype=float)
    linear = np.zeros(d) if linear is None else np.asarray(linear, dtype=float)
    threshold = tol * (alpha + C * np.linalg.norm(Z, axis=1).sum())
    w = np.zeros(d)
    value, margins = _objective(w, Z, y, alpha, C, linear)
    gradient_norm = previous_norm = np.inf
    factor = None
    Z32 = Z.astype(np.float32)
    for n_iter in range(max_iter + 1):
        p = expit(-margins)  # = -dloss/dmargin, in (0, 1)
        gradient = alpha * w - C * (Z.T @ (y * p)) + linear
        gradient_norm = float(np.linalg.norm(gradient))
        if gradient_norm <= threshold or n_iter == max_iter:
            break
        if factor is None or gradient_norm > _REUSE_BELOW * previous_norm:
            factor = _hessian_factor(Z32, p, alpha, C)
        previous_norm = gradient_norm
        step = -cho_solve(factor, gradient)
        slope = gradient @ step
        size = 1.0
        for _ in range(_MAX_HALVINGS):
            candidate = w + size * step
            new_value, new_margins = _objective(candidate, Z, y, alpha, C, linear)
            # Allow rounding error in the comparison at the optimum.
            slack = _ROUNDING * abs(value)
            if new_value <= value + _ARMIJO * size * slope + slack:
                break
            size *= _SHRINK
        else:
            # No decrease representable in floating point: at the optimum.
            break
        w, value, margins = candidate, new_value, new_margins
    return NewtonResult(
        coef=w,
        n_iter=n_iter,
        gradient_norm=gradient_norm,
        converged=bool(gradient_norm <= threshold),
    )
