"""What only the PostgreSQL ledger has: URLs, names, passwords, locks, forks.

The behaviour it shares with the SQLite ledger is in test_ledger_contract.py.
Tests taking ``postgres_url`` need a server (tests/accounting/conftest.py)
and skip, saying why, without one; the others run everywhere.
"""

import os
import sys
import uuid

import pytest

from skdp import BudgetExceededError, LedgerError, PrivacyBudget
from skdp.accounting import LaplaceEvent, LedgerStore, MemoryLedger, PostgreSQLLedger
from skdp.accounting.ledgers._postgres import _redact, is_postgres_url


def _name():
    return f"unit-{uuid.uuid4().hex[:12]}"


# -- without a server ---------------------------------------------------------
@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://ann:s3cret@db:5432/x", "postgresql://ann:***@db:5432/x"),
        (
            "postgres://ann:p%40ss@db/x?sslmode=require",
            "postgres://ann:***@db/x?sslmode=require",
        ),
        ("postgresql://ann@db/x", "postgresql://ann@db/x"),
        ("postgresql://db/x?password=s3cret&x=1", "postgresql://db/x?password=***&x=1"),
        ("host=db password='s 3cret' dbname=x", "host=db password=*** dbname=x"),
        ("host=db password=s3cret dbname=x", "host=db password=*** dbname=x"),
    ],
)
def test_passwords_are_redacted(url, shown):
    assert _redact(url) == shown


def test_postgres_urls_are_recognised():
    assert is_postgres_url("postgresql://host/db")
    assert is_postgres_url("postgres://host/db")
    assert not is_postgres_url("ledger.db")
    assert not is_postgres_url(os.path.join("postgresql:", "x"))


def test_a_missing_driver_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import fails
    with pytest.raises(ImportError, match=r"skdp\[postgresql\]"):
        PostgreSQLLedger("postgresql://nowhere/db", 1.0, 0.0)
    with pytest.raises(ImportError, match=r"skdp\[postgresql\]"):
        PrivacyBudget(1.0, ledger="postgresql://nowhere/db")


def test_unreachable_server_raises_ledger_error_without_the_password():
    pytest.importorskip("psycopg")
    url = "postgresql://ann:TopSecret42@127.0.0.1:1/x"  # nothing listens on port 1
    with pytest.raises(LedgerError, match="Cannot connect") as raised:
        PostgreSQLLedger(url, 1.0, 0.0, timeout=2)
    assert "TopSecret42" not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


# -- with a server ------------------------------------------------------------
def test_store_protocol_repr_and_password(postgres_url):
    store = PostgreSQLLedger(postgres_url, 1.0, 1e-6, name=_name())
    assert isinstance(store, LedgerStore)
    assert store.shared_across_processes
    assert store.limits == (1.0, 1e-6)
    password = store._password()
    assert password, "the test server's URL carries a password"
    assert password not in repr(store) and "***" in repr(store)
    wrong = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(LedgerError) as raised:
        PostgreSQLLedger(wrong, 1.0, 0.0, name=_name(), timeout=5)
    assert password not in str(raised.value)


def test_named_ledgers_in_one_database_are_independent(postgres_url):
    first, second = _name(), _name()
    a = PrivacyBudget(1.0, ledger=f"{postgres_url}#{first}")
    b = PrivacyBudget(2.0, ledger=PostgreSQLLedger(postgres_url, 2.0, 0.0, name=second))
    a.spend(LaplaceEvent(0.75), label="a")
    b.spend(LaplaceEvent(1.5), label="b")
    assert a.spent() == (0.75, 0.0) and b.spent() == (1.5, 0.0)
    assert a.store.name == first and b.store.name == second
    assert PrivacyBudget.from_ledger(f"{postgres_url}#{second}").epsilon == 2.0
    with pytest.raises(LedgerError, match="no privacy ledger"):
        PrivacyBudget.from_ledger(f"{postgres_url}#{_name()}")


def test_entries_round_trip_exactly(postgres_url):
    name = _name()
    store = PostgreSQLLedger(postgres_url, 10.0, 1e-5, name=name)
    events = [LaplaceEvent(0.1), LaplaceEvent(1 / 3), LaplaceEvent(0.30000000000000004)]
    written = [store.append_if(e, "e", lambda _: None) for e in events]
    read = PostgreSQLLedger(postgres_url, name=name).entries()
    assert read == written  # timestamps and epsilons bit for bit


