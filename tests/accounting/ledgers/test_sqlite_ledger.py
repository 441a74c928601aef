"""The SQLite ledger: persistence, identity, limits and clear failures."""

import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import skdp
from skdp import BudgetExceededError, LedgerError, PrivacyBudget
from skdp.accounting import (
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    LedgerEntry,
    LedgerStore,
    MemoryLedger,
    PoissonSubsampledGaussianEvent,
    SQLiteLedger,
)
from skdp.accounting._filters import CertifiedEvent

REPO = Path(skdp.__file__).resolve().parents[1]


@pytest.fixture
def path(tmp_path):
    return tmp_path / "ledger.db"


def test_spends_persist_and_reopen_identically(path):
    budget = PrivacyBudget(10.0, 1e-5, ledger=path)
    events = [
        LaplaceEvent(0.5, label="count"),
        GaussianEvent(3.0, label="mean"),
        ComposedEvent((LaplaceEvent(0.1), GaussianEvent(5.0)), label="both"),
        PoissonSubsampledGaussianEvent(0.01, 1.1, 100, label="sgd"),
    ]
    for event in events:
        budget.spend(event, delta=1e-6)  # pure ones are charged delta 0
    spent = budget.spent()
    del budget
    reopened = PrivacyBudget.from_ledger(path)
    assert (reopened.epsilon, reopened.delta) == (10.0, 1e-5)
    assert [e.event for e in reopened.ledger] == events
    assert [e.label for e in reopened.ledger] == ["count", "mean", "both", "sgd"]
    assert reopened.spent() == spent
    # Opening with the same limits continues the same ledger.
    again = PrivacyBudget(10.0, 1e-5, ledger=str(path))
    again.spend(LaplaceEvent(0.1), label="later")
    assert len(reopened.ledger) == 5


def test_entries_returned_equal_entries_read_back(path):
    budget = PrivacyBudget(1.0, ledger=path)
    entry = budget.spend(LaplaceEvent(0.3), label="x")
    assert isinstance(entry, LedgerEntry)
    assert PrivacyBudget.from_ledger(path).ledger == [entry]


def test_refused_spend_writes_nothing(path):
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.9))
    with pytest.raises(BudgetExceededError, match="Nothing was recorded"):
        budget.spend(LaplaceEvent(0.2))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM skdp_ledger_entries").fetchone() == (
            1,
        )


def test_reopening_with_other_limits_is_refused(path):
    PrivacyBudget(1.0, 1e-6, ledger=path).spend(LaplaceEvent(0.5))
    for epsilon, delta in [(2.0, 1e-6), (1.0, 0.0)]:
        with pytest.raises(LedgerError, match=r"created with limits.*never change"):
            PrivacyBudget(epsilon, delta, ledger=path)
    budget = PrivacyBudget.from_ledger(path)  # the explicit way in
    assert budget.spent() == (0.5, 0.0)
    assert (budget.epsilon, budget.delta) == (1.0, 1e-6)


def test_missing_ledger_is_not_created_by_from_ledger(path):
    with pytest.raises(LedgerError, match="Cannot open the privacy ledger"):
        PrivacyBudget.from_ledger(path)
    assert not path.exists()


def _other_database(p):
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda p: p.write_bytes(os.urandom(4096)),
            "exists but cannot be verified.*not a database",
        ),
        (_other_database, "not an skdp privacy ledger"),
        (lambda p: p.mkdir(), "Cannot open"),
    ],
    ids=["corrupt", "other database", "directory"],
)
def test_unusable_files_raise_ledger_error(path, make, match):
    make(path)
    with pytest.raises(LedgerError, match=match):
        PrivacyBudget(1.0, ledger=path)


def test_unwritable_location_raises_ledger_error(tmp_path):
    with pytest.raises(LedgerError, match="Cannot open"):
        PrivacyBudget(1.0, ledger=tmp_path / "no such directory" / "ledger.db")


