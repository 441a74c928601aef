"""Calibration: the parameter of a mechanism that spends a target epsilon.

:func:`calibrate_parameter` is the one helper: given how to build the event
of a mechanism from a parameter (a noise multiplier, an epsilon share, ...)
it finds, with any accountant, the parameter whose event costs the target
epsilon, on the safe side. :func:`calibrate_gaussian_noise_multiplier` (the
noise of DP-SGD) is built on it.

References
----------
.. [MTZ19] I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of
   the Sampled Gaussian Mechanism", 2019. arXiv:1908.10530.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020. arXiv:2004.00010.
.. [DGKKM22] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi,
   "Connect the Dots: Tighter Discrete Approximations of Privacy Loss
   Distributions", PETS 2022. arXiv:2207.04380.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable

from scipy.special import log_ndtr, ndtr

from ._accountant import PrivacyAccountant, RDPAccountant
from ._composition import Accountant, NeighbouringRelation, UnsupportedEventError
from ._events import PoissonSubsampledGaussianEvent, PrivacyEvent
from ._rdp import DEFAULT_ORDERS, OrdersLike, _check_orders, rdp_epsilon_floor
from ._search import crossing_bracket, solve_monotone

__all__ = [
    "calibrate_gaussian_noise_multiplier",
    "calibrate_parameter",
    "epsilon_poisson_subsampled_gaussian",
]

# Relative half-width of the bracket handed from the coarse search to the
# exact one (the coarse accountant's epsilons are within a few 1e-4).
_REFINE_BRACKET = 5e-3


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


def _default_accountant(orders: OrdersLike, neighbouring: str) -> Accountant:
    relation = NeighbouringRelation.parse(neighbouring)
    orders_array = _check_orders(orders)
    if len(orders_array) == len(DEFAULT_ORDERS) and tuple(
        orders_array.tolist()
    ) == tuple(DEFAULT_ORDERS):
        return _tightest(relation)
    return PrivacyAccountant(relation, orders=orders_array)


@functools.lru_cache(maxsize=4)
def _tightest(relation: NeighbouringRelation) -> PrivacyAccountant:
    return PrivacyAccountant(relation)


def calibrate_parameter(
    make_event: Callable[[float], PrivacyEvent],
    target_epsilon: float,
    delta: float,
    accountant: Accountant | None = None,
    *,
    increasing: bool,
    bracket: tuple[float, float] = (0.5, 2.0),
    tolerance: float = 1e-6,
) -> float:
    """The parameter whose event spends ``target_epsilon``, on the safe side.

    Parameters
    ----------
    make_event : callable
        ``make_event(p)`` returns the :class:`PrivacyEvent` of the mechanism
        run with parameter ``p > 0``; its epsilon must be monotone in ``p``.
    target_epsilon : float
        The epsilon to spend, > 0.
    delta : float
        The delta at which epsilon is computed, in [0, 1).
    accountant : Accountant, default=None
        How the event is accounted; ``None`` is the default
        :class:`PrivacyAccountant` (replace one row). Use the accountant of
        the budget that will be charged, so that the calibrated event fits.
    increasing : bool
        ``True`` when epsilon grows with ``p`` (an epsilon or a share of one:
        the largest acceptable ``p`` is returned), ``False`` when it falls (a
        noise multiplier: the smallest acceptable ``p``).
    bracket : (float, float), default=(0.5, 2.0)
        Where the search starts, ``0 < low < high``; widened geometrically
        as needed, so a good guess only saves evaluations.
    tolerance : float, default=1e-6
        Relative precision on ``p``, in (0, 1).

    Returns
    -------
    parameter : float
        ``p`` with ``accountant.epsilon_delta([make_event(p)], delta)[0] <=
        target_epsilon``, and whose neighbour ``p * (1 + tolerance)`` (if
        ``increasing``) or ``p * (1 - tolerance)`` (otherwise) spends more:
        the exact threshold is within the tolerance, on the safe side.

    Raises
    ------
    ValueError
        If ``target_epsilon`` cannot be met by any parameter the search
        reaches (for example below the floor of a Renyi-DP conversion).

    Notes
    -----
    The search (``skdp.accounting._search.solve_monotone``) brackets the
    crossing, then interpolates on ``log p`` against ``log epsilon`` (nearly
    a line), and returns the end of the bracket that meets the target. When
    the accountant has a cheaper approximation (:meth:`Accountant.coarse`,
    e.g. a PLD on a 10 times coarser grid), it first solves with it to a
    relative 1e-4 and then with the accountant from a bracket of relative
    width 5e-3 on the side of less cost. When it has a cheaper guide for
    the event (:meth:`Accountant.guide`: for Poisson-subsampled Gaussians,
    the default accountant's PLD part, which skips the Renyi-DP curves),
    the whole search runs on the guide and the accountant evaluates the two
    ends of the guide's final bracket; if they do not hold its crossing,
    it searches alone. Only ``accountant`` decides the result.

    Examples
    --------
    The noise of a Gaussian mechanism with sensitivity 1 at (1, 1e-5):

    >>> from skdp.accounting import GaussianEvent, RDPAccountant, calibrate_parameter
    >>> sigma = calibrate_parameter(GaussianEvent, 1.0, 1e-5, RDPAccountant(),
    ...                             increasing=False)
    >>> round(sigma, 4)
    3.7305

    The largest epsilon of a Laplace release that, repeated 10 times with
    a random stop, spends 1:

    >>> from skdp.accounting import LaplaceEvent, RepeatedRandomStoppingEvent
    >>> def repeated(epsilon):
    ...     return RepeatedRandomStoppingEvent(
    ...         LaplaceEvent(epsilon), "truncated_negative_binomial",
    ...         shape=1.0, stopping_probability=0.1)
    >>> round(calibrate_parameter(repeated, 1.0, 0.0, increasing=True), 6)
    0.333333
    """
    target_epsilon = float(target_epsilon)
    if not (math.isfinite(target_epsilon) and target_epsilon > 0):
        raise ValueError(
            f"target_epsilon must be finite and > 0; got {target_epsilon!r}."
        )
    delta = float(delta)
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1); got {delta!r}.")
    if accountant is None:
        accountant = _tightest(NeighbouringRelation.REPLACE_ONE)

    def spender(acc: Accountant) -> Callable[[float], float]:
        return lambda p: acc.epsilon_delta([make_event(p)], delta)[0]

    def search(acc: Accountant, bracket, tolerance) -> tuple[float, float]:
        coarse = acc.coarse()
        if coarse is not acc and tolerance < _REFINE_BRACKET / 10:
            guess = solve_monotone(
                spender(coarse),
                target_epsilon,
                increasing=increasing,
                bracket=bracket,
                tolerance=1e-4,
            )
            # The coarse accountant costs more: the exact crossing lies on
            # the side of more parameter cost, usually within _REFINE_BRACKET.
            if increasing:
                bracket = (guess, guess * (1 + _REFINE_BRACKET))
            else:
                bracket = (guess * (1 - _REFINE_BRACKET), guess)
        return crossing_bracket(
            spender(acc),
            target_epsilon,
            increasing=increasing,
            bracket=bracket,
            tolerance=tolerance,
        )

    guide = accountant.guide(make_event(bracket[0]))
    if guide is not accountant:
        try:
            acceptable, unacceptable = search(guide, bracket, tolerance)
        except (UnsupportedEventError, ValueError):
            pass  # no answer from the guide: the accountant searches alone
        else:
            # The guide's final bracket, checked by the accountant. A guide
            # that never reports less than the accountant needs no check of
            # its acceptable end.
            spend = spender(accountant)
            if (
                accountant._guide_bounds_above(guide)
                or spend(acceptable) <= target_epsilon
            ) and target_epsilon < spend(unacceptable):
                return acceptable
    return search(accountant, bracket, tolerance)[0]


def epsilon_poisson_subsampled_gaussian(
    sampling_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    orders: OrdersLike = DEFAULT_ORDERS,
    neighbouring: str = "replace_one",
    *,
    accountant: Accountant | None = None,
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
        Rényi orders of the default accountant's Rényi-DP part.
    neighbouring : {"replace_one", "add_remove"}, default="replace_one"
        The neighbouring relation of the default accountant: skdp's own
        (replace one row) or add/remove one row, the setting of most DP-SGD
        papers and accountants.
    accountant : Accountant, default=None
        How to account the run; ``None`` is a :class:`PrivacyAccountant`
        with ``neighbouring`` and ``orders`` (the tightest of the PLD and
        Rényi-DP compositions). Pass an :class:`RDPAccountant` for the
        Rényi-DP figure alone.

    Returns
    -------
    epsilon : float
        An ε such that the composed mechanism is (ε, δ)-DP.

    Notes
    -----
    The accountant composes ``PoissonSubsampledGaussianEvent(sampling_rate,
    noise_multiplier, steps)``: by its privacy loss distribution
    (Doroshenko et al. 2022, "Connect the dots") and by Rényi DP
    ([MTZ19]_, converted with [CKS20]_ Proposition 12), keeping the
    smaller epsilon.

    Examples
    --------
    >>> from skdp.accounting import RDPAccountant
    >>> from skdp.accounting._calibration import (
    ...     epsilon_poisson_subsampled_gaussian,
    ... )
    >>> args = (256 / 60000, 1.1, 14063, 1e-5)
    >>> round(epsilon_poisson_subsampled_gaussian(*args, neighbouring="add_remove"), 3)
    2.382
    >>> rdp = RDPAccountant(neighbouring_relation="add_remove")
    >>> round(epsilon_poisson_subsampled_gaussian(*args, accountant=rdp), 3)
    2.597
    """
    q = _check_sampling_rate(sampling_rate, allow_zero=True)
    steps = _check_steps(steps, minimum=0)
    if accountant is None:
        accountant = _default_accountant(orders, neighbouring)
    if steps == 0 or q == 0:
        return 0.0
    event = PoissonSubsampledGaussianEvent(q, noise_multiplier, steps)
    return accountant.epsilon_delta([event], delta)[0]


def calibrate_gaussian_noise_multiplier(
    target_epsilon: float,
    target_delta: float,
    sampling_rate: float = 1.0,
    steps: int = 1,
    orders: OrdersLike = DEFAULT_ORDERS,
    tol: float = 1e-6,
    neighbouring: str = "replace_one",
    *,
    accountant: Accountant | None = None,
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
        Rényi orders of the default accountant's Rényi-DP part.
    tol : float, default=1e-6
        Relative tolerance on the noise multiplier, in ``(0, 1)``: the result
        ``σ`` meets the target and ``σ (1 - tol)`` does not.
    neighbouring : {"replace_one", "add_remove"}, default="replace_one"
        Neighbouring relation of the default accountant, as in
        :func:`epsilon_poisson_subsampled_gaussian`.
    accountant : Accountant, default=None
        How the run is accounted; ``None`` is the default
        :class:`PrivacyAccountant` (the tightest of the PLD and Rényi-DP
        compositions, which is what a :class:`~skdp.PrivacyBudget` charges).

    Returns
    -------
    noise_multiplier : float
        A noise multiplier whose ε at ``target_delta`` (from
        :func:`epsilon_poisson_subsampled_gaussian` with the same accountant)
        is at most ``target_epsilon``.

    Raises
    ------
    ValueError
        If a parameter is out of range, or if ``target_epsilon`` cannot be
        certified at ``target_delta`` however large the noise (the floor of
        the Rényi-DP conversion, for an :class:`RDPAccountant`).

    Notes
    -----
    :func:`calibrate_parameter` on ``PoissonSubsampledGaussianEvent(
    sampling_rate, σ, steps)``: ε decreases as the noise multiplier grows
    (more noise is a post-processing of less noise); the search keeps a
    bracket whose upper end meets the target and returns that end, so the
    reported guarantee always holds (fail-safe: calibration errs towards
    more noise).

    The Rényi-DP conversion of [CKS20]_ has a floor: with RDP equal to zero
    it still gives ``min_α log(1 - 1/α) - (log δ + log α) / (α - 1)`` over
    the grid, so smaller targets are rejected for an :class:`RDPAccountant`
    rather than searched for forever.

    Examples
    --------
    >>> from skdp.accounting import RDPAccountant
    >>> from skdp.accounting._calibration import (
    ...     calibrate_gaussian_noise_multiplier,
    ...     epsilon_poisson_subsampled_gaussian,
    ... )
    >>> sigma = calibrate_gaussian_noise_multiplier(
    ...     2.0, 1e-5, sampling_rate=0.01, steps=1000, neighbouring="add_remove"
    ... )
    >>> round(sigma, 4)
    0.9591
    >>> epsilon_poisson_subsampled_gaussian(
    ...     0.01, sigma, 1000, 1e-5, neighbouring="add_remove"
    ... ) <= 2.0
    True
    >>> rdp = RDPAccountant(neighbouring_relation="add_remove")
    >>> round(calibrate_gaussian_noise_multiplier(
    ...     2.0, 1e-5, sampling_rate=0.01, steps=1000, accountant=rdp), 4)
    1.0223
    """
    if accountant is None:
        accountant = _default_accountant(orders, neighbouring)
    # Deterministic in its arguments and slow (tens of compositions): results
    # are memoised, so that repeated fits with the same settings (a
    # hyperparameter search, cross-validation) calibrate once.
    return _calibrate_gaussian_noise_multiplier(
        target_epsilon, target_delta, sampling_rate, steps, tol, accountant
    )


@functools.lru_cache(maxsize=256)
def _calibrate_gaussian_noise_multiplier(
    target_epsilon, target_delta, sampling_rate, steps, tol, accountant
) -> float:
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
    tol = float(tol)
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1); got {tol!r}.")
    if isinstance(accountant, RDPAccountant):
        floor = rdp_epsilon_floor(accountant.orders, target_delta)
        if floor >= target_epsilon:
            raise ValueError(
                f"target_epsilon={target_epsilon!r} is not reachable at "
                f"target_delta={target_delta!r} with these orders: the RDP "
                f"conversion cannot certify less than {floor:.6g} however large "
                "the noise. Raise target_epsilon or target_delta, or add larger "
                "orders."
            )
    try:
        return calibrate_parameter(
            lambda sigma: PoissonSubsampledGaussianEvent(q, sigma, steps),
            target_epsilon,
            target_delta,
            accountant,
            increasing=False,
            bracket=_noise_multiplier_bracket(target_epsilon, target_delta, q, steps),
            tolerance=tol,
        )
    except ValueError as exc:
        raise ValueError(
            f"target_epsilon={target_epsilon!r} is not reachable at "
            f"target_delta={target_delta!r} with {accountant!r}: {exc}"
        ) from exc


def _noise_multiplier_bracket(
    epsilon: float, delta: float, sampling_rate: float, steps: int
) -> tuple[float, float]:
    """Where a noise multiplier's search starts: ``(g, 2 g)``, ``g`` a cheap guess.

    ``g`` is the noise multiplier of the central-limit approximation of
    Poisson-subsampled Gaussian composition (Bu, Dong, Long & Su 2020,
    "Deep Learning with Gaussian Differential Privacy", Theorem 5): ``T``
    steps are about ``mu``-GDP with ``mu = q sqrt(T (exp(1/sigma**2) -
    1))``, and ``mu``-GDP is ``(epsilon, delta)``-DP for ``delta =
    Phi(-epsilon/mu + mu/2) - e**epsilon Phi(-epsilon/mu - mu/2)`` (Dong,
    Roth & Su 2022, Corollary 2.13). It is an add/remove-one figure, about
    half the replace-one multiplier when the noise is large, hence
    ``2 g``. Only the start: the search widens the bracket when the answer
    is outside it, and the accountant alone decides the result, so a poor
    guess costs evaluations, never privacy. Small multipliers cost the PLD
    most (its loss distribution is widest), so starting near the answer
    rather than at 0.5 saves the costliest evaluation.

    Examples
    --------
    >>> from skdp.accounting._calibration import _noise_multiplier_bracket
    >>> low, high = _noise_multiplier_bracket(1.0, 1e-5, 0.0106, 943)
    >>> round(low, 2), round(high, 2)
    (1.39, 2.78)
    """

    def gdp_delta(mu: float) -> float:
        # e**epsilon Phi(b) in logs: epsilon may be large (1e4, say).
        tail = epsilon + float(log_ndtr(-epsilon / mu - mu / 2))
        return float(ndtr(-epsilon / mu + mu / 2)) - math.exp(min(tail, 0.0))

    # delta grows with mu: bisect on log mu over a range that always holds it.
    low, high = 1e-8, 1e4
    for _ in range(80):
        mid = math.sqrt(low * high)
        if gdp_delta(mid) > delta:
            high = mid
        else:
            low = mid
    try:
        per_step = low * low / (sampling_rate * sampling_rate * steps)
        guess = 1.0 / math.sqrt(math.log1p(per_step))
    except (ArithmeticError, ValueError):  # extreme inputs: no guess
        return (0.5, 2.0)
    if not (math.isfinite(guess) and 1e-6 < guess < 1e6):
        return (0.5, 2.0)
    return (guess, 2.0 * guess)