def test_memory_budget_moves_into_postgres(postgres_url):
    memory = MemoryLedger(1.0, 0.0)
    memory.append_if(LaplaceEvent(0.25), "before", lambda _: None)
    name = _name()
    store = memory.move_to(PostgreSQLLedger(postgres_url, 1.0, 0.0, name=name))
    memory.append_if(LaplaceEvent(0.25), "after", lambda _: None)
    labels = [e.label for e in PostgreSQLLedger(postgres_url, name=name).entries()]
    assert labels == ["before", "after"] == [e.label for e in store.entries()]
    with pytest.raises(LedgerError, match="non-empty"):
        store.import_entries(store.entries())


def test_changed_limits_are_detected(postgres_url):
    import psycopg

    name = _name()
    budget = PrivacyBudget(1.0, ledger=f"{postgres_url}#{name}")
    budget.spend(LaplaceEvent(0.5), label="x")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE skdp_ledger_meta SET epsilon = 100 WHERE name = %s", (name,)
        )
    with pytest.raises(LedgerError, match="limits"):
        budget.spend(LaplaceEvent(0.5))
    with pytest.raises(LedgerError, match="hash chain"):
        PrivacyBudget.from_ledger(f"{postgres_url}#{name}").ledger  # noqa: B018


def test_a_held_lock_times_out_and_records_nothing(postgres_url):
    import psycopg

    name = _name()
    store = PostgreSQLLedger(postgres_url, 1.0, 0.0, name=name, timeout=1)
    with psycopg.connect(postgres_url) as other, other.transaction():
        other.execute(
            "SELECT 1 FROM skdp_ledger_meta WHERE name = %s FOR UPDATE", (name,)
        )
        with pytest.raises(LedgerError, match="Could not lock"):
            store.append_if(LaplaceEvent(0.5), "blocked", lambda _: None)
        assert store.entries() == []  # reads are not blocked
    store.append_if(LaplaceEvent(0.5), "later", lambda _: None)
    assert [e.label for e in store.entries()] == ["later"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_uses_its_own_connection(postgres_url):
    budget = PrivacyBudget(1.0, ledger=f"{postgres_url}#{_name()}")
    budget.spend(LaplaceEvent(0.25), label="parent")  # connection open
    pid = os.fork()
    if pid == 0:  # child: spend, then leave without any cleanup
        try:
            budget.spend(LaplaceEvent(0.25), label="child")
            code = 0
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's connection still works and sees the child's spend.
    budget.spend(LaplaceEvent(0.25), label="parent again")
    assert [e.label for e in budget.ledger] == ["parent", "child", "parent again"]
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(0.5))


def test_spend_fails_cleanly_when_the_server_goes_away(postgres_url):
    import psycopg

    budget = PrivacyBudget(1.0, ledger=f"{postgres_url}#{_name()}")
    budget.spend(LaplaceEvent(0.25), label="x")
    backend_pid = budget.store._conn.info.backend_pid
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
    with pytest.raises(LedgerError, match="Cannot"):
        budget.spend(LaplaceEvent(0.25))
    # The next call reconnects; the failed spend was not recorded.
    assert [e.label for e in budget.ledger] == ["x"]


def test_an_analyst_who_may_only_read_and_append_can_spend(postgres_url):
    """The grants of the user guide suffice, and forbid rewriting entries."""
    import re

    import psycopg

    PostgreSQLLedger(postgres_url, 1.0, 0.0, name=_name())  # tables exist
    role, password = f"analyst_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        try:
            admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test database's user may not create roles")
        try:
            admin.execute(f"GRANT SELECT, INSERT, UPDATE ON skdp_ledger_meta TO {role}")
            admin.execute(f"GRANT SELECT, INSERT ON skdp_ledger_entries TO {role}")
            url = re.sub(r"//[^@/]*@", f"//{role}:{password}@", postgres_url)
            budget = PrivacyBudget(1.0, ledger=f"{url}#{_name()}")
            budget.spend(LaplaceEvent(0.5), label="analyst")
            assert budget.spent() == (0.5, 0.0)
            with psycopg.connect(url, autocommit=True) as analyst:
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    analyst.execute("UPDATE skdp_ledger_entries SET label = 'x'")
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def test_head_and_backup_to_a_sqlite_file(postgres_url, tmp_path):
    budget = PrivacyBudget(1.0, 1e-6, ledger=f"{postgres_url}#{_name()}")
    assert budget.store.head()[0] == 0
    budget.spend(LaplaceEvent(0.25), label="x")
    budget.spend(LaplaceEvent(0.5), label="y")
    count, head = budget.store.head()
    assert count == 2 and head == budget.store._hashes[-1]
    budget.backup(tmp_path / "copy.db")
    copy = PrivacyBudget.from_ledger(tmp_path / "copy.db")
    assert (copy.epsilon, copy.delta) == (1.0, 1e-6)
    assert copy.ledger == budget.ledger


