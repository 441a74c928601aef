"""A ledger in a PostgreSQL database: shared by every machine that reaches it.

Check-and-spend is one transaction that first locks the ledger's row in
``skdp_ledger_meta`` (``SELECT ... FOR UPDATE``), so two clients anywhere can
never both see room for the last spend; a spend is committed (with
``synchronous_commit=on``) before :meth:`PostgreSQLLedger.append_if`
returns. Entries are chained by ``skdp/accounting/ledgers/_chain.py``, exactly as in
a SQLite ledger. psycopg 3 is needed (``pip install "skdp[postgresql]"``).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence

from ...exceptions import LedgerError
from .._events import PrivacyEvent, event_to_dict
from ._chain import check_head, entry_hash, genesis_hash, verify_rows
from ._store import LedgerEntry, decode_entry

__all__ = ["PostgreSQLLedger", "is_postgres_url"]

_FORMAT = "1"
_META = "skdp_ledger_meta"
_ENTRIES = "skdp_ledger_entries"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_META} ("
    "name TEXT PRIMARY KEY, format TEXT NOT NULL, ledger_id TEXT NOT NULL, "
    "epsilon DOUBLE PRECISION NOT NULL, delta DOUBLE PRECISION NOT NULL, "
    "created DOUBLE PRECISION NOT NULL, "
    "head_count BIGINT NOT NULL, head_hash TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_ENTRIES} ("
    f"name TEXT NOT NULL REFERENCES {_META} (name), idx BIGINT NOT NULL, "
    "label TEXT NOT NULL, event TEXT NOT NULL, "
    "timestamp DOUBLE PRECISION NOT NULL, hash TEXT NOT NULL, "
    "PRIMARY KEY (name, idx))",
)
# Key of the transaction-level advisory lock that serialises creating the
# tables (two "CREATE TABLE IF NOT EXISTS" racing can both try to create).
_SCHEMA_LOCK = 0x736B6470  # "skdp"

# Connections inherited through fork() belong to the parent: closing one in
# the child would end the parent's session, so they are parked here.
_ABANDONED: list[object] = []
_OPEN: weakref.WeakSet[PostgreSQLLedger] = weakref.WeakSet()


def is_postgres_url(spec: object) -> bool:
    """Whether ``spec`` is a ``postgresql://`` or ``postgres://`` URL."""
    return isinstance(spec, str) and spec.startswith(("postgresql://", "postgres://"))


def _redact(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    url = re.sub(r"^(\w+://[^/@?#]*?:)[^/@?#]*@", r"\1***@", url)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)", r"\1***", url)


def _import_psycopg():
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            "A PostgreSQL privacy ledger needs psycopg 3, which is not installed: "
            'pip install "skdp[postgresql]" (or pip install "psycopg[binary]").'
        ) from exc
    return psycopg


def _close_before_fork() -> None:
    """Close idle connections before a fork, so no child inherits them."""
    for ledger in list(_OPEN):
        if ledger._lock.acquire(blocking=False):
            try:
                conn = ledger._conn
                if (
                    ledger._pid == os.getpid()
                    and conn is not None
                    and not conn.closed
                    and conn.info.transaction_status.name == "IDLE"
                ):
                    conn.close()
                    ledger._conn = None
            except Exception:  # noqa: S110 - best effort; the child abandons it
                pass
            finally:
                ledger._lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_close_before_fork)


