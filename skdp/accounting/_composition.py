"""What every accountant shares: the interface, the relation, the expansion.

Events say *what happened*; an accountant says *how it composes* (the
design of Google's dp_accounting). Composition is a fold: an immutable
*state* summarises the events composed so far, :meth:`Accountant.extend`
returns a new state with more events, and :meth:`Accountant.report` reads
``(epsilon, delta)`` off a state. A :class:`~skdp.accounting.PrivacyBudget`
keeps the state of its ledger and extends it by each new entry, so a spend
costs one composition however long the ledger is.

``expand_events`` is the one place that walks the structure of events
(:class:`ComposedEvent`, :class:`SelfComposedEvent`); each accountant then
dispatches on the type of the leaves in one method.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._events import (
    ComposedEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PrivacyEvent,
    PureDPEvent,
    RepeatedRandomStoppingEvent,
    SelfComposedEvent,
)
from ._repetition import epsilon_repeated_truncated_negative_binomial

__all__ = [
    "Accountant",
    "CompositionReport",
    "NeighbouringRelation",
    "expand_events",
    "flatten_events",
    "pure_epsilon",
]


class NeighbouringRelation(str, enum.Enum):
    """Which datasets are neighbours, i.e. what one person's data can change.

    ``REPLACE_ONE`` (skdp's relation) keeps the number of rows public and
    lets one row be replaced by any other; ``ADD_OR_REMOVE_ONE`` adds or
    removes a row, the relation of most DP-SGD papers and of dp_accounting's
    default. Events whose parameters are relative to a sensitivity (a
    Gaussian's noise multiplier, a Laplace epsilon) are measured under the
    accountant's relation by whoever emitted them; the relation changes the
    analysis only of events that carry a per-row bound, the
    Poisson-subsampled Gaussian.
    """

    REPLACE_ONE = "replace_one"
    ADD_OR_REMOVE_ONE = "add_remove"

    @classmethod
    def parse(cls, value: str | NeighbouringRelation) -> NeighbouringRelation:
        """Accept a member, its value, or ``"add_or_remove_one"``."""
        if isinstance(value, cls):
            return value
        aliases = {"add_or_remove_one": cls.ADD_OR_REMOVE_ONE}
        try:
            return aliases.get(value) or cls(value)
        except ValueError:
            raise ValueError(
                "neighbouring_relation must be 'replace_one' or 'add_remove'; got "
                f"{value!r}."
            ) from None


@dataclass(frozen=True)
class CompositionReport:
    """The total privacy of a set of events and how it was obtained.

    Attributes
    ----------
    epsilon : float
        Total epsilon.
    delta : float
        Total delta.
    method : str
        Which composition gave the bound (the tightest valid one): ``"pld"``
        (privacy loss distributions), ``"rdp"`` (Renyi DP), ``"basic+rdp"``
        (pure events added, the rest by Renyi DP), ``"basic+gaussian"``
        (pure events added, the Gaussian ones exactly), ``"basic"``; a
        ``"+approx"`` suffix when approximate events were added on top.
    candidates : dict
        Every bound that was computed, by name.
    guarantee : {"declared", "adaptive"}
        What the figure assumes. ``"declared"``: the events' privacy
        parameters were fixed before any of them ran (an accountant's
        composition: tight). ``"adaptive"``: each spend may have been chosen
        after seeing the previous releases (a budget's filter,
        ``skdp.accounting._filters``).
    """

    epsilon: float
    delta: float
    method: str
    candidates: dict
    guarantee: str = "declared"


class UnsupportedEventError(TypeError):
    """An accountant was given an event it cannot interpret."""


def _check_event(event) -> PrivacyEvent:
    if not isinstance(event, PrivacyEvent):
        raise TypeError(f"Expected a PrivacyEvent, got {event!r}.")
    return event


@functools.lru_cache(maxsize=8192)
def unlabelled(event: PrivacyEvent) -> PrivacyEvent:
    """``event`` with every label, also of nested events, set to ``""``.

    Labels say who spent; they never change the privacy, so caches are keyed
    on the unlabelled event.
    """
    changes: dict[str, Any] = {"label": ""} if event.label else {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if isinstance(value, PrivacyEvent):
            stripped = unlabelled(value)
            if stripped is not value:
                changes[f.name] = stripped
        elif isinstance(value, tuple) and value and isinstance(value[0], PrivacyEvent):
            parts = tuple(unlabelled(part) for part in value)
            if any(new is not old for new, old in zip(parts, value)):
                changes[f.name] = parts
    return dataclasses.replace(event, **changes) if changes else event


def expand_events(events: Iterable[PrivacyEvent]) -> list[tuple[PrivacyEvent, int]]:
    """The leaves of ``events`` with how often each runs, labels removed.

    :class:`ComposedEvent` contributes its parts, :class:`SelfComposedEvent`
    its event ``count`` times; identical leaves are merged (composition is
    commutative). Leaves keep the order in which they first appear.

    Examples
    --------
    >>> from skdp.accounting import (ComposedEvent, GaussianEvent, LaplaceEvent,
    ...     SelfComposedEvent)
    >>> from skdp.accounting._composition import expand_events
    >>> leaves = expand_events([
    ...     ComposedEvent((LaplaceEvent(0.1), LaplaceEvent(0.1, label="x"))),
    ...     SelfComposedEvent(GaussianEvent(2.0), 3)])
    >>> [(type(leaf).__name__, count) for leaf, count in leaves]
    [('LaplaceEvent', 2), ('GaussianEvent', 3)]
    """
    counts: dict[PrivacyEvent, int] = {}

    def walk(event: PrivacyEvent, times: int) -> None:
        _check_event(event)
        if isinstance(event, ComposedEvent):
            for part in event.events:
                walk(part, times)
        elif isinstance(event, SelfComposedEvent):
            walk(event.event, times * event.count)
        else:
            leaf = unlabelled(event)
            counts[leaf] = counts.get(leaf, 0) + times

    for event in events:
        walk(event, 1)
    return list(counts.items())


def pure_epsilon(events: Iterable[PrivacyEvent]) -> float | None:
    """Total epsilon of ``events`` if every leaf is pure DP, else ``None``.

    Pure leaves are the classes whose privacy loss is bounded by their
    ``epsilon`` (:class:`PureDPEvent`, :class:`LaplaceEvent`,
    :class:`DiscreteLaplaceEvent`, :class:`ExponentialMechanismEvent`), a
    :class:`ParallelComposedEvent` of pure parts (the largest part), and
    random stopping over pure events with a truncated negative binomial law
    (``(2 + eta)`` times the base; Papernot & Steinke 2022, Theorem 2).
    Dispatch is on the exact class: an unknown subclass is not pure here.

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent, LaplaceEvent
    >>> from skdp.accounting._composition import pure_epsilon
    >>> pure_epsilon([LaplaceEvent(0.25), LaplaceEvent(0.5)])
    0.75
    >>> pure_epsilon([LaplaceEvent(0.25), GaussianEvent(2.0)]) is None
    True
    """
    total = []
    for leaf, count in expand_events(events):
        kind = type(leaf)
        if kind in (
            PureDPEvent,
            LaplaceEvent,
            DiscreteLaplaceEvent,
            ExponentialMechanismEvent,
        ):
            value = leaf.epsilon
        elif kind is ParallelComposedEvent:
            parts = [pure_epsilon([part]) for part in leaf.events]
            if any(part is None for part in parts):
                return None
            value = max(parts)
        elif (
            kind is RepeatedRandomStoppingEvent
            and leaf.distribution == "truncated_negative_binomial"
        ):
            base = pure_epsilon([leaf.base_event])
            if base is None:
                return None
            value = epsilon_repeated_truncated_negative_binomial(base, leaf.shape)
        else:
            return None
        total.append(count * value)
    return math.fsum(total)


def flatten_events(events: Iterable[PrivacyEvent]) -> list[PrivacyEvent]:
    """Expand :class:`ComposedEvent` records into their parts, in order.

    A :class:`SelfComposedEvent` is kept as one record (use
    ``expand_events`` for leaves with counts).
    """
    out: list[PrivacyEvent] = []
    for ev in events:
        if isinstance(ev, ComposedEvent):
            out.extend(ev.leaves())
        else:
            out.append(_check_event(ev))
    return out


class ByteBoundedCache:
    """A thread-safe least-recently-used cache bounded by total bytes.

    Parameters
    ----------
    max_bytes : int
        Entries are evicted, least recently used first, beyond this size.
    size_of : callable
        Size of a value in bytes.
    """

    def __init__(self, max_bytes: int, size_of: Callable[[Any], int]):
        self.max_bytes = int(max_bytes)
        self._size_of = size_of
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = compute()  # outside the lock: may be slow, may run twice
        size = self._size_of(value)
        with self._lock:
            if key not in self._data:
                self._data[key] = value
                self._bytes += size
                while self._bytes > self.max_bytes and len(self._data) > 1:
                    _, old = self._data.popitem(last=False)
                    self._bytes -= self._size_of(old)
            return self._data[key]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0


# Reports of Accountant.compose, by (accountant, expanded events, delta).
_REPORTS = ByteBoundedCache(8192, lambda report: 1)


class Accountant(abc.ABC):
    """How privacy events compose into ``(epsilon, delta)``.

    An accountant is a stateless interpreter of events: the composition of a
    sequence of events is a fold over an immutable state, ``state =
    accountant.extend(accountant.empty(), events)``, read by
    ``accountant.report(state, delta)``. :meth:`compose` does both.
    Accountants compare equal when they are configured alike, so they can
    key caches.

    Subclasses implement :meth:`empty`, :meth:`extend`, :meth:`report` and
    ``_config``.
    """

    neighbouring_relation: NeighbouringRelation

    @abc.abstractmethod
    def _config(self) -> tuple:
        """What makes two accountants of this class give the same results."""

    def __eq__(self, other):
        if other is self:
            return True
        return type(other) is type(self) and other._config() == self._config()

    def __hash__(self):
        return hash((type(self).__name__, self._config()))

    @abc.abstractmethod
    def empty(self) -> Any:
        """The state of no events."""

    @abc.abstractmethod
    def extend(self, state: Any, events: Sequence[PrivacyEvent]) -> Any:
        """A new state: ``state`` composed with ``events`` (``state`` is kept).

        Raises
        ------
        TypeError
            If an event is not a :class:`PrivacyEvent` or is not supported;
            ``state`` is then unchanged.
        """

    @abc.abstractmethod
    def report(self, state: Any, delta: float) -> CompositionReport:
        """Total ``(epsilon, delta)`` of ``state`` when ``delta`` may be spent."""

    def prepare(self, event: PrivacyEvent) -> None:
        """Compute (and cache) what composing ``event`` needs, e.g. its PLD.

        A budget calls this before taking its ledger's write lock, so that
        the composition under the lock is short.
        """
        self.extend(self.empty(), [event])

    def compose(
        self, events: Iterable[PrivacyEvent], delta: float
    ) -> CompositionReport:
        """Total privacy of ``events`` when ``delta`` may be spent in all.

        Parameters
        ----------
        events : iterable of PrivacyEvent
            The events, composed in any order (composition is commutative).
        delta : float
            The total delta available, in [0, 1).

        Returns
        -------
        report : CompositionReport
            ``epsilon`` is ``inf`` when the events cannot be made
            ``(epsilon, delta)``-DP, e.g. a Gaussian event with ``delta=0``.
        """
        events = list(events)
        # Composing is a pure function of the accountant, the events (labels
        # do not matter) and delta; calibrations ask the same question many
        # times (one fit after another), so the answers are remembered.
        key = (self, tuple(expand_events(events)), float(delta))
        return _REPORTS.get_or_compute(
            key, lambda: self.report(self.extend(self.empty(), events), delta)
        )

    def epsilon_delta(
        self, events: Iterable[PrivacyEvent], delta: float
    ) -> tuple[float, float]:
        """Shorthand for ``(report.epsilon, report.delta)`` of :meth:`compose`."""
        report = self.compose(events, delta)
        return report.epsilon, report.delta

    def coarse(self) -> Accountant:
        """A faster accountant with nearly the same epsilons (or ``self``).

        Calibration searches with it first and then refines with ``self``.
        """
        return self

    def guide(self, event: PrivacyEvent) -> Accountant:
        """A cheaper accountant that usually agrees on events like ``event``.

        Calibration searches with it (and its :meth:`coarse`), then checks
        the bracket it found with ``self``, which alone decides the result.
        ``self`` when there is none.
        """
        return self

    def _guide_bounds_above(self, guide: Accountant) -> bool:
        """Whether ``guide``'s epsilon is never below this accountant's.

        True only where that holds by construction (``guide`` is one of the
        bounds this accountant reports the least of): then whatever the
        guide accepts this accountant accepts, and a calibration need not
        have it check the guide's acceptable end.
        """
        return False

    def _accepts(self, event: PrivacyEvent, delta: float, epsilon: float) -> bool:
        """Whether ``event`` spends at most ``epsilon`` at ``delta`` here.

        Asks the guide first when it bounds this accountant from above
        (:meth:`_guide_bounds_above`): what it accepts this accountant
        accepts, for less work (and its answer is often cached from a
        search). Otherwise, or when it refuses, this accountant decides.
        """
        guide = self.guide(event)
        if guide is not self and self._guide_bounds_above(guide):
            try:
                if guide.epsilon_delta([event], delta)[0] <= epsilon:
                    return True
            except UnsupportedEventError:
                pass
        return self.epsilon_delta([event], delta)[0] <= epsilon
