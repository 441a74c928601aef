"""Storage of spent privacy: the replaceable part behind a PrivacyBudget.

A ledger store keeps the ordered list of :class:`LedgerEntry` records and
offers one atomic operation, :meth:`MemoryLedger.append_if`: read the current
entries, let the caller check that one more event still fits, and append it,
all under one lock. The in-memory store serves one process; a store that
several processes share (for example on SQLite) implements the same small
interface:

* ``limits`` -> ``(epsilon, delta)`` the store was created for;
* ``entries()`` -> list of :class:`LedgerEntry` in spending order;
* ``append_if(event, label, check)`` -> the new :class:`LedgerEntry`, where
  ``check(events)`` receives all events including the new one and raises to
  refuse; nothing is written when it raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._events import PrivacyEvent

__all__ = ["LedgerEntry", "MemoryLedger"]


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend.

    Attributes
    ----------
    index : int
        Position in the ledger, from 0.
    label : str
        What spent it.
    event : PrivacyEvent
        What was spent.
    timestamp : float
        Seconds since the epoch when the spend was recorded.
    """

    index: int
    label: str
    event: PrivacyEvent
    timestamp: float


class MemoryLedger:
    """A ledger kept in this process's memory (the default).

    Thread-safe. It cannot be shared with other processes: see
    :class:`skdp.PrivacyBudget` for what happens when a budget backed by it
    is sent to one.
    """

    shared_across_processes = False

    def __init__(self, epsilon: float, delta: float):
        self.limits = (float(epsilon), float(delta))
        self._entries: list[LedgerEntry] = []
        self._lock = threading.RLock()

    def __getstate__(self):
        with self._lock:
            return {"limits": self.limits, "_entries": list(self._entries)}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def entries(self) -> list[LedgerEntry]:
        with self._lock:
            return list(self._entries)

    def append_if(
        self,
        event: PrivacyEvent,
        label: str,
        check: Callable[[Sequence[PrivacyEvent]], None],
    ) -> LedgerEntry:
        with self._lock:
            check([e.event for e in self._entries] + [event])
            entry = LedgerEntry(len(self._entries), label, event, time.time())
            self._entries.append(entry)
            return entry
