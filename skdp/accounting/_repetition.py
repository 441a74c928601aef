"""Rényi DP of repeating a mechanism a random number of times (random stopping).

Hyperparameter tuning runs a base mechanism ``Q`` (train a candidate with
DP, then score it privately) ``K`` times and releases only the best run. If
``K`` were fixed, the release would cost up to ``K`` runs' worth of privacy.
When ``K`` is random, independent of the data and kept secret, the cost is
about that of a couple of runs: this module holds the bounds of Papernot &
Steinke (2022) for the two families of distributions they analyse, and the
distributions' own formulas (mean, probability mass, parameter from mean).

Everything here is pure: public parameters in, numbers out.

References
----------
.. [BH79] J. Bretagnolle, C. Huber, "Estimation des densités : risque
   minimax", Z. Wahrscheinlichkeitstheorie verw. Gebiete 47, 1979.
.. [LT19] J. Liu, K. Talwar, "Private Selection from Private Candidates",
   STOC 2019. arXiv:1811.07971.
.. [PS22] N. Papernot, T. Steinke, "Hyperparameter Tuning with Renyi
   Differential Privacy", ICLR 2022. arXiv:2110.03620.
.. [vEH14] T. van Erven, P. Harremoës, "Rényi Divergence and Kullback-Leibler
   Divergence", IEEE Trans. Inf. Theory 60(7), 2014.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from ._rdp import OrdersLike, _check_curve

__all__ = [
    "epsilon_repeated_truncated_negative_binomial",
    "rdp_repeated_poisson",
    "rdp_repeated_truncated_negative_binomial",
    "truncated_negative_binomial_mean",
    "truncated_negative_binomial_stopping_probability",
]


def _check_tnb(shape: float, stopping_probability: float) -> tuple[float, float]:
    eta, gamma = float(shape), float(stopping_probability)
    if not (math.isfinite(eta) and eta > -1):
        raise ValueError(f"shape must be finite and > -1; got {shape!r}.")
    if not 0 < gamma < 1:
        raise ValueError(
            f"stopping_probability must be in (0, 1); got {stopping_probability!r}."
        )
    return eta, gamma


def truncated_negative_binomial_mean(
    shape: float, stopping_probability: float
) -> float:
    """Mean of the truncated negative binomial distribution.

    Parameters
    ----------
    shape : float
        ``eta > -1``; 1 is the geometric distribution, 0 the logarithmic one.
    stopping_probability : float
        ``gamma`` in (0, 1).

    Returns
    -------
    mean : float
        ``eta (1 - gamma) / (gamma (1 - gamma**eta))``, and its limit
        ``(1 - gamma) / (gamma log(1/gamma))`` at ``eta = 0`` ([PS22]_,
        Section 2).

    Examples
    --------
    >>> from skdp.accounting._repetition import truncated_negative_binomial_mean
    >>> truncated_negative_binomial_mean(1.0, 0.1)  # geometric: 1 / gamma
    10.0
    """
    eta, gamma = _check_tnb(shape, stopping_probability)
    log_gamma = math.log(gamma)
    # (1 - gamma**eta) / eta, accurate near eta = 0 where it tends to log(1/gamma).
    ratio = -log_gamma if eta == 0 else -math.expm1(eta * log_gamma) / eta
    return (1.0 - gamma) / (gamma * ratio)


def truncated_negative_binomial_stopping_probability(
    shape: float, mean: float
) -> float:
    """The ``gamma`` that gives a truncated negative binomial a given mean.

    Parameters
    ----------
    shape : float
        ``eta > -1``.
    mean : float
        Target mean, > 1 (the mean tends to 1 as ``gamma`` tends to 1).

    Returns
    -------
    stopping_probability : float
        ``gamma`` in (0, 1) with ``truncated_negative_binomial_mean``
        equal to ``mean`` up to a relative 1e-12 (the mean decreases
        strictly in ``gamma``). The privacy bounds use this ``gamma`` and the
        mean it implies, so the inversion's accuracy does not affect them.

    Examples
    --------
    >>> from skdp.accounting._repetition import (
    ...     truncated_negative_binomial_stopping_probability)
    >>> round(truncated_negative_binomial_stopping_probability(1.0, 20.0), 12)
    0.05
    """
    mean = float(mean)
    if not (math.isfinite(mean) and mean > 1):
        raise ValueError(f"mean must be finite and > 1; got {mean!r}.")
    eta, _ = _check_tnb(shape, 0.5)
    if eta == 1.0:
        return 1.0 / mean

    def excess(log_gamma: float) -> float:
        return math.log(truncated_negative_binomial_mean(eta, math.exp(log_gamma)))

    target = math.log(mean)
    # The mean falls from infinity to 1 as log(gamma) rises from -inf to 0:
    # widen the lower end of the bracket until it is above the target.
    low, high = -1.0, -1e-12
    while excess(low) < target:
        low *= 2.0
        if low < -1e4:
            raise ValueError(f"mean={mean!r} is too large to invert.")
    if excess(high) > target:
        raise ValueError(f"mean={mean!r} is too close to 1 to invert.")
    log_gamma = brentq(lambda x: excess(x) - target, low, high, xtol=1e-15, rtol=1e-14)
    return math.exp(log_gamma)


def epsilon_repeated_truncated_negative_binomial(epsilon: float, shape: float) -> float:
    """Pure DP of the best of ``K`` runs of an ``epsilon``-DP mechanism.

    Parameters
    ----------
    epsilon : float
        Pure-DP parameter of one run, >= 0.
    shape : float
        ``eta > -1`` of the truncated negative binomial law of ``K``.

    Returns
    -------
    epsilon : float
        ``(2 + eta) epsilon``, whatever the mean of ``K``.

    Notes
    -----
    The limit of [PS22]_, Theorem 2 as both orders ``lambda`` and
    ``lambda_hat`` grow: a pure ``epsilon``-DP run is
    ``(lambda, epsilon)``-RDP at every order, so the bound tends to
    ``epsilon + (1 + eta) epsilon``, and the Rényi divergence of order
    ``lambda`` increases to the max-divergence as ``lambda`` grows
    ([vEH14]_), which is pure DP. For the geometric law (``eta = 1``) this
    is the ``3 epsilon`` of [LT19]_. The tests also check it against the
    exact max-divergence of small repeated mechanisms.

    Examples
    --------
    >>> from skdp.accounting._repetition import (
    ...     epsilon_repeated_truncated_negative_binomial)
    >>> epsilon_repeated_truncated_negative_binomial(0.5, shape=1.0)
    1.5
    """
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and >= 0; got {epsilon!r}.")
    eta, _ = _check_tnb(shape, 0.5)
    return (2.0 + eta) * epsilon


def _monotone_envelope(rdp: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Replace ``rdp[i]`` by ``min(rdp[j] for orders[j] >= orders[i])``.

    Rényi divergence never decreases with the order ([vEH14]_, Theorem 3), so
    a bound at a higher order also bounds every lower order.
    """
    order_index = np.argsort(orders, kind="stable")
    sorted_rdp = rdp[order_index]
    suffix_min = np.minimum.accumulate(sorted_rdp[::-1])[::-1]
    out = np.empty_like(rdp)
    out[order_index] = suffix_min
    return out