def test_file_is_in_rollback_journal_mode_and_commits_are_fully_synced(path):
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.1))
    assert budget.store.path == str(path)
    assert budget.store._conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    # No side file holds part of the ledger: the database file is all of it.
    assert sorted(p.name for p in path.parent.iterdir()) == ["ledger.db"]


def test_wal_mode_on_request(path):
    ledger = SQLiteLedger(path, 1.0, 0.0, journal_mode="wal")
    budget = PrivacyBudget(1.0, ledger=ledger)
    budget.spend(LaplaceEvent(0.4))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert PrivacyBudget.from_ledger(path).spent() == (0.4, 0.0)
    with pytest.raises(ValueError, match="journal_mode"):
        SQLiteLedger(path, journal_mode="memory")


def test_pickled_budget_is_a_handle_to_the_same_file(path):
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.25), label="original")
    payload = pickle.dumps(budget)
    assert b"original" not in payload  # a handle, not a copy of the entries
    copy_ = pickle.loads(payload)
    copy_.spend(LaplaceEvent(0.25), label="copy")
    assert [e.label for e in budget.ledger] == ["original", "copy"]


def test_handle_without_its_file_fails_and_creates_nothing(path, tmp_path):
    budget = PrivacyBudget(1.0, ledger=path)
    payload = pickle.dumps(budget)
    path.rename(tmp_path / "moved.db")  # as on a worker that cannot see it
    copy_ = pickle.loads(payload)  # loading a pickled model still works
    with pytest.raises(LedgerError, match="Cannot open.*same path"):
        copy_.spend(LaplaceEvent(0.1))
    with pytest.raises(LedgerError):
        copy_.spent()
    assert "unavailable" in repr(copy_)  # repr (of an estimator) never raises
    assert not path.exists()


def test_handle_refuses_another_ledger_at_its_path(path, tmp_path):
    payload = pickle.dumps(PrivacyBudget(1.0, ledger=path))
    shutil.rmtree(tmp_path)
    tmp_path.mkdir()
    PrivacyBudget(1.0, ledger=path)  # same path and limits, fresh and empty
    with pytest.raises(LedgerError, match="not the privacy ledger"):
        pickle.loads(payload).spend(LaplaceEvent(0.5))


def test_truncated_ledger_is_detected(path):
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.5))
    budget.spend(LaplaceEvent(0.4))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM skdp_ledger_entries WHERE idx = 1")
    with pytest.raises(LedgerError, match="truncated"):
        budget.spend(LaplaceEvent(0.5))
    with pytest.raises(LedgerError, match="recorded head says 2"):
        PrivacyBudget.from_ledger(path)


