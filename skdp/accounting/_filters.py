"""The budget's accept/refuse rules: privacy filters for adaptive spending.

An analyst who sees each release before choosing the next spend (its
epsilon, its mechanism, its data) chooses privacy parameters *adaptively*.
Composition theorems for parameters fixed in advance (the privacy loss
distribution accountant among them) do not cover that; a *privacy filter*
does: a rule that, given the spends accepted so far and a proposed one,
accepts or refuses it, such that the whole interaction is
``(epsilon, delta)``-DP however the analyst adapts (Rogers, Roth, Ullman &
Vadhan 2016). A :class:`~skdp.PrivacyBudget` applies one of two filters,
chosen when its ledger gets its first entry:

* ``BasicFilter`` (``composition="basic"``, the default): each entry
  is certified ``(epsilon_i, delta_i)``-DP by the tight accountant (one fit,
  one search, one declared plan: parameters fixed within it), and the
  entries are accepted while ``sum epsilon_i <= epsilon`` and ``sum
  delta_i <= delta``: the basic-composition filter, valid under full
  adaptivity (Rogers et al. 2016; Whitehouse, Ramdas, Rogers & Wu 2023,
  Section 4). A single fit is charged exactly its own ``(epsilon, delta)``.
* ``RenyiFilter`` (``composition="renyi"``): the entries' Renyi-DP
  curves add up at a fixed set of orders ``Lambda`` and a spend is accepted
  while, for some order, the improved conversion (Canonne, Kamath & Steinke
  2020, Proposition 12) of the sum at ``delta / |Lambda|`` is within
  ``epsilon``; a ledger of pure entries only adds their epsilons at
  ``delta = 0``. Valid under full adaptivity by the Renyi filter of Feldman
  & Zrnic (2021), Theorem 3.1, at each order, and a union over the orders
  (proof in ``doc/user_guide/budget.rst``). Better than basic composition
  for many small releases (counts, queries), worse for one or two large
  fits.

Both filters read only the records' public parameters, never the data or
the released values, so refusing leaks nothing. What a ledger records
(``CertifiedEvent``, ``DeclaredPlanEvent``, ``PlannedEvent``)
is defined here too; the mechanism events inside are unchanged.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..exceptions import LedgerError
from ._accountant import RDPAccountant
from ._composition import (
    Accountant,
    CompositionReport,
    UnsupportedEventError,
    pure_epsilon,
    unlabelled,
)
from ._events import PrivacyEvent, PureDPEvent, _check_finite_positive

__all__ = [
    "FILTERS",
    "BasicFilter",
    "CertifiedEvent",
    "DeclaredPlanEvent",
    "FilterState",
    "PlannedEvent",
    "RenyiFilter",
    "filter_orders",
]

_COMPOSITIONS = ("basic", "renyi")


def _check_delta(value) -> float:
    delta = _check_finite_positive("delta", value, allow_zero=True)
    if delta >= 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    return delta


def _check_composition(value) -> str:
    if value not in _COMPOSITIONS:
        raise ValueError(f"composition must be one of {_COMPOSITIONS}, got {value!r}.")
    return value


def _check_certificate(record) -> None:
    eps = record.epsilon
    if isinstance(eps, bool) or not isinstance(eps, int | float):
        raise TypeError(f"epsilon must be a real number, got {eps!r}.")
    if not (float(eps) >= 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be finite and >= 0, got {eps!r}.")
    object.__setattr__(record, "epsilon", float(eps))
    object.__setattr__(record, "delta", _check_delta(record.delta))
    object.__setattr__(record, "composition", _check_composition(record.composition))


@dataclass(frozen=True)
class CertifiedEvent(PrivacyEvent):
    """A ledger entry: one release and the guarantee the budget charged for it.

    Parameters
    ----------
    event : PrivacyEvent
        The mechanism that ran (a fit's event, a tool's, a search's).
    epsilon, delta : float
        Its certificate: the tight accountant's ``epsilon`` for ``event``
        at ``delta`` (``delta = 0`` for pure events). What
        ``BasicFilter`` adds up.
    composition : {"basic", "renyi"}
        The filter of the budget that accepted it; every entry of a ledger
        has the same.
    label : str, default=""
        What spent it.
    """

    event: PrivacyEvent
    epsilon: float
    delta: float
    composition: str = "basic"
    kind: ClassVar[str] = "certified"

    def __post_init__(self):
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {self.event!r}.")
        _check_certificate(self)


@dataclass(frozen=True)
class DeclaredPlanEvent(PrivacyEvent):
    """A ledger entry: a sequence of releases declared before any of them ran.

    Their privacy parameters are fixed in advance, so they compose tightly
    (privacy loss distributions: Zhu, Dong & Wang 2022, Theorem 10, covers
    mechanisms chosen adaptively once their dominating pairs are fixed); the
    plan is charged once, as one entry certified ``(epsilon, delta)``. Each
    later spend of an event of the plan is recorded as a
    ``PlannedEvent`` and costs nothing more.

    Parameters
    ----------
    events : tuple of PrivacyEvent
        The slots; each can be spent once.
    epsilon, delta : float
        The plan's certificate: the tight accountant's ``epsilon`` for all
        of ``events`` at ``delta``.
    composition : {"basic", "renyi"}
        As for ``CertifiedEvent``.
    label : str, default=""
        What declared it.
    """

    events: tuple[PrivacyEvent, ...] = ()
    epsilon: float = 0.0
    delta: float = 0.0
    composition: str = "basic"
    kind: ClassVar[str] = "declared_plan"

    def __post_init__(self):
        events = tuple(self.events)
        if not events:
            raise ValueError("A declared plan needs at least one event.")
        for ev in events:
            if not isinstance(ev, PrivacyEvent):
                raise TypeError(f"Plan events must be PrivacyEvent, got {ev!r}.")
        object.__setattr__(self, "events", events)
        _check_certificate(self)


@dataclass(frozen=True)
class PlannedEvent(PrivacyEvent):
    """A ledger entry: a release that spends one slot of a declared plan.

    Parameters
    ----------
    event : PrivacyEvent
        The release; equal, up to labels, to an unused event of the plan.
    plan : int
        Ledger index of the ``DeclaredPlanEvent``.
    label : str, default=""
        What spent it.
    """

    event: PrivacyEvent
    plan: int = 0
    kind: ClassVar[str] = "planned"

    def __post_init__(self):
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {self.event!r}.")
        plan = self.plan
        if isinstance(plan, bool) or not isinstance(plan, int) or plan < 0:
            raise ValueError(f"plan must be a ledger index >= 0, got {plan!r}.")


def mechanism_events(record: PrivacyEvent) -> tuple[PrivacyEvent, ...]:
    """The mechanisms a ledger record stands for (what a tight report composes).

    A plan stands for all its events and a planned spend for none (its
    plan already does); a record of an older ledger is its own mechanism.
    """
    if isinstance(record, CertifiedEvent):
        return (record.event,)
    if isinstance(record, DeclaredPlanEvent):
        return record.events
    if isinstance(record, PlannedEvent):
        return ()
    return (record,)


def filter_orders() -> np.ndarray:
    """The fixed Renyi orders of ``RenyiFilter``: 16 from 1.25 to 1024.

    Fixed in advance (they are part of the filter's rule): geometrically
    spaced, which costs ``log(16) / (alpha - 1)`` in epsilon at the best
    order against one known order, and covers ledgers from a few large fits
    (best order near 10) to thousands of small releases (near 100).

    Examples
    --------
    >>> from skdp.accounting._filters import filter_orders
    >>> orders = filter_orders()
    >>> len(orders), float(orders[0]), float(orders[-1])
    (16, 1.25, 1024.0)
    """
    orders = np.geomspace(1.25, 1024.0, 16)
    orders[-1] = 1024.0
    orders.setflags(write=False)
    return orders


@dataclass(frozen=True, eq=False)
class FilterState:
    """What a filter has added up over a ledger (running totals).

    ``epsilons``/``deltas`` are the basic filter's certificates;
    ``curve`` the Renyi filter's summed curve (``None`` when every entry is
    pure), ``pure`` the sum of the pure entries' epsilons; ``slots`` the
    unused events of each declared plan (by ledger index); ``count`` the
    records added.
    """

    epsilons: tuple[float, ...] = ()
    deltas: tuple[float, ...] = ()
    pure: tuple[float, ...] = ()
    curve: np.ndarray | None = None
    slots: dict = field(default_factory=dict)
    count: int = 0
    composition: str | None = None


class _Filter:
    """Shared bookkeeping of both filters: plans, slots, composition checks."""

    name: ClassVar[str]
    theorem: ClassVar[str]

    def __init__(self, accountant: Accountant, delta_limit: float) -> None:
        self.accountant = accountant
        self.delta_limit = float(delta_limit)

    def empty(self) -> FilterState:
        return FilterState()

    def add(self, state: FilterState, record: PrivacyEvent) -> FilterState:
        """``state`` with one more ledger record (``state`` is kept)."""
        composition = getattr(record, "composition", None)
        if composition is not None and composition != self.name:
            raise LedgerError(
                f"This ledger's spends were accepted by the {composition!r} "
                f"filter; a budget with composition={self.name!r} cannot spend "
                f"from it. Open it with composition={composition!r}."
            )
        slots = state.slots
        if isinstance(record, DeclaredPlanEvent):
            slots = dict(slots)
            slots[state.count] = Counter(unlabelled(e) for e in record.events)
        elif isinstance(record, PlannedEvent):
            free = slots.get(record.plan)
            key = unlabelled(record.event)
            if free is None or free[key] < 1:
                raise LedgerError(
                    f"Ledger entry {state.count} spends a slot of plan "
                    f"{record.plan} that the plan does not have (free)."
                )
            slots = dict(slots)
            slots[record.plan] = free - Counter([key])
        return self._add(state, record, slots, composition or state.composition)

    def slot_for(self, state: FilterState, event: PrivacyEvent) -> int | None:
        """Ledger index of a declared plan with a free slot for ``event``."""
        key = unlabelled(event)
        for index, free in sorted(state.slots.items()):
            if free[key] > 0:
                return index
        return None


class BasicFilter(_Filter):
    """Basic composition of certified entries, a filter under full adaptivity.

    Accepts while ``sum epsilon_i <= epsilon`` and ``sum delta_i <= delta``
    over the entries' certificates (Rogers, Roth, Ullman & Vadhan 2016, the
    basic-composition filter; Whitehouse et al. 2023). An entry written
    by an older skdp (a bare event, no certificate) is certified here: a
    pure one at ``(epsilon, 0)``, any other at the whole ``delta`` limit.
    """

    name = "basic"
    theorem = "basic-composition filter (Rogers, Roth, Ullman & Vadhan 2016)"

    def _add(self, state, record, slots, composition):
        if isinstance(record, PlannedEvent):
            epsilon, delta = 0.0, 0.0
        elif isinstance(record, CertifiedEvent | DeclaredPlanEvent):
            epsilon, delta = record.epsilon, record.delta
        else:  # a bare event of an older ledger
            pure = pure_epsilon([record])
            if pure is not None:
                epsilon, delta = pure, 0.0
            else:
                delta = self.delta_limit
                epsilon = self.accountant.epsilon_delta([record], delta)[0]
        return FilterState(
            state.epsilons + (epsilon,),
            state.deltas + (delta,),
            state.pure,
            state.curve,
            slots,
            state.count + 1,
            composition,
        )

    def report(self, state: FilterState) -> CompositionReport:
        epsilon = math.fsum(state.epsilons)
        delta = math.fsum(state.deltas)
        return CompositionReport(
            epsilon, delta, "basic filter", {"basic filter": epsilon}, "adaptive"
        )


class RenyiFilter(_Filter):
    """Renyi-DP curves added at fixed orders, a filter under full adaptivity.

    For the fixed orders ``Lambda`` (:func:`filter_orders`), a ledger whose
    entries' Renyi curves sum to ``R`` is accepted when

    ``min over alpha of R(alpha) + (log(|Lambda| / delta) + (alpha - 1)
    log(1 - 1/alpha) - log(alpha)) / (alpha - 1) <= epsilon``;

    a ledger of pure entries only, when the sum of their epsilons is (at
    ``delta = 0``). Valid when every spend is chosen after seeing the
    previous releases: Feldman & Zrnic (2021), Theorem 3.1, at each order,
    the improved conversion of Canonne, Kamath & Steinke (2020),
    Proposition 12, at ``delta / |Lambda|`` each, and a union over the
    orders (``doc/user_guide/budget.rst``). Entries without a Renyi curve
    (approximate ``(epsilon, delta)`` events) are refused.
    """

    name = "renyi"
    theorem = (
        "Renyi filter at 16 fixed orders (Feldman & Zrnic 2021, Theorem 3.1; "
        "union over the orders)"
    )

    def __init__(self, accountant: Accountant, delta_limit: float) -> None:
        super().__init__(accountant, delta_limit)
        self.orders = filter_orders()
        self._rdp = RDPAccountant(self.orders)

    def _curve(self, events: Sequence[PrivacyEvent]) -> np.ndarray:
        try:
            return sum(
                (self._rdp.rdp_curve(event) for event in events),
                np.zeros_like(self.orders),
            )
        except TypeError as error:
            raise UnsupportedEventError(
                f"The Renyi filter (composition='renyi') cannot compose "
                f"{[type(e).__name__ for e in events]}: {error} Use a budget "
                "with composition='basic', or a mechanism with a Renyi-DP "
                "curve (for example delta=0 for objective perturbation)."
            ) from None

    def _add(self, state, record, slots, composition):
        events = mechanism_events(record)
        pure = state.pure
        curve = state.curve
        value = pure_epsilon(events) if events else 0.0
        if value is not None and curve is None:
            pure = pure + (value,)
        else:
            if curve is None:  # the first entry that needs delta
                curve = np.zeros_like(self.orders)
                # The pure entries so far enter through their curves too.
                for previous in state.pure:
                    curve = curve + self._rdp.rdp_curve(PureDPEvent(previous))
            curve = curve + self._curve(events)
        return FilterState(
            state.epsilons,
            state.deltas,
            pure,
            curve,
            slots,
            state.count + 1,
            composition,
        )

    def report(self, state: FilterState) -> CompositionReport:
        if state.curve is None:
            epsilon = math.fsum(state.pure)
            return CompositionReport(
                epsilon, 0.0, "renyi filter (pure)", {"basic": epsilon}, "adaptive"
            )
        delta = self.delta_limit
        if not delta > 0:
            return CompositionReport(math.inf, 0.0, "renyi filter", {}, "adaptive")
        a = self.orders
        per_order = state.curve + (
            math.log(len(a) / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)
        ) / (a - 1)
        epsilon = max(float(np.min(per_order)), 0.0)
        return CompositionReport(
            epsilon, delta, "renyi filter", {"renyi filter": epsilon}, "adaptive"
        )


#: The filters by the name a budget's ``composition`` takes.
FILTERS = {BasicFilter.name: BasicFilter, RenyiFilter.name: RenyiFilter}