def rdp_repeated_truncated_negative_binomial(
    rdp: OrdersLike,
    orders: OrdersLike,
    shape: float,
    stopping_probability: float,
) -> np.ndarray:
    """RDP curve of the best of ``K`` runs, ``K`` truncated negative binomial.

    Parameters
    ----------
    rdp : sequence of float
        RDP curve of one run of the base mechanism at ``orders``.
    orders : sequence of float
        Rényi orders, each > 1.
    shape : float
        ``eta > -1`` (1: geometric; 0: logarithmic).
    stopping_probability : float
        ``gamma`` in (0, 1).

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        Upper bound on the RDP of the repeated mechanism at each order.

    Notes
    -----
    [PS22]_, Theorem 2: if each run is ``(lambda, eps)``-RDP and
    ``(lambda_hat, eps_hat)``-RDP (``lambda > 1``, ``lambda_hat >= 1``), the
    number of runs ``K >= 1`` follows the truncated negative binomial with
    parameters ``(eta, gamma)``, the runs are independent, and only the run
    with the best score is released (a total order on the outputs), then
    the release is ``(lambda, eps')``-RDP with

    ``eps' = eps + (1 + eta) ((1 - 1/lambda_hat) eps_hat
    + log(1/gamma) / lambda_hat) + log(E[K]) / (lambda - 1)``.

    The middle term does not depend on ``lambda``, so it is minimised once
    over every order of the grid as ``lambda_hat`` and over
    ``lambda_hat = 1`` (where it is ``(1 + eta) log(1/gamma)``: the
    Kullback-Leibler divergence is finite whenever some order is). Finally
    each value is replaced by the smallest value at an order at least as
    high, since the true curve is non-decreasing ([vEH14]_).

    With pure ``eps``-DP runs and ``lambda, lambda_hat -> infinity`` the
    bound tends to ``(2 + eta) eps``: for the geometric distribution the
    ``3 eps`` of [LT19]_.

    Examples
    --------
    One Gaussian run (noise multiplier 5) against the best of a geometric
    number of runs with mean 10, at delta = 1e-6 (ten runs composed would
    cost 3.13):

    >>> import numpy as np
    >>> from skdp.accounting._rdp import DEFAULT_ORDERS, rdp_gaussian, rdp_to_epsilon
    >>> from skdp.accounting._repetition import (
    ...     rdp_repeated_truncated_negative_binomial)
    >>> orders = np.array(DEFAULT_ORDERS)
    >>> one_run = rdp_gaussian(5.0, orders)
    >>> best = rdp_repeated_truncated_negative_binomial(
    ...     one_run, orders, shape=1.0, stopping_probability=0.1)
    >>> round(rdp_to_epsilon(one_run, orders, 1e-6)[0], 2)
    0.9
    >>> round(rdp_to_epsilon(best, orders, 1e-6)[0], 2)
    1.81
    """
    rdp_array, orders_array = _check_curve(rdp, orders)
    if np.any(orders_array <= 1):
        raise ValueError("Every Rényi order must be greater than 1.")
    eta, gamma = _check_tnb(shape, stopping_probability)
    finite = np.isfinite(rdp_array)
    if not finite.any():
        return np.full_like(orders_array, np.inf)
    log_inv_gamma = -math.log(gamma)
    hat_orders = orders_array[finite]
    hat_rdp = rdp_array[finite]
    hat_terms = (1.0 - 1.0 / hat_orders) * hat_rdp + log_inv_gamma / hat_orders
    # lambda_hat = 1 contributes log(1/gamma).
    middle = (1.0 + eta) * min(float(hat_terms.min()), log_inv_gamma)
    log_mean = math.log(truncated_negative_binomial_mean(eta, gamma))
    with np.errstate(invalid="ignore"):
        out = rdp_array + middle + log_mean / (orders_array - 1.0)
    out[~finite] = np.inf
    return _monotone_envelope(out, orders_array)