# -- the hash chain -----------------------------------------------------------
def _sql(path, *statements):
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def _sql_rows(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {E} ORDER BY idx").fetchall()
    finally:
        conn.close()


def _three_spends(path):
    budget = PrivacyBudget(1.0, ledger=path)
    for k, eps in enumerate([0.5, 0.2, 0.1]):
        budget.spend(LaplaceEvent(eps), label=f"fit {k}")
    budget.store.close()
    return budget


E = "skdp_ledger_entries"
M = "skdp_ledger_meta"


@pytest.mark.parametrize(
    "statements, match",
    [
        (
            [f"UPDATE {E} SET event = replace(event, '0.5', '0.05') WHERE idx = 0"],
            "Entry 0 .* does not match its hash chain",
        ),
        ([f"UPDATE {E} SET label = 'other' WHERE idx = 1"], "Entry 1 .*hash chain"),
        ([f"UPDATE {E} SET timestamp = timestamp + 1 WHERE idx = 2"], "Entry 2"),
        ([f"DELETE FROM {E} WHERE idx = 1"], "entry 2 where entry 1 should be"),
        (
            [  # swap two entries, hashes and all
                f"UPDATE {E} SET idx = -1 WHERE idx = 0",
                f"UPDATE {E} SET idx = 0 WHERE idx = 1",
                f"UPDATE {E} SET idx = 1 WHERE idx = -1",
            ],
            "Entry 0 .*hash chain",
        ),
        ([f"DELETE FROM {E} WHERE idx = 2"], "recorded head says 3"),
        (
            [  # an entry added without moving the head
                f"INSERT INTO {E} SELECT 3, label, event, timestamp, hash "
                f"FROM {E} WHERE idx = 2"
            ],
            "Entry 3 .*hash chain",
        ),
        ([f"UPDATE {M} SET value = 'x' || value WHERE key = 'head_hash'"], "head"),
        ([f"DELETE FROM {M} WHERE key = 'head_count'"], "no valid recorded head"),
        ([f"UPDATE {M} SET value = '2.0' WHERE key = 'epsilon'"], "Entry 0"),
    ],
    ids=[
        "edited-epsilon",
        "relabelled",
        "re-timed",
        "deleted-middle",
        "reordered",
        "deleted-last",
        "appended-behind-skdp",
        "edited-head",
        "no-head",
        "raised-limit",
    ],
)
def test_an_edited_ledger_is_refused_on_open(path, statements, match):
    _three_spends(path)
    _sql(path, *statements)
    with pytest.raises(LedgerError, match=match):
        PrivacyBudget.from_ledger(path)


def test_an_edit_under_an_open_budget_is_refused_before_spending(path):
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.5), label="a")
    _sql(  # another program appends a cheap-looking entry behind skdp's back
        path,
        f"INSERT INTO {E} SELECT 1, 'fake', event, timestamp, hash FROM {E}",
        f"UPDATE {M} SET value = '2' WHERE key = 'head_count'",
    )
    with pytest.raises(LedgerError, match="Entry 1 .*hash chain"):
        budget.spend(LaplaceEvent(0.1))
    with pytest.raises(LedgerError):
        budget.spent()


def test_entries_copied_from_another_ledger_do_not_verify(path, tmp_path):
    _three_spends(path)
    other = tmp_path / "other.db"
    PrivacyBudget(1.0, ledger=other).store.close()  # same limits, other id
    _sql(
        other,
        f"ATTACH DATABASE '{path}' AS src",
        f"INSERT INTO {E} SELECT * FROM src.{E}",
        f"UPDATE {M} SET value = (SELECT value FROM src.{M} WHERE key = 'head_hash')"
        " WHERE key = 'head_hash'",
        f"UPDATE {M} SET value = '3' WHERE key = 'head_count'",
    )
    with pytest.raises(LedgerError, match="Entry 0 .*hash chain"):
        PrivacyBudget.from_ledger(other)


def test_an_open_budget_refuses_a_ledger_rolled_back_under_it(path, tmp_path):
    """A process that has read N entries refuses a file with fewer, or with
    another entry at N-1 (an older copy copied over it, in place)."""
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.5), label="a")
    budget.backup(tmp_path / "old.db")  # one entry
    budget.spend(LaplaceEvent(0.3), label="b")
    old = (tmp_path / "old.db").read_bytes()
    with open(path, "r+b") as f:  # same file (inode), older contents
        f.write(old)
        f.truncate()
    with pytest.raises(LedgerError, match="no longer holds the 2 entries"):
        budget.spend(LaplaceEvent(0.5))
    # Same count, different last entry: also refused.
    other = PrivacyBudget(1.0, ledger=tmp_path / "other.db")
    budget2 = PrivacyBudget(1.0, ledger=tmp_path / "two.db")
    for b in (other, budget2):
        b.spend(LaplaceEvent(0.5), label="a")
    budget2.backup(tmp_path / "two-old.db")
    budget2.spend(LaplaceEvent(0.3), label="b")
    fork = PrivacyBudget.from_ledger(tmp_path / "two-old.db")
    fork.spend(LaplaceEvent(0.1), label="c")  # the copy diverges
    fork.store.close()
    with open(tmp_path / "two.db", "r+b") as f:
        f.write((tmp_path / "two-old.db").read_bytes())
        f.truncate()
    with pytest.raises(LedgerError, match="no longer holds the 2 entries"):
        budget2.spent()


