"""The privacy budget that every skdp estimator spends from."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from ..exceptions import BudgetExceededError, LedgerError
from ._accountant import CompositionReport, PrivacyAccountant
from ._composition import Accountant, expand_events, pure_epsilon
from ._events import ApproxDPEvent, PrivacyEvent
from ._filters import (
    FILTERS,
    CertifiedEvent,
    DeclaredPlanEvent,
    FilterState,
    PlannedEvent,
    mechanism_events,
)
from .ledgers import LedgerEntry, LedgerStore, MemoryLedger
from .ledgers._postgres import PostgreSQLLedger, is_postgres_url
from .ledgers._sqlite import SQLiteLedger, backup_entries

__all__ = ["PrivacyBudget"]

# Spends are compared with the limits up to this relative slack, so that
# 0.1 + 0.2 + 0.7 fits a budget of 1.0 despite floating-point rounding.
_RELATIVE_SLACK = 1e-9


@dataclass(frozen=True, eq=False)
class _Tally:
    """The filter's state for the first ``count`` records of the ledger.

    ``last`` is the last of those records (the ledger is append-only, so it
    identifies the prefix); ``report`` is filled in once computed.
    """

    composition: str | None = None
    count: int = 0
    last: PrivacyEvent | None = None
    state: FilterState | None = None
    report: CompositionReport | None = None


def _check_limit(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must not be NaN.")
    if name == "epsilon" and not value > 0:
        raise ValueError(f"epsilon must be > 0, got {value!r}.")
    if name == "delta" and not 0 <= value < 1:
        raise ValueError(f"delta must be in [0, 1), got {value!r}.")
    return value


class PrivacyBudget:
    """A total privacy budget shared by every fit that spends from it.

    Pass the same budget to several estimators (``budget=``) and each fit
    charges its privacy cost here before it touches the data. A charge that
    would take the total past ``(epsilon, delta)`` raises
    :class:`~skdp.exceptions.BudgetExceededError` and records nothing, so
    the fit produces no model.

    ``clone``, ``GridSearchCV`` and ``cross_val_score`` keep pointing at the
    same budget (``copy.deepcopy`` returns the budget itself), so every fit
    they run is recorded in the user's object.

    Parameters
    ----------
    epsilon : float
        Total epsilon allowed, > 0. ``math.inf`` records spends without a limit.
    delta : float, default=0.0
        Total delta allowed, in [0, 1). Mechanisms with Gaussian noise need
        ``delta > 0``; a common choice is well below ``1 / n_samples``.
    composition : {"basic", "renyi"}, default="basic"
        The rule that accepts or refuses each spend, valid when every spend
        is chosen after seeing the earlier releases (a privacy filter, see
        Notes). ``"basic"``: each spend is charged its own tight
        ``(epsilon_i, delta_i)`` and they add up; one fit on a budget of its
        size fits exactly. ``"renyi"``: Renyi-DP curves add up, one
        ``delta`` for all; better for many small releases (counts, queries),
        worse for a few large fits. A ledger keeps the rule of its first
        spend, and a budget with the other rule cannot spend from it.
    accountant : Accountant, default=None
        The tight composition of the events of one spend (one fit, one
        search, one declared plan), whose parameters are fixed before it
        runs; ``None`` uses :class:`~skdp.accounting.PrivacyAccountant`
        (privacy loss distributions, Renyi DP, the exact Gaussian profile
        and basic composition, the tightest valid one) for skdp's
        neighbouring relation, replacing one row.
    ledger : str, os.PathLike or LedgerStore, default=None
        Where spends are recorded. ``None`` (or ``":memory:"``) keeps them in
        this process's memory (moved to a temporary file on this machine the
        first time the budget is sent to another process, see Notes). A path
        (``~`` means your home directory) opens or creates a
        :class:`~skdp.accounting.SQLiteLedger` there: every
        process, joblib worker and Dask worker that can open the file spends
        from the same budget, every spend is on disk before the noisy result
        is released, and the file keeps the record after the program ends. An
        existing ledger must have been created with the same ``epsilon`` and
        ``delta`` (see :meth:`from_ledger` to reopen one with its own). A
        ``postgresql://`` (or ``postgres://``) URL opens a
        :class:`~skdp.accounting.PostgreSQLLedger` instead, for workers on
        several machines (``#name`` at the end picks one of several ledgers
        in the database; needs ``skdp[postgresql]``). Any
        other object implementing :class:`~skdp.accounting.LedgerStore` (for
        example a server-backed ledger) is used as given.

    Attributes
    ----------
    ledger : list of LedgerEntry
        Every recorded spend, in order (a fresh list on each access); the
        ``ledger`` parameter says where they are kept.
    store : LedgerStore
        Where the ledger is kept, e.g. a :class:`~skdp.accounting.SQLiteLedger`
        whose ``path`` is the file.

    See Also
    --------
    skdp.accounting.PrivacyAccountant : The tight composition inside one spend.

    Notes
    -----
    *The guarantee.* The analyst may choose every spend (its epsilon, its
    mechanism, its data) after seeing every earlier release; the budget's
    accept/refuse rule is a *privacy filter* (Rogers, Roth, Ullman & Vadhan
    2016), so the whole interaction is ``(epsilon, delta)``-DP however the
    spends were chosen. ``"basic"`` is the basic-composition filter over the
    spends' certificates; ``"renyi"`` the Renyi filter of Feldman & Zrnic
    (2021), Theorem 3.1, at 16 fixed orders with a union over them (both in
    ``skdp.accounting._filters``). Inside one spend the
    composition is the accountant's, tight, because its parameters are
    fixed before it runs (Zhu, Dong & Wang 2022, Theorem 10). Spends
    declared together in advance with :meth:`declare` are one such spend.
    :meth:`report` says which guarantee a figure holds under:
    ``guarantee="adaptive"`` (the filter, what is enforced) or
    ``guarantee="declared"`` (the tight composition of every event, valid
    only if all were fixed before the first ran). See
    ``doc/user_guide/budget.rst``.

    *Cost.* The budget keeps the filter's running totals for its ledger and
    extends them by each new entry, so a spend adds one entry whatever the
    length of the ledger; :meth:`spent` and :meth:`report` add only entries
    recorded since the last call (by other processes), and ``repr`` adds
    nothing. Only ``report(guarantee="declared")`` composes the whole ledger.
    Comparisons with the limits allow a relative slack of 1e-9 for
    floating-point rounding.

    *Processes.* A pickled budget (what a joblib worker of
    ``GridSearchCV(n_jobs=k)`` or a Dask worker receives) is a handle to the
    same ledger: spends made from the copy are recorded where the original
    reads them. A ``ledger=`` file is reopened at the same absolute path and
    its identifier checked, so a worker that cannot reach the file raises
    :class:`~skdp.exceptions.LedgerError` on its first spend instead of
    spending from an empty ledger. An in-memory budget is moved, the first
    time it is pickled, to a :class:`~skdp.accounting.SQLiteLedger` in a
    temporary directory of this machine (removed when this process exits);
    the original then reads that file, so parallel fits on this machine are
    all recorded. Workers on other machines cannot reach that file and fail
    on their first spend: give such budgets a ``ledger=`` on a shared
    filesystem or a server-backed store. A process forked before the budget
    was ever pickled inherits a private copy of the memory, and its spends
    raise :class:`~skdp.exceptions.LedgerError` too. A pickled model whose
    ledger is gone still loads and predicts; only spending needs the ledger.
    See ``doc/ledger.rst`` for several machines and crash safety.

    Examples
    --------
    >>> from skdp import PrivacyBudget
    >>> from skdp.accounting import LaplaceEvent
    >>> budget = PrivacyBudget(epsilon=1.0)
    >>> _ = budget.spend(LaplaceEvent(0.4), label="count")
    >>> budget.spent()
    (0.4, 0.0)
    >>> budget.remaining()
    (0.6, 0.0)
    >>> budget.spend(LaplaceEvent(0.7), label="too much")
    Traceback (most recent call last):
    ...
    skdp.exceptions.BudgetExceededError: Spending LaplaceEvent(epsilon=0.7) ...
    >>> [entry.label for entry in budget.ledger]
    ['count']

    A spend that needs delta names the delta it is charged:

    >>> from skdp.accounting import GaussianEvent
    >>> budget = PrivacyBudget(epsilon=3.0, delta=1e-5)
    >>> entry = budget.spend(GaussianEvent(2.0), delta=5e-6)
    >>> round(entry.certificate[0], 3), entry.certificate[1]
    (2.075, 5e-06)

    A budget kept in a file is shared by processes and survives them:

    >>> import os, tempfile
    >>> directory = tempfile.TemporaryDirectory()
    >>> path = os.path.join(directory.name, "ledger.db")
    >>> budget = PrivacyBudget(epsilon=1.0, ledger=path)
    >>> _ = budget.spend(LaplaceEvent(0.25), label="count")
    >>> reopened = PrivacyBudget.from_ledger(path)
    >>> reopened.spent(), [entry.label for entry in reopened.ledger]
    ((0.25, 0.0), ['count'])
    >>> PrivacyBudget(epsilon=2.0, ledger=path)
    Traceback (most recent call last):
    ...
    skdp.exceptions.LedgerError: The privacy ledger ... was created with limits ...
    >>> directory.cleanup()
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        composition: str = "basic",
        accountant: Accountant | None = None,
        ledger: str | os.PathLike[str] | LedgerStore | None = None,
    ) -> None:
        self.epsilon = _check_limit("epsilon", epsilon)
        self.delta = _check_limit("delta", delta)
        if composition not in FILTERS:
            raise ValueError(
                f"composition must be one of {sorted(FILTERS)}, got {composition!r}."
            )
        self.composition = composition
        self.accountant = PrivacyAccountant() if accountant is None else accountant
        self._store = _open_store(ledger, self.epsilon, self.delta)
        self._share_lock = threading.Lock()
        self._unshared_copy = False
        self._tally = _Tally()

    @property
    def _filter(self):
        return FILTERS[self.composition](self.accountant, self.delta)

    @classmethod
    def from_ledger(
        cls,
        ledger: str | os.PathLike[str] | LedgerStore,
        *,
        composition: str | None = None,
        accountant: Accountant | None = None,
    ) -> PrivacyBudget:
        """Reopen an existing ledger with the limits it was created with.

        Parameters
        ----------
        ledger : str, os.PathLike or LedgerStore
            Path of a :class:`~skdp.accounting.SQLiteLedger` file, a
            ``postgresql://`` URL of a
            :class:`~skdp.accounting.PostgreSQLLedger`, or a store.
        composition : {"basic", "renyi"} or None, default=None
            ``None`` takes the rule of the ledger's spends ("basic" for an
            empty ledger); another rule than the ledger's is refused when
            spending.
        accountant : Accountant, default=None
            As in the constructor.

        Returns
        -------
        budget : PrivacyBudget
            A budget spending from that ledger; its ``epsilon`` and
            ``delta`` are the stored limits.

        Raises
        ------
        LedgerError
            If there is no ledger at that path or it cannot be read.
        """
        if is_postgres_url(ledger):
            ledger = PostgreSQLLedger(ledger)
        elif isinstance(ledger, str | os.PathLike):
            ledger = SQLiteLedger(ledger)
        epsilon, delta = ledger.limits
        if composition is None:
            recorded = {
                getattr(entry.record, "composition", None) for entry in ledger.entries()
            } - {None}
            composition = recorded.pop() if len(recorded) == 1 else "basic"
        return cls(
            epsilon,
            delta,
            composition=composition,
            accountant=accountant,
            ledger=ledger,
        )

    # -- sharing -----------------------------------------------------------
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_share_lock"]
        state.pop("_tally", None)  # a cache of the filter's totals
        state["_store"] = store = self._shared_store()
        if not getattr(store, "shared_across_processes", False):
            state["_unshared_copy"] = True
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._share_lock = threading.Lock()
        self._tally = _Tally()

    def _shared_store(self):
        """The store, first moved to a temporary file if it is in memory.

        The original keeps reading the moved ledger (the memory store
        forwards to it), so spends made by copies in other processes show up
        here.
        """
        with self._share_lock:
            store = self._store
            if not getattr(store, "shared_across_processes", False) and hasattr(
                store, "move_to"
            ):
                store = store.move_to(SQLiteLedger.temporary_for(*store.limits))
                self._store = store
            return store

    # -- the filter's totals, extended one record at a time -------------------
    def _state_for(self, records: Sequence[PrivacyEvent]) -> FilterState:
        """The filter's state for ``records``, a ledger read just now.

        Starts from the remembered state when ``records`` extends the ledger
        it was computed for (the ledger is append-only), so only new entries
        are added. Records nothing.
        """
        tally = self._tally
        n = tally.count
        if (
            tally.composition == self.composition
            and tally.state is not None
            and n <= len(records)
            and (n == 0 or records[n - 1] is tally.last or records[n - 1] == tally.last)
        ):
            state, start = tally.state, n
        else:
            state, start = self._filter.empty(), 0
        rule = self._filter
        for record in records[start:]:
            state = rule.add(state, record)
        return state

    def _remember(self, records, state, report=None) -> None:
        """Keep ``state`` (of ``records``) unless a longer ledger is kept."""
        tally = _Tally(
            self.composition,
            len(records),
            records[-1] if records else None,
            state,
            report,
        )
        with self._share_lock:
            if len(records) >= self._tally.count:
                self._tally = tally

    def _adaptive_report(self, records) -> CompositionReport:
        tally = self._tally
        if (
            tally.report is not None
            and tally.composition == self.composition
            and tally.count == len(records)
            and (not records or records[-1] is tally.last or records[-1] == tally.last)
        ):
            return tally.report
        state = self._state_for(records)
        report = self._filter.report(state)
        self._remember(records, state, report)
        return report

    def _records(self) -> list[PrivacyEvent]:
        return [entry.record for entry in self._store.entries()]

    # -- spending ----------------------------------------------------------
    def _verdict(self, records, state, before) -> CompositionReport:
        """The filter's report of ``state`` (all of ``records``); raise if over."""
        report = self._filter.report(state)
        eps_ok = report.epsilon <= self.epsilon * (1 + _RELATIVE_SLACK)
        delta_ok = report.delta <= self.delta * (1 + _RELATIVE_SLACK)
        if not (eps_ok and delta_ok):
            new = records[-1]
            shown = getattr(new, "event", new)
            if math.isinf(report.epsilon) and self.delta == 0:
                why = (
                    "it needs delta > 0 (Gaussian noise) but this budget has "
                    "delta=0; create the budget with a delta > 0"
                )
            else:
                old = self._filter.report(before)
                why = (
                    f"the total would be (epsilon={report.epsilon:.6g}, "
                    f"delta={report.delta:.3g}) against limits "
                    f"(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}) under "
                    f"the {self._filter.theorem}; already spent "
                    f"(epsilon={old.epsilon:.6g}, delta={old.delta:.3g})"
                )
            raise BudgetExceededError(
                f"Spending {_short(shown)} ('{new.label}') would exceed the "
                f"privacy budget: {why}. Nothing was recorded. (Releases fixed "
                "before any of them runs compose tightly when declared together "
                "with PrivacyBudget.declare; many small releases compose better "
                "under composition='renyi'.)"
            )
        return report

    def _certify(self, event: PrivacyEvent, delta, records) -> CertifiedEvent:
        """The ledger record of spending ``event``: its tight ``(epsilon, delta)``."""
        pure = pure_epsilon([event])
        if pure is not None:
            return CertifiedEvent(event, pure, 0.0, self.composition, label=event.label)
        if delta is None and (own := _approximate_delta(event)) is not None:
            delta = own  # (epsilon, delta) events: their own delta
        if delta is None:
            delta = self.delta
            if self.composition == "basic":  # what is left of it
                spent = self._filter.report(self._state_for(records)).delta
                delta = max(self.delta - spent, 0.0)
        delta = _check_limit("delta", delta)
        epsilon = math.inf
        if delta > 0:
            epsilon = self.accountant.epsilon_delta([event], delta)[0]
        if not math.isfinite(epsilon):
            raise BudgetExceededError(
                f"Spending {_short(event)} ('{event.label}') would exceed the "
                f"privacy budget: it has no finite epsilon at delta={delta:.3g} "
                f"(it needs delta > 0; this budget has delta={self.delta:.3g} "
                "in all). Nothing was recorded."
            )
        return CertifiedEvent(
            event, epsilon, delta, self.composition, label=event.label
        )

    def _append(self, record: PrivacyEvent, label: str) -> LedgerEntry:
        """Append ``record`` if the filter accepts the ledger with it."""
        records = self._records()
        before = self._state_for(records)
        self._remember(records, before)

        def check(all_records: Sequence[PrivacyEvent]) -> CompositionReport:
            existing = all_records[:-1]
            if len(existing) == len(records) and (
                not records
                or existing[-1] is records[-1]
                or existing[-1] == records[-1]
            ):
                old = before
            else:  # other processes appended meanwhile
                old = self._state_for(existing)
            try:
                new = self._filter.add(old, all_records[-1])
            except LedgerError as error:
                if isinstance(all_records[-1], PlannedEvent):
                    raise BudgetExceededError(
                        "The declared plan's slot for this spend was used by "
                        "another spend meanwhile. Nothing was recorded."
                    ) from error
                raise
            report = self._verdict(all_records, new, old)
            check.accepted = (list(all_records), new, report)
            return report

        check.accepted = None
        entry = self._store.append_if(record, label, check)
        if check.accepted is not None:
            self._remember(*check.accepted)
        return entry

    def _refuse_unshared(self) -> None:
        if self._unshared_copy:
            raise LedgerError(
                f"This PrivacyBudget is a pickled copy of a budget whose ledger "
                f"store {self._store!r} is not shared across processes; a spend "
                "here would never reach the original, so it is refused. Use a "
                "store with shared_across_processes=True, such as "
                "ledger='path/to/ledger.db'."
            )

    def spend(
        self,
        event: PrivacyEvent,
        label: str | None = None,
        *,
        delta: float | None = None,
    ) -> LedgerEntry:
        """Record ``event`` if it fits the budget; refuse it otherwise.

        Parameters
        ----------
        event : PrivacyEvent
            What the caller is about to release.
        label : str, default=None
            What spends it; defaults to ``event.label``.
        delta : float, default=None
            The delta this spend is charged under ``composition="basic"``:
            the budget records ``(epsilon_i, delta)`` with ``epsilon_i``
            the accountant's epsilon of ``event`` at ``delta``. Ignored for
            pure events (charged ``(epsilon, 0)``); ``None`` charges all the
            delta left. An estimator passes its own ``delta``. Under
            ``composition="renyi"`` the event's Renyi curve is charged and
            ``delta`` only sets the certificate shown in the ledger.

        Returns
        -------
        entry : LedgerEntry
            The recorded spend; ``entry.certificate`` is what was charged.
            An event that fills a free slot of a declared plan
            (:meth:`declare`) is recorded against it and costs nothing more.

        Raises
        ------
        BudgetExceededError
            If the total would exceed the limits. Nothing is recorded.
        LedgerError
            If the ledger cannot be read or written (for example a worker
            that cannot reach the ledger file); nothing is recorded.
        """
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {event!r}.")
        self._refuse_unshared()
        label = event.label if label is None else str(label)
        if label != event.label:
            event = event.with_label(label)
        records = self._records()
        plan = self._filter.slot_for(self._state_for(records), event)
        if plan is not None:
            record = PlannedEvent(event, plan, label=label)
        else:
            self.accountant.prepare(event)  # outside the ledger's lock
            record = self._certify(event, delta, records)
        return self._append(record, label)

    def declare(
        self,
        events: Iterable[PrivacyEvent | Any],
        *,
        delta: float | None = None,
        label: str = "declared plan",
    ) -> LedgerEntry:
        """Charge, once, a sequence of releases fixed before any of them runs.

        Releases whose privacy parameters are all fixed in advance compose
        tightly (the accountant's privacy loss distributions; Zhu, Dong &
        Wang 2022, Theorem 10), however the analysis in each one is chosen.
        The plan is one spend of the budget, certified ``(epsilon_p,
        delta)``; each later :meth:`spend` of an event equal (labels aside)
        to an unused event of the plan is recorded against it and costs
        nothing more. Spends that match no free slot are charged as usual.

        Parameters
        ----------
        events : sequence of PrivacyEvent or FitPlan
            The releases, e.g. ``[model.privacy_plan(X, y) for model in
            models]``; an event that will run ``k`` times is listed ``k``
            times.
        delta : float, default=None
            The plan's delta (``None``: 0 if every event is pure, else all
            the delta left).
        label : str, default="declared plan"

        Returns
        -------
        entry : LedgerEntry

        Raises
        ------
        BudgetExceededError
            If the plan does not fit; nothing is recorded.

        Examples
        --------
        >>> from skdp import PrivacyBudget
        >>> from skdp.accounting import GaussianEvent
        >>> budget = PrivacyBudget(epsilon=10.0, delta=1e-5)
        >>> fits = [GaussianEvent(8.0)] * 20
        >>> entry = budget.declare(fits)
        >>> round(entry.certificate[0], 2)  # tight: 20 Gaussians at once
        2.26
        >>> for event in fits:
        ...     _ = budget.spend(event)
        >>> round(budget.spent()[0], 2), len(budget.ledger)
        (2.26, 21)
        """
        self._refuse_unshared()
        parts = []
        for item in events:
            event = getattr(item, "event", item)
            if not isinstance(event, PrivacyEvent):
                raise TypeError(
                    f"declare takes PrivacyEvent or FitPlan items, got {item!r}."
                )
            parts.append(event)
        if not parts:
            raise ValueError("declare needs at least one event.")
        records = self._records()
        if pure_epsilon(parts) is not None:
            delta, epsilon = 0.0, pure_epsilon(parts)
        else:
            if delta is None:
                spent = self._filter.report(self._state_for(records)).delta
                delta = max(self.delta - spent, 0.0)
            delta = _check_limit("delta", delta)
            epsilon = math.inf
            if delta > 0:
                epsilon = self.accountant.epsilon_delta(parts, delta)[0]
            if not math.isfinite(epsilon):
                raise BudgetExceededError(
                    f"The declared plan has no finite epsilon at delta={delta:.3g}; "
                    "it needs delta > 0. Nothing was recorded."
                )
        record = DeclaredPlanEvent(
            tuple(parts), epsilon, delta, self.composition, label=str(label)
        )
        return self._append(record, str(label))

    def check(self, event: PrivacyEvent, *, delta: float | None = None) -> bool:
        """Whether spending ``event`` would be accepted now (records nothing)."""
        records = self._records()
        state = self._state_for(records)
        if self._filter.slot_for(state, event) is not None:
            return True
        try:
            record = self._certify(event, delta, records)
            self._verdict(records + [record], self._filter.add(state, record), state)
        except BudgetExceededError:
            return False
        return True

    def backup(self, path: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the ledger to the new SQLite file ``path``.

        For a :class:`~skdp.accounting.SQLiteLedger` this is SQLite's online
        backup (:meth:`SQLiteLedger.backup
        <skdp.accounting.SQLiteLedger.backup>`): one committed state of the
        file, taken while other processes keep spending, with the same
        identifier, limits and hash chain. For a budget kept in memory, or
        any store without a ``backup`` method, the entries read at once are
        written to a new SQLite ledger with the budget's limits. Either way
        the copy opens with :meth:`from_ledger` and verifies. Spending from a
        copy while the original is in use splits the budget in two: a copy is
        for safekeeping and for restoring.

        Parameters
        ----------
        path : str or os.PathLike
            A file that does not exist yet (``~`` is expanded).

        Raises
        ------
        FileExistsError
            If ``path`` exists; a backup never overwrites a file.

        Examples
        --------
        >>> import os, tempfile
        >>> from skdp import PrivacyBudget
        >>> from skdp.accounting import LaplaceEvent
        >>> directory = tempfile.TemporaryDirectory()
        >>> budget = PrivacyBudget(1.0, ledger=os.path.join(directory.name, "l.db"))
        >>> _ = budget.spend(LaplaceEvent(0.25), label="count")
        >>> budget.backup(os.path.join(directory.name, "copy.db"))
        >>> copy = PrivacyBudget.from_ledger(os.path.join(directory.name, "copy.db"))
        >>> copy.spent(), [entry.label for entry in copy.ledger]
        ((0.25, 0.0), ['count'])
        >>> copy.store.close(); budget.store.close(); directory.cleanup()
        """
        store = self._store
        if hasattr(store, "backup"):
            store.backup(path)
        else:
            backup_entries(store, path)  # any store: its entries, copied

    # -- reporting ---------------------------------------------------------
    @property
    def ledger(self) -> list[LedgerEntry]:
        return self._store.entries()

    @property
    def store(self) -> LedgerStore:
        """Where the ledger is kept (a :class:`~skdp.accounting.LedgerStore`)."""
        return self._store

    def report(self, guarantee: str = "adaptive") -> CompositionReport:
        """How the recorded spends compose, and under which guarantee.

        Parameters
        ----------
        guarantee : {"adaptive", "declared"}, default="adaptive"
            ``"adaptive"``: the budget's filter, valid however each spend
            was chosen; what the budget enforces. ``"declared"``: the tight
            composition of every recorded release by the accountant, valid
            only if all of them were fixed before the first ran (for a
            ledger that is one declared plan, the two agree).

        Returns
        -------
        report : CompositionReport
            ``report.guarantee`` names the guarantee.
        """
        records = self._records()
        if guarantee == "adaptive":
            return self._adaptive_report(records)
        if guarantee != "declared":
            raise ValueError(
                f"guarantee must be 'adaptive' or 'declared', got {guarantee!r}."
            )
        events = [event for record in records for event in mechanism_events(record)]
        report = self.accountant.compose(events, self.delta)
        return dataclasses.replace(report, guarantee="declared")

    def spent(self) -> tuple[float, float]:
        """Total ``(epsilon, delta)`` spent, under the budget's filter (adaptive)."""
        report = self.report()
        return report.epsilon, report.delta

    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` limits minus what is spent, floored at 0.

        Under ``composition="renyi"`` epsilons do not simply add, so a
        future event may fit even if its own epsilon exceeds the remaining
        epsilon; use :meth:`check` to know for sure.
        """
        eps, delta = self.spent()
        return max(self.epsilon - eps, 0.0), max(self.delta - delta, 0.0)

    def summary(self) -> str:
        """A human-readable table of the ledger and both composed totals."""
        # One read of the ledger, so the totals match the rows listed even
        # while other processes spend into a shared ledger.
        entries = self.ledger
        records = [entry.record for entry in entries]
        report = self._adaptive_report(records)
        events = [event for record in records for event in mechanism_events(record)]
        declared = self.accountant.compose(events, self.delta) if events else None
        width = min(max([30] + [len(entry.label) for entry in entries]), 80)
        lines = [
            f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"composition={self.composition!r})",
            f"{'#':>3}  {'label':<{width}} {'charged':<22} event",
        ]
        for entry in entries:
            label = entry.label
            if len(label) > width:
                label = label[: width - 3] + "..."
            cert = entry.certificate
            if entry.record.kind == "planned":
                charged = f"slot of #{entry.record.plan}"
            elif cert is None:
                charged = "-"
            else:
                charged = f"({cert[0]:.4g}, {cert[1]:.2g})"
            event = _short(entry.event)
            lines.append(f"{entry.index:>3}  {label:<{width}} {charged:<22} {event}")
        lines.append(
            f"spent (adaptive, {self._filter.theorem}): epsilon={report.epsilon:.6g}, "
            f"delta={report.delta:.3g}; remaining: "
            f"epsilon={max(self.epsilon - report.epsilon, 0):.6g}"
        )
        if declared is not None:
            lines.append(
                f"had every spend been declared in advance: "
                f"epsilon={declared.epsilon:.6g} at delta={declared.delta:.3g} "
                f"(composition: {declared.method})"
            )
        return "\n".join(lines)

    def __repr__(self):
        # Composes nothing: scikit-learn prints the budget in every estimator's
        # repr. The total shown is the last one computed, if it is current.
        head = f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
        if self.composition != "basic":
            head += f"composition={self.composition!r}, "
        try:
            entries = self.ledger
        except LedgerError:  # e.g. an estimator's repr in a worker without it
            return head + f"ledger={self._store!r} unavailable)"
        tally = self._tally
        current = (
            tally.report is not None
            and tally.composition == self.composition
            and tally.count == len(entries)
            and (not entries or entries[-1].record == tally.last)
        )
        if not current:
            return head + f"n_spends={len(entries)})"
        report = tally.report
        return (
            head + f"spent=({report.epsilon:.4g}, {report.delta:.3g}), "
            f"n_spends={len(entries)})"
        )


def _open_store(ledger, epsilon: float, delta: float) -> LedgerStore:
    if ledger is None:
        return MemoryLedger(epsilon, delta)
    if is_postgres_url(ledger):
        return PostgreSQLLedger(ledger, epsilon, delta)
    if isinstance(ledger, str | os.PathLike):
        if os.fspath(ledger) == ":memory:":
            return MemoryLedger(epsilon, delta)
        return SQLiteLedger(ledger, epsilon, delta)  # expands "~"
    if not isinstance(ledger, LedgerStore):
        raise TypeError(
            "ledger must be None, a path or a LedgerStore (an object with "
            f"limits, shared_across_processes, entries and append_if), got "
            f"{ledger!r}."
        )
    if tuple(ledger.limits) != (epsilon, delta):
        raise LedgerError(
            f"The ledger {ledger!r} has limits {tuple(ledger.limits)!r}, not "
            f"(epsilon={epsilon!r}, delta={delta!r}); use "
            "PrivacyBudget.from_ledger to open it with its own limits."
        )
    return ledger


def _approximate_delta(event: PrivacyEvent) -> float | None:
    """Total delta of ``event`` if it is made of pure and (epsilon, delta)
    events only (basic composition), else ``None``."""
    total = []
    for leaf, count in expand_events([event]):
        if type(leaf) is ApproxDPEvent:
            total.append(count * leaf.delta)
        elif pure_epsilon([leaf]) is None:
            return None
    return math.fsum(total)


def _short(event: PrivacyEvent) -> str:
    """Event repr without its label."""
    parts = []
    for f in dataclasses.fields(event):
        if f.name == "label":
            continue
        value = getattr(event, f.name)
        if f.name == "events":
            # Composition does not depend on order: identical parts are
            # shown once with their count.
            counts = Counter(_short(e) for e in value)
            value = "[" + ", ".join(_counted(k, c) for k, c in counts.items()) + "]"
        elif isinstance(value, PrivacyEvent):
            value = _short(value)
        elif value is None:
            continue
        elif isinstance(value, float):
            value = f"{value:.6g}"
        parts.append(f"{f.name}={value}")
    return f"{type(event).__name__}({', '.join(parts)})"


def _counted(text: str, count: int) -> str:
    return text if count == 1 else f"{count} x {text}"
