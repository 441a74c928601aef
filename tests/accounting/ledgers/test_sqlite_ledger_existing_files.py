"""An existing file is never taken for a new SQLite ledger.

Only a path where no file exists creates a ledger. Any file that is there but
cannot be verified as a whole skdp ledger (empty, truncated at any length,
zeros, random bytes, another SQLite database, a ledger interrupted mid-commit
that lost its journal) is refused with :class:`~skdp.exceptions.LedgerError`
and left exactly as it was: treating it as new would grant the whole budget
again.
"""

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _processes import warm_context

import skdp
from skdp import LedgerError, PrivacyBudget
from skdp.accounting import LaplaceEvent, SQLiteLedger

REPO = Path(skdp.__file__).resolve().parents[1]
UNVERIFIABLE = r"exists but cannot be verified.*restore it from a backup"
SIDE_FILES = ("-journal", "-wal", "-shm")


def _ledger_file(path, journal_mode="delete", spends=40):
    """A closed ledger with ``spends`` entries; returns its bytes."""
    ledger = SQLiteLedger(path, 100.0, 0.0, journal_mode=journal_mode)
    for k in range(spends):
        # Labels of varied length, so rows spread over several pages.
        label = f"spend {k} " + "x" * (37 * k % 400)
        ledger.append_if(LaplaceEvent(0.01), label, lambda events: None)
    ledger.close()
    assert not any(os.path.exists(f"{path}{s}") for s in SIDE_FILES)
    return Path(path).read_bytes()


def _truncation_lengths(size, page_size):
    """Every 89th length, and the lengths where something changes."""
    lengths = set(range(0, size, 89)) | {0, 1, 99, 100, 101, 511, 512, 513}
    for boundary in range(page_size, size + 1, page_size):
        lengths |= {boundary - 1, boundary, boundary + 1}
    lengths |= {size - 2, size - 1}
    return sorted(n for n in lengths if 0 <= n < size)


def _open_all_ways(path):
    """Each way a user opens a ledger file must refuse ``path``."""
    for open_ in (
        lambda: PrivacyBudget(100.0, ledger=path),
        lambda: PrivacyBudget.from_ledger(path),
        lambda: SQLiteLedger(path, 100.0, 0.0),
    ):
        with pytest.raises(LedgerError, match=UNVERIFIABLE) as error:
            open_()
        assert str(path) in str(error.value)


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_a_ledger_truncated_to_any_length_is_refused(tmp_path, journal_mode):
    full = _ledger_file(tmp_path / "full.db", journal_mode)
    page_size = int.from_bytes(full[16:18], "big")
    assert len(full) >= 5 * page_size  # several pages: truncation hits each kind
    lengths = _truncation_lengths(len(full), page_size)
    target = tmp_path / "truncated.db"
    survived = []
    for length in lengths:
        for suffix in ("", *SIDE_FILES):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        target.write_bytes(full[:length])
        try:
            PrivacyBudget(100.0, ledger=target).store.close()
        except LedgerError as exc:
            if "exists but cannot be verified" not in str(exc):
                survived.append((length, f"unhelpful message: {exc}"))
        else:
            survived.append((length, "opened"))
        if target.read_bytes() != full[:length]:  # never reset or repaired
            survived.append((length, "file changed"))
    assert survived == [], f"of {len(lengths)} truncations of {len(full)} bytes"
    # The lengths users hit most, through every way in.
    for length in (0, 1, 100, 512, len(full) - 1):
        target.write_bytes(full[:length])
        _open_all_ways(target)
    # The untruncated file is a ledger with every entry.
    assert len(PrivacyBudget.from_ledger(tmp_path / "full.db").ledger) == 40


