"""Storage of spent privacy: the replaceable part behind a PrivacyBudget.

A ledger store keeps the ordered list of :class:`LedgerEntry` records and
offers one atomic operation, ``append_if``: read the current entries, let the
caller check that one more event still fits, and append it, all while holding
the store's write lock. :class:`LedgerStore` spells out that interface;
:class:`MemoryLedger` serves one process and
:class:`~skdp.accounting.SQLiteLedger` serves every process that can open
the same file. A server-backed store (PostgreSQL, ...) implements the same
four members; see ``doc/ledger.rst``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..exceptions import LedgerError
from ._events import ComposedEvent, PrivacyEvent, event_from_dict

__all__ = ["LedgerEntry", "LedgerStore", "MemoryLedger"]


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend.

    Attributes
    ----------
    index : int
        Position in the ledger, from 0.
    label : str
        What spent it.
    record : PrivacyEvent
        What the ledger stores: a
        :class:`~skdp.accounting.CertifiedEvent` (a release and the
        ``(epsilon, delta)`` the budget charged for it), a
        :class:`~skdp.accounting.DeclaredPlanEvent` or a
        :class:`~skdp.accounting.PlannedEvent` (a ledger written by an
        older skdp holds bare events).
    timestamp : float
        Seconds since the epoch when the spend was recorded.
    event : PrivacyEvent
        The mechanism that ran (for a declared plan, the composition of its
        events).
    certificate : tuple of float or None
        ``(epsilon, delta)`` charged for the entry (``(0, 0)`` for a spend
        of a declared plan's slot, ``None`` for an older ledger's entry).
    """

    index: int
    label: str
    record: PrivacyEvent
    timestamp: float

    @property
    def event(self) -> PrivacyEvent:
        record = self.record
        events = getattr(record, "events", None)
        if record.kind == "declared_plan":
            return ComposedEvent(events, label=record.label)
        if record.kind in ("certified", "planned"):
            return record.event
        return record

    @property
    def certificate(self) -> tuple[float, float] | None:
        record = self.record
        if record.kind in ("certified", "declared_plan"):
            return (record.epsilon, record.delta)
        if record.kind == "planned":
            return (0.0, 0.0)
        return None


def decode_entry(
    index: int, label: str, event_json: str, timestamp: float, where: str
) -> LedgerEntry:
    """A stored row as a :class:`LedgerEntry` (both SQL stores store rows alike).

    Raises :class:`~skdp.exceptions.LedgerError` naming the entry and the
    ledger (``where``, already free of passwords) if the event cannot be read.
    """
    try:
        event = event_from_dict(json.loads(event_json))
    except (ValueError, TypeError, KeyError) as exc:
        raise LedgerError(
            f"Entry {index} of the privacy ledger {where} cannot be read: {exc}."
        ) from exc
    return LedgerEntry(index, label, event, timestamp)


@runtime_checkable
class LedgerStore(Protocol):
    """What a :class:`~skdp.PrivacyBudget` needs from the storage of its ledger.

    Attributes
    ----------
    limits : tuple of float
        The ``(epsilon, delta)`` the ledger was created for. A store that
        outlives a process keeps them with the entries and refuses to be
        reopened with other limits.
    shared_across_processes : bool
        ``True`` when a pickled copy of the store (one sent to a joblib or
        Dask worker) writes to the same ledger as the original. Such a store
        must pickle as a *handle* (where the ledger is and which ledger it
        is), never as a copy of its entries. A pickled copy of a budget whose
        store says ``False`` refuses to spend (:class:`MemoryLedger` instead
        moves itself to a shared file first).

    Notes
    -----
    The contract of :meth:`append_if` is what keeps a shared budget from
    being overspent: between reading the entries handed to ``check`` and
    writing the new one, no other writer (thread, process or machine) may
    append. A SQL store gets this from one transaction that takes the write
    lock first (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR
    UPDATE`` on a row of the ledger, or ``SERIALIZABLE`` isolation with
    retries). The entry must be durable when :meth:`append_if` returns,
    because the caller releases a noisy result right after.
    """

    limits: tuple[float, float]
    shared_across_processes: bool

    def entries(self) -> list[LedgerEntry]:
        """Every recorded spend, in spending order."""
        ...

    def append_if(
        self,
        event: PrivacyEvent,
        label: str,
        check: Callable[[Sequence[PrivacyEvent]], object],
    ) -> LedgerEntry:
        """Append ``event`` if ``check`` accepts the ledger with it.

        ``check`` receives the events already recorded followed by ``event``
        and raises to refuse; then nothing is written and the exception
        propagates. Otherwise the new entry is stored durably and returned.
        """
        ...


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


def backup_entries(store: LedgerStore, path: str | os.PathLike[str]) -> None:
    """Write ``store``'s limits and entries to a new SQLite ledger file.

    The copy is written under a scratch name and linked to ``path`` only when
    complete, so it never merges into (or replaces) a file that appears at
    ``path`` meanwhile: :class:`FileExistsError` then.
    """
    from ._sqlite_ledger import SQLiteLedger, _expand, _refuse_existing, _write_new_file

    target = _expand(path)
    _refuse_existing(target)
    entries = store.entries()  # one read: a consistent list

    def write(scratch: str) -> None:
        copy = SQLiteLedger(scratch, *store.limits)
        try:
            copy.import_entries(entries)
        finally:
            copy.close()

    _write_new_file(target, write)
