"""Storage of spent privacy: the replaceable part behind a PrivacyBudget.

A ledger store keeps the ordered list of :class:`LedgerEntry` records and
offers one atomic operation, ``append_if``: read the current entries, let the
caller check that one more event still fits, and append it, all while holding
the store's write lock. :class:`LedgerStore` spells out that interface;
:class:`~skdp.accounting.MemoryLedger` serves one process and
:class:`~skdp.accounting.SQLiteLedger` serves every process that can open
the same file. A server-backed store (PostgreSQL, ...) implements the same
four members; see ``doc/ledger.rst``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...exceptions import LedgerError
from .._events import ComposedEvent, PrivacyEvent, event_from_dict

__all__ = ["LedgerEntry", "LedgerStore", "decode_entry"]


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
        What the ledger stores: a ``CertifiedEvent`` (a release and the
        ``(epsilon, delta)`` the budget charged for it), a
        ``DeclaredPlanEvent`` or a ``PlannedEvent`` (records of the budget's
        filters, ``skdp.accounting._filters``; a ledger written by an older
        skdp holds bare events). Read ``event`` and ``certificate`` instead.
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
        store says ``False`` refuses to spend
        (:class:`~skdp.accounting.MemoryLedger` instead moves itself to a
        shared file first).

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