def _count_entries(postgres_url, name):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM skdp_ledger_entries WHERE name = %s", (name,)
        ).fetchone()[0]


@pytest.mark.parametrize("edited", ["0", "2", "", "deleted"])
def test_an_open_handle_refuses_a_ledger_whose_format_row_changed(postgres_url, edited):
    """Every read and spend checks the format, in the transaction that reads."""
    import psycopg

    name = _name()
    budget = PrivacyBudget(1.0, ledger=f"{postgres_url}#{name}")
    budget.spend(LaplaceEvent(0.25), label="x")
    copy_ = PostgreSQLLedger(postgres_url, name=name)  # a second, open handle
    with psycopg.connect(postgres_url, autocommit=True) as conn, conn.transaction():
        if edited == "deleted":  # the ledger's row (its entries must go first)
            conn.execute("DELETE FROM skdp_ledger_entries WHERE name = %s", (name,))
            conn.execute("DELETE FROM skdp_ledger_meta WHERE name = %s", (name,))
        else:
            conn.execute(
                "UPDATE skdp_ledger_meta SET format = %s WHERE name = %s",
                (edited, name),
            )
    match = "deleted or replaced" if edited == "deleted" else "format"
    before = _count_entries(postgres_url, name)
    with pytest.raises(LedgerError, match=match):
        budget.spend(LaplaceEvent(0.25))
    with pytest.raises(LedgerError, match=match):
        budget.spent()
    with pytest.raises(LedgerError, match=match):
        copy_.entries()
    with pytest.raises(LedgerError, match=match):
        copy_.append_if(LaplaceEvent(0.25), "copy", lambda events: None)
    assert _count_entries(postgres_url, name) == before  # nothing was recorded


@pytest.fixture
def private_schema(postgres_url):
    """A URL whose search_path is a fresh schema: its tables may be damaged."""
    import psycopg

    schema = f"damaged_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{postgres_url}?options=-csearch_path%3D{schema}", schema
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("damage", ["meta table dropped", "meta row deleted"])
def test_a_ledger_whose_meta_row_is_gone_is_not_created_again(private_schema, damage):
    """Entries without their ledger's row: refused, and no new row is made."""
    import psycopg

    url, schema = private_schema
    name = _name()
    budget = PrivacyBudget(1.0, ledger=f"{url}#{name}")
    budget.spend(LaplaceEvent(0.75), label="x")
    budget.store.close()
    with psycopg.connect(url, autocommit=True) as admin:
        if damage == "meta table dropped":  # also drops the foreign key
            admin.execute("DROP TABLE skdp_ledger_meta CASCADE")
        else:
            admin.execute(
                "ALTER TABLE skdp_ledger_entries "
                "DROP CONSTRAINT skdp_ledger_entries_name_fkey"
            )
            admin.execute("DELETE FROM skdp_ledger_meta WHERE name = %s", (name,))
    for _ in range(2):  # and again: the first refusal left nothing behind
        with pytest.raises(LedgerError, match="exists but cannot be verified"):
            PrivacyBudget(1.0, ledger=f"{url}#{name}")
    with psycopg.connect(url, autocommit=True) as admin:
        exists = admin.execute("SELECT to_regclass('skdp_ledger_meta')").fetchone()
        if damage == "meta table dropped":
            assert exists == (None,)  # not even the table was made again
        else:
            assert admin.execute(
                "SELECT count(*) FROM skdp_ledger_meta WHERE name = %s", (name,)
            ).fetchone() == (0,)
        assert admin.execute(
            "SELECT count(*) FROM skdp_ledger_entries WHERE name = %s", (name,)
        ).fetchone() == (1,)


