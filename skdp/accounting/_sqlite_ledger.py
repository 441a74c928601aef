"""A ledger in a SQLite file: shared by every process that can open the file.

Check-and-spend is one ``BEGIN IMMEDIATE`` transaction, so two processes can
never both see room for the last spend; a committed spend is on disk before
:meth:`SQLiteLedger.append_if` returns. Events are stored as JSON
(:func:`~skdp.accounting.event_to_dict`), so the file can be read without
skdp.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Sequence

from ..exceptions import LedgerError
from ._events import PrivacyEvent, event_from_dict, event_to_dict
from ._ledger import LedgerEntry

__all__ = ["SQLiteLedger"]

_FORMAT = "1"
_META = "skdp_ledger_meta"
_ENTRIES = "skdp_ledger_entries"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_ENTRIES} (idx INTEGER PRIMARY KEY, "
    "label TEXT NOT NULL, event TEXT NOT NULL, timestamp REAL NOT NULL)",
)

# Connections opened before a fork must never be used or closed in the child
# (closing could checkpoint or release locks that belong to the parent); they
# are parked here for the life of the child process.
_ABANDONED: list[sqlite3.Connection] = []


def _fix_for(temporary: bool) -> str:
    if temporary:
        return (
            " This budget was created without ledger=, so when it was first "
            "pickled its spends were moved to a temporary file, which only "
            "processes on that machine can reach and which is deleted when the "
            "process that created the budget exits. Create the budget with "
            "PrivacyBudget(epsilon, delta, ledger='/shared/path/ledger.db') on a "
            "filesystem every worker mounts at the same path."
        )
    return (
        " Every process that spends from this budget must reach the same file "
        "at the same path (a shared filesystem that honours POSIX locks); see "
        "the skdp documentation on ledgers."
    )


class SQLiteLedger:
    """A privacy ledger in a SQLite database file, safe across processes.

    Usually created through ``PrivacyBudget(epsilon, delta, ledger=path)``.
    The file records the limits and a random identifier next to the entries;
    reopening it with other limits is refused, and a pickled copy (what a
    joblib or Dask worker receives) is a handle that reopens this very file
    and checks the identifier, so a worker that cannot reach the file fails
    instead of spending from a fresh, empty ledger.

    Parameters
    ----------
    path : str or os.PathLike
        The database file. It is created (with its directory's permissions)
        when it does not exist and ``epsilon`` is given.
    epsilon, delta : float, default=None
        The limits of the budget. For a new file they are stored in it; for an
        existing file they must equal the stored ones. ``None`` opens an
        existing ledger with whatever limits it holds.
    journal_mode : {"wal", "delete"}, default="wal"
        SQLite journal of a *new* file (an existing file keeps its own).
        ``"wal"`` lets readers work while a spend commits, but needs every
        process on one host; ``"delete"`` (a rollback journal) is the mode to
        try on a network filesystem whose POSIX locks are reliable.
    timeout : float, default=60.0
        Seconds a spend waits for another process's spend to commit before
        raising :class:`~skdp.exceptions.LedgerError`.

    Attributes
    ----------
    path : str
        Absolute path of the file.
    ledger_id : str
        Random identifier written when the file was created.
    limits : tuple of float
        ``(epsilon, delta)`` stored in the file.

    Notes
    -----
    *Atomicity.* :meth:`append_if` opens ``BEGIN IMMEDIATE``, which takes
    SQLite's write lock before reading, then reads the entries, runs the
    budget check and inserts; concurrent spends from any process queue on the
    lock. Readers are never blocked in WAL mode.

    *Durability.* The connection uses ``synchronous=FULL``: the WAL is
    fsync'ed at every commit, so a recorded spend survives the death of any
    process and also a power cut or kernel crash. ``synchronous=NORMAL``
    (the usual WAL setting) survives a killed process but may lose the last
    commits on power loss, which would let a released result disappear from
    the ledger; one fsync per fit is a negligible cost next to a fit.

    *Where it works.* SQLite in WAL mode shares memory through a ``-wal`` and
    a ``-shm`` file next to the database and needs all processes on one
    machine. For workers on several machines use a server-backed store (the
    :class:`~skdp.accounting.LedgerStore` interface) or, on a network
    filesystem with working POSIX locks, ``journal_mode="delete"``.

    Examples
    --------
    >>> import os, tempfile
    >>> from skdp.accounting import LaplaceEvent, SQLiteLedger
    >>> directory = tempfile.TemporaryDirectory()
    >>> path = os.path.join(directory.name, "ledger.db")
    >>> ledger = SQLiteLedger(path, epsilon=1.0, delta=0.0)
    >>> entry = ledger.append_if(LaplaceEvent(0.5), "count", check=lambda events: None)
    >>> [e.label for e in SQLiteLedger(path).entries()]
    ['count']
    >>> SQLiteLedger(path, epsilon=2.0, delta=0.0)
    Traceback (most recent call last):
    ...
    skdp.exceptions.LedgerError: The privacy ledger ... was created with limits ...
    >>> directory.cleanup()
    """

    shared_across_processes = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        journal_mode: str = "wal",
        timeout: float = 60.0,
    ) -> None:
        if journal_mode not in ("wal", "delete"):
            raise ValueError(
                f"journal_mode must be 'wal' or 'delete', got {journal_mode!r}."
            )
        if (epsilon is None) != (delta is None):
            raise ValueError("Give both epsilon and delta, or neither.")
        self.path = os.path.abspath(os.fspath(path))
        self.journal_mode = journal_mode
        self.timeout = float(timeout)
        self.temporary = False
        self._reset_process_state()
        wanted = None if epsilon is None else (float(epsilon), float(delta))
        self.ledger_id, self.limits = self._open_or_create(wanted)

    # -- connection --------------------------------------------------------
    def _reset_process_state(self):
        self._conn: sqlite3.Connection | None = None
        self._file_identity: tuple[int, int] | None = None
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._cache: list[LedgerEntry] = []

    def _uri(self, mode: str) -> str:
        return f"file:{urllib.parse.quote(self.path)}?mode={mode}"

    def _fail(self, doing: str, exc: BaseException) -> LedgerError:
        return LedgerError(
            f"Cannot {doing} the privacy ledger at {self.path!r}: {exc}."
            + _fix_for(self.temporary)
        )

    def _new_connection(self, mode: str) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._uri(mode),
                uri=True,
                timeout=self.timeout,
                isolation_level=None,  # transactions are explicit
                check_same_thread=False,  # guarded by _process_lock()
            )
        except sqlite3.Error as exc:
            raise self._fail("open", exc) from exc
        try:
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            conn.close()
            raise self._fail("open", exc) from exc
        return conn

    def _open_or_create(self, wanted):
        """Open the file, initialise it if new, and return (id, limits)."""
        conn = self._new_connection("rw" if wanted is None else "rwc")
        try:
            if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                conn.execute(f"PRAGMA journal_mode={self.journal_mode}")
            conn.execute("BEGIN IMMEDIATE")
            try:
                tables = {
                    row[0]
                    for row in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'"
                    )
                }
                if not tables and wanted is not None:
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.executemany(
                        f"INSERT INTO {_META} (key, value) VALUES (?, ?)",
                        [
                            ("format", _FORMAT),
                            ("ledger_id", uuid.uuid4().hex),
                            ("epsilon", repr(wanted[0])),
                            ("delta", repr(wanted[1])),
                            ("created", repr(time.time())),
                        ],
                    )
                elif _META not in tables or _ENTRIES not in tables:
                    raise LedgerError(
                        f"{self.path!r} is a SQLite database but not an skdp "
                        "privacy ledger (its tables are "
                        f"{sorted(tables) or 'none'}); give the path of a new "
                        "file or of an existing ledger."
                    )
                meta = dict(conn.execute(f"SELECT key, value FROM {_META}"))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            conn.close()
            raise self._fail("open", exc) from exc
        except BaseException:
            conn.close()
            raise
        if meta.get("format") != _FORMAT:
            conn.close()
            raise LedgerError(
                f"The privacy ledger at {self.path!r} has format "
                f"{meta.get('format')!r}; this skdp reads format {_FORMAT}."
            )
        limits = (float(meta["epsilon"]), float(meta["delta"]))
        if wanted is not None and wanted != limits:
            conn.close()
            raise LedgerError(
                f"The privacy ledger at {self.path!r} was created with limits "
                f"(epsilon={limits[0]!r}, delta={limits[1]!r}), not "
                f"(epsilon={wanted[0]!r}, delta={wanted[1]!r}). A ledger's limits "
                "never change: open it with its own limits "
                "(PrivacyBudget.from_ledger(path)) or start a new ledger file."
            )
        self._conn = conn
        self._file_identity = self._current_identity()
        return meta["ledger_id"], limits

    def _process_lock(self) -> threading.RLock:
        """This process's lock; after a fork, fresh state for the child.

        The inherited connection belongs to the parent and the inherited lock
        may be held by a thread that does not exist in the child.
        """
        if self._pid != os.getpid():
            if self._conn is not None:
                _ABANDONED.append(self._conn)
            self._reset_process_state()
        return self._lock

    def _connection(self) -> sqlite3.Connection:
        """This process's connection, opened (and checked) on first use.

        Called with the lock from :meth:`_process_lock` held.
        """
        if self._conn is None:
            conn = self._new_connection("rw")
            try:
                meta = dict(conn.execute(f"SELECT key, value FROM {_META}"))
            except sqlite3.Error as exc:
                conn.close()
                raise self._fail("read", exc) from exc
            if meta.get("ledger_id") != self.ledger_id:
                conn.close()
                raise LedgerError(
                    f"The file at {self.path!r} is not the privacy ledger this "
                    f"budget was created with (identifier "
                    f"{meta.get('ledger_id')!r}, expected {self.ledger_id!r}); "
                    "it was replaced or another ledger has the same path."
                    + _fix_for(self.temporary)
                )
            self._conn = conn
            self._file_identity = self._current_identity()
        return self._conn

    def _current_identity(self) -> tuple[int, int] | None:
        """``(device, inode)`` of the file now at ``path``, None if missing."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _check_still_at_path(self, conn: sqlite3.Connection) -> None:
        """Refuse to write to a ledger file that was deleted or replaced.

        An open connection keeps writing to an unlinked file; those spends
        would be invisible to every later reader of the path, which would
        see a fresh (or different) ledger and could overspend.
        """
        if self._current_identity() != self._file_identity:
            conn.execute("ROLLBACK")
            conn.close()
            self._conn = None
            raise LedgerError(
                f"The privacy ledger at {self.path!r} was deleted or replaced "
                "while this budget had it open; a spend written to the old file "
                "would be lost, so nothing was recorded. Restore the ledger file "
                "(or open the new one explicitly)."
            )

    def close(self) -> None:
        """Close this process's connection (it reopens on the next use)."""
        with self._process_lock():
            if self._conn is not None:
                self._conn.close()
            self._conn = None

    # -- pickling: a handle, never a copy of the entries -------------------
    def __getstate__(self):
        return {
            "path": self.path,
            "ledger_id": self.ledger_id,
            "limits": self.limits,
            "journal_mode": self.journal_mode,
            "timeout": self.timeout,
            "temporary": self.temporary,
        }

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_process_state()

    # -- reading and writing -----------------------------------------------
    def _decode(self, rows) -> list[LedgerEntry]:
        out = []
        for idx, label, event, timestamp in rows:
            if idx != len(self._cache) + len(out):
                raise LedgerError(
                    f"The privacy ledger at {self.path!r} has a gap before entry "
                    f"{idx}; it was edited or restored from an older copy and can "
                    "no longer be trusted."
                )
            try:
                decoded = event_from_dict(json.loads(event))
            except (ValueError, TypeError, KeyError) as exc:
                raise LedgerError(
                    f"Entry {idx} of the privacy ledger at {self.path!r} cannot "
                    f"be read: {exc}."
                ) from exc
            out.append(LedgerEntry(idx, label, decoded, timestamp))
        return out

    def _refresh(self, conn: sqlite3.Connection) -> list[LedgerEntry]:
        """Bring the cache of entries up to date (entries are append-only)."""
        count = conn.execute(f"SELECT COUNT(*) FROM {_ENTRIES}").fetchone()[0]
        if count < len(self._cache):
            raise LedgerError(
                f"The privacy ledger at {self.path!r} has {count} entries but "
                f"{len(self._cache)} were read from it before; it was truncated "
                "or restored from an older copy and can no longer be trusted."
            )
        rows = conn.execute(
            f"SELECT idx, label, event, timestamp FROM {_ENTRIES} "
            "WHERE idx >= ? ORDER BY idx",
            (len(self._cache),),
        ).fetchall()
        self._cache.extend(self._decode(rows))
        return self._cache

    def entries(self) -> list[LedgerEntry]:
        """Every recorded spend, in spending order."""
        with self._process_lock():
            conn = self._connection()
            try:
                conn.execute("BEGIN")  # one consistent snapshot
                try:
                    return list(self._refresh(conn))
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._fail("read", exc) from exc

    def append_if(
        self,
        event: PrivacyEvent,
        label: str,
        check: Callable[[Sequence[PrivacyEvent]], object],
    ) -> LedgerEntry:
        """Append ``event`` if ``check`` accepts it, in one write transaction.

        The new entry is committed with ``synchronous=FULL`` before this
        returns. If ``check`` raises, the transaction is rolled back and the
        exception propagates.
        """
        payload = json.dumps(event_to_dict(event))
        with self._process_lock():
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise LedgerError(
                    f"Could not lock the privacy ledger at {self.path!r} within "
                    f"{self.timeout:g} s to record a spend ({exc}); nothing was "
                    "recorded."
                ) from exc
            except sqlite3.Error as exc:
                raise self._fail("write to", exc) from exc
            self._check_still_at_path(conn)
            try:
                entries = self._refresh(conn)
                check([e.event for e in entries] + [event])
                entry = LedgerEntry(len(entries), label, event, time.time())
                conn.execute(
                    f"INSERT INTO {_ENTRIES} (idx, label, event, timestamp) "
                    "VALUES (?, ?, ?, ?)",
                    (entry.index, label, payload, entry.timestamp),
                )
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._fail("write to", exc) from exc
                raise
            self._cache.append(entry)
            return entry

    def import_entries(self, entries: Iterable[LedgerEntry]) -> None:
        """Copy ``entries`` (with their timestamps) into this empty ledger."""
        with self._process_lock():
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if self._refresh(conn):
                        raise LedgerError(
                            f"Cannot import entries into the non-empty privacy "
                            f"ledger at {self.path!r}."
                        )
                    conn.executemany(
                        f"INSERT INTO {_ENTRIES} (idx, label, event, timestamp) "
                        "VALUES (?, ?, ?, ?)",
                        [
                            (
                                e.index,
                                e.label,
                                json.dumps(event_to_dict(e.event)),
                                e.timestamp,
                            )
                            for e in entries
                        ],
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                self._refresh(conn)
            except sqlite3.Error as exc:
                raise self._fail("write to", exc) from exc

    @classmethod
    def temporary_for(cls, epsilon: float, delta: float) -> SQLiteLedger:
        """A new ledger in a private temporary directory of this machine.

        Used when an in-memory budget is first sent to another process. The
        directory is removed when the creating process exits.
        """
        directory = tempfile.mkdtemp(prefix="skdp-ledger-")
        ledger = cls(os.path.join(directory, "ledger.db"), epsilon, delta)
        ledger.temporary = True
        atexit.register(_remove_directory, directory, os.getpid())
        return ledger

    def __repr__(self):
        return f"SQLiteLedger({self.path!r})"


def _remove_directory(directory: str, owner_pid: int) -> None:
    if os.getpid() == owner_pid:
        shutil.rmtree(directory, ignore_errors=True)