def _sqlite_file(*statements):
    def make(path):
        conn = sqlite3.connect(path)
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.close()

    return make


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.write_bytes(b""),
        lambda p: p.write_bytes(b"\0"),
        lambda p: p.write_bytes(bytes(8192)),
        lambda p: p.write_bytes(random.Random(0).randbytes(4096)),
        lambda p: p.write_text("epsilon,delta\n1.0,0.0\n"),
        _sqlite_file("PRAGMA user_version = 7"),  # a valid database, no tables
        _sqlite_file("CREATE TABLE patients (name TEXT)"),
        _sqlite_file("CREATE TABLE skdp_ledger_meta (key TEXT, value TEXT)"),
        _sqlite_file(  # the ledger tables, empty: made by hand, never verified
            "CREATE TABLE skdp_ledger_meta (key TEXT PRIMARY KEY, value TEXT)",
            "CREATE TABLE skdp_ledger_entries (idx INTEGER PRIMARY KEY, "
            "label TEXT, event TEXT, timestamp REAL, hash TEXT)",
        ),
    ],
    ids=[
        "empty",
        "one-byte",
        "zeros",
        "random-bytes",
        "text",
        "sqlite-without-tables",
        "sqlite-other-tables",
        "sqlite-meta-table-only",
        "sqlite-empty-ledger-tables",
    ],
)
def test_an_existing_file_that_is_not_a_ledger_is_never_made_one(tmp_path, make):
    path = tmp_path / "ledger.db"
    make(path)
    before = path.read_bytes()
    _open_all_ways(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.db"]


@pytest.mark.parametrize(
    "statement",
    [
        *(
            f"DELETE FROM skdp_ledger_meta WHERE key = '{key}'"
            for key in ("format", "ledger_id", "epsilon", "delta")
            + ("head_count", "head_hash")
        ),
        "UPDATE skdp_ledger_meta SET value = 'one' WHERE key = 'epsilon'",
    ],
    ids=[
        *(f"no-{key}" for key in ("format", "ledger_id", "epsilon", "delta")),
        *("no-head_count", "no-head_hash", "epsilon-not-a-number"),
    ],
)
def test_a_ledger_missing_a_row_of_its_meta_table_is_refused(tmp_path, statement):
    """Not a KeyError, and never a fresh start: the ledger cannot be verified."""
    path = tmp_path / "ledger.db"
    _ledger_file(path, spends=3)
    _sqlite_file(statement)(path)
    _open_all_ways(path)


def test_the_temporary_ledger_of_a_pickled_budget_is_never_recreated():
    """The file an in-memory budget moves to when pickled is checked alike."""
    import pickle

    budget = PrivacyBudget(1.0)
    budget.spend(LaplaceEvent(0.5), label="before")
    copy_ = pickle.loads(pickle.dumps(budget))  # moves to temporary_for's file
    path = Path(budget.store.path)
    budget.store.close()
    path.write_bytes(b"")  # truncated to nothing
    with pytest.raises(LedgerError, match=UNVERIFIABLE):
        copy_.spend(LaplaceEvent(0.1))
    with pytest.raises(LedgerError, match=r"(?s)exists but cannot be.*ledger='/shared"):
        copy_.spent()
    with pytest.raises(LedgerError, match=UNVERIFIABLE):
        budget.spend(LaplaceEvent(0.1))
    assert path.read_bytes() == b""


# -- creating a new ledger ------------------------------------------------------
def _create_and_spend(path, barrier, results):
    try:
        barrier.wait(timeout=120)
        ledger = SQLiteLedger(path, 1.0, 0.0)
        ledger.append_if(LaplaceEvent(0.01), f"pid={os.getpid()}", lambda e: None)
        results.put(ledger.ledger_id)
        ledger.close()
    except BaseException as exc:  # reported, not lost in the child
        results.put(repr(exc))


@pytest.mark.slow  # four processes, five races
def test_processes_creating_one_new_ledger_at_once_share_it(tmp_path):
    ctx = warm_context(__name__)
    n_processes = 4
    for race in range(5):
        path = str(tmp_path / f"race-{race}.db")
        barrier, results = ctx.Barrier(n_processes), ctx.Queue()
        children = [
            ctx.Process(target=_create_and_spend, args=(path, barrier, results))
            for _ in range(n_processes)
        ]
        for child in children:
            child.start()
        ids = [results.get(timeout=120) for _ in children]
        for child in children:
            child.join(timeout=120)
        assert len(set(ids)) == 1, ids  # one ledger (no error text either)
        ledger = SQLiteLedger(path)
        assert ledger.ledger_id == ids[0]
        assert len(ledger.entries()) == n_processes  # nobody's spend was lost
        ledger.close()
    # Creation leaves nothing behind but the ledgers.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"race-{race}.db" for race in range(5)
    ]


