"""Objective perturbation for L2-regularised logistic regression (pure DP).

Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 2, restated in
scikit-learn's parameterisation ``1/2 ||w||^2 + C sum_i loss_i``.
"""

from __future__ import annotations

import math

import numpy as np

from ..accounting._events import PureDPEvent
from ..mechanisms import l2_vector_noise
from ._newton import NewtonResult, minimize_logistic

__all__ = ["LOGISTIC_CURVATURE", "objective_perturbation", "objective_noise_scale"]

#: Upper bound ``c`` on the second derivative of the logistic loss.
LOGISTIC_CURVATURE = 0.25

#: Smallest share of epsilon left to the noise term; extra regularisation
#: pays for the rest. CMS Algorithm 2 uses 1/2; 0.9 was chosen among
#: {0.5, 0.75, 0.9, 0.97} on a validation split of the training part of UCI
#: Adult (never its test split) and on scikit-learn's small blob problems.
NOISE_SHARE = 0.9


def objective_noise_scale(
    epsilon: float, C: float, row_norm: float
) -> tuple[float, float]:
    """Privacy left for the noise term and the regularisation to use.

    Parameters
    ----------
    epsilon : float
        Total privacy parameter of the fit, > 0.
    C : float
        scikit-learn's inverse regularisation strength.
    row_norm : float
        ``R``, the bound on every row's L2 norm (intercept column included).

    Returns
    -------
    epsilon_noise : float
        ``epsilon'`` of CMS Algorithm 2: the noise ``b`` has density
        proportional to ``exp(-epsilon' ||b|| / 2)``.
    alpha : float
        Coefficient of ``1/2 ||w||^2`` in the perturbed objective: 1 when no
        extra regularisation is needed, more otherwise.

    Notes
    -----
    With ``u = z / R`` (``||u|| <= 1``) and ``v = R w`` the scikit-learn
    objective is ``n C`` times CMS's ``(1/n) sum loss(y v.u) +
    Lambda/2 ||v||^2`` with ``Lambda = 1 / (n C R**2)``. CMS's
    ``2 c / (n Lambda)`` is therefore ``2 c C R**2``: the curvature term
    scales with ``R**2``. Their Theorem 9 holds for any extra
    regularisation ``Delta >= 0`` with
    ``epsilon' = epsilon - 2 log(1 + c / (n (Lambda + Delta)))``. Algorithm 2
    takes ``Delta = 0`` when that leaves ``epsilon' > 0`` and otherwise the
    ``Delta`` giving ``epsilon' = epsilon / 2``. Here ``Delta = 0`` is kept
    only while it leaves ``epsilon' >= s epsilon`` with ``s = NOISE_SHARE``
    (0.9); otherwise ``Delta`` is chosen so that ``epsilon' = s epsilon``,
    which gives ``alpha = n C R**2 (Lambda + Delta)
    = c C R**2 / (exp((1 - s) epsilon / 2) - 1)``. Any ``Delta >= 0`` is
    valid; this one depends only on public quantities. A larger ``s``
    means less noise and more regularisation.

    Examples
    --------
    >>> from skdp.linear_model._objective import objective_noise_scale
    >>> objective_noise_scale(10.0, C=1.0, row_norm=1.0)
    (9.553713..., 1.0)
    >>> epsilon_noise, alpha = objective_noise_scale(1.0, C=1.0, row_norm=2.0)
    >>> epsilon_noise, round(alpha, 3)
    (0.9, 19.504)
    """
    curvature = LOGISTIC_CURVATURE * C * row_norm**2
    epsilon_noise = epsilon - 2.0 * math.log1p(curvature)
    if epsilon_noise >= NOISE_SHARE * epsilon:
        return epsilon_noise, 1.0
    # Solve NOISE_SHARE * epsilon = epsilon - 2 log(1 + curvature / alpha).
    half_rest = (1.0 - NOISE_SHARE) * epsilon / 2.0
    return NOISE_SHARE * epsilon, max(1.0, curvature / math.expm1(half_rest))


def objective_perturbation(
    Z: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    C: float,
    row_norm: float,
    source,
    tol: float,
    max_iter: int,
) -> tuple[NewtonResult, PureDPEvent]:
    """Minimise the perturbed objective; epsilon-DP (replace one row).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows with ``||z_i|| <= row_norm`` (intercept column included).
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    epsilon : float
        Privacy parameter of this fit.
    C : float
        Inverse regularisation strength (scikit-learn's meaning).
    row_norm : float
        Public bound ``R`` on the row norms.
    source : RandomSource
        Noise source.
    tol, max_iter :
        Passed to :func:`~skdp.linear_model._newton.minimize_logistic`.

    Returns
    -------
    result : NewtonResult
        The minimiser of ``alpha/2 ||w||^2 + C sum loss(y_i z_i.w) + C R b.w``.
    event : PureDPEvent
        ``PureDPEvent(epsilon)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._objective import objective_perturbation
    >>> from skdp.utils import check_random_source
    >>> Z = np.array([[0.6, 0.8], [-0.6, 0.8], [0.8, 0.6], [-0.8, 0.6]])
    >>> y = np.array([1, -1, 1, -1])
    >>> result, event = objective_perturbation(
    ...     Z, y, epsilon=1.0, C=1.0, row_norm=1.0,
    ...     source=check_random_source(0), tol=1e-12, max_iter=100)
    >>> event.epsilon, result.converged
    (1.0, True)
    """
    epsilon_noise, alpha = objective_noise_scale(epsilon, C, row_norm)
    b, _ = l2_vector_noise(Z.shape[1], 2.0, epsilon_noise, random_state=source)
    result = minimize_logistic(
        Z, y, alpha=alpha, C=C, linear=C * row_norm * b, tol=tol, max_iter=max_iter
    )
    return result, PureDPEvent(epsilon)
