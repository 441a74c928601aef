"""Where a budget's spends are stored: the ledger stores.

Storage only: what an entry holds (:class:`~skdp.accounting.LedgerEntry`),
what a store must offer (:class:`~skdp.accounting.LedgerStore`), and the
stores themselves, in this process's memory
(:class:`~skdp.accounting.MemoryLedger`), in a SQLite file
(:class:`~skdp.accounting.SQLiteLedger`) or in a PostgreSQL database
(:class:`~skdp.accounting.PostgreSQLLedger`), each entry chained to the
previous one by a hash. How spends compose and when one is refused is the
accounting's job (:class:`~skdp.PrivacyBudget`); these names are exported
by :mod:`skdp.accounting`, where the API reference lists them.
"""

from ._memory import MemoryLedger
from ._postgres import PostgreSQLLedger
from ._sqlite import SQLiteLedger
from ._store import LedgerEntry, LedgerStore

__all__ = [
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedger",
    "PostgreSQLLedger",
    "SQLiteLedger",
]