def test_a_dangling_symlink_is_a_file_that_exists(tmp_path):
    """A dangling symlink is a file that exists: nothing is created through it."""
    target = tmp_path / "elsewhere.db"
    link = tmp_path / "ledger.db"
    link.symlink_to(target)
    with pytest.raises(LedgerError, match="Cannot open the privacy ledger"):
        PrivacyBudget(1.0, ledger=link)
    assert not target.exists()


# -- a spend interrupted mid-commit ----------------------------------------------
_INTERRUPTED_COMMIT = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")  # spill to the file before any commit
conn.execute("BEGIN IMMEDIATE")
# Like a spend: move the head in place, then add rows (overflowing the cache).
conn.execute("UPDATE skdp_ledger_meta SET value = '205' WHERE key = 'head_count'")
for k in range(200):
    conn.execute(
        "INSERT INTO skdp_ledger_entries VALUES (?, 'uncommitted', ?, 0.0, '')",
        (5 + k, "y" * 3000),
    )
os._exit(0)  # as if killed: the hot journal stays, the commit never happened
"""


def _interrupted_ledger(tmp_path):
    """A ledger whose process died mid-commit: (path, journal, committed)."""
    path = tmp_path / "ledger.db"
    _ledger_file(path, spends=5)
    committed = SQLiteLedger(path).entries()
    before = path.read_bytes()
    subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_COMMIT, str(path)],
        check=True,
        timeout=120,
    )
    journal = Path(f"{path}-journal")
    assert journal.exists() and path.read_bytes() != before  # pages were spilled
    return path, journal, committed


def test_a_spend_interrupted_mid_commit_is_rolled_back_by_its_journal(tmp_path):
    path, journal, committed = _interrupted_ledger(tmp_path)
    assert SQLiteLedger(path).entries() == committed  # SQLite rolled it back
    assert not journal.exists()


def test_a_ledger_that_lost_its_hot_journal_is_refused(tmp_path):
    path, journal, committed = _interrupted_ledger(tmp_path)
    database, undo = path.read_bytes(), journal.read_bytes()
    journal.unlink()
    with pytest.raises(LedgerError, match=UNVERIFIABLE):
        PrivacyBudget.from_ledger(path)
    assert path.read_bytes() == database
    # A cut journal undoes what it still holds: the ledger is then refused,
    # or it is exactly the committed one (never a mix, never fewer entries).
    outcomes = set()
    for keep in sorted({0, 27, 28, 511, 512, 513, len(undo) // 2, len(undo) - 1}):
        path.write_bytes(database)
        journal.write_bytes(undo[:keep])
        try:
            entries = SQLiteLedger(path).entries()
        except LedgerError as exc:
            assert "exists but cannot be verified" in str(exc), (keep, str(exc))
            outcomes.add("refused")
        else:
            assert entries == committed, keep
            outcomes.add("committed state")
    assert "refused" in outcomes


# -- a backup never overwrites ---------------------------------------------------
@pytest.fixture
def file_appears_after_the_check(monkeypatch):
    """As if another program created the target just after backup checked it."""
    import skdp.accounting.ledgers._sqlite as sqlite_ledger

    monkeypatch.setattr(sqlite_ledger, "_refuse_existing", lambda path: None)


@pytest.mark.parametrize("store", ["sqlite", "memory"])
@pytest.mark.parametrize("appearing", ["someone's database", "bytes", "empty ledger"])
def test_a_backup_never_overwrites_a_file_that_appears_meanwhile(
    tmp_path, file_appears_after_the_check, store, appearing
):
    budget = PrivacyBudget(
        2.0, 1e-6, ledger=tmp_path / "ledger.db" if store == "sqlite" else None
    )
    budget.spend(LaplaceEvent(0.5), label="a")
    target = tmp_path / "copy.db"
    if appearing == "someone's database":
        _sqlite_file("CREATE TABLE patients (name TEXT)")(target)
    elif appearing == "bytes":
        target.write_bytes(b"not a database, but someone's file " * 100)
    else:  # a new ledger with the same limits: never merged into
        SQLiteLedger(target, 2.0, 1e-6).close()
    before = target.read_bytes()
    with pytest.raises(FileExistsError, match="already exists"):
        budget.backup(target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["copy.db"] + (["ledger.db"] if store == "sqlite" else [])
    )
