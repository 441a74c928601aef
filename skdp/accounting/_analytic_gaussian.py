"""Exact (epsilon, delta) profile of the Gaussian mechanism.

Balle & Wang (2018), "Improving the Gaussian Mechanism for Differential
Privacy: Analytical Calibration and Optimal Denoising", Theorem 8: the
Gaussian mechanism with noise standard deviation ``sigma`` and L2 sensitivity
``Delta`` is ``(epsilon, delta)``-DP if and only if

    delta >= Phi(Delta / (2 sigma) - epsilon sigma / Delta)
             - exp(epsilon) Phi(-Delta / (2 sigma) - epsilon sigma / Delta).

With the noise multiplier ``s = sigma / Delta`` the right-hand side depends on
``(epsilon, s)`` only. The profile holds for every epsilon > 0 (unlike the
classical ``sqrt(2 ln(1.25/delta))/epsilon`` calibration, which needs
epsilon < 1). Composing Gaussian mechanisms with multipliers ``s_i`` is
exactly a Gaussian mechanism with ``s = (sum_i s_i**-2) ** -0.5``
(Dong, Roth & Su 2022, Gaussian DP), so the same profile is exact for them.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from ._search import solve_monotone

# Beyond this epsilon a Gaussian mechanism is reported as not (epsilon,
# delta)-DP at all (as before this bound was the end of a doubling search).
_MAX_EPSILON = 1e6
# gaussian_delta carries float round-off of about 1e-15 relative; both
# solvers aim at a delta this much smaller, so that what they return stays
# on the safe side of the exact crossing however the search lands.
_DELTA_RTOL = 1e-12

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
]


def gaussian_delta(epsilon: float, noise_multiplier: float) -> float:
    r"""Smallest delta for which the Gaussian mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        Target epsilon, >= 0.
    noise_multiplier : float
        Noise standard deviation divided by L2 sensitivity, > 0.

    Returns
    -------
    delta : float

    Notes
    -----
    Balle & Wang (2018), Theorem 8: noise of standard deviation
    :math:`\sigma = s\,\Delta` on a value of L2 sensitivity :math:`\Delta`
    is :math:`(\varepsilon, \delta)`-DP if and only if

    .. math::

        \delta \ge \Phi\Big(\frac{1}{2s} - \varepsilon s\Big)
        - e^{\varepsilon}\,\Phi\Big(-\frac{1}{2s} - \varepsilon s\Big),

    which depends on :math:`(\varepsilon, s)` only; the right-hand side (at least
    0) is returned. It holds for every :math:`\varepsilon \ge 0`, unlike the
    classical calibration :math:`s = \sqrt{2\ln(1.25/\delta)} / \varepsilon`,
    which needs :math:`\varepsilon < 1`. Gaussian mechanisms with
    multipliers :math:`s_i` compose exactly into one with
    :math:`s = (\sum_i s_i^{-2})^{-1/2}` (Dong, Roth & Su 2022), so the
    profile is exact for their composition too.

    Examples
    --------
    >>> from skdp.accounting import gaussian_delta
    >>> round(gaussian_delta(1.0, 1.0), 4)
    0.1269
    """
    s = float(noise_multiplier)
    eps = float(epsilon)
    a = 1.0 / (2.0 * s)
    b = eps * s
    first = ndtr(a - b)
    # exp(eps) * Phi(-a - b) computed in log space to avoid overflow.
    second = math.exp(eps + log_ndtr(-a - b)) if eps + log_ndtr(-a - b) > -745 else 0.0
    return float(max(first - second, 0.0))


def gaussian_epsilon(
    noise_multiplier: float, delta: float, *, tol: float = 1e-12
) -> float:
    """Smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    Solved on :func:`gaussian_delta` by the shared monotone search
    (``skdp.accounting._search.solve_monotone``), which returns the
    acceptable end of its final bracket, so the result is never below the
    exact value.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by L2 sensitivity, > 0.
    delta : float
        In (0, 1).
    tol : float, default=1e-12
        Relative width of the final bracket.

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from skdp.accounting import gaussian_epsilon
    >>> eps = gaussian_epsilon(1.0, 0.1269)
    >>> round(eps, 3)
    1.0
    """
    if not 0 < delta < 1:
        if delta >= 1:
            return 0.0
        return math.inf
    if gaussian_delta(0.0, noise_multiplier) <= delta:
        return 0.0
    if gaussian_delta(_MAX_EPSILON, noise_multiplier) > delta:
        return math.inf
    # delta(epsilon) falls as epsilon grows: the smallest acceptable epsilon.
    return solve_monotone(
        lambda eps: gaussian_delta(eps, noise_multiplier),
        delta * (1.0 - _DELTA_RTOL),
        increasing=False,
        bracket=(0.5, 2.0),
        tolerance=tol,
    )


def gaussian_noise_multiplier(
    epsilon: float, delta: float, *, tol: float = 1e-12
) -> float:
    """Smallest noise multiplier making the Gaussian mechanism (epsilon, delta)-DP.

    Analytic calibration of Balle & Wang (2018), Algorithm 1, solved by the
    shared monotone search; the acceptable (upper) end of the final bracket
    is returned, so the guarantee always holds. Valid for any epsilon > 0.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    tol : float, default=1e-12
        Relative width of the final bracket.

    Returns
    -------
    noise_multiplier : float
        Standard deviation of the noise per unit of L2 sensitivity.

    Examples
    --------
    >>> from skdp.accounting import gaussian_noise_multiplier
    >>> round(gaussian_noise_multiplier(1.0, 1e-5), 3)
    3.73
    """
    epsilon = float(epsilon)
    delta = float(delta)
    if not (epsilon > 0 and np.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(
            f"delta must be in (0, 1) for the Gaussian mechanism, got {delta!r}."
        )
    # delta falls as the noise grows: the smallest acceptable multiplier.
    return solve_monotone(
        lambda s: gaussian_delta(epsilon, s),
        delta * (1.0 - _DELTA_RTOL),
        increasing=False,
        bracket=(0.5, 2.0),
        tolerance=tol,
    )
