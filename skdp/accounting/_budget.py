"""The privacy budget that every skdp estimator spends from."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from ..exceptions import BudgetExceededError, LedgerError
from ._accountant import CompositionReport, PrivacyAccountant
from ._composition import Accountant
from ._events import PrivacyEvent
from ._ledger import LedgerEntry, LedgerStore, MemoryLedger, backup_entries
from ._postgres_ledger import PostgreSQLLedger, is_postgres_url
from ._sqlite_ledger import SQLiteLedger

__all__ = ["PrivacyBudget"]

# Spends are compared with the limits up to this relative slack, so that
# 0.1 + 0.2 + 0.7 fits a budget of 1.0 despite floating-point rounding.
_RELATIVE_SLACK = 1e-9


@dataclass(frozen=True, eq=False)
class _Composed:
    """The accountant's state for the first ``count`` entries of the ledger.

    ``last`` is the last of those events (the ledger is append-only, so it
    identifies the prefix); ``report`` is filled in once computed.
    """

    accountant: Accountant | None = None
    count: int = 0
    last: PrivacyEvent | None = None
    state: Any = None
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
    accountant : Accountant, default=None
        How spends compose; ``None`` uses
        :class:`~skdp.accounting.PrivacyAccountant`, the
        tightest valid bound of privacy loss distributions, Renyi DP, the
        exact Gaussian profile and basic composition, for skdp's
        neighbouring relation (replace one row).
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
    skdp.accounting.PrivacyAccountant : The composition rules used by
        :meth:`spent`.

    Notes
    -----
    The total is computed by the accountant
    (:meth:`~skdp.accounting.PrivacyAccountant.report`):
    a ledger of pure events (Laplace, exponential mechanism, vector noise)
    composes by adding their epsilons, at delta 0; once a Gaussian,
    Poisson-subsampled Gaussian or other event needing delta is in the
    ledger, the smallest epsilon at the full ``delta`` limit among the
    privacy-loss-distribution, Renyi-DP, exact-Gaussian and basic
    compositions of the whole ledger is reported (:meth:`report` says which).

    *Cost.* The budget keeps the accountant's composed state of its ledger
    and extends it by each new entry, so a spend composes one event whatever
    the length of the ledger, :meth:`spent`, :meth:`summary` and
    :meth:`report` compose only entries recorded since the last call (by
    other processes), and ``repr`` composes nothing. A spend computes the new
    event's composition before taking the ledger's write lock; under the
    lock it only compares the result with the limits (and composes the
    entries other processes appended in between).

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
        accountant: Accountant | None = None,
        ledger: str | os.PathLike[str] | LedgerStore | None = None,
    ) -> None:
        self.epsilon = _check_limit("epsilon", epsilon)
        self.delta = _check_limit("delta", delta)
        self.accountant = PrivacyAccountant() if accountant is None else accountant
        self._store = _open_store(ledger, self.epsilon, self.delta)
        self._share_lock = threading.Lock()
        self._unshared_copy = False
        self._composed = _Composed()

    @classmethod
    def from_ledger(
        cls,
        ledger: str | os.PathLike[str] | LedgerStore,
        *,
        accountant: Accountant | None = None,
    ) -> PrivacyBudget:
        """Reopen an existing ledger with the limits it was created with.

        Parameters
        ----------
        ledger : str, os.PathLike or LedgerStore
            Path of a :class:`~skdp.accounting.SQLiteLedger` file, a
            ``postgresql://`` URL of a
            :class:`~skdp.accounting.PostgreSQLLedger`, or a store.
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
        return cls(epsilon, delta, accountant=accountant, ledger=ledger)

    # -- sharing -----------------------------------------------------------
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_share_lock"]
        state.pop("_composed", None)  # a cache, possibly megabytes of PLD
        state["_store"] = store = self._shared_store()
        if not getattr(store, "shared_across_processes", False):
            state["_unshared_copy"] = True
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._share_lock = threading.Lock()
        self._composed = _Composed()

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

    # -- composition, extended one entry at a time ----------------------------
    def _state_for(self, events: Sequence[PrivacyEvent]):
        """The accountant's state for ``events``, a ledger read just now.

        Starts from the remembered state when ``events`` extends the ledger
        it was computed for (the ledger is append-only), so only new entries
        are composed. Records nothing.
        """
        accountant, cached = self.accountant, self._composed
        n = cached.count
        if (
            cached.accountant is accountant
            and n <= len(events)
            and (n == 0 or events[n - 1] is cached.last or events[n - 1] == cached.last)
        ):
            state, start = cached.state, n
        else:
            state, start = accountant.empty(), 0
        for event in events[start:]:
            state = accountant.extend(state, [event])
        return state

    def _remember(self, events: Sequence[PrivacyEvent], state, report=None):
        """Keep ``state`` (of ``events``) unless a longer ledger is kept."""
        composed = _Composed(
            self.accountant, len(events), events[-1] if events else None, state, report
        )
        with self._share_lock:
            if len(events) >= self._composed.count:
                self._composed = composed

    def _report_for(self, events: Sequence[PrivacyEvent]) -> CompositionReport:
        cached = self._composed
        if (
            cached.report is not None
            and cached.accountant is self.accountant
            and cached.count == len(events)
            and (not events or events[-1] is cached.last or events[-1] == cached.last)
        ):
            return cached.report
        state = self._state_for(events)
        report = self.accountant.report(state, self.delta)
        self._remember(events, state, report)
        return report

    # -- spending ----------------------------------------------------------
    def _verdict(
        self, events: Sequence[PrivacyEvent], state, before
    ) -> CompositionReport:
        """Report of ``state`` (all of ``events``); raise if over the limits."""
        report = self.accountant.report(state, self.delta)
        eps_ok = report.epsilon <= self.epsilon * (1 + _RELATIVE_SLACK)
        delta_ok = report.delta <= self.delta * (1 + _RELATIVE_SLACK)
        if not (eps_ok and delta_ok):
            new = events[-1]
            if math.isinf(report.epsilon) and self.delta == 0:
                why = (
                    "it needs delta > 0 (Gaussian noise) but this budget has "
                    "delta=0; create the budget with a delta > 0"
                )
            else:
                before = self.accountant.report(before, self.delta)
                why = (
                    f"the total would be (epsilon={report.epsilon:.6g}, "
                    f"delta={report.delta:.3g}) against limits "
                    f"(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}); "
                    f"already spent (epsilon={before.epsilon:.6g}, "
                    f"delta={before.delta:.3g})"
                )
            raise BudgetExceededError(
                f"Spending {_short(new)} ('{new.label}') would exceed the privacy "
                f"budget: {why}. Nothing was recorded."
            )
        return report

    def _check(self, events: Sequence[PrivacyEvent]) -> CompositionReport:
        """Whether ``events`` (the ledger and one new event) fit; raise if not."""
        before = self._state_for(events[:-1])
        state = self.accountant.extend(before, [events[-1]])
        return self._verdict(events, state, before)

    def _prepared_check(self, event: PrivacyEvent):
        """Compose ``event`` onto the ledger now, outside any lock.

        Returns ``check(events)`` for :meth:`LedgerStore.append_if`: when the
        ledger under the write lock is still the one read here, it only
        compares the precomputed total with the limits; otherwise it also
        composes what other processes appended meanwhile. ``check.accepted``
        holds the new state once accepted.
        """
        events = [entry.event for entry in self._store.entries()]
        before = self._state_for(events)
        self._remember(events, before)
        self.accountant.prepare(event)
        after = self.accountant.extend(before, [event])

        def check(all_events: Sequence[PrivacyEvent]) -> CompositionReport:
            existing = all_events[:-1]
            if len(existing) == len(events) and (
                not events or existing[-1] is events[-1] or existing[-1] == events[-1]
            ):
                old, new = before, after
            else:
                old = self._state_for(existing)
                new = self.accountant.extend(old, [all_events[-1]])
            report = self._verdict(all_events, new, old)
            check.accepted = (list(all_events), new, report)
            return report

        check.accepted = None
        return check

    def spend(self, event: PrivacyEvent, label: str | None = None) -> LedgerEntry:
        """Record ``event`` if it fits the budget; refuse it otherwise.

        Parameters
        ----------
        event : PrivacyEvent
            What the caller is about to release.
        label : str, default=None
            What spends it; defaults to ``event.label``.

        Returns
        -------
        entry : LedgerEntry
            The recorded spend.

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
        if self._unshared_copy:
            raise LedgerError(
                f"This PrivacyBudget is a pickled copy of a budget whose ledger "
                f"store {self._store!r} is not shared across processes; a spend "
                "here would never reach the original, so it is refused. Use a "
                "store with shared_across_processes=True, such as "
                "ledger='path/to/ledger.db'."
            )
        label = event.label if label is None else str(label)
        if label != event.label:
            event = event.with_label(label)
        check = self._prepared_check(event)
        entry = self._store.append_if(event, label, check)
        if check.accepted is not None:
            self._remember(*check.accepted)
        return entry

    def check(self, event: PrivacyEvent) -> bool:
        """Whether ``event`` would fit now (records nothing)."""
        events = [e.event for e in self._store.entries()]
        try:
            self._check(events + [event])
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

    def report(self) -> CompositionReport:
        """How the recorded events compose (total and the bound used)."""
        return self._report_for([e.event for e in self._store.entries()])

    def spent(self) -> tuple[float, float]:
        """Total ``(epsilon, delta)`` spent, under the tightest composition."""
        report = self.report()
        return report.epsilon, report.delta

    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` limits minus what is spent, floored at 0.

        Composition is not additive under Renyi-DP, so a future event may fit
        even if its own epsilon exceeds the remaining epsilon; use
        :meth:`check` to know for sure.
        """
        eps, delta = self.spent()
        return max(self.epsilon - eps, 0.0), max(self.delta - delta, 0.0)

    def summary(self) -> str:
        """A human-readable table of the ledger and the composed total."""
        # One read of the ledger, so the total matches the rows listed even
        # while other processes spend into a shared ledger.
        entries = self.ledger
        report = self._report_for([e.event for e in entries])
        # The label column is as wide as the longest label, within 30..80.
        width = min(max([30] + [len(entry.label) for entry in entries]), 80)
        lines = [
            f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g})",
            f"{'#':>3}  {'label':<{width}} event",
        ]
        for entry in entries:
            label = entry.label
            if len(label) > width:
                label = label[: width - 3] + "..."
            lines.append(f"{entry.index:>3}  {label:<{width}} {_short(entry.event)}")
        lines.append(
            f"spent: epsilon={report.epsilon:.6g}, delta={report.delta:.3g} "
            f"(composition: {report.method}); remaining: "
            f"epsilon={max(self.epsilon - report.epsilon, 0):.6g}"
        )
        return "\n".join(lines)

    def __repr__(self):
        # Composes nothing: scikit-learn prints the budget in every estimator's
        # repr. The total shown is the last one computed, if it is current.
        head = f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
        try:
            entries = self.ledger
        except LedgerError:  # e.g. an estimator's repr in a worker without it
            return head + f"ledger={self._store!r} unavailable)"
        cached = self._composed
        current = (
            cached.report is not None
            and cached.count == len(entries)
            and (not entries or entries[-1].event == cached.last)
        )
        if not current:
            return head + f"n_spends={len(entries)})"
        report = cached.report
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