def test_head_names_the_verified_chain(path):
    budget = PrivacyBudget(1.0, ledger=path)
    count, first = budget.store.head()
    assert count == 0 and len(first) == 64
    budget.spend(LaplaceEvent(0.1))
    count, second = budget.store.head()
    assert count == 1 and second != first
    assert SQLiteLedger(path).head() == (1, second)


# Edits of entries an open handle has already verified: each keeps every
# length, so no count or size could tell; "two" is a legitimate spend by
# another handle committed first, so the edit arrives with a valid new entry.
@pytest.mark.parametrize(
    "statements",
    [
        [f"UPDATE {E} SET event = replace(event, '0.5', '0.7') WHERE idx = 0"],
        [f"UPDATE {E} SET label = 'fit X' WHERE idx = 1"],
        [f"UPDATE {E} SET timestamp = timestamp + 1 WHERE idx = 0"],
        [f"UPDATE {E} SET hash = replace(hash, substr(hash, 1, 1), 'x') WHERE idx = 1"],
        [  # swap two entries, hashes and all
            f"UPDATE {E} SET idx = -1 WHERE idx = 0",
            f"UPDATE {E} SET idx = 0 WHERE idx = 1",
            f"UPDATE {E} SET idx = 1 WHERE idx = -1",
        ],
        [f"INSERT INTO {E} SELECT -1, label, event, timestamp, hash FROM {E} LIMIT 1"],
        [f"UPDATE {M} SET value = '2.0' WHERE key = 'epsilon'"],
    ],
    ids=["event", "label", "timestamp", "hash", "swap", "extra-row", "limit"],
)
@pytest.mark.parametrize("two", [False, True], ids=["alone", "after-a-spend"])
def test_an_open_handle_notices_an_edit_of_any_verified_entry(path, statements, two):
    budget = _three_spends(path)
    assert len(budget.ledger) == 3  # read and verified by this handle
    if two:
        SQLiteLedger(path).append_if(LaplaceEvent(0.1), "two", lambda events: None)
    _sql(path, *statements)
    stored = _sql_rows(path)
    with pytest.raises(LedgerError, match="outside skdp"):
        budget.spent()
    with pytest.raises(LedgerError, match="outside skdp"):
        budget.spend(LaplaceEvent(0.01))
    with pytest.raises(LedgerError):
        budget.store.entries()
    assert _sql_rows(path) == stored  # nothing recorded
    with pytest.raises(LedgerError):
        PrivacyBudget.from_ledger(path)


def test_a_reconnected_handle_compares_every_verified_entry(path):
    """A new connection (after close(), or a reconnect) has no SQLite state
    to tell what changed meanwhile, so its first read compares everything."""
    budget = _three_spends(path)  # closes the connection after the spends
    _sql(path, f"UPDATE {E} SET event = replace(event, '0.5', '0.7') WHERE idx = 0")
    with pytest.raises(LedgerError, match="entry 0 was edited"):
        budget.spent()


def test_reads_after_other_writers_stay_exact(path):
    """Legitimate spends by other handles are verified and added, never
    mistaken for edits, and the handle's own spends are too."""
    first = SQLiteLedger(path, 1.0, 0.0)
    second = SQLiteLedger(path)
    no_check = lambda events: None  # noqa: E731
    for k in range(3):
        first.append_if(LaplaceEvent(0.1), f"first {k}", no_check)
        second.append_if(LaplaceEvent(0.1), f"second {k}", no_check)
        assert first.entries() == second.entries()
    assert [e.label for e in first.entries()] == [
        f"{who} {k}" for k in range(3) for who in ("first", "second")
    ]
    assert first.head() == second.head() == SQLiteLedger(path).head()