def rdp_repeated_poisson(
    rdp: OrdersLike, orders: OrdersLike, mean: float
) -> np.ndarray:
    """RDP curve of the best of ``K`` runs, ``K`` Poisson.

    Parameters
    ----------
    rdp : sequence of float
        RDP curve of one run of the base mechanism at ``orders``.
    orders : sequence of float
        Rényi orders, each > 1.
    mean : float
        Mean ``mu >= 1`` of the Poisson number of runs.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        Upper bound on the RDP of the repeated mechanism at each order.

    Notes
    -----
    [PS22]_, Theorem 6: if each run is ``(lambda, eps)``-RDP and
    ``(eps_hat, delta_hat)``-DP with ``exp(eps_hat) <= 1 + 1/(lambda - 1)``,
    ``K ~ Poisson(mu)``, the runs are independent and only the best run is
    released (nothing when ``K = 0``), then the release is
    ``(lambda, eps + mu delta_hat + log(mu) / (lambda - 1))``-RDP.

    Here ``eps_hat = log(1 + 1/(lambda - 1))``, the largest allowed, and
    ``delta_hat`` is the smallest delta that the base curve certifies at
    ``eps_hat``: the conversion of ``rdp_to_delta``
    (Canonne, Kamath & Steinke 2020, Proposition 12) at each order, or the
    total variation distance, at most ``sqrt(1 - exp(-KL))``
    ([BH79]_) with the Kullback-Leibler divergence at most
    the curve's smallest value (monotonicity in the order). The
    result is then made non-decreasing in the order as in
    ``rdp_repeated_truncated_negative_binomial``.

    Only ``mu >= 1`` is accepted (as in dp_accounting): for ``mu < 1`` the
    term ``log(mu) / (lambda - 1)`` is negative and the expression falls
    below the exact divergence of small examples (see the tests).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.accounting._rdp import DEFAULT_ORDERS, rdp_gaussian, rdp_to_epsilon
    >>> from skdp.accounting._repetition import rdp_repeated_poisson
    >>> orders = np.array(DEFAULT_ORDERS)
    >>> best = rdp_repeated_poisson(rdp_gaussian(5.0, orders), orders, mean=10.0)
    >>> round(rdp_to_epsilon(best, orders, 1e-6)[0], 2)
    1.98
    """
    rdp_array, orders_array = _check_curve(rdp, orders)
    if np.any(orders_array <= 1):
        raise ValueError("Every Rényi order must be greater than 1.")
    mu = float(mean)
    if not (math.isfinite(mu) and mu >= 1):
        raise ValueError(f"mean must be finite and >= 1; got {mean!r}.")
    finite = np.isfinite(rdp_array)
    if not finite.any():
        return np.full_like(orders_array, np.inf)
    # delta_hat at eps_hat(lambda_i), minimised over the conversion orders j.
    eps_hat = np.log1p(1.0 / (orders_array - 1.0))[:, None]
    alpha = orders_array[finite][None, :]
    r = rdp_array[finite][None, :]
    log_delta = (alpha - 1.0) * (r - eps_hat + np.log1p(-1.0 / alpha)) - np.log(alpha)
    log_delta = np.where(r == 0, -np.inf, log_delta)
    # Every eps_hat >= 0 also has delta_hat <= TV <= sqrt(1 - exp(-KL)).
    total_variation = math.sqrt(-math.expm1(-float(rdp_array[finite].min())))
    delta_hat = np.minimum(np.exp(log_delta.min(axis=1)), total_variation)
    with np.errstate(invalid="ignore"):
        out = rdp_array + mu * delta_hat + math.log(mu) / (orders_array - 1.0)
    out[~finite] = np.inf
    return _monotone_envelope(out, orders_array)
