"""The in-memory ledger: one process's store, moved to a file when shared.

:class:`MemoryLedger` is the default store of a
:class:`~skdp.PrivacyBudget`. It keeps the entries in a list; when the
budget is first pickled (sent to a worker) it moves them to a temporary
:class:`~skdp.accounting.SQLiteLedger` and forwards every later call there.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from ...exceptions import LedgerError
from .._events import PrivacyEvent
from ._sqlite import backup_entries
from ._store import LedgerEntry, LedgerStore

__all__ = ["MemoryLedger"]


class _ImportingStore(LedgerStore, Protocol):
    """A store that can take over another ledger's entries (``move_to``)."""

    def import_entries(self, entries: Iterable[LedgerEntry]) -> None: ...


class MemoryLedger:
    """A ledger kept in this process's memory (the default).

    Thread-safe. It cannot be shared with other processes by itself: when a
    :class:`~skdp.PrivacyBudget` backed by it is first pickled, the budget
    moves the entries to a temporary :class:`~skdp.accounting.SQLiteLedger`
    (:meth:`move_to`) and this store forwards every later call there. A
    process forked before that move (which inherits the memory instead of
    receiving a pickled copy) cannot report its spends back, so
    ``append_if`` raises :class:`~skdp.exceptions.LedgerError` there.

    Parameters
    ----------
    epsilon, delta : float
        The limits of the budget it serves.
    """

    shared_across_processes = False

    def __init__(self, epsilon: float, delta: float) -> None:
        self.limits = (float(epsilon), float(delta))
        self._entries: list[LedgerEntry] = []
        self._lock = threading.RLock()
        self._moved_to: LedgerStore | None = None
        self._pid = os.getpid()

    def __getstate__(self):
        return {"limits": self.limits, "_entries": list(self.entries())}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._moved_to = None
        self._pid = os.getpid()

    def _forked(self) -> bool:
        # In a forked child the lock may have been held by a thread that does
        # not exist there, so it is never taken.
        return os.getpid() != self._pid

    def entries(self) -> list[LedgerEntry]:
        if self._forked():
            moved = self._moved_to
            return moved.entries() if moved is not None else list(self._entries)
        with self._lock:
            if self._moved_to is not None:
                return self._moved_to.entries()
            return list(self._entries)

    def append_if(
        self,
        event: PrivacyEvent,
        label: str,
        check: Callable[[Sequence[PrivacyEvent]], object],
    ) -> LedgerEntry:
        if self._forked():
            if self._moved_to is not None:
                return self._moved_to.append_if(event, label, check)
            raise LedgerError(
                f"This privacy budget's ledger is in the memory of process "
                f"{self._pid}; this process ({os.getpid()}) was forked from it "
                "and a spend here would never reach it, so it is refused. Pass "
                "the budget (or the estimator holding it) to the worker as an "
                "argument, which shares it through a file, or create it with "
                "PrivacyBudget(epsilon, delta, ledger='path/to/ledger.db')."
            )
        with self._lock:
            if self._moved_to is not None:
                return self._moved_to.append_if(event, label, check)
            check([e.record for e in self._entries] + [event])
            entry = LedgerEntry(len(self._entries), label, event, time.time())
            self._entries.append(entry)
            return entry

    def backup(self, path: str | os.PathLike[str]) -> None:
        """Write the entries to a new :class:`~skdp.accounting.SQLiteLedger`.

        The file at ``path`` (which must not exist) gets this ledger's limits
        and entries (with their timestamps) under a new identifier. Also used
        by :meth:`PrivacyBudget.backup <skdp.PrivacyBudget.backup>` for any
        store without a ``backup`` method of its own.
        """
        backup_entries(self, path)

    def move_to(self, store: _ImportingStore) -> LedgerStore:
        """Copy every entry into the empty ``store`` and forward to it from now on.

        ``store`` must offer ``import_entries(entries)`` (as
        :class:`~skdp.accounting.SQLiteLedger` does). Spends racing with the
        move (from other threads) wait for it and then go to ``store``, so
        none is lost.
        """
        with self._lock:
            if self._moved_to is None:
                store.import_entries(self._entries)
                self._entries = []
                self._moved_to = store
            return self._moved_to
