"""Draw the secret number of trials of a random-stopping search.

The privacy analysis of random stopping (Papernot & Steinke 2022) needs the
number of trials ``K`` to follow its distribution exactly, independently of
the data, and to stay unknown to whoever sees the result. Both samplers take
a :class:`~skdp.utils.RandomSource`, so ``K`` comes from the operating
system's CSPRNG unless the search was seeded for a test.
"""

from __future__ import annotations

import math

from ..utils._random import RandomSource

__all__ = ["sample_poisson", "sample_truncated_negative_binomial"]


def sample_truncated_negative_binomial(
    shape: float, stopping_probability: float, source: RandomSource
) -> int:
    """One draw ``K >= 1`` of the truncated negative binomial ``(eta, gamma)``.

    Parameters
    ----------
    shape : float
        ``eta > -1`` (1: geometric, 0: logarithmic).
    stopping_probability : float
        ``gamma`` in (0, 1).
    source : RandomSource
        Where the uniform variate comes from.

    Returns
    -------
    k : int

    Notes
    -----
    Inversion of the distribution function: one uniform ``u`` in (0, 1),
    then the smallest ``k`` with ``P[K <= k] >= u``, walking the masses with
    ``P[K = 1] = (1 - gamma) eta / (gamma**-eta - 1)`` (``(1 - gamma) /
    log(1/gamma)`` at ``eta = 0``) and ``P[K = k + 1] / P[K = k] =
    (1 - gamma) (k + eta) / (k + 1)`` (Papernot & Steinke 2022,
    Definition 1). The cost is ``K`` steps. The walk stops early only if a
    mass underflows to zero, where the remaining probability is below
    floating-point resolution.

    Examples
    --------
    >>> from skdp.model_selection._stopping import sample_truncated_negative_binomial
    >>> from skdp.utils import check_random_source
    >>> k = sample_truncated_negative_binomial(1.0, 0.1, check_random_source(0))
    >>> k >= 1
    True
    """
    eta, gamma = float(shape), float(stopping_probability)
    log_gamma = math.log(gamma)
    if eta == 0:
        mass = (1.0 - gamma) / -log_gamma
    else:
        mass = (1.0 - gamma) * eta / math.expm1(-eta * log_gamma)
    u = float(source.uniform(1)[0])
    k, cumulative = 1, mass
    while cumulative < u:
        mass *= (1.0 - gamma) * (k + eta) / (k + 1)
        if mass == 0.0:
            break
        k += 1
        cumulative += mass
    return k


def sample_poisson(mean: float, source: RandomSource) -> int:
    """One draw of a Poisson variate with mean ``mean``, possibly 0.

    Counts the arrivals of a rate-``mean`` Poisson process in [0, 1], with
    exponential gaps from ``source``; the cost is about ``mean + 1`` draws.

    Examples
    --------
    >>> from skdp.model_selection._stopping import sample_poisson
    >>> from skdp.utils import check_random_source
    >>> sample_poisson(5.0, check_random_source(0)) >= 0
    True
    """
    mean = float(mean)
    chunk = int(mean + 4.0 * math.sqrt(mean) + 8)
    count, time = 0, 0.0
    while True:
        for gap in source.exponential(chunk) / mean:
            time += float(gap)
            if time > 1.0:
                return count
            count += 1