class PostgreSQLLedger:
    """A privacy ledger in a PostgreSQL database, safe across machines.

    Usually created through
    ``PrivacyBudget(epsilon, delta, ledger="postgresql://user@host/db")``.
    Several named ledgers can live in one database (two tables,
    ``skdp_ledger_meta`` and ``skdp_ledger_entries``, created when missing in
    the connection's ``search_path``). Each ledger records its limits and a
    random identifier; reopening it with other limits is refused, and a
    pickled copy (what a joblib or Dask worker receives) is a handle -- URL,
    name and identifier, never the entries -- that connects again and checks
    the identifier, so a worker that reaches another database, or a ledger
    dropped and created again under the same name, fails instead of spending
    from a fresh one.

    Parameters
    ----------
    url : str
        A libpq connection URL (``postgresql://user:password@host:5432/db``;
        ``?options=-csearch_path%3Dmyschema`` picks a schema) or key=value
        connection string. A fragment (``...db#team-a``) names the ledger
        unless ``name`` is given. A password is better kept out of the URL
        (``~/.pgpass`` or ``PGPASSWORD``): the URL travels with every pickled
        copy. It never appears in ``repr`` or error messages.
    epsilon, delta : float, default=None
        The limits. For a new ledger they are stored; for an existing one
        they must equal the stored ones. ``None`` opens an existing ledger
        with whatever limits it holds.
    name : str, default="default"
        Which ledger of the database.
    timeout : float, default=60.0
        Seconds to wait for a connection, and for another client's spend to
        commit, before raising :class:`~skdp.exceptions.LedgerError`.

    Attributes
    ----------
    url : str
        The URL with the ledger-name fragment removed.
    name : str
        The ledger's name in the database.
    ledger_id : str
        Random identifier written when the ledger was created.
    limits : tuple of float
        ``(epsilon, delta)`` stored with the ledger.

    Notes
    -----
    *Atomicity.* :meth:`append_if` runs one transaction that locks the
    ledger's row of ``skdp_ledger_meta`` with ``SELECT ... FOR UPDATE``,
    reads and verifies every entry, runs the budget check, inserts the entry
    and moves the chain's head; concurrent spends from any client queue on
    the row lock (up to ``timeout``). Reads take no lock.

    *Durability.* The transaction commits with ``synchronous_commit=on``
    (set on every connection): the spend is in the server's flushed WAL
    before the noisy result is released, so it survives the death of the
    client and of the server. Only a server run with ``fsync=off`` (never do
    this for a ledger) or a replica promoted before it received the commit
    (asynchronous replication) can lose it.

    *Tampering.* Every entry stores a SHA-256 hash chained to the previous
    one (``skdp/accounting/ledgers/_chain.py``) and the ledger's row stores the
    head (count and last hash). The whole chain, and the row's identifier,
    format and limits, are verified on opening and on every read and spend
    (in the transaction that reads): an edited, reordered or deleted entry,
    an edited or deleted row of ``skdp_ledger_meta``, or an entries
    table restored from an older dump, raises
    :class:`~skdp.exceptions.LedgerError`. A handle that has read ``n``
    entries also refuses a ledger that later holds fewer (the whole database
    restored from an older dump). The chain is not a signature: whoever can
    write both tables and knows this code can rebuild it.

    *Processes.* Each process opens its own connection on first use; a
    child forked while a connection is open never uses or closes the
    parent's (idle connections are closed before a fork).
    """

    shared_across_processes = True

    def __init__(
        self,
        url: str,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        name: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"url must be a str, got {type(url).__name__}.")
        if (epsilon is None) != (delta is None):
            raise ValueError("Give both epsilon and delta, or neither.")
        url, _, fragment = url.partition("#")
        if name is None:
            name = fragment or "default"
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}.")
        self.url = url
        self.name = name
        self.timeout = float(timeout)
        _import_psycopg()
        self._reset_process_state()
        wanted = None if epsilon is None else (float(epsilon), float(delta))
        self.ledger_id, self.limits = self._open_or_create(wanted)
        self._genesis = genesis_hash(self.ledger_id, self.limits)

    # -- connection --------------------------------------------------------
    def _reset_process_state(self) -> None:
        self._conn = None
        self._pid = os.getpid()
        self._lock = threading.RLock()
        # Entries verified so far, with their stored hashes (decoded events
        # are reused while the chain still matches them).
        self._cache: list[LedgerEntry] = []
        self._hashes: list[str] = []
        self._seen = 0  # most entries this handle has ever seen
        _OPEN.add(self)

    @property
    def where(self) -> str:
        """The ledger's place in words, without the password."""
        return f"{_redact(self.url)} (ledger {self.name!r})"

    def _scrub(self, exc: BaseException) -> str:
        text = str(exc).strip().rstrip(".")
        password = self._password()
        if password:
            text = text.replace(password, "***")
        return _redact(text)

    def _password(self) -> str | None:
        try:
            from psycopg.conninfo import conninfo_to_dict

            return conninfo_to_dict(self.url).get("password")
        except Exception:
            return None

    def _fail(self, doing: str, exc: BaseException) -> LedgerError:
        return LedgerError(
            f"Cannot {doing} the privacy ledger {self.where}: {self._scrub(exc)}."
        )

    def _new_connection(self):
        psycopg = _import_psycopg()
        try:
            conn = psycopg.connect(
                self.url,
                autocommit=True,  # transactions are explicit
                connect_timeout=max(1, round(self.timeout)),
            )
        except Exception as exc:
            # No "from exc": the driver's message may quote the URL.
            raise self._fail("connect to", exc) from None
        try:
            conn.execute("SET synchronous_commit = on")
            conn.execute("SET extra_float_digits = 3")  # exact doubles (PG < 12)
            conn.execute(f"SET lock_timeout = {max(1, round(self.timeout * 1000))}")
        except Exception as exc:
            conn.close()
            raise self._fail("connect to", exc) from None
        return conn

    def _connection(self):
        """This process's connection (call with the lock held)."""
        if self._conn is None or self._conn.closed:
            self._conn = self._new_connection()
        return self._conn

    def _process_lock(self) -> threading.RLock:
        """This process's lock; after a fork, fresh state for the child."""
        if self._pid != os.getpid():
            if self._conn is not None:
                _ABANDONED.append(self._conn)
            self._reset_process_state()
        return self._lock

    def close(self) -> None:
        """Close this process's connection (it reopens on the next use)."""
        with self._process_lock():
            if self._conn is not None:
                self._conn.close()
            self._conn = None

    def _transaction(self, doing: str, body: Callable):
        """Run ``body(conn)`` in one transaction of this process's connection.

        Driver errors become :class:`LedgerError`; any exception rolls back.
        A broken connection is dropped, so the next call reconnects.
        """
        psycopg = _import_psycopg()
        with self._process_lock():
            conn = self._connection()
            try:
                with conn.transaction():
                    return body(conn)
            except psycopg.errors.LockNotAvailable:
                raise LedgerError(
                    f"Could not lock the privacy ledger {self.where} within "
                    f"{self.timeout:g} s to record a spend (another client holds "
                    "it); nothing was recorded."
                ) from None
            except psycopg.Error as exc:
                if conn.closed or conn.broken:
                    self._conn = None
                raise self._fail(doing, exc) from None

    @staticmethod
    def _tables_exist(conn) -> bool:
        found = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
            (_META, _ENTRIES),
        ).fetchone()
        return bool(found[0])

    def _open_or_create(self, wanted):
        def body(conn):
            if not self._tables_exist(conn):
                # Created once, by whoever comes first; later clients need no
                # CREATE privilege (analysts may only read and append).
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                if not self._tables_exist(conn):
                    for statement in _SCHEMA:
                        conn.execute(statement)
            select = (
                f"SELECT format, ledger_id, epsilon, delta FROM {_META} "
                "WHERE name = %s FOR UPDATE"
            )
            row = conn.execute(select, (self.name,)).fetchone()
            if row is None:
                if wanted is None:
                    raise LedgerError(
                        f"There is no privacy ledger {self.where}; give epsilon "
                        "and delta to create one."
                    )
                orphans = conn.execute(
                    f"SELECT count(*) FROM {_ENTRIES} WHERE name = %s",
                    (self.name,),
                ).fetchone()[0]
                if orphans:
                    # Another client may have created the ledger and spent
                    # since the read above (each statement sees what was
                    # committed before it; skdp commits a ledger's row before
                    # any of its entries): read the row again.
                    row = conn.execute(select, (self.name,)).fetchone()
                    if row is not None:
                        return row
                    # Raising rolls back this transaction: nothing is created.
                    raise LedgerError(
                        f"The privacy ledger {self.where} exists but cannot be "
                        f"verified: {_ENTRIES} holds {orphans} of its entries but "
                        f"{_META} has no row for it (deleted, or the table "
                        "dropped, outside skdp). It is never created again over "
                        "its entries (that would grant the whole budget again). "
                        "Restore the ledger's row, or the database, from a "
                        "backup; to start a new ledger, use another name."
                    )
                ledger_id = uuid.uuid4().hex
                # A client creating the same ledger at this moment waits on
                # the primary key; the later one inserts nothing and both
                # read the row that won.
                conn.execute(
                    f"INSERT INTO {_META} (name, format, ledger_id, epsilon, "
                    "delta, created, head_count, head_hash) "
                    "VALUES (%s, %s, %s, %s, %s, %s, 0, %s) "
                    "ON CONFLICT (name) DO NOTHING",
                    (
                        self.name,
                        _FORMAT,
                        ledger_id,
                        wanted[0],
                        wanted[1],
                        time.time(),
                        genesis_hash(ledger_id, wanted),
                    ),
                )
                row = conn.execute(select, (self.name,)).fetchone()
            return row

        fmt, ledger_id, epsilon, delta = self._transaction("open", body)
        if fmt != _FORMAT:
            raise LedgerError(
                f"The privacy ledger {self.where} has format {fmt!r}; this skdp "
                f"reads format {_FORMAT}."
            )
        limits = (float(epsilon), float(delta))
        if wanted is not None and wanted != limits:
            raise LedgerError(
                f"The privacy ledger {self.where} was created with limits "
                f"(epsilon={limits[0]!r}, delta={limits[1]!r}), not "
                f"(epsilon={wanted[0]!r}, delta={wanted[1]!r}). A ledger's limits "
                "never change: open it with its own limits "
                "(PrivacyBudget.from_ledger(url)) or use another ledger name."
            )
        self.ledger_id, self.limits = ledger_id, limits
        self._genesis = genesis_hash(ledger_id, limits)
        self.entries()  # verify the chain now
        return ledger_id, limits

    # -- pickling: a handle, never a copy of the entries -------------------
    def __getstate__(self):
        return {
            "url": self.url,
            "name": self.name,
            "ledger_id": self.ledger_id,
            "limits": self.limits,
            "timeout": self.timeout,
            "_genesis": self._genesis,
        }

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_process_state()

    # -- reading and writing -----------------------------------------------
    def _read(self, conn, *, lock: bool) -> list[LedgerEntry]:
        """Verify the whole ledger against its chain and head; return it.

        With ``lock``, the ledger's row is locked first, so nothing is
        appended until the transaction ends and each statement's snapshot
        (READ COMMITTED) sees the same ledger. Without it, the transaction
        must be REPEATABLE READ (one snapshot), else an append committing
        between the two SELECTs would look like a head that lags the rows.
        """
        if not lock:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        row = conn.execute(
            f"SELECT ledger_id, epsilon, delta, head_count, head_hash, format "
            f"FROM {_META} WHERE name = %s" + (" FOR UPDATE" if lock else ""),
            (self.name,),
        ).fetchone()
        if row is None or row[0] != self.ledger_id:
            found = "no ledger" if row is None else f"ledger {row[0]!r}"
            raise LedgerError(
                f"The privacy ledger {self.where} is not the one this budget was "
                f"created with (found {found}, expected {self.ledger_id!r}): it "
                "was deleted or replaced, or this process reached another "
                "database. Every process spending from this budget must reach "
                "the same database."
            )
        if row[5] != _FORMAT:
            raise LedgerError(
                f"The format of the privacy ledger {self.where} was changed from "
                f"{_FORMAT!r} to {row[5]!r} outside skdp after this process "
                "opened it, so it can no longer be trusted and nothing was "
                "recorded."
            )
        if (float(row[1]), float(row[2])) != self.limits:
            raise LedgerError(
                f"The limits of the privacy ledger {self.where} were changed from "
                f"{self.limits!r} to {(row[1], row[2])!r} outside skdp, so it can "
                "no longer be trusted."
            )
        rows = conn.execute(
            f"SELECT idx, label, event, timestamp, hash FROM {_ENTRIES} "
            "WHERE name = %s ORDER BY idx",
            (self.name,),
        ).fetchall()
        head = verify_rows(rows, previous=self._genesis, start=0, where=self.where)
        check_head(len(rows), head, recorded=(row[3], row[4]), where=self.where)
        if len(rows) < self._seen:
            raise LedgerError(
                f"The privacy ledger {self.where} holds {len(rows)} entries but "
                f"{self._seen} were read from it before: it was restored from an "
                "older copy, so spends recorded since are lost and it can no "
                "longer be trusted."
            )
        entries = []
        for position, row in enumerate(rows):
            if position < len(self._hashes) and self._hashes[position] == row[4]:
                entries.append(self._cache[position])
                continue
            entries.append(decode_entry(*row[:4], self.where))
        self._cache = entries
        self._hashes = [r[4] for r in rows]
        self._seen = len(rows)
        return entries

    def entries(self) -> list[LedgerEntry]:
        """Every recorded spend, in spending order (the chain verified)."""
        return list(
            self._transaction("read", lambda conn: self._read(conn, lock=False))
        )

    def head(self) -> tuple[int, str]:
        """``(count, hash)`` of the verified chain: note it to detect rollbacks.

        A ledger that later shows fewer entries, or another hash at that
        count, was rolled back or rebuilt (as for
        :meth:`SQLiteLedger.head <skdp.accounting.SQLiteLedger.head>`).
        """
        with self._process_lock():
            entries = self.entries()
            return len(entries), (self._hashes[-1] if self._hashes else self._genesis)

    def _insert(self, conn, entries: list[LedgerEntry]) -> list[str]:
        """Append ``entries`` after the cached ones and move the head."""
        head = self._hashes[-1] if self._hashes else self._genesis
        hashes = []
        rows = []
        for entry in entries:
            payload = json.dumps(event_to_dict(entry.record))
            head = entry_hash(head, entry.index, entry.label, payload, entry.timestamp)
            hashes.append(head)
            rows.append(
                (self.name, entry.index, entry.label, payload, entry.timestamp, head)
            )
        with conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {_ENTRIES} (name, idx, label, event, timestamp, hash) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                rows,
            )
        conn.execute(
            f"UPDATE {_META} SET head_count = %s, head_hash = %s WHERE name = %s",
            (len(self._hashes) + len(entries), head, self.name),
        )
        return hashes

    def append_if(
        self,
        event: PrivacyEvent,
        label: str,
        check: Callable[[Sequence[PrivacyEvent]], object],
    ) -> LedgerEntry:
        """Append ``event`` if ``check`` accepts it, in one locked transaction.

        The new entry is committed before this returns. If ``check`` raises,
        the transaction is rolled back and the exception propagates.
        """

        def body(conn):
            entries = self._read(conn, lock=True)
            check([e.record for e in entries] + [event])
            entry = LedgerEntry(len(entries), label, event, time.time())
            hashes = self._insert(conn, [entry])
            return entries, entry, hashes

        with self._process_lock():
            entries, entry, hashes = self._transaction("write to", body)
            # Committed: the cache follows.
            self._cache = [*entries, entry]
            self._hashes = [*self._hashes, *hashes]
            self._seen = len(self._cache)
            return entry

    def import_entries(self, entries: Iterable[LedgerEntry]) -> None:
        """Copy ``entries`` (with their timestamps) into this empty ledger."""
        entries = [
            LedgerEntry(i, e.label, e.record, e.timestamp)
            for i, e in enumerate(entries)
        ]

        def body(conn):
            if self._read(conn, lock=True):
                raise LedgerError(
                    f"Cannot import entries into the non-empty privacy ledger "
                    f"{self.where}."
                )
            return self._insert(conn, entries)

        with self._process_lock():
            hashes = self._transaction("write to", body)
            self._cache = entries
            self._hashes = hashes
            self._seen = len(entries)

    def __repr__(self):
        return f"PostgreSQLLedger({_redact(self.url)!r}, name={self.name!r})"
