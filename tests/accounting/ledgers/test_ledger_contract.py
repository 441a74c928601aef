"""One contract for every ledger shared between processes: SQLite and PostgreSQL.

Every test runs through ``PrivacyBudget(..., ledger=spec)`` where ``spec`` is
a SQLite file path or a ``postgresql://`` URL (a fresh ledger name per test,
so tests never share a ledger). The PostgreSQL cases need a server: see
``tests/accounting/conftest.py``; they skip, saying why, when there is none.

Child processes come from a ``forkserver`` that has already imported
skdp.accounting, so eight racing processes start in milliseconds instead of
importing scikit-learn eight times; each child receives the budget pickled
(a handle to the ledger), exactly as a joblib or Dask worker does.
"""

import json
import os
import pickle
import shutil
import signal
import sqlite3
import uuid

import pytest
from _processes import warm_context

from skdp import BudgetExceededError, LedgerError, PrivacyBudget
from skdp.accounting import LaplaceEvent, SQLiteLedger

DEADLINE = 120  # seconds to wait for children (never asserted on)
N_PROCESSES = 8


# -- the two backends, and raw access to their storage for tampering --------
class SQLiteBackend:
    name = "sqlite"

    def __init__(self, directory):
        self.directory = directory

    def new_spec(self, journal_mode=None):
        path = str(self.directory / f"ledger-{uuid.uuid4().hex[:8]}.db")
        if journal_mode is not None:  # created (limits 1, 0) in that mode
            SQLiteLedger(path, 1.0, 0.0, journal_mode=journal_mode).close()
        return path

    def _run(self, spec, *statements):
        conn = sqlite3.connect(spec, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            out = [conn.execute(sql, params).fetchall() for sql, params in statements]
            conn.execute("COMMIT")
            return out
        finally:
            conn.close()

    def events(self, spec):
        return self._run(
            spec, ("SELECT idx, event FROM skdp_ledger_entries ORDER BY idx", ())
        )[0]

    def set_event(self, spec, index, text):
        self._run(
            spec,
            ("UPDATE skdp_ledger_entries SET event = ? WHERE idx = ?", (text, index)),
        )

    def delete_last(self, spec):
        self._run(
            spec,
            (
                "DELETE FROM skdp_ledger_entries WHERE idx = "
                "(SELECT MAX(idx) FROM skdp_ledger_entries)",
                (),
            ),
        )

    def swap(self, spec, first, second):
        table = "skdp_ledger_entries"
        self._run(
            spec,
            (f"UPDATE {table} SET idx = -1 WHERE idx = ?", (first,)),
            (f"UPDATE {table} SET idx = ? WHERE idx = ?", (first, second)),
            (f"UPDATE {table} SET idx = ? WHERE idx = -1", (second,)),
        )

    def drop(self, spec):
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(spec + suffix):
                os.remove(spec + suffix)


class PostgresBackend:
    name = "postgresql"

    def __init__(self, url):
        self.url = url

    def new_spec(self):
        return f"{self.url}#contract-{uuid.uuid4().hex[:12]}"

    def _run(self, spec, *statements):
        import psycopg

        url, name = spec.split("#")
        with psycopg.connect(url) as conn, conn.transaction():
            out = []
            for sql, params in statements:
                cursor = conn.execute(sql, {"name": name, **params})
                out.append(cursor.fetchall() if cursor.description else None)
            return out

    def events(self, spec):
        return self._run(
            spec,
            (
                "SELECT idx, event FROM skdp_ledger_entries WHERE name = %(name)s "
                "ORDER BY idx",
                {},
            ),
        )[0]

    def set_event(self, spec, index, text):
        self._run(
            spec,
            (
                "UPDATE skdp_ledger_entries SET event = %(text)s "
                "WHERE name = %(name)s AND idx = %(index)s",
                {"text": text, "index": index},
            ),
        )

    def delete_last(self, spec):
        self._run(
            spec,
            (
                "DELETE FROM skdp_ledger_entries WHERE name = %(name)s AND idx = "
                "(SELECT MAX(idx) FROM skdp_ledger_entries WHERE name = %(name)s)",
                {},
            ),
        )

    def swap(self, spec, first, second):
        where = "WHERE name = %(name)s AND idx = "
        self._run(
            spec,
            (f"UPDATE skdp_ledger_entries SET idx = -1 {where} %(a)s", {"a": first}),
            (
                f"UPDATE skdp_ledger_entries SET idx = %(a)s {where} %(b)s",
                {"a": first, "b": second},
            ),
            (f"UPDATE skdp_ledger_entries SET idx = %(b)s {where} -1", {"b": second}),
        )

    def drop(self, spec):
        self._run(
            spec,
            ("DELETE FROM skdp_ledger_entries WHERE name = %(name)s", {}),
            ("DELETE FROM skdp_ledger_meta WHERE name = %(name)s", {}),
        )

    def dump(self, spec, *tables):
        """The rows of ``tables`` for this ledger (what pg_dump would keep)."""
        return self._run(
            spec, *[(f"SELECT * FROM {t} WHERE name = %(name)s", {}) for t in tables]
        )

    def restore(self, spec, tables, dumps):
        """Put back dumped rows, as restoring an older dump would."""
        rows_of = dict(zip(tables, dumps))
        statements = [("DELETE FROM skdp_ledger_entries WHERE name = %(name)s", {})]
        if "skdp_ledger_meta" in rows_of:
            statements.append(
                ("DELETE FROM skdp_ledger_meta WHERE name = %(name)s", {})
            )
        for table in ("skdp_ledger_meta", "skdp_ledger_entries"):
            for row in rows_of.get(table, []):
                marks = ", ".join(f"%(c{i})s" for i in range(len(row)))
                values = {f"c{i}": value for i, value in enumerate(row)}
                statements.append((f"INSERT INTO {table} VALUES ({marks})", values))
        self._run(spec, *statements)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path):
    if request.param == "sqlite":
        return SQLiteBackend(tmp_path)
    return PostgresBackend(request.getfixturevalue("postgres_url"))


