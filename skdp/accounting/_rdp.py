"""Rényi differential privacy (RDP) curves and their conversion to (ε, δ).

Every function here is pure: it takes public parameters and a grid of Rényi
orders and returns numbers. Nothing is stored. A *curve* is the array of RDP
guarantees ``rdp[i]`` at ``orders[i]``: the mechanism satisfies
``(orders[i], rdp[i])``-RDP for every ``i``. Curves of mechanisms run in
sequence add up (Mironov 2017, Proposition 1), so a composed curve is a sum.

Every curve returned is an *upper bound* on the true Rényi divergence, and
every conversion returns an ε (or δ) that is never below the one the curve
certifies: rounding is always resolved in the direction of less privacy.

References
----------
.. [Mir17] I. Mironov, "Rényi Differential Privacy", CSF 2017.
   arXiv:1702.07476.
.. [MTZ19] I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of
   the Sampled Gaussian Mechanism", 2019. arXiv:1908.10530.
.. [BS16] M. Bun, T. Steinke, "Concentrated Differential Privacy:
   Simplifications, Extensions, and Lower Bounds", TCC 2016.
   arXiv:1605.02065.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020. arXiv:2004.00010.
.. [ACGKN21] S. Asoodeh, J. Liao, F. Calmon, O. Kosut, L. Sankar, "Three
   Variants of Differential Privacy: Lossless Conversion and Applications",
   IEEE JSAIT 2021. arXiv:2008.06529.
.. [BBGHS20] B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato, "Hypothesis
   Testing Interpretations and Rényi Differential Privacy", AISTATS 2020.
   arXiv:1905.09982.
.. [CR21] M. Cesar, R. Rogers, "Bounding, Concentrating, and Truncating:
   Unifying Privacy Loss Composition for Data Analytics", ALT 2021.
   arXiv:2004.07223.
.. [DR19] D. Durfee, R. Rogers, "Practical Differentially Private Top-k
   Selection with Pay-what-you-get Composition", NeurIPS 2019.
   arXiv:1905.04273.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for
   Differential Privacy", ICML 2015. arXiv:1311.0776.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln, gammasgn, log_ndtr

__all__ = [
    "DEFAULT_ORDERS",
    "epsilon_from_zcdp",
    "rdp_exponential_mechanism",
    "rdp_gaussian",
    "rdp_poisson_subsampled_gaussian",
    "rdp_poisson_subsampled_gaussian_replace_one",
    "rdp_pure_dp",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "rdp_epsilon_floor",
    "rdp_zcdp",
]

#: Rényi orders used when none are given: every 0.05 from 1.05 to 10.95,
#: every integer from 11 to 256, then 320, 384, 448, 512, 768 and 1024.
#: This is a superset of dp_accounting's ``DEFAULT_RDP_ORDERS`` (which stops
#: at 63 before jumping to 128, 256, 512, 1024), so the minimum over our grid
#: in ``rdp_to_epsilon`` is never above the minimum over theirs.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [round(1.0 + step / 20.0, 2) for step in range(1, 200)]
    + [float(order) for order in range(11, 257)]
    + [320.0, 384.0, 448.0, 512.0, 768.0, 1024.0]
)

# Relative slack added to the moment sums before taking logs, to cover
# floating-point rounding of the dominant terms (a few ulps each). It moves an
# RDP value by about 1e-12 / (alpha - 1), far below any reported digit, and
# keeps every curve on the safe side of the exact value.
_ROUNDING_SLACK = 1e-12

# Series for fractional orders: start with this many terms and grow 4x until
# the first omitted term is negligible, or the cap is reached. The tail bound
# added in `_log_moment_fractional` keeps the result an upper bound either way.
_FRACTIONAL_INITIAL_TERMS = 64
_FRACTIONAL_MAX_TERMS = 1 << 16
_FRACTIONAL_TAIL_RTOL = 1e-13

OrdersLike = Sequence[float] | np.ndarray


def _check_orders(orders: OrdersLike) -> np.ndarray:
    """Return ``orders`` as a 1-D float array of finite values above 1."""
    orders_array = np.asarray(orders, dtype=float)
    if orders_array.ndim != 1 or orders_array.size == 0:
        raise ValueError("orders must be a non-empty 1-D sequence of floats.")
    if not np.all(np.isfinite(orders_array)) or np.any(orders_array <= 1):
        raise ValueError(
            f"Every Rényi order must be finite and greater than 1; got {orders!r}."
        )
    return orders_array


def _check_nonnegative(name: str, value: float, allow_inf: bool = False) -> float:
    value = float(value)
    if math.isnan(value) or value < 0 or (math.isinf(value) and not allow_inf):
        kind = "non-negative number" if allow_inf else "finite non-negative number"
        raise ValueError(f"{name} must be a {kind}; got {value!r}.")
    return value


def rdp_gaussian(
    noise_multiplier: float, orders: OrdersLike = DEFAULT_ORDERS
) -> np.ndarray:
    """RDP curve of the Gaussian mechanism.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the Gaussian noise divided by the L2
        sensitivity of the query it is added to. ``0`` means no noise.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders, each finite and greater than 1.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        ``orders / (2 * noise_multiplier**2)``; ``inf`` everywhere when
        ``noise_multiplier == 0``.

    Notes
    -----
    For ``f`` with L2 sensitivity ``Δ`` (under whichever neighbouring
    relation ``Δ`` is measured: add/remove or replace one row), releasing
    ``f(x) + N(0, (σΔ)^2 I)`` satisfies ``(α, α / (2σ^2))``-RDP for every
    ``α > 1`` ([Mir17]_, Table II). This is exact, not just
    an upper bound.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_gaussian
    >>> rdp_gaussian(2.0, orders=[2, 4, 8])
    array([0.25, 0.5 , 1.  ])
    """
    sigma = _check_nonnegative("noise_multiplier", noise_multiplier, allow_inf=True)
    orders_array = _check_orders(orders)
    if sigma == 0:
        return np.full_like(orders_array, np.inf)
    return orders_array / (2.0 * sigma**2)


# Entries evaluated at once by the vectorised moment sums (512 KiB per array):
# orders are processed in groups whose terms fit.
_MOMENT_BLOCK = 1 << 16


def _groups(sizes: np.ndarray) -> list[np.ndarray]:
    """Consecutive index groups whose ``sizes`` sum to at most _MOMENT_BLOCK
    (a single larger entry is a group of its own)."""
    groups, start, total = [], 0, 0
    for index, size in enumerate(sizes.tolist()):
        if total and total + size > _MOMENT_BLOCK:
            groups.append(np.arange(start, index))
            start, total = index, 0
        total += size
    groups.append(np.arange(start, sizes.size))
    return groups


def _row_logsumexp(log_values: np.ndarray) -> np.ndarray:
    """``log Σ exp(v)`` along the last axis (``-inf``/``+inf`` entries allowed)."""
    peak = np.max(log_values, axis=-1)
    finite = np.isfinite(peak)
    safe = np.where(finite, peak, 0.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        total = np.sum(np.exp(log_values - safe[..., None]), axis=-1)
        return np.where(finite, safe + np.log(total), peak)


def _log_expm1(exponent: np.ndarray) -> np.ndarray:
    """``log(expm1(x))`` for ``x > 0``, stable for both tiny and huge ``x``."""
    with np.errstate(over="ignore", divide="ignore"):
        return np.where(
            exponent > 30.0,
            exponent + np.log1p(-np.exp(-np.minimum(exponent, 700.0))),
            np.log(np.expm1(np.minimum(exponent, 30.0))),
        )


def _log_moments_integer(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """``log A_α`` of the sampled Gaussian at integer orders ``α >= 2``.

    Uses ``A_α - 1 = Σ_{k=2}^{α} C(α,k) q^k (1-q)^{α-k} expm1((k²-k)/(2σ²))``
    (the binomial expansion of [MTZ19]_ Section 3.3 with the ``k = 0, 1``
    terms, which sum to exactly 1, taken out so small values keep precision).
    The terms of all orders are laid end to end and summed segment by
    segment, a group of orders at a time.
    """
    alphas = np.asarray(alphas, dtype=np.int64)
    out = np.empty(alphas.size)
    if alphas.size == 0:
        return out
    top = int(alphas.max())
    k_all = np.arange(2, top + 1, dtype=float)
    log_expm1 = _log_expm1((k_all * k_all - k_all) / (2.0 * sigma**2))
    log_factorial = gammaln(np.arange(top + 1, dtype=float) + 1.0)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    for group in _groups(alphas - 1):
        lengths = alphas[group] - 1
        starts = np.cumsum(lengths) - lengths
        alpha = np.repeat(alphas[group], lengths)
        k = np.arange(int(lengths.sum())) - np.repeat(starts, lengths) + 2
        k_float = k.astype(float)
        log_terms = (
            log_factorial[alpha]
            - log_factorial[k]
            - log_factorial[alpha - k]
            + k_float * log_q
            + (alpha - k_float) * log_1mq
            + log_expm1[k - 2]
        )
        peak = np.maximum.reduceat(log_terms, starts)
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduceat(
                np.exp(log_terms - np.repeat(peak, lengths)), starts
            )
            log_excess = np.where(np.isfinite(peak), peak + np.log(total), peak)
        out[group] = np.logaddexp(0.0, log_excess + math.log1p(_ROUNDING_SLACK))
    return out


def _log_moments_fractional(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """Upper bounds on ``log A_α`` of the sampled Gaussian, fractional ``α``.

    ``A_α = E_{z~N(0,σ²)}[((1-q) + q exp((2z-1)/(2σ²)))^α]`` is split at
    ``z0 = σ² log(1/q - 1) + 1/2``, where the two summands are equal, and
    each side is expanded in a generalised binomial series in the smaller
    summand ([MTZ19]_ Section 3.3):

    ``A1 = Σ_k C(α,k) q^k (1-q)^{α-k} e^{(k²-k)/(2σ²)} Φ((z0-k)/σ)`` and
    ``A2 = Σ_k C(α,k) (1-q)^k q^{α-k} e^{(j²-j)/(2σ²)} Φ((j-z0)/σ)``,
    ``j = α - k``.

    For ``k > ⌊α⌋`` the coefficients alternate in sign and, pointwise in
    ``z``, decrease in magnitude, so the remainder after the first ``K``
    terms has the sign of term ``K`` and is at most its magnitude. Adding
    term ``K`` when it is positive (and nothing when it is negative) thus
    gives an upper bound however early the series is cut. Each order starts
    with ``max(64, ⌊α⌋ + 2)`` terms, four times more until its first
    omitted term is negligible (or the cap is reached); the orders are
    evaluated together, one row of terms each.
    """
    alphas = np.asarray(alphas, dtype=float)
    out = np.empty(alphas.size)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    z0 = sigma**2 * (log_1mq - log_q) + 0.5
    n_terms = np.maximum(_FRACTIONAL_INITIAL_TERMS, np.floor(alphas) + 2).astype(int)
    pending = np.arange(alphas.size)
    while pending.size:
        unfinished = []
        for group in _groups(n_terms[pending] + 1):
            rows = pending[group]
            alpha, n = alphas[rows][:, None], n_terms[rows][:, None]
            # Terms 0..n-1 of each row are summed; term n bounds the remainder.
            k = np.arange(int(n.max()) + 1, dtype=float)[None, :]
            j = alpha - k
            log_binom = gammaln(alpha + 1.0) - gammaln(k + 1.0) - gammaln(j + 1.0)
            signs = gammasgn(j + 1.0)
            log_t1 = (
                log_binom
                + k * log_q
                + j * log_1mq
                + (k * k - k) / (2.0 * sigma**2)
                + log_ndtr((z0 - k) / sigma)
            )
            log_t2 = (
                log_binom
                + j * log_q
                + k * log_1mq
                + (j * j - j) / (2.0 * sigma**2)
                + log_ndtr((j - z0) / sigma)
            )
            # Positive next term: the remainder may be positive, add its bound.
            summed = (k < n) | ((k == n) & (signs > 0))
            both = np.concatenate([log_t1, log_t2], axis=1)
            positive = np.tile(summed & (signs > 0), 2)
            negative = np.tile(summed & (signs < 0), 2)
            log_positive = _row_logsumexp(np.where(positive, both, -np.inf))
            log_negative = _row_logsumexp(np.where(negative, both, -np.inf))
            with np.errstate(invalid="ignore", over="ignore"):
                log_a = np.where(
                    log_negative == -np.inf,
                    log_positive,
                    np.where(
                        log_negative >= log_positive,
                        np.inf,  # cancellation beyond float precision
                        log_positive + np.log1p(-np.exp(log_negative - log_positive)),
                    ),
                )
            index = n[:, 0]
            tail = np.arange(rows.size)
            log_tail = np.maximum(log_t1[tail, index], log_t2[tail, index])
            done = (log_tail < log_a + math.log(_FRACTIONAL_TAIL_RTOL)) | (
                index >= _FRACTIONAL_MAX_TERMS
            )
            out[rows[done]] = log_a[done] + math.log1p(_ROUNDING_SLACK)
            unfinished.append(rows[~done])
        pending = np.concatenate(unfinished)
        n_terms[pending] *= 4
    return out


def rdp_poisson_subsampled_gaussian(
    sampling_rate: float,
    noise_multiplier: float,
    orders: OrdersLike = DEFAULT_ORDERS,
) -> np.ndarray:
    r"""RDP curve of one step of the Poisson-subsampled Gaussian mechanism.

    Parameters
    ----------
    sampling_rate : float
        Probability ``q`` in ``[0, 1]`` with which each row is included in
        the batch, independently of the others.
    noise_multiplier : float
        Standard deviation of the Gaussian noise divided by the L2
        sensitivity (the clipping norm) of the per-row contribution.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders, each finite and greater than 1.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        Upper bound on the RDP of a single step at each order. All zeros when
        ``sampling_rate == 0``; ``inf`` when ``noise_multiplier == 0`` and
        ``sampling_rate > 0``; the plain Gaussian curve when
        ``sampling_rate == 1``.

    Notes
    -----
    Neighbouring relation: add or remove one row. The mechanism sums the
    contributions of a Poisson sample (each bounded by :math:`\Delta` in L2
    norm) and adds :math:`\mathcal{N}(0, \sigma^2\Delta^2 I)`. Its RDP at
    order :math:`\alpha` is :math:`\log(A_\alpha) / (\alpha - 1)` with

    .. math::

        A_\alpha = \mathbb{E}_{z \sim \mu_0}
        \big[(\mu(z) / \mu_0(z))^\alpha\big],\quad
        \mu_0 = \mathcal{N}(0, \sigma^2),\quad
        \mu = (1 - q)\,\mu_0 + q\,\mathcal{N}(1, \sigma^2);

    [MTZ19]_ Section 3 shows this direction of the divergence dominates the
    reverse one.

    * Integer :math:`\alpha`: the exact binomial expansion
      :math:`A_\alpha = \sum_k \binom{\alpha}{k} (1-q)^{\alpha-k} q^k
      \exp((k^2 - k) / (2\sigma^2))` ([MTZ19]_ Section 3.3), evaluated in
      log space as :math:`1 + \sum_{k \ge 2}` with ``expm1`` so that tiny
      :math:`q` keeps full relative precision.
    * Fractional ``α``: the two convergent series of [MTZ19]_ Section 3.3,
      with the alternating tail bounded explicitly so truncation can only
      increase the result. The value is then capped by the bound from the
      neighbouring integer orders, valid because :math:`\log A_\alpha` is
      convex in :math:`\alpha` (Hölder's inequality) and :math:`A_1 = 1`.
    * Every order is finally capped by the unsampled Gaussian
      :math:`\alpha / (2\sigma^2)`: subsampling never increases the
      divergence (joint convexity of :math:`\exp((\alpha - 1) D_\alpha)`).

    A relative slack of 1e-12 on the moment sums covers rounding, so the
    curve is an upper bound on the exact one, never below it.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_poisson_subsampled_gaussian
    >>> rdp = rdp_poisson_subsampled_gaussian(0.01, 1.0, orders=[2, 2.5, 8])
    >>> [float(round(value, 6)) for value in rdp]
    [0.000172, 0.000218, 0.000894]
    >>> rdp_poisson_subsampled_gaussian(1.0, 2.0, orders=[2, 4])
    array([0.25, 0.5 ])
    """
    q = float(sampling_rate)
    if not 0 <= q <= 1:
        raise ValueError(f"sampling_rate must be in [0, 1]; got {sampling_rate!r}.")
    sigma = _check_nonnegative("noise_multiplier", noise_multiplier, allow_inf=True)
    orders_array = _check_orders(orders)
    if q == 0 or sigma == np.inf:
        return np.zeros_like(orders_array)
    if sigma == 0:
        return np.full_like(orders_array, np.inf)
    gaussian = rdp_gaussian(sigma, orders_array)
    if q == 1:
        return gaussian

    # Integer orders exactly; a fractional order by its series, capped by
    # the chord between its neighbouring integer orders (log A is convex,
    # log A_1 = 0).
    integer = np.array([float(alpha).is_integer() for alpha in orders_array])
    lower = np.floor(orders_array).astype(np.int64)
    needed = np.unique(
        np.concatenate([lower[integer], lower[~integer], lower[~integer] + 1])
    )
    needed = needed[needed >= 2]
    moments = dict(
        zip(needed.tolist(), _log_moments_integer(q, sigma, needed).tolist())
    )
    moments[1] = 0.0
    log_moment = np.empty_like(orders_array)
    log_moment[integer] = [moments[alpha] for alpha in lower[integer].tolist()]
    fractional = orders_array[~integer]
    if fractional.size:
        weight = fractional - lower[~integer]
        below = np.array([moments[alpha] for alpha in lower[~integer].tolist()])
        above = np.array([moments[alpha + 1] for alpha in lower[~integer].tolist()])
        interpolated = (1.0 - weight) * below + weight * above
        log_moment[~integer] = np.minimum(
            _log_moments_fractional(q, sigma, fractional), interpolated
        )
    rdp = log_moment / (orders_array - 1.0)
    return np.minimum(rdp, gaussian)


def rdp_poisson_subsampled_gaussian_replace_one(
    sampling_rate: float,
    noise_multiplier: float,
    orders: OrdersLike = DEFAULT_ORDERS,
) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian step when one row is *replaced*.

    skdp's neighbouring relation is "replace one row" (``n`` is public).
    ``rdp_poisson_subsampled_gaussian`` is the add/remove-one curve of
    [MTZ19]_; this function turns it into a replace-one curve.

    Parameters
    ----------
    sampling_rate : float
        Probability ``q`` in ``[0, 1]`` with which each row joins the batch.
    noise_multiplier : float
        Noise standard deviation divided by the L2 bound ``C`` on one row's
        contribution (the clipping norm).
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders, each finite and greater than 1.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        Upper bound on the replace-one RDP of one step at each order.

    Notes
    -----
    Let ``D`` and ``D'`` differ in row ``i`` and let ``R`` be ``D`` without
    row ``i``; ``M(D)`` vs ``M(R)`` and ``M(R)`` vs ``M(D')`` are add/remove
    neighbours. The weak triangle inequality for Rényi divergences
    (Mironov 2017, Proposition 11, with ``p = q = 2``) gives

    ``D_a(M(D) || M(D')) <= (a - 1/2) / (a - 1) * D_{2a}(M(D) || M(R))
    + D_{2a-1}(M(R) || M(D'))``,

    and both terms are bounded by the add/remove curve of [MTZ19]_ (which
    also dominates the removal direction). The result is capped by the
    unsampled Gaussian with replace-one sensitivity ``2C``,
    ``2 a / sigma**2``. For small ``q`` this costs about four times the
    add/remove RDP (about twice the noise for the same epsilon), the price of
    a sensitivity of ``2C`` instead of ``C``.

    Examples
    --------
    >>> from skdp.accounting._rdp import (
    ...     rdp_poisson_subsampled_gaussian,
    ...     rdp_poisson_subsampled_gaussian_replace_one,
    ... )
    >>> add_remove = rdp_poisson_subsampled_gaussian(0.01, 1.0, orders=[4.0])
    >>> replace = rdp_poisson_subsampled_gaussian_replace_one(0.01, 1.0, orders=[4.0])
    >>> bool(add_remove[0] < replace[0] < 8 * add_remove[0])
    True
    """
    orders_array = _check_orders(orders)
    sigma = _check_nonnegative("noise_multiplier", noise_multiplier, allow_inf=True)
    # Both add/remove curves in one call: their orders share integer moments.
    both = rdp_poisson_subsampled_gaussian(
        sampling_rate,
        sigma,
        np.concatenate([2.0 * orders_array, 2.0 * orders_array - 1.0]),
    )
    forward, backward = both[: orders_array.size], both[orders_array.size :]
    with np.errstate(invalid="ignore"):
        triangle = (orders_array - 0.5) / (orders_array - 1.0) * forward + backward
    if float(sampling_rate) == 0:
        return np.zeros_like(orders_array)
    return np.minimum(triangle, rdp_gaussian(sigma / 2.0, orders_array))


def rdp_pure_dp(epsilon: float, orders: OrdersLike = DEFAULT_ORDERS) -> np.ndarray:
    r"""RDP curve implied by pure ε-differential privacy.

    Parameters
    ----------
    epsilon : float
        The pure DP parameter, finite and non-negative.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders, each finite and greater than 1.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        The tight bound
        :math:`\frac{1}{\alpha - 1} \log \frac{e^{\alpha\varepsilon}
        + e^{-(\alpha - 1)\varepsilon}}{1 + e^{\varepsilon}}`, which is
        never above :math:`\min(\varepsilon, \alpha\varepsilon^2 / 2)`.

    Notes
    -----
    Holds for any neighbouring relation under which the mechanism is
    :math:`\varepsilon`-DP. Any pair of distributions whose likelihood
    ratio lies in :math:`[e^{-\varepsilon}, e^{\varepsilon}]` is a
    post-processing of binary randomised response with parameter
    :math:`\varepsilon` ([KOV15]_: the privacy region of
    :math:`\varepsilon`-DP is that of randomised response), so by the
    data-processing inequality its Rényi divergence is at most that of
    randomised response, which is the expression above. This is the
    quantity bounded in the proof that :math:`\varepsilon`-DP implies
    :math:`(\varepsilon^2/2)`-zCDP ([BS16]_ Proposition 1.4). The result is
    also capped by :math:`\min(\varepsilon, \alpha\varepsilon^2/2)`
    (:math:`D_\alpha \le D_\infty = \varepsilon` by monotonicity of the
    Rényi divergence in :math:`\alpha` [Mir17]_, and [BS16]_
    Proposition 1.4) to guard against rounding.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_pure_dp
    >>> rdp = rdp_pure_dp(1.0, orders=[2, 10, 1000])
    >>> [float(round(value, 4)) for value in rdp]
    [0.7353, 0.9652, 0.9997]
    """
    epsilon = _check_nonnegative("epsilon", epsilon)
    orders_array = _check_orders(orders)
    log_moment = np.logaddexp(
        orders_array * epsilon, -(orders_array - 1.0) * epsilon
    ) - np.logaddexp(0.0, epsilon)
    # For epsilon below ~1e-7 the difference of logs can round below zero;
    # a Rényi divergence never is.
    tight = np.maximum(log_moment / (orders_array - 1.0), 0.0)
    return np.minimum(tight, np.minimum(epsilon, orders_array * epsilon**2 / 2.0))


def rdp_exponential_mechanism(
    epsilon: float, orders: OrdersLike = DEFAULT_ORDERS
) -> np.ndarray:
    r"""RDP curve of the exponential mechanism through bounded range.

    Parameters
    ----------
    epsilon : float
        Privacy parameter of the exponential mechanism in the standard
        calibration: the candidate :math:`r` is drawn with probability
        proportional to :math:`\exp(\varepsilon u(x, r) / (2\Delta))`,
        where :math:`\Delta` bounds :math:`|u(x, r) - u(x', r)|` over
        neighbours :math:`x, x'` and all :math:`r`.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders, each finite and greater than 1.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        ``min(rdp_pure_dp(epsilon), alpha * epsilon**2 / 8)`` at each order
        :math:`\alpha`.

    Notes
    -----
    Assumptions, stated exactly: the mechanism samples with weights
    :math:`\exp(\varepsilon u / (2\Delta))` and :math:`\Delta` is the
    sensitivity of :math:`u` for each fixed candidate under the chosen
    neighbouring relation. Then for neighbours the log-likelihood ratio of an
    output :math:`r` is
    :math:`\varepsilon (u(x, r) - u(x', r)) / (2\Delta) - c` with :math:`c`
    independent of :math:`r`, so its range over :math:`r` is at most
    :math:`\varepsilon`: the mechanism is :math:`\varepsilon`-bounded-range
    ([DR19]_). An :math:`\varepsilon`-bounded-range mechanism satisfies
    :math:`(\varepsilon^2/8)`-zCDP ([CR21]_), i.e.
    :math:`(\alpha, \alpha\varepsilon^2/8)`-RDP. It is also
    :math:`\varepsilon`-DP, hence the minimum with ``rdp_pure_dp``.

    Do not pass the :math:`\varepsilon` of a mechanism calibrated as
    :math:`\exp(\varepsilon u / \Delta)` (the variant for monotone
    utilities): that mechanism is :math:`\varepsilon`-DP but only
    :math:`2\varepsilon`-bounded-range, so pass ``2 * epsilon`` in that
    case.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_exponential_mechanism
    >>> rdp = rdp_exponential_mechanism(1.0, orders=[2, 10, 1000])
    >>> [float(round(value, 4)) for value in rdp]
    [0.25, 0.9652, 0.9997]
    """
    epsilon = _check_nonnegative("epsilon", epsilon)
    orders_array = _check_orders(orders)
    return np.minimum(
        rdp_pure_dp(epsilon, orders_array), orders_array * epsilon**2 / 8.0
    )


def rdp_zcdp(rho: float, orders: OrdersLike = DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of a ρ-zCDP mechanism.

    Parameters
    ----------
    rho : float
        The zCDP parameter, finite and non-negative.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders, each finite and greater than 1.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        ``α ρ`` at each order.

    Notes
    -----
    ρ-zCDP is by definition ``(α, α ρ)``-RDP for every ``α > 1``
    ([BS16]_ Definition 1.1), under the neighbouring relation the zCDP
    guarantee was stated for.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_zcdp
    >>> rdp_zcdp(0.5, orders=[2, 4])
    array([1., 2.])
    """
    rho = _check_nonnegative("rho", rho)
    return _check_orders(orders) * rho


def _check_curve(rdp: OrdersLike, orders: OrdersLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate an RDP curve and its orders for the conversions."""
    rdp_array = np.asarray(rdp, dtype=float)
    orders_array = np.asarray(orders, dtype=float)
    if orders_array.ndim != 1 or orders_array.size == 0:
        raise ValueError("orders must be a non-empty 1-D sequence of floats.")
    if rdp_array.shape != orders_array.shape:
        raise ValueError(
            f"rdp and orders must have the same shape; got {rdp_array.shape} "
            f"and {orders_array.shape}."
        )
    if not np.all(np.isfinite(orders_array)):
        raise ValueError("Every Rényi order must be finite.")
    if np.any(rdp_array < 0):
        raise ValueError("RDP values must be non-negative (or inf, or nan).")
    return rdp_array, orders_array


def _usable(rdp: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Mask of entries that give a bound: order above 1, finite RDP value."""
    return (orders > 1) & np.isfinite(rdp)


def _epsilon_per_order(rdp: np.ndarray, orders: np.ndarray, delta: float) -> np.ndarray:
    """ε certified by each order separately (``inf`` where none is)."""
    epsilons = np.full_like(orders, np.inf)
    usable = _usable(rdp, orders)
    if delta > 0:
        alpha = orders[usable]
        epsilons[usable] = (
            rdp[usable]
            + np.log1p(-1.0 / alpha)
            - (math.log(delta) + np.log(alpha)) / (alpha - 1.0)
        )
    # D_α(P || Q) = 0 for every neighbouring pair means P = Q: (0, 0)-DP.
    epsilons[usable & (rdp == 0)] = 0.0
    return epsilons


def rdp_epsilon_floor(orders: OrdersLike, delta: float) -> float:
    """The smallest epsilon ``rdp_to_epsilon`` can give at ``delta``.

    The limit of the conversion as the curve tends to zero (unbounded
    noise): ``min_alpha log(1 - 1/alpha) - (log delta + log alpha) / (alpha
    - 1)`` over ``orders``, floored at 0.

    Examples
    --------
    >>> from skdp.accounting._rdp import DEFAULT_ORDERS, rdp_epsilon_floor
    >>> round(rdp_epsilon_floor(DEFAULT_ORDERS, 1e-5), 4)
    0.0035
    """
    orders_array = _check_orders(orders)
    vanishing = np.full_like(orders_array, np.finfo(float).tiny)
    return max(float(np.min(_epsilon_per_order(vanishing, orders_array, delta))), 0.0)


def rdp_to_epsilon(
    rdp: OrdersLike, orders: OrdersLike, delta: float
) -> tuple[float, float]:
    r"""Smallest ε that an RDP curve certifies at a given δ.

    Parameters
    ----------
    rdp : sequence of float
        RDP guarantee at each order (already composed). ``inf`` and ``nan``
        entries carry no information and are skipped.
    orders : sequence of float
        The matching Rényi orders. Orders ``<= 1`` are skipped, since the
        conversion needs ``α > 1``.
    delta : float
        Target δ in ``[0, 1]``.

    Returns
    -------
    epsilon : float
        The smallest certified ε, never negative. ``inf`` when no order
        gives a bound, and for ``delta == 0`` unless the curve is zero at some
        usable order.
    order : float
        The order attaining it, or ``nan`` when ``epsilon`` is ``inf``.

    Notes
    -----
    A mechanism that is :math:`(\alpha, r)`-RDP is
    :math:`(\varepsilon, \delta)`-DP with

    .. math::

        \varepsilon = r + \log(1 - 1/\alpha)
        - \frac{\log\delta + \log\alpha}{\alpha - 1}

    ([CKS20]_ Proposition 12; also [ACGKN21]_ and [BBGHS20]_). This
    improves on the classical :math:`r + \log(1/\delta) / (\alpha - 1)`
    ([Mir17]_ Proposition 3) by
    :math:`\log(\alpha/(\alpha-1)) + \log(\alpha)/(\alpha-1)`. Every
    order gives a valid bound, so the minimum over orders is valid too. A
    curve that is zero at some order means identical output distributions,
    hence :math:`\varepsilon = 0`.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_gaussian, rdp_to_epsilon
    >>> orders = [2, 4, 8, 16, 32]
    >>> epsilon, order = rdp_to_epsilon(rdp_gaussian(4.0, orders), orders, 1e-5)
    >>> round(epsilon, 4), order
    (1.0182, 16.0)
    """
    rdp_array, orders_array = _check_curve(rdp, orders)
    delta = float(delta)
    if not 0 <= delta <= 1:
        raise ValueError(f"delta must be in [0, 1]; got {delta!r}.")
    epsilons = _epsilon_per_order(rdp_array, orders_array, delta)
    best = int(np.argmin(epsilons))
    if epsilons[best] == np.inf:
        return math.inf, math.nan
    return max(float(epsilons[best]), 0.0), float(orders_array[best])


def rdp_to_delta(
    rdp: OrdersLike, orders: OrdersLike, epsilon: float
) -> tuple[float, float]:
    r"""Smallest δ that an RDP curve certifies at a given ε.

    Parameters
    ----------
    rdp : sequence of float
        RDP guarantee at each order (already composed). ``inf`` and ``nan``
        entries carry no information and are skipped.
    orders : sequence of float
        The matching Rényi orders. Orders ``<= 1`` are skipped.
    epsilon : float
        Target ε, non-negative.

    Returns
    -------
    delta : float
        The smallest certified δ, in ``[0, 1]``; ``1.0`` when no order gives
        a bound.
    order : float
        The order attaining it, or ``nan`` when no order gives a bound.

    Notes
    -----
    Inverts the conversion of ``rdp_to_epsilon`` at each order
    ([CKS20]_ Proposition 12):
    :math:`\log\delta = (\alpha - 1)(r - \varepsilon + \log(1 - 1/\alpha))
    - \log\alpha`, minimised over orders and capped at 1.

    Examples
    --------
    >>> from skdp.accounting._rdp import rdp_gaussian, rdp_to_delta
    >>> orders = [2, 4, 8, 16, 32]
    >>> delta, order = rdp_to_delta(rdp_gaussian(4.0, orders), orders, 1.0182)
    >>> round(delta * 1e5, 2), order
    (1.0, 16.0)
    """
    rdp_array, orders_array = _check_curve(rdp, orders)
    epsilon = _check_nonnegative("epsilon", epsilon, allow_inf=True)
    usable = _usable(rdp_array, orders_array)
    log_deltas = np.full_like(orders_array, np.inf)
    alpha = orders_array[usable]
    with np.errstate(invalid="ignore"):
        log_deltas[usable] = (alpha - 1.0) * (
            rdp_array[usable] - epsilon + np.log1p(-1.0 / alpha)
        ) - np.log(alpha)
    log_deltas[usable & (rdp_array == 0)] = -np.inf
    log_deltas[np.isnan(log_deltas)] = -np.inf  # epsilon == inf
    best = int(np.argmin(log_deltas))
    if log_deltas[best] == np.inf:
        return 1.0, math.nan
    return min(math.exp(log_deltas[best]), 1.0), float(orders_array[best])


def epsilon_from_zcdp(
    rho: float, delta: float, orders: OrdersLike = DEFAULT_ORDERS
) -> float:
    """ε certified at δ by a ρ-zCDP guarantee.

    Parameters
    ----------
    rho : float
        The zCDP parameter, finite and non-negative.
    delta : float
        Target δ in ``[0, 1]``.
    orders : sequence of float, default=DEFAULT_ORDERS
        Orders over which the conversion is minimised.

    Returns
    -------
    epsilon : float
        ``rdp_to_epsilon(rdp_zcdp(rho, orders), orders, delta)[0]``.

    Notes
    -----
    See ``rdp_zcdp`` and ``rdp_to_epsilon`` ([BS16]_, [CKS20]_).
    Minimising over a grid rather than over all ``α > 1`` can only make ε
    larger, so the result remains valid.

    Examples
    --------
    >>> from skdp.accounting._rdp import epsilon_from_zcdp
    >>> round(epsilon_from_zcdp(0.5, 1e-5), 3)
    4.728
    """
    orders_array = _check_orders(orders)
    return rdp_to_epsilon(rdp_zcdp(rho, orders_array), orders_array, delta)[0]