# -- format 1 (no chain) ------------------------------------------------------
def _format_1_ledger(path, n=2, wal=False):
    """A ledger file as skdp wrote it before the hash chain."""
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode=wal")
    conn.execute(f"CREATE TABLE {M} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        f"CREATE TABLE {E} (idx INTEGER PRIMARY KEY, label TEXT NOT NULL, "
        "event TEXT NOT NULL, timestamp REAL NOT NULL)"
    )
    meta = [("format", "1"), ("ledger_id", "f" * 32), ("epsilon", "1.0")]
    meta += [("delta", "0.0"), ("created", "1.0")]
    conn.executemany(f"INSERT INTO {M} VALUES (?, ?)", meta)
    for k in range(n):
        conn.execute(
            f"INSERT INTO {E} VALUES (?, ?, ?, ?)",
            (
                k,
                f"old {k}",
                '{"kind": "laplace", "label": "", "epsilon": 0.25}',
                1e9 + k,
            ),
        )
    return conn  # left open: in WAL mode its commits are in the -wal file


@pytest.mark.parametrize("wal", [False, True], ids=["delete", "wal"])
def test_format_1_is_refused_until_upgraded(path, wal):
    conn = _format_1_ledger(path, wal=wal)
    conn.close()
    with pytest.raises(LedgerError, match=r"format 1.*SQLiteLedger.upgrade\(path\)"):
        PrivacyBudget.from_ledger(path)
    ledger = SQLiteLedger.upgrade(path)
    assert [e.label for e in ledger.entries()] == ["old 0", "old 1"]
    ledger.close()
    budget = PrivacyBudget.from_ledger(path)
    assert budget.spent() == (0.5, 0.0)
    budget.spend(LaplaceEvent(0.5), label="new")
    budget.store.close()
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert sorted(p.name for p in path.parent.iterdir()) == ["ledger.db"]
    ledger = SQLiteLedger.upgrade(path)  # a second upgrade changes nothing
    assert len(ledger.entries()) == 3
    ledger.close()


def test_upgrade_refuses_a_format_1_ledger_with_a_gap(path):
    _format_1_ledger(path, n=3).close()
    _sql(path, f"DELETE FROM {E} WHERE idx = 1")
    with pytest.raises(LedgerError, match="entry 2 where entry 1 should be"):
        SQLiteLedger.upgrade(path)
    with pytest.raises(LedgerError, match="format 1"):  # left as it was
        SQLiteLedger(path)


# -- the journal: no side file whose loss loses spends -------------------------
def test_wal_mode_refuses_to_spend_after_its_wal_is_deleted(path):
    """In (opt-in) WAL mode a process whose -wal or -shm vanished refuses to
    write where no new process would see or lock against it."""
    for lost in ("-wal", "-shm"):
        path.unlink(missing_ok=True)
        budget = PrivacyBudget(
            1.0, ledger=SQLiteLedger(path, 1.0, 0.0, journal_mode="wal")
        )
        budget.spend(LaplaceEvent(0.5))
        Path(f"{path}{lost}").unlink()
        with pytest.raises(LedgerError, match="lost its -wal or -shm file"):
            budget.spend(LaplaceEvent(0.1))
        budget.store.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


# -- backup -------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["delete", "wal"])
def test_backup_is_a_complete_verified_copy(path, tmp_path, mode):
    budget = PrivacyBudget(1.0, ledger=SQLiteLedger(path, 1.0, 0.0, journal_mode=mode))
    budget.spend(LaplaceEvent(0.25), label="a")
    budget.spend(LaplaceEvent(0.25), label="b")
    (tmp_path / "backups").mkdir()
    target = tmp_path / "backups" / "copy.db"
    budget.backup(target)
    # One self-contained file, in rollback-journal mode.
    assert sorted(p.name for p in target.parent.iterdir()) == ["copy.db"]
    with sqlite3.connect(target) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    copy_ = PrivacyBudget.from_ledger(target)
    assert copy_.store.ledger_id == budget.store.ledger_id
    assert (copy_.epsilon, copy_.delta) == (1.0, 0.0)
    assert copy_.ledger == budget.ledger
    assert copy_.store.head() == budget.store.head()
    with pytest.raises(FileExistsError, match="already exists"):
        budget.backup(target)


def test_backup_while_other_threads_spend_is_consistent(path, tmp_path):
    budget = PrivacyBudget(1000.0, ledger=path)
    spenders = [pickle.loads(pickle.dumps(budget)) for _ in range(2)]
    stop = threading.Event()

    def spend(b):
        while not stop.is_set():
            b.spend(LaplaceEvent(0.01))

    threads = [threading.Thread(target=spend, args=(b,)) for b in spenders]
    for t in threads:
        t.start()
    try:
        counts = []
        for k in range(3):
            budget.backup(tmp_path / f"copy{k}.db")
            copy_ = SQLiteLedger(tmp_path / f"copy{k}.db")  # verifies
            counts.append(len(copy_.entries()))
            copy_.close()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert counts == sorted(counts)
    entries = budget.ledger
    for k, count in enumerate(counts):
        assert SQLiteLedger(tmp_path / f"copy{k}.db").entries() == entries[:count]


def test_backup_of_an_in_memory_budget_writes_a_ledger_file(tmp_path):
    budget = PrivacyBudget(2.0, 1e-6)
    budget.spend(LaplaceEvent(0.5), label="a")
    budget.spend(GaussianEvent(4.0), label="b")
    budget.backup(tmp_path / "memory.db")
    assert isinstance(budget.store, MemoryLedger)  # not moved
    copy_ = PrivacyBudget.from_ledger(tmp_path / "memory.db")
    assert (copy_.epsilon, copy_.delta) == (2.0, 1e-6)
    assert copy_.ledger == budget.ledger  # events, labels and timestamps
    assert copy_.spent() == budget.spent()
    with pytest.raises(FileExistsError):
        budget.backup(tmp_path / "memory.db")
    store = _ListStore(1.0, 0.0)  # any store: its entries are copied
    PrivacyBudget(1.0, ledger=store).spend(LaplaceEvent(0.5), label="x")
    PrivacyBudget(1.0, ledger=store).backup(tmp_path / "list.db")
    assert [
        e.label for e in PrivacyBudget.from_ledger(tmp_path / "list.db").ledger
    ] == ["x"]


# -- what a path means --------------------------------------------------------
def test_memory_path_means_an_in_process_ledger(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    budget = PrivacyBudget(1.0, ledger=":memory:")
    assert isinstance(budget.store, MemoryLedger)
    budget.spend(LaplaceEvent(0.5))
    assert budget.spent() == (0.5, 0.0)
    assert list(tmp_path.iterdir()) == []  # no file named ":memory:"
    with pytest.raises(ValueError, match="not a ledger file"):
        SQLiteLedger(":memory:", 1.0, 0.0)
    with pytest.raises(ValueError, match="not a ledger file"):
        PrivacyBudget.from_ledger(":memory:")


def test_tilde_means_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    budget = PrivacyBudget(1.0, ledger="~/ledgers.db")
    budget.spend(LaplaceEvent(0.5))
    assert budget.store.path == str(tmp_path / "ledgers.db")
    assert (tmp_path / "ledgers.db").is_file()
    assert not (tmp_path / "~").exists()
    assert PrivacyBudget.from_ledger("~/ledgers.db").spent() == (0.5, 0.0)
    budget.backup("~/copy.db")
    assert (tmp_path / "copy.db").is_file()


# -- the in-memory budget and the store interface ----------------------------
def test_pickling_moves_an_in_memory_budget_to_a_temporary_file():
    budget = PrivacyBudget(1.0)
    entry = budget.spend(LaplaceEvent(0.25), label="before")
    assert isinstance(budget.store, MemoryLedger)
    pickle.dumps(budget)
    store = budget.store
    assert isinstance(store, SQLiteLedger) and store.temporary
    assert budget.ledger == [entry]  # labels, events and timestamps kept
    pickle.dumps(budget)
    assert budget.store is store  # moved once


def test_spends_racing_the_move_are_kept():
    budget = PrivacyBudget(1000.0)
    old_store = budget.store
    errors = []

    def spend():
        try:
            for _ in range(40):
                record = CertifiedEvent(LaplaceEvent(0.1), 0.1, 0.0)
                old_store.append_if(record, "thread", lambda records: None)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=spend) for _ in range(3)]
    for t in threads:
        t.start()
    pickle.dumps(budget)
    for t in threads:
        t.join()
    assert not errors
    assert len(budget.ledger) == 120
    assert [e.index for e in budget.ledger] == list(range(120))