def test_clients_creating_one_new_named_ledger_at_once_share_it(postgres_url):
    import threading

    n_clients = 4
    for _ in range(5):
        name, barrier, results = _name(), threading.Barrier(n_clients), []

        def create_and_spend(name=name, barrier=barrier, results=results):
            try:
                barrier.wait(timeout=60)
                store = PostgreSQLLedger(postgres_url, 1.0, 0.0, name=name)
                store.append_if(LaplaceEvent(0.01), "client", lambda events: None)
                results.append(store.ledger_id)
                store.close()
            except Exception as exc:  # reported below
                results.append(repr(exc))

        threads = [threading.Thread(target=create_and_spend) for _ in range(n_clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(results) == n_clients and len(set(results)) == 1, results
        store = PostgreSQLLedger(postgres_url, name=name)
        assert store.ledger_id == results[0] and len(store.entries()) == n_clients
        store.close()


def test_a_stopped_and_restarted_server_loses_nothing_and_never_overspends(
    stoppable_postgres,
):
    # Issue 26's fault suite: the server goes down between spends (a fast
    # shutdown cuts every connection) and comes back on the same port.
    import numpy as np

    from skdp.naive_bayes import DPGaussianNB

    server = stoppable_postgres
    ledger = f"{server.url}#{_name()}"
    budget = PrivacyBudget(1.0, ledger=ledger)
    budget.spend(LaplaceEvent(0.25), label="before")
    server.pause()
    with pytest.raises(LedgerError):
        budget.spend(LaplaceEvent(0.25), label="while down")
    X = np.random.default_rng(0).uniform(0, 1, (20, 2))
    model = DPGaussianNB(epsilon=0.25, bounds=(0, 1), classes=[0, 1], budget=budget)
    with pytest.raises(LedgerError):  # a fit while the server is down
        model.fit(X, (X[:, 0] > 0.5).astype(int))
    assert not hasattr(model, "theta_")
    server.resume()
    budget.spend(LaplaceEvent(0.25), label="after")  # reconnects
    fresh = PrivacyBudget(1.0, ledger=ledger)
    assert [e.label for e in fresh.ledger] == ["before", "after"]
    assert fresh.spent()[0] == pytest.approx(0.5)
    budget.spend(LaplaceEvent(0.5), label="the rest")
    with pytest.raises(BudgetExceededError):
        fresh.spend(LaplaceEvent(0.01))
    assert len(PrivacyBudget(1.0, ledger=ledger).ledger) == 3


def test_a_ledger_created_between_two_reads_of_its_opener_is_shared(
    postgres_url, monkeypatch
):
    # The race behind a rare failure of the concurrent-creation test: the
    # opener's "no meta row" read, then another client creates the ledger and
    # spends (both committed), then the opener counts the entries and took
    # them for the orphans of a deleted ledger (LedgerError).
    PrivacyBudget(1.0, ledger=f"{postgres_url}#{_name()}")  # the tables exist
    name = _name()
    ledger = f"{postgres_url}#{name}"
    real = PostgreSQLLedger._transaction
    state = {"raced": False}

    class Racing:
        def __init__(self, conn):
            self._conn = conn

        def execute(self, sql, params=None):
            result = self._conn.execute(sql, params)
            if "FOR UPDATE" in sql and not state["raced"]:
                state["raced"] = True
                other = PrivacyBudget(1.0, ledger=ledger)  # another client
                other.spend(LaplaceEvent(0.25), label="other")

                class Nothing:
                    def fetchone(self):
                        return None

                return Nothing()
            return result

    def racing_transaction(self, doing, body):
        if doing == "open" and not state["raced"] and self.name == name:
            return real(self, doing, lambda conn: body(Racing(conn)))
        return real(self, doing, body)

    monkeypatch.setattr(PostgreSQLLedger, "_transaction", racing_transaction)
    budget = PrivacyBudget(1.0, ledger=ledger)
    assert state["raced"]
    assert [e.label for e in budget.ledger] == ["other"]
