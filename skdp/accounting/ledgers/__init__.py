"""Where a budget's spends are stored: the ledger stores.

Storage only: what an entry holds (:class:`LedgerEntry`), what a store must
offer (:class:`LedgerStore`), and the stores themselves, in this process's
memory (:class:`MemoryLedger`), in a SQLite file (:class:`SQLiteLedger`) or
in a PostgreSQL database (:class:`PostgreSQLLedger`), each entry chained to
the previous one by a hash. How spends compose and when one is refused is
the accounting's job (:class:`~skdp.PrivacyBudget`); these names are also
exported by :mod:`skdp.accounting`.
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