def test_unreachable_temporary_ledger_says_how_to_fix_it():
    budget = PrivacyBudget(1.0)
    copy_ = pickle.loads(pickle.dumps(budget))
    shutil.rmtree(os.path.dirname(budget.store.path))  # as on another machine
    with pytest.raises(LedgerError, match=r"created without ledger=.*ledger='/shared"):
        copy_.spend(LaplaceEvent(0.1))


@pytest.mark.slow
def test_temporary_ledger_is_removed_when_its_process_exits():
    code = (
        "import pickle; from skdp import PrivacyBudget; b = PrivacyBudget(1.0); "
        "pickle.dumps(b); print(b.store.path)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ledger = Path(out.strip())
    assert ledger.name == "ledger.db"
    assert not ledger.parent.exists()


class _ListStore:
    """A minimal third-party store, as a server-backed one would look."""

    shared_across_processes = False

    def __init__(self, epsilon, delta):
        self.limits = (epsilon, delta)
        self.rows = []

    def entries(self):
        return list(self.rows)

    def append_if(self, event, label, check):
        check([e.event for e in self.rows] + [event])
        self.rows.append(LedgerEntry(len(self.rows), label, event, 0.0))
        return self.rows[-1]


def test_any_ledger_store_can_back_a_budget(path):
    store = _ListStore(1.0, 0.0)
    assert isinstance(store, LedgerStore)
    assert isinstance(MemoryLedger(1.0, 0.0), LedgerStore)
    assert isinstance(SQLiteLedger(path, 1.0, 0.0), LedgerStore)
    budget = PrivacyBudget(1.0, ledger=store)
    budget.spend(LaplaceEvent(0.6), label="a")
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(0.6))
    assert [e.label for e in store.rows] == ["a"]
    assert PrivacyBudget.from_ledger(store).spent() == (0.6, 0.0)
    with pytest.raises(LedgerError, match="has limits"):
        PrivacyBudget(2.0, ledger=store)
    with pytest.raises(TypeError, match="ledger must be"):
        PrivacyBudget(1.0, ledger=42)


