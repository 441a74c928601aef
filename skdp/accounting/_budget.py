"""The privacy budget that every skdp estimator spends from."""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from collections.abc import Sequence
from numbers import Real

from ..exceptions import BudgetExceededError, LedgerError
from ._accountant import CompositionReport, RDPAccountant
from ._events import PrivacyEvent
from ._ledger import LedgerEntry, LedgerStore, MemoryLedger
from ._sqlite_ledger import SQLiteLedger

__all__ = ["PrivacyBudget"]

# Spends are compared with the limits up to this relative slack, so that
# 0.1 + 0.2 + 0.7 fits a budget of 1.0 despite floating-point rounding.
_RELATIVE_SLACK = 1e-9


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
    accountant : RDPAccountant, default=None
        How spends compose; ``None`` uses :class:`RDPAccountant` with its
        default Renyi orders.
    ledger : str, os.PathLike or LedgerStore, default=None
        Where spends are recorded. ``None`` keeps them in this process's
        memory (moved to a temporary file on this machine the first time the
        budget is sent to another process, see Notes). A path opens or
        creates a :class:`~skdp.accounting.SQLiteLedger` there: every
        process, joblib worker and Dask worker that can open the file spends
        from the same budget, every spend is on disk before the noisy result
        is released, and the file keeps the record after the program ends. An
        existing ledger must have been created with the same ``epsilon`` and
        ``delta`` (see :meth:`from_ledger` to reopen one with its own). Any
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
    skdp.accounting.RDPAccountant : The composition rules used by :meth:`spent`.

    Notes
    -----
    The total is computed by :meth:`RDPAccountant.compose`: pure events
    (Laplace, exponential mechanism, vector noise) compose by adding their
    epsilons, Gaussian and Poisson-subsampled Gaussian events by Renyi-DP,
    and the smallest valid bound is kept. Whenever Gaussian events are in
    the ledger, the reported delta is the full ``delta`` limit, since the
    Renyi-DP conversion is carried out at that delta.

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
        self, epsilon: float, delta: float = 0.0, *, accountant=None, ledger=None
    ):
        self.epsilon = _check_limit("epsilon", epsilon)
        self.delta = _check_limit("delta", delta)
        self.accountant = RDPAccountant() if accountant is None else accountant
        self._store = _open_store(ledger, self.epsilon, self.delta)
        self._share_lock = threading.Lock()
        self._unshared_copy = False

    @classmethod
    def from_ledger(cls, ledger, *, accountant=None) -> PrivacyBudget:
        """Reopen an existing ledger with the limits it was created with.

        Parameters
        ----------
        ledger : str, os.PathLike or LedgerStore
            Path of a :class:`~skdp.accounting.SQLiteLedger` file, or a store.
        accountant : RDPAccountant, default=None
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
        if isinstance(ledger, str | os.PathLike):
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
        state["_store"] = store = self._shared_store()
        if not getattr(store, "shared_across_processes", False):
            state["_unshared_copy"] = True
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._share_lock = threading.Lock()

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

    # -- spending ----------------------------------------------------------
    def _check(self, events: Sequence[PrivacyEvent]) -> CompositionReport:
        report = self.accountant.compose(events, self.delta)
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
                before = self.accountant.compose(events[:-1], self.delta)
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
        return self._store.append_if(event, label, self._check)

    def check(self, event: PrivacyEvent) -> bool:
        """Whether ``event`` would fit now (records nothing)."""
        try:
            self._check([e.event for e in self._store.entries()] + [event])
        except BudgetExceededError:
            return False
        return True

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
        return self.accountant.compose(
            [e.event for e in self._store.entries()], self.delta
        )

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
        report = self.accountant.compose([e.event for e in entries], self.delta)
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
        head = f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
        try:
            entries = self.ledger
        except LedgerError:  # e.g. an estimator's repr in a worker without it
            return head + f"ledger={self._store!r} unavailable)"
        report = self.accountant.compose([e.event for e in entries], self.delta)
        return (
            head + f"spent=({report.epsilon:.4g}, {report.delta:.3g}), "
            f"n_spends={len(entries)})"
        )


def _open_store(ledger, epsilon: float, delta: float) -> LedgerStore:
    if ledger is None:
        return MemoryLedger(epsilon, delta)
    if isinstance(ledger, str | os.PathLike):
        return SQLiteLedger(ledger, epsilon, delta)
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
    from dataclasses import fields

    parts = []
    for f in fields(event):
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
