"""A ledger in a SQLite file: shared by every process that can open the file.

Check-and-spend is one ``BEGIN IMMEDIATE`` transaction, so two processes can
never both see room for the last spend; a committed spend is on disk before
:meth:`SQLiteLedger.append_if` returns. Events are stored as JSON
(:func:`~skdp.accounting.event_to_dict`), so the file can be read without
skdp. Every entry carries a hash chained to the previous one
(``skdp/accounting/ledgers/_chain.py``) and the head of the chain is stored with the
limits, so an edited, reordered or truncated file is refused.
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

from ...exceptions import LedgerError
from .._events import PrivacyEvent, event_from_dict, event_to_dict
from ._chain import check_head, entry_hash, genesis_hash, verify_rows
from ._store import LedgerEntry, LedgerStore, decode_entry

__all__ = ["SQLiteLedger", "backup_entries"]

# Format 2 added the hash chain (a ``hash`` column and the head in the meta
# table). Format-1 files are refused with a pointer to SQLiteLedger.upgrade.
_FORMAT = "2"
_META = "skdp_ledger_meta"
_ENTRIES = "skdp_ledger_entries"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {_ENTRIES} (idx INTEGER PRIMARY KEY, "
    "label TEXT NOT NULL, event TEXT NOT NULL, timestamp REAL NOT NULL, "
    "hash TEXT NOT NULL)",
)
_INSERT = (
    f"INSERT INTO {_ENTRIES} (idx, label, event, timestamp, hash) "
    "VALUES (?, ?, ?, ?, ?)"
)
_SET_HEAD = f"INSERT OR REPLACE INTO {_META} (key, value) VALUES (?, ?)"


def _expand(path: str | os.PathLike[str]) -> str:
    """Absolute path of ``path``, with ``~`` expanded to the user's home."""
    path = os.fspath(path)
    if path == ":memory:":
        raise ValueError(
            "':memory:' is not a ledger file: SQLiteLedger needs the path of a "
            "file that every process can open. For a ledger in this process's "
            "memory use PrivacyBudget(epsilon, delta) (or ledger=':memory:')."
        )
    if path.startswith("file:"):
        raise ValueError(
            f"{path!r} looks like a SQLite URI; give SQLiteLedger the plain "
            "path of the ledger file (it chooses its own connection options)."
        )
    return os.path.abspath(os.path.expanduser(path))


def _refuse_existing(path: str) -> None:
    """A backup never overwrites: an existing file may be another ledger."""
    if os.path.lexists(path):
        raise _exists_error(path)


def _exists_error(path: str) -> FileExistsError:
    return FileExistsError(
        f"{path!r} already exists; a ledger backup is written to a new "
        "file only (remove it or choose another path)."
    )