FORK_SCRIPT = """
import os, sys
from skdp import PrivacyBudget
from skdp.accounting import LaplaceEvent

ledger = sys.argv[1] or None
budget = PrivacyBudget(1.0, ledger=ledger)
budget.spend(LaplaceEvent(0.1), label="parent")  # opens the connection first
read, write = os.pipe()
if os.fork() == 0:  # the child inherits the budget instead of unpickling it
    try:
        budget.spend(LaplaceEvent(0.1), label="child")
        message = "ok"
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
    os.write(write, message.encode())
    os._exit(0)
os.close(write)
print(os.read(read, 10000).decode())
os.wait()
print([e.label for e in budget.ledger])
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.slow
def test_forked_child_spends_into_the_parent_or_refuses(kind, path):
    out = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT, str(path) if kind == "sqlite" else ""],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    if kind == "sqlite":  # the child reconnects and spends into the same file
        assert out == ["ok", "['parent', 'child']"]
    else:  # the child's spend would stay in its own memory: refused, loudly
        assert out[0].startswith("LedgerError: This privacy budget's ledger is in")
        assert "forked" in out[0] and "ledger='path/to/ledger.db'" in out[0]
        assert out[1] == "['parent']"


def test_pickled_copy_of_an_unshared_store_refuses_to_spend():
    budget = PrivacyBudget(1.0, ledger=_ListStore(1.0, 0.0))
    copy_ = pickle.loads(pickle.dumps(budget))
    with pytest.raises(LedgerError, match="not shared across processes"):
        copy_.spend(LaplaceEvent(0.1))
    budget.spend(LaplaceEvent(0.1))  # the original still works