def _labels(budget):
    return [entry.label for entry in budget.ledger]


# -- racing processes -------------------------------------------------------
def _race(budget, barrier, results, attempts):
    try:
        barrier.wait(timeout=DEADLINE)
        accepted = 0
        for _ in range(attempts):
            try:
                budget.spend(LaplaceEvent(0.1), label=f"pid={os.getpid()}")
                accepted += 1
            except BudgetExceededError:
                pass
        results.put(accepted)
    except BaseException as exc:  # reported, not lost in the child
        results.put(repr(exc))


@pytest.mark.slow  # eight processes: a few seconds, more on a loaded machine
def test_racing_processes_never_overspend(backend):
    budget = PrivacyBudget(1.0, ledger=backend.new_spec())
    ctx = warm_context(__name__)
    barrier, results = ctx.Barrier(N_PROCESSES), ctx.Queue()
    children = [
        ctx.Process(target=_race, args=(budget, barrier, results, 3))
        for _ in range(N_PROCESSES)
    ]
    for child in children:
        child.start()
    accepted = [results.get(timeout=DEADLINE) for _ in children]
    for child in children:
        child.join(timeout=DEADLINE)
    # 24 attempts of 0.1 against a limit of 1.0: exactly ten fit.
    assert all(isinstance(count, int) for count in accepted), accepted
    assert sum(accepted) == 10
    assert len(budget.ledger) == 10
    assert len({label for label in _labels(budget)}) >= 2  # really raced
    assert budget.spent()[0] == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(0.1))


# -- a killed client --------------------------------------------------------
def _die(events):
    os.kill(os.getpid(), signal.SIGKILL)


def _spend_then_die(budget, released):
    for i in range(3):
        budget.spend(LaplaceEvent(0.1), label=f"released-{i}")
        with open(released, "a") as f:  # the noisy result goes out
            f.write(f"released-{i}\n")
    store = budget.store
    append_if = store.append_if
    # The next spend dies holding the write lock, with nothing committed.
    store.append_if = lambda event, label, check: append_if(event, label, _die)
    budget.spend(LaplaceEvent(0.1), label="doomed")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_killed_client_loses_no_committed_spend(backend, tmp_path):
    spec = backend.new_spec()
    budget = PrivacyBudget(1.0, ledger=spec)
    released = tmp_path / "released.log"
    child = warm_context(__name__).Process(
        target=_spend_then_die, args=(budget, released)
    )
    child.start()
    child.join(timeout=DEADLINE)
    assert child.exitcode == -signal.SIGKILL
    expected = released.read_text().splitlines()
    assert expected == ["released-0", "released-1", "released-2"]
    assert _labels(PrivacyBudget.from_ledger(spec)) == expected
    assert _labels(budget) == expected
    # The dead client's lock went with it (a stuck lock would raise
    # LedgerError here after the ledger's timeout).
    budget.spend(LaplaceEvent(0.1), label="after")
    assert _labels(budget) == expected + ["after"]