def _write_new_file(target: str, write: Callable[[str], object]) -> None:
    """Let ``write`` fill a new file, then give it the name ``target``.

    ``write(scratch)`` receives an unused path in ``target``'s directory.
    The finished file gets its name with :func:`_publish`, so ``target``
    appears complete or not at all, and a file that appeared there in the
    meantime is never replaced: :class:`FileExistsError` then, and the
    scratch file is removed either way.
    """
    scratch = _scratch_name(target)
    try:
        write(scratch)
        _fsync(scratch)
        if not _publish(scratch, target):
            raise _exists_error(target)
    finally:
        _remove_file(scratch)


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
        The database file (``~`` is expanded to the user's home). A new
        ledger is created only where no file exists and ``epsilon`` is given
        (written whole, then linked into place, so racing processes end up
        sharing one ledger). A file that exists is opened and must verify as
        a whole skdp ledger; an empty, truncated or foreign file raises
        :class:`~skdp.exceptions.LedgerError` and is left as it is.
    epsilon, delta : float, default=None
        The limits of the budget. For a new file they are stored in it; for an
        existing file they must equal the stored ones. ``None`` opens an
        existing ledger with whatever limits it holds.
    journal_mode : {"delete", "wal"}, default="delete"
        SQLite journal of a *new* file (an existing file keeps its own).
        ``"delete"`` (a rollback journal) writes every commit into the
        database file itself, so the file alone is the whole ledger after
        each spend: a copy of it is complete, and there is no ``-wal`` file
        that could be deleted or left behind. ``"wal"`` lets readers work
        while a spend commits, but the last spends live in ``ledger.db-wal``
        until a checkpoint: deleting that file (or its ``-shm``) or copying
        ``ledger.db`` without it loses spends, so use it only on one host, for
        a ledger nobody touches by hand, and copy it with :meth:`backup`.
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
    lock.

    *Integrity.* Each entry stores ``hash``, the SHA-256 of the entry as
    stored chained to the previous entry's hash, starting from a hash of the
    ledger's identifier and limits; the head of the chain (count and last
    hash) is stored with the limits and moves in the same transaction as
    every insert. Opening a ledger verifies the whole chain. Every later
    read (and every spend, under the write lock) checks the identifier, the
    limits and the head, verifies the new entries against the chain, and
    checks that every entry this process has already verified is still
    stored exactly as it was verified: whenever another connection (another
    process, another handle, any SQLite client) has committed to the file
    since this connection last read it, which SQLite reports through
    ``PRAGMA data_version``, all stored entries are read and compared with
    the verified ones, value for value; otherwise the file holds only what
    this connection read and wrote, and just the last entry is re-read. An
    entry edited (even keeping its length), deleted, reordered or moved from
    another ledger, a truncated file, or a ledger that went back to an older
    state while a process had it open (a restored copy, a deleted ``-wal``)
    raises :class:`~skdp.exceptions.LedgerError` and nothing is spent; so
    does a file whose length is not the one its SQLite header records (cut,
    padded, or left by a spend interrupted mid-commit whose ``-journal`` was
    lost), checked on every read, and one SQLite's ``quick_check`` finds
    damaged, checked on opening. The
    comparison reads the whole ledger, once per read that follows another
    writer's commit (a few tenths of a second for 50,000 entries; a read with
    no other writer in between costs well under a millisecond). Bytes
    written into the file without going through SQLite are seen when SQLite
    sees them (by the file's change counter), and always when the ledger is
    next opened. The chain is not a signature: someone who can write the
    file and runs this code can rebuild a consistent chain, and an older
    copy restored before any process opens it is a valid (shorter) ledger.
    Keep a copy of the head elsewhere (:meth:`head`, or a :meth:`backup`) to
    detect that.

    *Durability.* The connection uses ``synchronous=FULL``: a commit is
    fsync'ed before :meth:`append_if` returns, so a recorded spend survives
    the death of any process and also a power cut or kernel crash. A
    rollback-journal file is complete after every commit; while a spend is
    being written SQLite keeps ``ledger.db-journal`` next to it, which it
    needs to undo a spend interrupted by a crash (copy the pair, or use
    :meth:`backup`, which is always consistent).

    *Where it works.* All processes on one machine, or (in ``"delete"``
    mode) on a network filesystem whose POSIX locks are reliable. For workers
    on several machines a server-backed store is the safer choice (see
    ``doc/ledger.rst``).

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
    >>> ledger.close()
    >>> directory.cleanup()
    """

    shared_across_processes = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        journal_mode: str = "delete",
        timeout: float = 60.0,
    ) -> None:
        if journal_mode not in ("wal", "delete"):
            raise ValueError(
                f"journal_mode must be 'delete' or 'wal', got {journal_mode!r}."
            )
        if (epsilon is None) != (delta is None):
            raise ValueError("Give both epsilon and delta, or neither.")
        self.path = _expand(path)
        self.journal_mode = journal_mode
        self.timeout = float(timeout)
        self.temporary = False
        self._reset_process_state()
        wanted = None if epsilon is None else (float(epsilon), float(delta))
        self.ledger_id, self.limits = self._open_or_create(wanted)
        try:
            self.entries()  # verifies the whole chain and the head
        except LedgerError as exc:
            self.close()
            raise self._unverifiable(str(exc)) from exc
        except BaseException:
            self.close()
            raise

    # -- connection --------------------------------------------------------
    def _reset_process_state(self):
        self._conn: sqlite3.Connection | None = None
        self._file_identity: tuple[int, int] | None = None
        self._side_files: dict[str, tuple[int, int] | None] = {}
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._cache: list[LedgerEntry] = []
        # The rows behind _cache exactly as SQLite returned them when they
        # were verified: a later read compares the stored rows with these.
        self._rows: list[tuple] = []
        self._head: str | None = None  # hash of the last cached entry
        # PRAGMA data_version of this connection at its last verified read;
        # None until the connection has read (a new connection compares all).
        self._data_version: int | None = None

    def _uri(self, mode: str) -> str:
        return f"file:{urllib.parse.quote(self.path)}?mode={mode}"

    def _fail(self, doing: str, exc: BaseException) -> LedgerError:
        return LedgerError(
            f"Cannot {doing} the privacy ledger at {self.path!r}: {exc}."
            + _fix_for(self.temporary)
        )

    def _new_connection(self, mode: str) -> sqlite3.Connection:
        """A connection to the file (``mode=rw`` never creates one); no read yet."""
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
        return conn

    def _unverifiable(self, why: str) -> LedgerError:
        """The error for an existing file that is not a whole, verified ledger."""
        return LedgerError(
            f"The file {self.path!r} exists but cannot be verified as an skdp "
            f"privacy ledger: {why.rstrip('.')}. An existing file is never taken "
            "for a new, empty ledger (that would grant the whole budget again) and "
            "is left as it is. If it is your ledger, restore it from a backup "
            "(PrivacyBudget.backup or SQLiteLedger.backup writes one) and keep "
            "this file to inspect; to start a new ledger, give a path where no "
            "file exists." + (_fix_for(True) if self.temporary else "")
        )

    def _open_or_create(self, wanted):
        """Create the file if no file is at ``path``; open it; return (id, limits).

        Creation is all or nothing (:func:`_create_ledger_file`): a file at
        ``path`` is always a complete ledger written by skdp, so whatever is
        found there is opened and verified, never initialised.
        """
        if wanted is not None:
            try:
                _create_ledger_file(self.path, wanted, self.journal_mode)
            except (OSError, sqlite3.Error) as exc:
                reason = getattr(exc, "strerror", None) or exc
                raise LedgerError(
                    f"Cannot open the privacy ledger at {self.path!r}: no file is "
                    f"there and none can be created in its directory ({reason})."
                    + _fix_for(self.temporary)
                ) from exc
        conn, meta = self._open_verified()
        try:
            if meta.get("format") is None:
                raise self._unverifiable("its meta table has no format row")
            if meta.get("format") != _FORMAT:
                if meta.get("format") == "1":
                    raise LedgerError(
                        f"The privacy ledger at {self.path!r} has format 1 (written "
                        "by an skdp without the ledger hash chain); this skdp reads "
                        f"format {_FORMAT}. Run SQLiteLedger.upgrade(path) once, "
                        "with no other process using the ledger, to add the chain. "
                        "The upgrade trusts the entries as they are: it cannot tell "
                        "whether the file was edited before."
                    )
                raise LedgerError(
                    f"The privacy ledger at {self.path!r} has format "
                    f"{meta.get('format')!r}; this skdp reads format {_FORMAT}."
                )
            try:
                ledger_id = str(meta["ledger_id"])
                limits = (float(meta["epsilon"]), float(meta["delta"]))
            except (KeyError, TypeError, ValueError):
                rows = {k: meta.get(k) for k in ("ledger_id", "epsilon", "delta")}
                raise self._unverifiable(
                    f"its meta table has no valid identifier and limits ({rows!r})"
                ) from None
            if wanted is not None and wanted != limits:
                raise LedgerError(
                    f"The privacy ledger at {self.path!r} was created with limits "
                    f"(epsilon={limits[0]!r}, delta={limits[1]!r}), not "
                    f"(epsilon={wanted[0]!r}, delta={wanted[1]!r}). A ledger's "
                    "limits never change: open it with its own limits "
                    "(PrivacyBudget.from_ledger(path)) or start a new ledger file."
                )
        except BaseException:
            conn.close()
            raise
        self._adopt(conn)
        return ledger_id, limits

    def _open_verified(self) -> tuple[sqlite3.Connection, dict]:
        """A connection to the existing file at ``path``, and its meta table.

        The connection uses ``mode=rw``, so it never creates a file. The file
        must be a whole SQLite database holding both ledger tables, exactly
        as long as its header says (:meth:`_size_mismatch`), and pass
        SQLite's ``quick_check``; anything else raises
        :class:`~skdp.exceptions.LedgerError` (:meth:`_unverifiable`). The
        hash chain is verified afterwards, by the first read.
        """
        conn = self._new_connection("rw")
        try:
            conn.execute("PRAGMA synchronous=FULL")  # reads the file's header
            conn.execute("BEGIN")  # one snapshot; a hot journal is rolled back
            try:
                tables = {
                    row[0]
                    for row in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'"
                    )
                }
                if _META not in tables or _ENTRIES not in tables:
                    found = f"tables {sorted(tables)}" if tables else "no tables"
                    raise self._unverifiable(
                        f"it is not an skdp privacy ledger ({_file_size(self.path)} "
                        f"bytes long, with {found}: an empty or truncated file, or "
                        "another program's SQLite database)"
                    )
                problem = self._size_mismatch(conn)
                if problem is not None:
                    raise self._unverifiable(problem)
                report = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
                if report != ["ok"]:
                    raise self._unverifiable(
                        "SQLite's quick_check finds it damaged: " + "; ".join(report)
                    )
                meta = dict(conn.execute(f"SELECT key, value FROM {_META}"))
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")  # it only read
        except sqlite3.Error as exc:
            conn.close()
            raise self._unverifiable(f"SQLite cannot read it ({exc})") from exc
        except BaseException:
            conn.close()
            raise
        return conn, meta

    def _size_mismatch(self, conn: sqlite3.Connection) -> str | None:
        """What is wrong with the file's length, or None (call in a transaction).

        A committed rollback-journal database is exactly ``page_count`` pages
        long: SQLite extends and truncates the file at each commit, and the
        transaction's read lock keeps writers out. A file of another length
        was cut, padded, partly copied, or interrupted mid-commit and lost the
        ``-journal`` that would have undone it. In WAL mode the same holds
        while the ``-wal`` is empty (a ledger at rest); once it holds frames,
        the last pages live there and SQLite's own checks must do.
        """
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode.lower() == "wal" and _file_size(f"{self.path}-wal"):
            return None
        size = _file_size(self.path)
        if size is None or size == pages * page_size:
            return None  # a missing file is for _check_still_at_path
        return (
            f"it is {size} bytes long but its SQLite header says {pages} pages of "
            f"{page_size} bytes ({pages * page_size} bytes): it was truncated, "
            "extended or only partly copied, or a spend was interrupted and the "
            "-journal file that would undo it was lost"
        )

    def _adopt(self, conn: sqlite3.Connection) -> None:
        """Use ``conn`` from now on; remember which files it works with."""
        self._conn = conn
        self._data_version = None  # versions of different connections differ
        self._file_identity = self._current_identity()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        # In WAL mode the last commits live in -wal and the locks in -shm;
        # if either is deleted, a new process makes fresh ones and no longer
        # sees (or locks against) this connection.
        self._side_files = (
            {f"{self.path}-{s}": None for s in ("wal", "shm")}
            if mode.lower() == "wal"
            else {}
        )
        for name in self._side_files:
            self._side_files[name] = _identity(name)

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
            conn, meta = self._open_verified()
            if meta.get("ledger_id") != self.ledger_id:
                conn.close()
                raise LedgerError(
                    f"The file at {self.path!r} is not the privacy ledger this "
                    f"budget was created with (identifier "
                    f"{meta.get('ledger_id')!r}, expected {self.ledger_id!r}); "
                    "it was replaced or another ledger has the same path."
                    + _fix_for(self.temporary)
                )
            self._adopt(conn)
        return self._conn

    def _current_identity(self) -> tuple[int, int] | None:
        """``(device, inode)`` of the file now at ``path``, None if missing."""
        return _identity(self.path)

    def _check_still_at_path(self, conn: sqlite3.Connection) -> None:
        """Refuse to write to a ledger file that was deleted or replaced.

        An open connection keeps writing to an unlinked file; those spends
        would be invisible to every later reader of the path, which would
        see a fresh (or different) ledger and could overspend. The same
        holds for the ``-wal`` and ``-shm`` files of a WAL-mode ledger.
        """
        if self._current_identity() != self._file_identity:
            what = "was deleted or replaced"
        elif any(_identity(f) != i for f, i in self._side_files.items()):
            what = "lost its -wal or -shm file (deleted or replaced)"
        else:
            return
        conn.execute("ROLLBACK")
        conn.close()
        self._conn = None
        raise LedgerError(
            f"The privacy ledger at {self.path!r} {what} while this budget had "
            "it open; a spend written now would be lost or could overspend, so "
            "nothing was recorded. Restore the ledger (or open the new one "
            "explicitly) and check its entries."
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
        where = f"at {self.path!r}"
        return [decode_entry(*row[:4], where) for row in rows]

    def _rolled_back(self, recorded: int) -> LedgerError:
        return LedgerError(
            f"The privacy ledger at {self.path!r} no longer holds the "
            f"{len(self._cache)} entries this process has already read from it "
            f"(its recorded head says {recorded}): it was truncated, restored "
            "from an older copy, or lost committed spends with a deleted -wal "
            "file, so it can no longer be trusted and nothing was recorded."
        )

    def _changed(self, rows: list[tuple]) -> LedgerError:
        """The error for stored rows that differ from the verified ones."""
        position = next(
            (i for i, (a, b) in enumerate(zip(rows, self._rows)) if a != b),
            min(len(rows), len(self._rows)),
        )
        return LedgerError(
            f"The privacy ledger at {self.path!r} no longer holds the "
            f"{len(self._cache)} entries this process has already read from it: "
            f"entry {position} was edited, deleted or reordered, or the ledger "
            "was truncated or restored from another copy, outside skdp after "
            "this process verified it, so it can no longer be trusted and "
            "nothing was recorded."
        )

    def _check_meta(self, meta: dict) -> tuple[int, str]:
        """Check identity, format and limits; return the recorded head."""
        where = repr(self.path)
        try:
            limits = (float(meta["epsilon"]), float(meta["delta"]))
        except (KeyError, TypeError, ValueError):
            limits = None
        if (
            meta.get("ledger_id") != self.ledger_id
            or meta.get("format") != _FORMAT
            or limits != self.limits
        ):
            raise LedgerError(
                f"The identifier, format or limits of the privacy ledger at "
                f"{where} were changed outside skdp (expected ledger "
                f"{self.ledger_id!r} with limits {self.limits!r}), so it can no "
                "longer be trusted and nothing was recorded."
            )
        try:
            return int(meta["head_count"]), str(meta["head_hash"])
        except (KeyError, TypeError, ValueError):
            head = {k: meta.get(k) for k in ("head_count", "head_hash")}
            raise LedgerError(
                f"The privacy ledger at {where} has no valid recorded head "
                f"({head!r}): it was edited outside skdp and can no longer be "
                "trusted."
            ) from None

    def _refresh(self, conn: sqlite3.Connection) -> list[LedgerEntry]:
        """Bring the cache of entries up to date, verifying the hash chain.

        Entries are append-only. When another connection (any process, any
        SQLite client) has committed to the file since this connection's last
        verified read -- ``PRAGMA data_version`` tells, as does a connection
        that has not read yet -- every stored row is read and the rows
        already verified must be exactly the ones verified (value for value;
        no re-hashing). Otherwise the file holds what this connection last
        read and wrote, and only the last verified entry is re-read. New rows
        must continue the chain from the last verified entry and the chain
        must end at the head recorded in the meta table. Called inside a
        transaction, so every statement reads one snapshot.
        """
        where = repr(self.path)
        n = len(self._cache)
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        recorded = self._check_meta(
            dict(conn.execute(f"SELECT key, value FROM {_META}"))
        )
        problem = self._size_mismatch(conn)
        if problem is not None:
            raise LedgerError(
                f"The privacy ledger at {where} changed outside skdp: {problem}; "
                "it can no longer be trusted and nothing was recorded."
            )
        if recorded[0] < n:
            raise self._rolled_back(recorded[0])
        if version != self._data_version:
            rows = conn.execute(
                f"SELECT idx, label, event, timestamp, hash FROM {_ENTRIES} "
                "ORDER BY idx"
            ).fetchall()
            if rows[:n] != self._rows:
                raise self._changed(rows)
            del rows[:n]
        else:
            rows = conn.execute(
                f"SELECT idx, label, event, timestamp, hash FROM {_ENTRIES} "
                "WHERE idx >= ? ORDER BY idx",
                (max(n - 1, 0),),
            ).fetchall()
            if n:
                last = rows.pop(0) if rows else None
                if last != self._rows[-1]:
                    raise self._changed(self._rows[:-1] + ([last] if last else []))
        previous = self._head or genesis_hash(self.ledger_id, self.limits)
        try:
            new_head = verify_rows(rows, previous=previous, start=n, where=where)
        except (TypeError, ValueError) as exc:  # e.g. a timestamp made text
            raise LedgerError(
                f"The privacy ledger at {where} holds an entry that is not as "
                f"skdp wrote it ({exc}): it was edited outside skdp and can no "
                "longer be trusted."
            ) from exc
        check_head(n + len(rows), new_head, recorded=recorded, where=where)
        self._cache.extend(self._decode(rows))
        self._rows.extend(rows)
        self._head = new_head
        self._data_version = version
        return self._cache

    def entries(self) -> list[LedgerEntry]:
        """Every recorded spend, in spending order (verified, see Notes)."""
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

    def head(self) -> tuple[int, str]:
        """``(count, hash)`` of the verified chain: note it to detect rollbacks.

        A ledger that later shows fewer entries, or another hash at that
        count, was rolled back or rebuilt.
        """
        with self._process_lock():
            entries = self.entries()
            return len(entries), self._head or genesis_hash(self.ledger_id, self.limits)

    def append_if(
        self,
        event: PrivacyEvent,
        label: str,
        check: Callable[[Sequence[PrivacyEvent]], object],
    ) -> LedgerEntry:
        """Append ``event`` if ``check`` accepts it, in one write transaction.

        The ledger read under the write lock is verified first (see Notes).
        The new entry and the new head are committed together with
        ``synchronous=FULL`` before this returns. If ``check`` raises, the
        transaction is rolled back and the exception propagates.
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
                check([e.record for e in entries] + [event])
                entry = LedgerEntry(len(entries), label, event, time.time())
                digest = entry_hash(
                    self._head or genesis_hash(self.ledger_id, self.limits),
                    entry.index,
                    label,
                    payload,
                    entry.timestamp,
                )
                conn.execute(
                    _INSERT, (entry.index, label, payload, entry.timestamp, digest)
                )
                conn.executemany(
                    _SET_HEAD,
                    [("head_count", str(entry.index + 1)), ("head_hash", digest)],
                )
                # The row as SQLite stores it, for later reads to compare with.
                row = conn.execute(
                    f"SELECT idx, label, event, timestamp, hash FROM {_ENTRIES} "
                    "WHERE idx = ?",
                    (entry.index,),
                ).fetchone()
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._fail("write to", exc) from exc
                raise
            self._cache.append(entry)
            self._rows.append(row)
            self._head = digest
            return entry

    def import_entries(self, entries: Iterable[LedgerEntry]) -> None:
        """Copy ``entries`` (with their timestamps) into this empty ledger."""
        entries = list(entries)
        for position, e in enumerate(entries):
            if e.index != position:
                raise ValueError(
                    f"Entries to import must be numbered 0, 1, ...; entry "
                    f"{position} has index {e.index}."
                )
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
                    digest = genesis_hash(self.ledger_id, self.limits)
                    rows = []
                    for e in entries:
                        payload = json.dumps(event_to_dict(e.record))
                        digest = entry_hash(
                            digest, e.index, e.label, payload, e.timestamp
                        )
                        rows.append((e.index, e.label, payload, e.timestamp, digest))
                    conn.executemany(_INSERT, rows)
                    conn.executemany(
                        _SET_HEAD,
                        [("head_count", str(len(rows))), ("head_hash", digest)],
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("BEGIN")
                try:
                    self._refresh(conn)
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._fail("write to", exc) from exc

    def backup(self, path: str | os.PathLike[str]) -> None:
        """Write a consistent copy of this ledger to the new file ``path``.

        Uses SQLite's online backup API, so the copy is one committed state
        of the ledger even while other processes spend (they wait for the
        copy, which takes milliseconds for a ledger of thousands of
        entries). The copy is a complete ledger in rollback-journal mode with
        the same identifier, limits and entries; it is opened and its chain
        verified before this returns. A copy is for safekeeping and for
        restoring: spending from the copy and from the original at the same
        time would split the budget in two.

        Parameters
        ----------
        path : str or os.PathLike
            A file that does not exist yet (``~`` is expanded).

        Raises
        ------
        FileExistsError
            If ``path`` exists (a backup never overwrites a file).
        LedgerError
            If this ledger fails verification or the copy cannot be written.

        Examples
        --------
        >>> import os, tempfile
        >>> from skdp.accounting import LaplaceEvent, SQLiteLedger
        >>> directory = tempfile.TemporaryDirectory()
        >>> ledger = SQLiteLedger(os.path.join(directory.name, "ledger.db"), 1.0, 0.0)
        >>> _ = ledger.append_if(LaplaceEvent(0.5), "count", lambda events: None)
        >>> ledger.backup(os.path.join(directory.name, "copy.db"))
        >>> copy = SQLiteLedger(os.path.join(directory.name, "copy.db"))
        >>> copy.ledger_id == ledger.ledger_id, copy.entries() == ledger.entries()
        (True, True)
        >>> copy.close(); ledger.close(); directory.cleanup()
        """
        target = _expand(path)
        _refuse_existing(target)
        with self._process_lock():
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                try:
                    expected = list(self._refresh(conn))  # verify the source
                finally:
                    conn.execute("COMMIT")
                _write_new_file(target, lambda scratch: _copy_database(conn, scratch))
            except sqlite3.Error as exc:
                raise self._fail("back up", exc) from exc
        copy = SQLiteLedger(target)  # verifies the whole chain and the head
        try:
            copied = copy.entries()
            if (copy.ledger_id, copy.limits) != (self.ledger_id, self.limits) or (
                copied[: len(expected)] != expected
            ):
                raise LedgerError(
                    f"The backup of the privacy ledger at {self.path!r} in "
                    f"{target!r} does not match it; the copy is not usable."
                )
        finally:
            copy.close()

    @classmethod
    def upgrade(
        cls, path: str | os.PathLike[str], *, journal_mode: str = "delete"
    ) -> SQLiteLedger:
        """Add the hash chain to a format-1 ledger file, once.

        Format-1 files (written by skdp before the hash chain) are refused
        when opened, because nothing in them can show whether they were
        edited. This computes the chain over the entries *as they are now*
        and records its head, so run it only on a ledger you trust, with no
        other process using it. It also switches the file to
        ``journal_mode`` (``"delete"`` by default; see the class Notes),
        which folds any ``-wal`` file into the database. A file already in
        the current format is only switched to ``journal_mode``.

        Returns
        -------
        ledger : SQLiteLedger
            The upgraded ledger, opened and verified.
        """
        if journal_mode not in ("wal", "delete"):
            raise ValueError(
                f"journal_mode must be 'delete' or 'wal', got {journal_mode!r}."
            )
        handle = cls.__new__(cls)
        handle.path = _expand(path)
        handle.temporary = False
        conn = sqlite3.connect(
            f"file:{urllib.parse.quote(handle.path)}?mode=rw",
            uri=True,
            timeout=60.0,
            isolation_level=None,
        )
        try:
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                meta = dict(conn.execute(f"SELECT key, value FROM {_META}"))
                if meta.get("format") == "1":
                    _add_chain(conn, meta, handle.path)
                elif meta.get("format") != _FORMAT:
                    raise LedgerError(
                        f"{handle.path!r} has ledger format "
                        f"{meta.get('format')!r}; upgrade reads format 1."
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute(f"PRAGMA journal_mode={journal_mode}")
        except sqlite3.Error as exc:
            raise handle._fail("upgrade", exc) from exc
        finally:
            conn.close()
        return cls(handle.path, journal_mode=journal_mode)

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


def _file_size(path: str) -> int | None:
    """Length in bytes of the file at ``path``, None if there is none."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _create_ledger_file(
    path: str, limits: tuple[float, float], journal_mode: str
) -> bool:
    """Create a new, empty ledger at ``path`` unless a file is there already.

    The ledger is written completely into a private file in the same
    directory and then given its name with :func:`_publish`, which never
    replaces a file. So no process ever sees an empty or half-written file
    at ``path``: any file there is a whole ledger or something to refuse.
    Returns False when a file (a ledger another process has just created,
    or anything else) is already at ``path``.
    """
    if os.path.lexists(path):
        return False
    scratch = _private_file_beside(path)
    try:
        conn = sqlite3.connect(scratch, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(f"PRAGMA journal_mode={journal_mode}")
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            ledger_id = uuid.uuid4().hex
            conn.executemany(
                f"INSERT INTO {_META} (key, value) VALUES (?, ?)",
                [
                    ("format", _FORMAT),
                    ("ledger_id", ledger_id),
                    ("epsilon", repr(limits[0])),
                    ("delta", repr(limits[1])),
                    ("created", repr(time.time())),
                    ("head_count", "0"),
                    ("head_hash", genesis_hash(ledger_id, limits)),
                ],
            )
            conn.execute("COMMIT")
            if journal_mode == "wal":
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        _fsync(scratch)
        return _publish(scratch, path)
    finally:
        _remove_file(scratch)


def _scratch_name(path: str) -> str:
    """An unused name in ``path``'s directory for a file being written."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex}.skdp-new")


def _private_file_beside(path: str) -> str:
    """A new, empty file in ``path``'s directory that nothing else uses."""
    scratch = _scratch_name(path)
    os.close(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    return scratch


def _publish(source: str, target: str) -> bool:
    """Give the complete file ``source`` the name ``target`` if it is free.

    A hard link is atomic and fails when anything (even a dangling symlink)
    is at ``target``, so ``target`` is either absent or the whole file; the
    caller then removes ``source``. Where hard links are not supported, the
    bytes are copied into ``target`` created with ``O_EXCL`` (a process
    opening ``target`` during that copy finds a short file and refuses it:
    safe, and never taken for a new ledger). Returns False when ``target``
    exists.
    """
    try:
        os.link(source, target)
    except FileExistsError:
        return False
    except OSError:  # no hard links on this filesystem
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            with open(source, "rb") as f:
                data = memoryview(f.read())
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.remove(target)  # ours, and never a complete ledger
            raise
        os.close(fd)
    _fsync(os.path.dirname(target))  # the new name survives a crash
    return True


def _fsync(path: str) -> None:
    """Flush a file (or directory entry) to disk, where the OS allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # directories cannot be fsync'ed everywhere
    finally:
        os.close(fd)


def _identity(path: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the file at ``path``, None if missing."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _copy_database(source: sqlite3.Connection, target: str) -> None:
    """Copy ``source`` into the new file ``target`` with the backup API."""
    dest = sqlite3.connect(target, isolation_level=None)
    try:
        source.backup(dest)  # all pages in one step: one committed state
        dest.execute("PRAGMA journal_mode=delete")  # one self-contained file
        dest.execute("PRAGMA synchronous=FULL")
    finally:
        dest.close()


def _remove_file(path: str) -> None:
    for name in (path, path + "-journal", path + "-wal", path + "-shm"):
        try:
            os.remove(name)
        except OSError:
            pass


def _add_chain(conn: sqlite3.Connection, meta: dict, where: str) -> None:
    """Compute the chain over a format-1 ledger's rows (inside a transaction)."""
    limits = (float(meta["epsilon"]), float(meta["delta"]))
    rows = conn.execute(
        f"SELECT idx, label, event, timestamp FROM {_ENTRIES} ORDER BY idx"
    ).fetchall()
    digest = genesis_hash(meta["ledger_id"], limits)
    updates = []
    for position, (idx, label, event, timestamp) in enumerate(rows):
        if idx != position:
            raise LedgerError(
                f"The format-1 ledger at {where!r} has entry {idx} where entry "
                f"{position} should be; it was edited and is not upgraded."
            )
        try:
            event_from_dict(json.loads(event))
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerError(
                f"Entry {idx} of the format-1 ledger at {where!r} cannot be "
                f"read ({exc}); it is not upgraded."
            ) from exc
        digest = entry_hash(digest, idx, label, event, timestamp)
        updates.append((digest, idx))
    conn.execute(f"ALTER TABLE {_ENTRIES} ADD COLUMN hash TEXT NOT NULL DEFAULT ''")
    conn.executemany(f"UPDATE {_ENTRIES} SET hash = ? WHERE idx = ?", updates)
    conn.executemany(
        _SET_HEAD,
        [
            ("head_count", str(len(rows))),
            ("head_hash", digest),
            ("format", _FORMAT),
            ("upgraded", repr(time.time())),
        ],
    )


def _remove_directory(directory: str, owner_pid: int) -> None:
    if os.getpid() == owner_pid:
        shutil.rmtree(directory, ignore_errors=True)


def backup_entries(store: LedgerStore, path: str | os.PathLike[str]) -> None:
    """Write ``store``'s limits and entries to a new SQLite ledger file.

    The copy is written under a scratch name and linked to ``path`` only when
    complete, so it never merges into (or replaces) a file that appears at
    ``path`` meanwhile: :class:`FileExistsError` then.
    """
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
