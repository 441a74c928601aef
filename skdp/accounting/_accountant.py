"""The Renyi-DP accountant and the default accountant, the tightest of all."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._analytic_gaussian import gaussian_epsilon
from ._composition import (
    Accountant,
    CompositionReport,
    NeighbouringRelation,
    UnsupportedEventError,
    expand_events,
    flatten_events,
)
from ._events import (
    ApproxDPEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSubsampledDiscreteGaussianEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    PureDPEvent,
    RepeatedRandomStoppingEvent,
    ZCDPEvent,
)
from ._pld import DEFAULT_INTERVAL
from ._pld_accountant import PLDAccountant
from ._rdp import (
    DEFAULT_ORDERS,
    rdp_exponential_mechanism,
    rdp_gaussian,
    rdp_poisson_subsampled_gaussian,
    rdp_poisson_subsampled_gaussian_replace_one,
    rdp_pure_dp,
    rdp_to_epsilon,
    rdp_zcdp,
)
from ._repetition import (
    epsilon_repeated_truncated_negative_binomial,
    rdp_repeated_poisson,
    rdp_repeated_truncated_negative_binomial,
)

__all__ = [
    "CompositionReport",
    "PrivacyAccountant",
    "RDPAccountant",
    "flatten_events",
]


@dataclass(frozen=True, eq=False)
class _Term:
    """What one leaf event contributes to a Renyi-DP composition.

    ``curve`` is its Renyi-DP curve (``None`` for an approximate event);
    ``pure_epsilon`` is set for pure events; ``gaussian_precision`` (``sum
    s**-2``) for exact Gaussian mechanisms, whose privacy loss is at most
    the continuous Gaussian's plus ``gaussian_shift`` (the lattice shift of
    discrete Gaussians, 0 for continuous ones); ``approx`` is ``(epsilon,
    delta)`` for approximate events.
    """

    curve: np.ndarray | None = None
    pure_epsilon: float | None = None
    gaussian_precision: float | None = None
    approx: tuple[float, float] | None = None
    gaussian_shift: float = 0.0


@dataclass(frozen=True, eq=False)
class _RDPState:
    """A Renyi-DP composition so far (every field is a running total)."""

    pure_epsilons: tuple[float, ...] = ()
    approx_epsilons: tuple[float, ...] = ()
    approx_deltas: tuple[float, ...] = ()
    gaussian_precisions: tuple[float, ...] = ()
    gaussian_shifts: tuple[float, ...] = ()
    pure_curve: np.ndarray | float = 0.0
    other_curve: np.ndarray | float = 0.0
    n_other: int = 0  # events that are neither pure nor approximate
    all_gaussian: bool = True  # and all of those are exact Gaussians

    @property
    def needs_delta(self) -> bool:
        """Whether some event is neither pure nor approximate."""
        return self.n_other > 0


@functools.lru_cache(maxsize=4096)
def _cached_term(accountant: RDPAccountant, leaf: PrivacyEvent) -> _Term:
    return accountant._term(leaf)


class RDPAccountant(Accountant):
    """Composes privacy events with Renyi DP, basic and exact Gaussian bounds.

    The events are split into four groups:

    * pure events (:class:`LaplaceEvent`, :class:`ExponentialMechanismEvent`,
      :class:`PureDPEvent`), each ``epsilon``-DP, and
      :class:`RepeatedRandomStoppingEvent` with a truncated negative binomial
      law (shape ``eta``) over pure events of total ``epsilon``, which is
      ``(2 + eta) epsilon``-DP (see
      ``epsilon_repeated_truncated_negative_binomial``);
    * exact Gaussian mechanisms (:class:`GaussianEvent`, and a
      :class:`PoissonSubsampledGaussianEvent` with ``sampling_rate=1``);
    * events only described by a Renyi-DP curve
      (:class:`PoissonSubsampledGaussianEvent`, :class:`ZCDPEvent`,
      :class:`RepeatedRandomStoppingEvent`);
    * approximate events (:class:`ApproxDPEvent`), each ``(epsilon, delta)``.

    Approximate events always compose by basic composition (epsilons and
    deltas add). Whatever delta remains, ``delta_available = delta -
    sum(delta_i)``, is given to the other three groups, and the smallest of
    these valid bounds is reported:

    1. ``rdp``: Renyi-DP composition of everything (pure events enter with
       the curve implied by pure DP, the exponential mechanism with its
       bounded-range curve), converted to ``(epsilon, delta_available)``
       with the improved conversion of Canonne, Kamath & Steinke (2020),
       Proposition 12;
    2. ``basic+rdp``: the sum of the pure epsilons, plus the Renyi-DP
       composition of the others converted at ``delta_available``;
    3. ``basic+gaussian`` (only exact Gaussian mechanisms besides pure
       events): the sum of the pure epsilons, plus the exact profile of the
       composed Gaussian mechanisms (their composition is one Gaussian
       mechanism with multiplier ``(sum s_i**-2) ** -0.5``; Balle & Wang
       2018, Theorem 8);
    4. ``basic`` (pure and approximate events only): the sums of the
       epsilons and of the deltas.

    When any event other than pure and approximate ones is present, the
    reported delta is the full ``delta`` limit the bound was computed for.

    Parameters
    ----------
    orders : sequence of float, default=DEFAULT_ORDERS
        Renyi orders at which curves are evaluated.
    neighbouring_relation : {"replace_one", "add_remove"}, default="replace_one"
        How a :class:`PoissonSubsampledGaussianEvent` (whose
        ``noise_multiplier`` is relative to the per-row bound) is analysed:
        ``rdp_poisson_subsampled_gaussian_replace_one``
        or ``rdp_poisson_subsampled_gaussian``.
        Sensitivities in the other events are the callers', measured under
        this relation.

    Notes
    -----
    Curves are cached per event (labels ignored), so composing a ledger that
    grows by one entry costs one new curve.

    The curves are private helpers (``skdp.accounting._rdp`` and
    ``skdp.accounting._repetition``), each with its proof in its docstring:
    the Gaussian curve ([Mir17]_, Table II); the pure-DP curve, that of
    randomised response ([KOV15]_, [BS16]_ Proposition 1.4); the
    exponential mechanism's bounded-range curve ([DR19]_, [CR21]_); zCDP
    ([BS16]_ Definition 1.1); the conversion to ``(epsilon, delta)``
    ([CKS20]_ Proposition 12, also [ACGKN21]_ and [BBGHS20]_; [Mir17]_
    Proposition 3); and random stopping ([PS22]_ Theorems 2 and 6, [LT19]_
    for the geometric law, with the monotonicity of the Rényi divergence in
    its order [vEH14]_ and the Bretagnolle-Huber bound on the total
    variation [BH79]_).

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent, LaplaceEvent, RDPAccountant
    >>> acc = RDPAccountant()
    >>> acc.compose([LaplaceEvent(0.5), LaplaceEvent(0.25)], delta=0.0).epsilon
    0.75
    >>> report = acc.compose([GaussianEvent(2.0)] * 4, delta=1e-5)
    >>> report.method, round(report.epsilon, 3)
    ('basic+gaussian', 4.377)
    """

    def __init__(
        self,
        orders: Sequence[float] = DEFAULT_ORDERS,
        *,
        neighbouring_relation: str | NeighbouringRelation = "replace_one",
    ) -> None:
        self.orders = np.asarray(orders, dtype=float)
        self.orders.setflags(write=False)
        self.neighbouring_relation = NeighbouringRelation.parse(neighbouring_relation)
        self._orders_key = tuple(self.orders.tolist())

    def _config(self) -> tuple:
        return (self._orders_key, self.neighbouring_relation.value)

    def __hash__(self):  # the orders are long: hash them once
        try:
            return self._hash
        except AttributeError:
            self._hash = super().__hash__()
            return self._hash

    def __repr__(self):
        relation = self.neighbouring_relation.value
        return (
            f"RDPAccountant(orders=<{len(self.orders)} orders>, "
            f"neighbouring_relation={relation!r})"
        )

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_hash", None)
        return state

    # -- one event -----------------------------------------------------------
    def _term(self, leaf: PrivacyEvent) -> _Term:
        """The contribution of one run of ``leaf``; this accountant's dispatch.

        Dispatch is on the exact class of ``leaf``: a subclass this
        accountant does not know is refused, never accounted as its parent
        (its privacy loss may differ).
        """
        handler = _RDP_HANDLERS.get(type(leaf))
        if handler is None:
            raise UnsupportedEventError(
                f"The accountant does not support events [{type(leaf).__name__!r}]."
            )
        return handler(self, leaf)

    def _pure(self, leaf) -> _Term:
        eps = leaf.epsilon
        return _Term(rdp_pure_dp(eps, self.orders), pure_epsilon=eps)

    def _exponential(self, leaf: ExponentialMechanismEvent) -> _Term:
        eps = leaf.epsilon
        return _Term(rdp_exponential_mechanism(eps, self.orders), pure_epsilon=eps)

    def _gaussian(self, leaf) -> _Term:
        s = leaf.noise_multiplier
        shift = getattr(leaf, "lattice_shift", 0.0)
        return _Term(
            rdp_gaussian(s, self.orders) + shift,
            gaussian_precision=s**-2.0,
            gaussian_shift=shift,
        )

    def _subsampled(self, leaf) -> _Term:
        q, s, steps = leaf.sampling_rate, leaf.noise_multiplier, leaf.steps
        shift = getattr(leaf, "lattice_shift", 0.0)
        replace = self.neighbouring_relation is NeighbouringRelation.REPLACE_ONE
        curve = (
            rdp_poisson_subsampled_gaussian_replace_one
            if replace
            else rdp_poisson_subsampled_gaussian
        )(q, s, self.orders)
        precision = None
        if q == 1.0:
            # One Gaussian mechanism per step: replacing a row moves the sum
            # by 2C (the row's +C becomes -C), adding or removing one by C.
            precision = steps * (2.0 / s if replace else 1.0 / s) ** 2
        return _Term(
            steps * (np.asarray(curve, float) + shift),
            None,
            precision,
            gaussian_shift=steps * shift,
        )

    def _zcdp(self, leaf: ZCDPEvent) -> _Term:
        return _Term(rdp_zcdp(leaf.rho, self.orders) + leaf.xi)

    def _approx(self, leaf: ApproxDPEvent) -> _Term:
        return _Term(approx=(leaf.epsilon, leaf.delta))

    def _parallel(self, leaf: ParallelComposedEvent) -> _Term:
        parts = [
            [(_cached_term(self, sub), n) for sub, n in expand_events([part])]
            for part in leaf.events
        ]
        if any(term.approx is not None for terms in parts for term, _ in terms):
            raise UnsupportedEventError(
                "The accountant does not support approximate (epsilon, delta) "
                "events inside a ParallelComposedEvent."
            )
        curve = np.max([self._curve_of(terms) for terms in parts], axis=0)
        pure = None
        if all(term.pure_epsilon is not None for terms in parts for term, _ in terms):
            pure = max(
                math.fsum(term.pure_epsilon * n for term, n in terms) for terms in parts
            )
        return _Term(curve, pure_epsilon=pure)

    def _repeated_term(self, event: RepeatedRandomStoppingEvent) -> _Term:
        base_terms = [
            (_cached_term(self, leaf), count)
            for leaf, count in expand_events([event.base_event])
        ]
        base = self._curve_of(base_terms)
        if event.distribution == "poisson":
            return _Term(rdp_repeated_poisson(base, self.orders, event.mean))
        curve = rdp_repeated_truncated_negative_binomial(
            base, self.orders, event.shape, event.stopping_probability
        )
        pure = None
        if all(term.pure_epsilon is not None for term, _ in base_terms):
            total = math.fsum(term.pure_epsilon * count for term, count in base_terms)
            pure = epsilon_repeated_truncated_negative_binomial(total, event.shape)
        return _Term(curve, pure_epsilon=pure)

    def _curve_of(self, terms: Sequence[tuple[_Term, int]]) -> np.ndarray:
        total = np.zeros_like(self.orders)
        for term, count in terms:
            if term.curve is None:
                raise TypeError("An approximate (epsilon, delta) event has no curve.")
            total = total + count * term.curve
        return total

    def rdp_curve(self, event: PrivacyEvent) -> np.ndarray:
        """Renyi-DP curve of one (non-approximate) event at ``self.orders``."""
        terms = [(_cached_term(self, leaf), n) for leaf, n in expand_events([event])]
        if any(term.curve is None for term, _ in terms):
            raise TypeError(f"{type(event).__name__} has no Renyi-DP curve.")
        return self._curve_of(terms)

    # -- composition ---------------------------------------------------------
    def empty(self) -> _RDPState:
        return _RDPState()

    def extend(self, state: _RDPState, events: Sequence[PrivacyEvent]) -> _RDPState:
        pure, approx_eps, approx_delta = [], [], []
        precisions: list[float] = []
        shifts: list[float] = []
        pure_curve, other_curve = state.pure_curve, state.other_curve
        n_other, all_gaussian = state.n_other, state.all_gaussian
        terms = [(_cached_term(self, leaf), n) for leaf, n in expand_events(events)]
        for term, count in terms:
            if term.approx is not None:
                approx_eps.append(count * term.approx[0])
                approx_delta.append(count * term.approx[1])
            elif term.pure_epsilon is not None:
                pure.append(count * term.pure_epsilon)
                pure_curve = pure_curve + count * term.curve
            else:
                n_other += 1
                other_curve = other_curve + count * term.curve
                if term.gaussian_precision is None:
                    all_gaussian = False
                else:
                    precisions.append(count * term.gaussian_precision)
                    shifts.append(count * term.gaussian_shift)
        return _RDPState(
            state.pure_epsilons + tuple(pure),
            state.approx_epsilons + tuple(approx_eps),
            state.approx_deltas + tuple(approx_delta),
            state.gaussian_precisions + tuple(precisions),
            state.gaussian_shifts + tuple(shifts),
            pure_curve,
            other_curve,
            n_other,
            all_gaussian,
        )

    def report(self, state: _RDPState, delta: float) -> CompositionReport:
        eps_approx = math.fsum(state.approx_epsilons)
        delta_approx = math.fsum(state.approx_deltas)
        eps_pure = math.fsum(state.pure_epsilons)
        if not state.needs_delta:
            total = eps_pure + eps_approx
            return CompositionReport(total, delta_approx, "basic", {"basic": total})
        delta_available = float(delta) - delta_approx
        if delta_available <= 0:
            return CompositionReport(math.inf, float(delta), "none", {})
        orders = self.orders
        other = np.zeros_like(orders) + state.other_curve
        candidates: dict[str, float] = {}
        candidates["rdp"] = rdp_to_epsilon(
            other + state.pure_curve, orders, delta_available
        )[0]
        if state.pure_epsilons:
            candidates["basic+rdp"] = (
                eps_pure + rdp_to_epsilon(other, orders, delta_available)[0]
            )
        if state.all_gaussian:
            s = math.fsum(state.gaussian_precisions) ** -0.5
            candidates["basic+gaussian"] = (
                eps_pure
                + gaussian_epsilon(s, delta_available)
                + math.fsum(state.gaussian_shifts)
            )
        if state.approx_epsilons:  # added by basic composition
            candidates = {
                name + "+approx": value + eps_approx
                for name, value in candidates.items()
            }
        method = min(candidates, key=candidates.get)
        return CompositionReport(candidates[method], float(delta), method, candidates)


#: The one dispatch of RDPAccountant: exact event class -> its term.
_RDP_HANDLERS = {
    PureDPEvent: RDPAccountant._pure,
    LaplaceEvent: RDPAccountant._pure,
    DiscreteLaplaceEvent: RDPAccountant._pure,
    ExponentialMechanismEvent: RDPAccountant._exponential,
    GaussianEvent: RDPAccountant._gaussian,
    DiscreteGaussianEvent: RDPAccountant._gaussian,
    PoissonSubsampledGaussianEvent: RDPAccountant._subsampled,
    PoissonSubsampledDiscreteGaussianEvent: RDPAccountant._subsampled,
    ZCDPEvent: RDPAccountant._zcdp,
    RepeatedRandomStoppingEvent: RDPAccountant._repeated_term,
    ApproxDPEvent: RDPAccountant._approx,
    ParallelComposedEvent: RDPAccountant._parallel,
}


@dataclass(frozen=True, eq=False)
class _TightestState:
    rdp: _RDPState
    pld: object  # the PLD accountant's state
    pending: tuple[PrivacyEvent, ...] = ()  # not yet in the PLD (see extend)


class PrivacyAccountant(Accountant):
    """The tightest valid bound of every composition skdp implements.

    The default accountant of :class:`~skdp.PrivacyBudget` and of
    the estimators' calibrations, so that what a fit claims is what the
    budget charges. For a set of events it computes

    * ``pld``: the privacy-loss-distribution composition
      (:class:`PLDAccountant`), when it supports every event;
    * ``rdp``, ``basic+rdp``, ``basic+gaussian`` and ``basic``: the
      compositions of :class:`RDPAccountant`,

    and reports the smallest epsilon at the budget's delta, naming the method
    in the ``method`` of its :class:`CompositionReport`. Each method bounds
    the *whole* set of events on its own (methods are never mixed event by event, which
    would not be valid), so the minimum over them is valid.

    A ledger of pure (and approximate) events only is reported by basic
    composition, at the delta its events spend (0 for pure events), as
    :class:`RDPAccountant` does; the PLD is computed only once an event
    needing delta (Gaussian, subsampled Gaussian, zCDP, ...) is composed.

    Parameters
    ----------
    neighbouring_relation : {"replace_one", "add_remove"}, default="replace_one"
        skdp's relation (replace one row) or add/remove one row.
    orders : sequence of float, default=DEFAULT_ORDERS
        Renyi orders of the Renyi-DP part.
    value_discretization_interval : float, default=1e-4
        Grid step of the PLD part.

    Attributes
    ----------
    rdp : RDPAccountant
    pld : PLDAccountant

    Examples
    --------
    >>> from skdp.accounting import (LaplaceEvent, PoissonSubsampledGaussianEvent,
    ...     PrivacyAccountant)
    >>> accountant = PrivacyAccountant()
    >>> sgd = PoissonSubsampledGaussianEvent(256 / 20000, 1.0, 782)
    >>> report = accountant.compose([sgd, LaplaceEvent(0.1)], delta=1e-5)
    >>> report.method, round(report.epsilon, 3)
    ('pld', 3.299)
    >>> round(report.candidates["rdp"], 3)
    5.616
    """

    def __init__(
        self,
        neighbouring_relation: str | NeighbouringRelation = "replace_one",
        *,
        orders: Sequence[float] = DEFAULT_ORDERS,
        value_discretization_interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self.neighbouring_relation = NeighbouringRelation.parse(neighbouring_relation)
        self.rdp = RDPAccountant(orders, neighbouring_relation=neighbouring_relation)
        self.pld = PLDAccountant(neighbouring_relation, value_discretization_interval)

    def _config(self) -> tuple:
        return (self.rdp, self.pld)

    def __repr__(self):
        return (
            f"PrivacyAccountant(neighbouring_relation="
            f"{self.neighbouring_relation.value!r})"
        )

    @property
    def orders(self) -> np.ndarray:
        """Renyi orders of the Renyi-DP part."""
        return self.rdp.orders

    def rdp_curve(self, event: PrivacyEvent) -> np.ndarray:
        """Renyi-DP curve of one event (see :meth:`RDPAccountant.rdp_curve`)."""
        return self.rdp.rdp_curve(event)

    def coarse(self) -> PrivacyAccountant:
        # A 10 times coarser PLD grid, and every third Renyi order (a third
        # of the cost; the minimum over fewer orders can only be larger).
        return PrivacyAccountant(
            self.neighbouring_relation,
            orders=self.rdp.orders[::3],
            value_discretization_interval=10 * self.pld.value_discretization_interval,
        )

    def guide(self, event: PrivacyEvent) -> Accountant:
        # Poisson-subsampled Gaussians (DP-SGD): the PLD is the smallest
        # bound nearly always, and the Renyi-DP curves cost more than the
        # PLD, so a calibration searches on the PLD alone and checks its
        # answer here. Other events are often won by a Renyi-DP method.
        subsampled = (
            PoissonSubsampledGaussianEvent,
            PoissonSubsampledDiscreteGaussianEvent,
        )
        leaves = expand_events([event])
        if all(
            type(leaf) in subsampled and leaf.sampling_rate < 1 for leaf, _ in leaves
        ):
            return self.pld
        return self

    def _guide_bounds_above(self, guide: Accountant) -> bool:
        # The PLD is one of the bounds this accountant reports the least of.
        return guide is self.pld

    def prepare(self, event: PrivacyEvent) -> None:
        self.rdp.prepare(event)
        try:
            self.pld.pld(event)
        except UnsupportedEventError:
            pass

    def empty(self) -> _TightestState:
        return _TightestState(self.rdp.empty(), self.pld.empty())

    def extend(
        self, state: _TightestState, events: Sequence[PrivacyEvent]
    ) -> _TightestState:
        events = tuple(events)
        rdp = self.rdp.extend(state.rdp, events)
        if not rdp.needs_delta:
            # Basic composition will be reported: defer the PLD work.
            return _TightestState(rdp, state.pld, state.pending + events)
        pld = self.pld._extend(state.pld, state.pending + events, strict=False)
        return _TightestState(rdp, pld)

    def report(self, state: _TightestState, delta: float) -> CompositionReport:
        report = self.rdp.report(state.rdp, delta)
        if not state.rdp.needs_delta or state.pld.unsupported is not None:
            return report
        pld = self.pld.report(state.pld, delta)
        candidates = {"pld": pld.epsilon, **report.candidates}
        if pld.epsilon < report.epsilon:
            return CompositionReport(pld.epsilon, float(delta), "pld", candidates)
        return CompositionReport(
            report.epsilon, report.delta, report.method, candidates
        )