# -- limits, handles --------------------------------------------------------
def test_reopening_with_other_limits_is_refused(backend):
    spec = backend.new_spec()
    PrivacyBudget(1.0, 1e-6, ledger=spec).spend(LaplaceEvent(0.25), label="x")
    for epsilon, delta in [(2.0, 1e-6), (1.0, 0.0), (1.0, 1e-5)]:
        with pytest.raises(LedgerError, match="was created with limits"):
            PrivacyBudget(epsilon, delta, ledger=spec)
    reopened = PrivacyBudget.from_ledger(spec)
    assert (reopened.epsilon, reopened.delta) == (1.0, 1e-6)
    assert reopened.spent() == (0.25, 0.0)
    same = PrivacyBudget(1.0, 1e-6, ledger=spec)  # same limits: same ledger
    same.spend(LaplaceEvent(0.25), label="y")
    assert _labels(reopened) == ["x", "y"]


def test_pickled_budget_is_a_handle_to_the_same_ledger(backend):
    spec = backend.new_spec()
    budget = PrivacyBudget(1.0, ledger=spec)
    budget.spend(LaplaceEvent(0.25), label="first-spend")
    blob = pickle.dumps(budget)
    assert b"first-spend" not in blob  # the handle, never the entries
    copy = pickle.loads(blob)
    copy.spend(LaplaceEvent(0.25), label="second-spend")
    assert _labels(budget) == ["first-spend", "second-spend"]
    assert budget.spent() == (0.5, 0.0)
    # The ledger is deleted and created again under the same name: neither
    # the open budget nor a handle to the old one may spend from the new one.
    backend.drop(spec)
    fresh = PrivacyBudget(1.0, ledger=spec)
    with pytest.raises(LedgerError):
        pickle.loads(blob).spend(LaplaceEvent(0.1))
    with pytest.raises(LedgerError):
        budget.spend(LaplaceEvent(0.1))
    assert _labels(fresh) == []


# -- tampering --------------------------------------------------------------
def _edit(backend, spec):
    index, text = backend.events(spec)[0]
    event = json.loads(text)
    event["epsilon"] = 0.0125
    backend.set_event(spec, index, json.dumps(event))


def _edit_same_length(backend, spec):
    """An edit that keeps every length: 0.125 becomes 0.625 in entry 0."""
    index, text = backend.events(spec)[0]
    assert "0.125" in text
    backend.set_event(spec, index, text.replace("0.125", "0.625"))


def _delete_last(backend, spec):
    backend.delete_last(spec)


def _reorder(backend, spec):
    backend.swap(spec, 0, 1)


@pytest.mark.parametrize("tamper", [_edit, _edit_same_length, _delete_last, _reorder])
def test_tampered_ledger_raises(backend, tamper):
    spec = backend.new_spec()
    budget = PrivacyBudget(1.0, ledger=spec)
    for epsilon, label in [(0.125, "a"), (0.25, "b"), (0.375, "c")]:
        budget.spend(LaplaceEvent(epsilon), label=label)
    tamper(backend, spec)
    after = [text for _, text in backend.events(spec)]
    # Every process that opens the ledger now refuses it.
    with pytest.raises(LedgerError):
        PrivacyBudget.from_ledger(spec).ledger  # noqa: B018
    # The budget that was open refuses too: every read compares the stored
    # entries with the ones it verified, so an edit of an older entry, a
    # deleted last entry and a reordering are all noticed, and nothing is
    # spent from the edited ledger.
    with pytest.raises(LedgerError):
        budget.spent()
    with pytest.raises(LedgerError):
        budget.ledger  # noqa: B018
    with pytest.raises(LedgerError):
        budget.spend(LaplaceEvent(0.1))
    assert [text for _, text in backend.events(spec)] == after


# -- lost recent writes -----------------------------------------------------
def _try_spend(spec, epsilon, results):
    try:
        PrivacyBudget(1.0, ledger=spec).spend(LaplaceEvent(epsilon), label="again")
        results.put("accepted")
    except (BudgetExceededError, LedgerError) as exc:
        results.put(type(exc).__name__)


