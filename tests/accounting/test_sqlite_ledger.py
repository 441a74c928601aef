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
        budget.spend(event)
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
        (lambda p: p.write_bytes(os.urandom(4096)), "Cannot open.*not a database"),
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
                old_store.append_if(LaplaceEvent(0.1), "thread", budget._check)
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
