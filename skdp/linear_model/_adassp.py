"""Sufficient-statistics perturbation for linear regression (AdaSSP, Wang 2018).

Ridge regression needs only the two sufficient statistics ``Z^T Z`` and
``Z^T t``. AdaSSP releases both with Gaussian noise, together with a noisy
smallest eigenvalue of ``Z^T Z`` that sets the ridge adaptively, and solves
the noisy normal equations (Y.-X. Wang, "Revisiting differentially private
linear regression: optimal and adaptive prediction & estimation in
unbounded domain", UAI 2018, Algorithm 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..accounting._analytic_gaussian import gaussian_noise_multiplier
from ..accounting._events import ComposedEvent
from ..mechanisms import NoisePlan, add_noise, plan_gaussian
from ..utils._feasibility import check_magnitudes, check_memory

__all__ = ["AdaSSPPlan", "plan_adassp", "run_adassp"]

#: Failure probability of the high-probability bounds that set the ridge.
FAILURE_PROBABILITY = 0.05

#: Share of the budget (in zCDP terms: of ``1 / s**2``) spent on the smallest
#: eigenvalue; the rest is split evenly between ``Z^T Z`` and ``Z^T t``.
#: Wang's Algorithm 2 uses 1/3; see ``benchmarks/tune_adassp.py`` for how
#: this value was chosen (a validation split of UCI Adult's training part
#: and synthetic problems, never a test split).
EIGENVALUE_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class AdaSSPPlan:
    """Every setting of one AdaSSP fit (public only).

    Attributes
    ----------
    eigenvalue_noise, gram_noise, moment_noise : NoisePlan
        Gaussian mechanisms on ``lambda_min(Z^T Z)`` (sensitivity ``R**2``),
        the upper triangle of ``Z^T Z`` (``sqrt(2) R**2``) and ``Z^T t``
        (``2 R T``), all at the same noise multiplier.
    alpha : float
        The user's ridge, added to the adaptive one.
    n_features : int
        Columns of ``Z``.
    event : ComposedEvent
        The three Gaussian events.
    """

    eigenvalue_noise: NoisePlan
    gram_noise: NoisePlan
    moment_noise: NoisePlan
    alpha: float
    n_features: int
    event: ComposedEvent


def plan_adassp(
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    target_bound: float,
    n_features: int,
    alpha: float,
    eigenvalue_share: float | None = None,
) -> AdaSSPPlan:
    """Plan AdaSSP from public quantities; may raise.

    Parameters
    ----------
    epsilon, delta : float
        The fit's privacy; ``delta > 0``.
    row_norm : float
        ``R``: every row of ``Z`` has norm at most ``R``.
    target_bound : float
        ``T``: every target has ``|t| <= T``.
    n_features : int
        ``d``, columns of ``Z``.
    alpha : float
        Ridge added to the adaptive one (>= 0).
    eigenvalue_share : float or None, default=None
        Share ``w_1`` of the budget spent on the smallest eigenvalue; the
        others get ``(1 - w_1) / 2`` each. ``None``: ``EIGENVALUE_SHARE``.

    Returns
    -------
    plan : AdaSSPPlan

    Notes
    -----
    Neighbours replace one row ``(z, t)`` by ``(z', t')`` (replace one
    row, ``n`` public). Sensitivities, in L2:

    - ``lambda_min(Z^T Z)``: removing ``z'`` lowers every eigenvalue by at
      most ``||z'||**2`` and adding ``z`` raises it by at most ``||z||**2``
      (Weyl), so it moves by at most ``R**2``;
    - the upper triangle (diagonal included) of ``Z^T Z``: its norm is at
      most the Frobenius norm of ``z z^T - z' z'^T``, whose square is
      ``||z||**4 + ||z'||**4 - 2 (z.z')**2 <= 2 R**4``: ``sqrt(2) R**2``;
    - ``Z^T t``: ``||t z - t' z'|| <= 2 R T``.

    Each is released by the Gaussian mechanism. Gaussian mechanisms with
    multipliers ``s_i`` compose to one with multiplier ``(sum_i
    s_i**-2)**-1/2`` (their privacy-loss distributions are Gaussian and
    their means add), so ``s_i = s / sqrt(w_i)`` with shares ``w_i``
    summing to 1 and ``s`` the analytic-Gaussian multiplier of ``(epsilon,
    delta)`` (Balle & Wang 2018) gives exactly ``(epsilon, delta)``-DP.
    Wang splits evenly (``w_i = 1/3``); the ridge and the solve are
    post-processing.

    Examples
    --------
    >>> from skdp.linear_model._adassp import plan_adassp
    >>> plan = plan_adassp(epsilon=1.0, delta=1e-6, row_norm=1.0,
    ...                    target_bound=1.0, n_features=3, alpha=0.0)
    >>> [p.sensitivity for p in (plan.eigenvalue_noise, plan.moment_noise)]
    [1.0, 2.0]
    >>> len(plan.event.events)
    3
    """
    # Gaussian mechanisms with multipliers s_i compose to one with
    # multiplier (sum_i s_i**-2) ** -1/2; shares w_i of s**-2 give
    # s_i = s / sqrt(w_i).
    if eigenvalue_share is None:
        eigenvalue_share = EIGENVALUE_SHARE
    total = gaussian_noise_multiplier(epsilon, delta) * (1 + 1e-10)
    shares = (eigenvalue_share, (1 - eigenvalue_share) / 2, (1 - eigenvalue_share) / 2)
    multipliers = [total / math.sqrt(w) for w in shares]
    d = int(n_features)
    check_magnitudes("AdaSSP", **{"R**2": row_norm**2, "R T": row_norm * target_bound})
    check_memory(
        8.0 * 6 * d * d,
        f"AdaSSP's {d} x {d} Gram matrix",
        "use fewer features, or method='gradient'",
    )
    eigenvalue = plan_gaussian(row_norm**2, 1, noise_multiplier=multipliers[0])
    gram = plan_gaussian(
        math.sqrt(2.0) * row_norm**2,
        d * (d + 1) // 2,
        noise_multiplier=multipliers[1],
    )
    moment = plan_gaussian(
        2.0 * row_norm * target_bound, d, noise_multiplier=multipliers[2]
    )
    return AdaSSPPlan(
        eigenvalue_noise=eigenvalue,
        gram_noise=gram,
        moment_noise=moment,
        alpha=float(alpha),
        n_features=d,
        event=ComposedEvent((eigenvalue.event, gram.event, moment.event)),
    )


def _standard_deviation(plan: NoisePlan) -> float:
    """The noise's standard deviation in value units."""
    return plan.scale * plan.gamma