def _spend_and_crash(spec):
    budget = PrivacyBudget(1.0, ledger=spec)
    budget.spend(LaplaceEvent(0.25), label="one")
    budget.spend(LaplaceEvent(0.25), label="two")
    os.kill(os.getpid(), signal.SIGKILL)


def _lost_wal(backend, spec):
    """The write-ahead log vanishes while a budget is open.

    A SQLite ledger is in rollback-journal mode by default: there is no
    ``-wal`` to lose, and another process sees every spend. One created with
    ``journal_mode="wal"`` keeps its last commits in ``-wal``; once that is
    deleted, a process opening the file afresh sees an older, consistent
    ledger (documented: copy such a ledger with ``backup()``), but the budget
    that had it open must refuse to spend.
    """
    if backend.name == "postgresql":
        pytest.skip(
            "no analogue: PostgreSQL's write-ahead log belongs to the server, "
            "clients never see or delete it"
        )
    for journal_mode in ("delete", "wal"):
        spec = backend.new_spec(journal_mode)
        budget = PrivacyBudget(1.0, ledger=spec)
        budget.spend(LaplaceEvent(0.6), label="spent")
        for suffix in ("-wal", "-shm"):
            if os.path.exists(spec + suffix):
                os.remove(spec + suffix)
        if journal_mode == "delete":
            ctx = warm_context(__name__)
            results = ctx.Queue()
            child = ctx.Process(target=_try_spend, args=(spec, 0.6, results))
            child.start()
            outcome = results.get(timeout=DEADLINE)
            child.join(timeout=DEADLINE)
            # Another process never gets the 0.6 already spent a second time.
            assert outcome == "BudgetExceededError"
        with pytest.raises((BudgetExceededError, LedgerError)):
            budget.spend(LaplaceEvent(0.6))


def _older_entries(backend, spec):
    """Recent entries lost: a copy of a crashed ledger, an older dump.

    SQLite (default journal): the file alone holds every committed spend, so
    a copy taken after ``SIGKILL`` is complete. PostgreSQL: an entries table
    restored from an older dump no longer reaches the recorded head.
    """
    if backend.name == "sqlite":
        child = warm_context(__name__).Process(target=_spend_and_crash, args=(spec,))
        child.start()
        child.join(timeout=DEADLINE)
        assert child.exitcode == -signal.SIGKILL
        copy = spec + ".copy.db"
        shutil.copyfile(spec, copy)  # only the main file
        assert _labels(PrivacyBudget.from_ledger(copy)) == ["one", "two"]
        return
    budget = PrivacyBudget(1.0, ledger=spec)
    budget.spend(LaplaceEvent(0.25), label="one")
    dump = backend.dump(spec, "skdp_ledger_entries")
    budget.spend(LaplaceEvent(0.25), label="two")
    backend.restore(spec, ["skdp_ledger_entries"], dump)
    with pytest.raises(LedgerError, match="recorded head"):
        PrivacyBudget.from_ledger(spec).ledger  # noqa: B018
    with pytest.raises(LedgerError):
        budget.spend(LaplaceEvent(0.25))


def _older_copy_while_open(backend, spec):
    """The whole ledger is replaced by an older copy while a budget is open.

    The older copy is self-consistent (chain and head), so only a handle
    that has seen more entries can tell; it must refuse to spend.
    """
    budget = PrivacyBudget(1.0, ledger=spec)
    budget.spend(LaplaceEvent(0.25), label="one")
    if backend.name == "sqlite":
        old = spec + ".old.db"
        budget.backup(old)
        budget.spend(LaplaceEvent(0.25), label="two")
        os.replace(old, spec)
    else:
        tables = ["skdp_ledger_meta", "skdp_ledger_entries"]
        dump = backend.dump(spec, *tables)
        budget.spend(LaplaceEvent(0.25), label="two")
        backend.restore(spec, tables, dump)
    with pytest.raises(LedgerError):
        budget.spend(LaplaceEvent(0.25))
    with pytest.raises(LedgerError):
        budget.ledger  # noqa: B018


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("case", [_lost_wal, _older_entries, _older_copy_while_open])
def test_lost_recent_writes_are_detected(backend, case):
    case(backend, backend.new_spec())
