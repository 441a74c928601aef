"""Noise calibration for the (Poisson-subsampled) Gaussian mechanism via RDP.

References
----------
.. [MTZ19] I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of
   the Sampled Gaussian Mechanism", 2019. arXiv:1908.10530.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020. arXiv:2004.00010.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._rdp import (
    DEFAULT_ORDERS,
    OrdersLike,
    _check_orders,
    _epsilon_per_order,
    rdp_poisson_subsampled_gaussian,
    rdp_poisson_subsampled_gaussian_replace_one,
    rdp_to_epsilon,
)
from ._search import bisect_upper

_CURVES = {
    "replace_one": rdp_poisson_subsampled_gaussian_replace_one,
    "add_remove": rdp_poisson_subsampled_gaussian,
}


def _curve(neighbouring: str):
    try:
        return _CURVES[neighbouring]
    except KeyError:
        raise ValueError(
            f"neighbouring must be 'replace_one' or 'add_remove'; got {neighbouring!r}."
        ) from None


__all__ = [
    "calibrate_gaussian_noise_multiplier",
    "epsilon_poisson_subsampled_gaussian",
]

# Doubling/halving steps allowed while bracketing: 2**200 covers any noise
# multiplier representable in practice.
_MAX_BRACKET_STEPS = 200


def _check_steps(steps: int, minimum: int) -> int:
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise ValueError(f"steps must be an integer; got {steps!r}.")
    if steps < minimum:
        raise ValueError(f"steps must be at least {minimum}; got {steps!r}.")
    return int(steps)


def _check_sampling_rate(sampling_rate: float, allow_zero: bool) -> float:
    q = float(sampling_rate)
    lower_ok = q >= 0 if allow_zero else q > 0
    if not (lower_ok and q <= 1):
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(f"sampling_rate must be in {interval}; got {sampling_rate!r}.")
    return q


def epsilon_poisson_subsampled_gaussian(
    sampling_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    orders: OrdersLike = DEFAULT_ORDERS,
    neighbouring: str = "replace_one",
) -> float:
    """ε of ``steps`` runs of the Poisson-subsampled Gaussian mechanism.

    Parameters
    ----------
    sampling_rate : float
        Probability in ``[0, 1]`` that each row joins a batch.
    noise_multiplier : float
        Noise standard deviation divided by the L2 sensitivity (clipping
        norm) of one row's contribution.
    steps : int
        Number of batches (self-composition count), ``>= 0``.
    delta : float
        Target δ in ``[0, 1]``.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders to optimise over.
    neighbouring : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation: skdp's own ("replace_one", see
        :func:`~skdp.accounting._rdp.rdp_poisson_subsampled_gaussian_replace_one`)
        or add/remove one row, the setting of most DP-SGD papers and
        accountants.

    Returns
    -------
    epsilon : float
        An ε such that the composed mechanism is (ε, δ)-DP.

    Notes
    -----
    The one-step curve (for add/remove,
    :func:`~skdp.accounting._rdp.rdp_poisson_subsampled_gaussian` of
    [MTZ19]_) is multiplied by ``steps`` (RDP composes additively, also
    adaptively) and converted with
    :func:`~skdp.accounting._rdp.rdp_to_epsilon` ([CKS20]_ Proposition 12).

    Examples
    --------
    >>> from skdp.accounting._calibration import (
    ...     epsilon_poisson_subsampled_gaussian,
    ... )
    >>> epsilon = epsilon_poisson_subsampled_gaussian(
    ...     256 / 60000, 1.1, 14063, 1e-5, neighbouring="add_remove"
    ... )
    >>> round(epsilon, 3)
    2.597
    """
    q = _check_sampling_rate(sampling_rate, allow_zero=True)
    steps = _check_steps(steps, minimum=0)
    orders_array = _check_orders(orders)
    if steps == 0:
        one_step = np.zeros_like(orders_array)
    else:
        one_step = _curve(neighbouring)(q, noise_multiplier, orders_array)
    return rdp_to_epsilon(steps * one_step, orders_array, delta)[0]


def calibrate_gaussian_noise_multiplier(
    target_epsilon: float,
    target_delta: float,
    sampling_rate: float = 1.0,
    steps: int = 1,
    orders: OrdersLike = DEFAULT_ORDERS,
    tol: float = 1e-6,
    neighbouring: str = "replace_one",
) -> float:
    """Smallest noise multiplier meeting an (ε, δ) target, up to ``tol``.

    Parameters
    ----------
    target_epsilon : float
        Target ε, finite and positive.
    target_delta : float
        Target δ in ``(0, 1)``.
    sampling_rate : float, default=1.0
        Poisson sampling probability in ``(0, 1]``; ``1.0`` is the plain
        Gaussian mechanism on the full data.
    steps : int, default=1
        Number of compositions, ``>= 1``.
    orders : sequence of float, default=DEFAULT_ORDERS
        Rényi orders to optimise over.
    tol : float, default=1e-6
        Relative tolerance on the noise multiplier, in ``(0, 1)``: the result
        ``σ`` meets the target and ``σ (1 - tol)`` does not.
    neighbouring : {"replace_one", "add_remove"}, default="replace_one"
        Neighbouring relation, as in
        :func:`epsilon_poisson_subsampled_gaussian`.

    Returns
    -------
    noise_multiplier : float
        A noise multiplier whose ε at ``target_delta`` (from
        :func:`epsilon_poisson_subsampled_gaussian` with the same ``orders``)
        is at most ``target_epsilon``.

    Raises
    ------
    ValueError
        If a parameter is out of range, or if ``target_epsilon`` is below
        what the RDP conversion can certify at ``target_delta`` with these
        orders even as the noise grows without bound.

    Notes
    -----
    The ε of the mechanism decreases as the noise multiplier grows (more noise
    is a post-processing of less noise). The search first brackets the
    answer by doubling or halving from 1, then bisects, keeping the invariant
    that the upper end meets the target and the lower end does not. The
    upper end is returned, so the reported guarantee always holds
    (fail-safe: calibration errs towards more noise).

    The conversion of [CKS20]_ has a floor: with RDP equal to zero it still
    gives ``min_α log(1 - 1/α) - (log δ + log α) / (α - 1)`` over the grid,
    so smaller targets are rejected rather than searched for forever.

    Examples
    --------
    >>> from skdp.accounting._calibration import (
    ...     calibrate_gaussian_noise_multiplier,
    ...     epsilon_poisson_subsampled_gaussian,
    ... )
    >>> sigma = calibrate_gaussian_noise_multiplier(
    ...     2.0, 1e-5, sampling_rate=0.01, steps=1000, neighbouring="add_remove"
    ... )
    >>> round(sigma, 4)
    1.0223
    >>> epsilon_poisson_subsampled_gaussian(
    ...     0.01, sigma, 1000, 1e-5, neighbouring="add_remove"
    ... ) <= 2.0
    True
    """
    target_epsilon = float(target_epsilon)
    if not (math.isfinite(target_epsilon) and target_epsilon > 0):
        raise ValueError(
            f"target_epsilon must be finite and positive; got {target_epsilon!r}."
        )
    target_delta = float(target_delta)
    if not 0 < target_delta < 1:
        raise ValueError(f"target_delta must be in (0, 1); got {target_delta!r}.")
    q = _check_sampling_rate(sampling_rate, allow_zero=False)
    steps = _check_steps(steps, minimum=1)
    _curve(neighbouring)
    orders_array = _check_orders(orders)
    tol = float(tol)
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1); got {tol!r}.")

    # Limit of the conversion as the RDP curve tends to zero (infinite noise).
    vanishing = np.full_like(orders_array, np.finfo(float).tiny)
    floor = max(
        float(np.min(_epsilon_per_order(vanishing, orders_array, target_delta))), 0.0
    )
    if floor >= target_epsilon:
        raise ValueError(
            f"target_epsilon={target_epsilon!r} is not reachable at "
            f"target_delta={target_delta!r} with these orders: the RDP "
            f"conversion cannot certify less than {floor:.6g} however large the "
            "noise. Raise target_epsilon or target_delta, or add larger orders."
        )

    def meets_target(noise_multiplier: float) -> bool:
        epsilon = epsilon_poisson_subsampled_gaussian(
            q, noise_multiplier, steps, target_delta, orders_array, neighbouring
        )
        return epsilon <= target_epsilon

    # Bracket: meets_target(upper) is True, meets_target(lower) is False.
    upper = lower = 1.0
    if meets_target(upper):
        for _ in range(_MAX_BRACKET_STEPS):
            lower /= 2.0
            if not meets_target(lower):
                break
            upper = lower
        else:
            raise ValueError(
                "Could not bracket the noise multiplier: the target is met even "
                f"with noise multiplier {lower!r}."
            )
    else:
        for _ in range(_MAX_BRACKET_STEPS):
            upper *= 2.0
            if meets_target(upper):
                break
            lower = upper
        else:
            raise ValueError(
                "Could not bracket the noise multiplier: the target is not met "
                f"even with noise multiplier {upper!r}."
            )

    return bisect_upper(meets_target, lower, upper, tol)