def run_adassp(Z: np.ndarray, t: np.ndarray, plan: AdaSSPPlan, source) -> np.ndarray:
    """Release the coefficients ``v`` of a ridge fit of ``t`` on ``Z``.

    Returns
    -------
    coef : ndarray of shape (d,)

    Notes
    -----
    With ``rho = 0.05`` and the noise standard deviations ``s_1`` (the
    eigenvalue) and ``s_2`` (the Gram matrix):

    1. ``lambda_min`` is released with noise and lowered to a bound that
       holds with probability ``1 - rho / 2``:
       ``l = max(0, noisy - s_1 sqrt(2 log(2 / rho)))``;
    2. the Gram matrix's noise ``E`` (a symmetric Gaussian matrix of entry
       standard deviation ``s_2``) has ``E ||E|| <= 2 s_2 sqrt(d)`` and
       ``||E||`` is ``sqrt(2) s_2``-Lipschitz in the Gaussian draws, so
       ``||E|| <= s_2 (2 sqrt(d) + 2 sqrt(log(2 / rho)))`` with probability
       ``1 - rho / 2`` (Bandeira & van Handel 2016; Gaussian
       concentration). Wang's Algorithm 2 uses the looser union bound
       ``s_2 sqrt(2 d log(2 d**2 / rho))``. The ridge is the bound minus
       ``l``, if positive, plus the user's ``alpha``;
    3. ``v`` solves the noisy normal equations. Their matrix is symmetric
       but may be indefinite (noise): its eigenvalues are raised to at
       least the ridge (post-processing) before solving.

    The probabilities concern accuracy only; privacy holds always.
    """
    d = plan.n_features
    gram = Z.T @ Z
    smallest = float(np.linalg.eigvalsh(gram)[0])
    noisy_smallest = float(add_noise(plan.eigenvalue_noise, [smallest], source)[0])
    rows, cols = np.triu_indices(d)
    noisy_upper = add_noise(plan.gram_noise, gram[rows, cols], source)
    noisy_gram = np.zeros((d, d))
    noisy_gram[rows, cols] = noisy_upper
    noisy_gram[cols, rows] = noisy_upper
    noisy_moment = add_noise(plan.moment_noise, Z.T @ t, source)

    rho = FAILURE_PROBABILITY
    s1 = _standard_deviation(plan.eigenvalue_noise)
    s2 = _standard_deviation(plan.gram_noise)
    lower = max(0.0, noisy_smallest - s1 * math.sqrt(2.0 * math.log(2.0 / rho)))
    spread = s2 * (2.0 * math.sqrt(d) + 2.0 * math.sqrt(math.log(2.0 / rho)))
    ridge = max(0.0, spread - lower) + plan.alpha
    values, vectors = np.linalg.eigh(noisy_gram + ridge * np.eye(d))
    floor = max(ridge, np.finfo(float).tiny)
    values = np.maximum(values, floor)
    coef = vectors @ ((vectors.T @ noisy_moment) / values)
    return np.where(np.isfinite(coef), coef, 0.0)
