"""A recorded spend survives SIGKILL of the spender, a worker or the parent.

In the grid-search tests each fit charges the budget, then "releases" its
result by appending its label to a log file. Whatever is killed, and
whenever, every released label must be in the ledger when it is reopened
(issue 5).
"""

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _processes import warm_context

import skdp
from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import LaplaceEvent, SQLiteLedger

pytestmark = [
    pytest.mark.slow,  # processes killed and restarted
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals"),
]

REPO = Path(skdp.__file__).resolve().parents[1]
DEADLINE = 120  # seconds to wait for a child to get going (never asserted on)


# -- killed inside append_if --------------------------------------------------
class _KillAtCommit:
    """Wraps the sqlite3 connection; SIGKILLs the process when asked to commit."""

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql, *args):
        if sql == "COMMIT":
            os.kill(os.getpid(), signal.SIGKILL)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def _die(events):
    os.kill(os.getpid(), signal.SIGKILL)


def _spend_and_die(path, where):
    ledger = SQLiteLedger(path)
    ledger.entries()  # opens this process's connection
    check = lambda events: None  # noqa: E731
    if where == "in check":  # write lock held, nothing written yet
        check = _die
    elif where == "before commit":  # row inserted, transaction not committed
        ledger._conn = _KillAtCommit(ledger._conn)
    ledger.append_if(LaplaceEvent(0.1), "doomed", check)
    _die(None)  # "after commit": the spend returned, then the process died


@pytest.mark.parametrize(
    "where, recorded",
    [("in check", False), ("before commit", False), ("after commit", True)],
)
def test_spender_killed_inside_a_spend(where, recorded, tmp_path):
    path = tmp_path / "ledger.db"
    budget = PrivacyBudget(1.0, ledger=path)
    budget.spend(LaplaceEvent(0.1), label="kept")
    child = warm_context(__name__).Process(
        target=_spend_and_die, args=(str(path), where)
    )
    child.start()
    child.join(timeout=DEADLINE)
    assert child.exitcode == -signal.SIGKILL

    # The database file alone holds every committed spend (no -wal to lose).
    (tmp_path / "copy").mkdir()
    shutil.copyfile(path, tmp_path / "copy" / "ledger.db")
    labels = [e.label for e in PrivacyBudget.from_ledger(path).ledger]
    assert labels == (["kept", "doomed"] if recorded else ["kept"])
    copied = PrivacyBudget.from_ledger(tmp_path / "copy" / "ledger.db").ledger
    assert [e.label for e in copied] == labels
    assert [e.label for e in budget.ledger] == labels
    # The dead process's lock went with it: a spend goes through (a stuck
    # lock would raise LedgerError after this 5 s timeout).
    ledger = SQLiteLedger(path, 1.0, 0.0, timeout=5)
    ledger.append_if(LaplaceEvent(0.1), "after", lambda events: None)
    assert [e.label for e in ledger.entries()] == labels + ["after"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# -- killed in the middle of a grid search -----------------------------------
GRID_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.model_selection import GridSearchCV
    from skdp import PrivacyBudget
    from skdp.accounting import LaplaceEvent
    from skdp.base import FitPlan, PrivateEstimatorMixin

    ledger, released = sys.argv[1], sys.argv[2]

    class SlowToy(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
        def __init__(self, epsilon=1.0, C=1.0, budget=None):
            self.epsilon, self.C, self.budget = epsilon, C, budget

        def fit(self, X, y):
            return self._fit_private(X, y)

        def _prepare_fit(self, X, y=None):
            return X, y

        def _plan_fit(self, prepared):
            label = f"eps={self.epsilon} C={self.C} pid={os.getpid()}"
            label += f" n={len(prepared[0])} t={time.time_ns()}"
            return FitPlan(LaplaceEvent(self.epsilon, label=label))

        def _run_fit(self, prepared, plan, source):
            X, y = prepared
            with open(released, "a") as f:  # the noisy result goes out
                f.write(plan.event.label + "\\n")
            # Keep the grid going for a while, then stall it, so that the test
            # always kills it mid-grid however loaded the machine is.
            with open(released) as f:
                time.sleep(0.5 if len(f.readlines()) < 10 else 300)
            self.classes_ = np.unique(y)

        def predict(self, X):
            return np.full(len(X), self.classes_[0])

    X = np.arange(120.0).reshape(60, 2)
    y = np.arange(60) % 2
    budget = PrivacyBudget(100.0, ledger=ledger)
    grid = GridSearchCV(
        SlowToy(budget=budget),
        {"epsilon": [0.1, 0.2, 0.3], "C": [0.1, 1.0, 10.0]},
        cv=3,
        n_jobs=2,
    )
    try:
        grid.fit(X, y)
    except Exception as exc:
        print("grid failed:", type(exc).__name__)
        print("parent sees", len(budget.ledger), "spends", flush=True)
        sys.exit(3)
    print("grid finished", flush=True)
    """
)


def _start_grid(tmp_path):
    script = tmp_path / "grid_child.py"
    script.write_text(GRID_SCRIPT)
    ledger, released = tmp_path / "ledger.db", tmp_path / "released.log"
    released.touch()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen(
        [sys.executable, str(script), str(ledger), str(released)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, with its workers
    )
    return child, ledger, released


def _wait_for_releases(child, released, count):
    """Labels released so far, once at least ``count`` fits have released."""
    stop = time.monotonic() + DEADLINE
    while time.monotonic() < stop and child.poll() is None:
        lines = released.read_text().splitlines()
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    child.kill()
    out, err = child.communicate()
    pytest.fail(f"the grid child did not get going:\n{out}\n{err[-3000:]}")


def _pid(label):
    return int(label.split("pid=")[1].split()[0])


def _check_nothing_lost(ledger, released):
    released_labels = released.read_text().splitlines()
    entries = PrivacyBudget.from_ledger(ledger).ledger
    recorded = [e.label for e in entries]
    assert set(released_labels) <= set(recorded)
    # A spend may be recorded but not yet released when its process died:
    # at most one per process that was fitting (two workers).
    assert len(recorded) <= len(released_labels) + 2
    assert [e.index for e in entries] == list(range(len(entries)))
    with sqlite3.connect(ledger) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    return recorded


def _kill_group(child):
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.communicate(timeout=DEADLINE)


def test_worker_killed_mid_grid_loses_no_spend(tmp_path):
    child, ledger, released = _start_grid(tmp_path)
    try:
        lines = _wait_for_releases(child, released, 4)
        workers = {_pid(label) for label in lines} - {child.pid}
        os.kill(workers.pop(), signal.SIGKILL)
        out, err = child.communicate(timeout=DEADLINE)
    finally:
        _kill_group(child)
    assert "grid failed: TerminatedWorkerError" in out, err[-3000:]
    recorded = _check_nothing_lost(ledger, released)
    assert 4 <= len(recorded) < 28
    # The surviving parent read back at least every spend released before the
    # kill (the other worker may still commit one while loky shuts it down).
    parent_saw = int(out.split("parent sees ")[1].split()[0])
    assert len(lines) <= parent_saw <= len(recorded)


def test_parent_killed_mid_grid_loses_no_spend(tmp_path):
    child, ledger, released = _start_grid(tmp_path)
    try:
        _wait_for_releases(child, released, 4)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=DEADLINE)
        assert child.returncode == -signal.SIGKILL
        # Orphaned workers may still finish a fit; give them a moment, then
        # kill the whole group so that the ledger stops changing.
        time.sleep(1.0)
    finally:
        _kill_group(child)
    recorded = _check_nothing_lost(ledger, released)
    assert 4 <= len(recorded) < 28
    # The reopened ledger keeps working for the next run.
    budget = PrivacyBudget.from_ledger(ledger)
    budget.spend(LaplaceEvent(0.1), label="next run")
    assert len(budget.ledger) == len(recorded) + 1


# -- the ledger file alone is the whole ledger (issue 15) ---------------------
HOLDER_SCRIPT = textwrap.dedent(
    """
    import sys
    from skdp import PrivacyBudget
    from skdp.accounting import LaplaceEvent

    budget = PrivacyBudget(1.0, ledger=sys.argv[1])
    budget.spend(LaplaceEvent(1.0), label="holder")  # the whole budget
    print("spent", flush=True)
    sys.stdin.readline()  # the test deletes files meanwhile
    try:
        budget.spend(LaplaceEvent(0.5), label="holder again")
        print("ok", flush=True)
    except Exception as exc:
        print(type(exc).__name__, flush=True)
    """
)

SPENDER_SCRIPT = textwrap.dedent(
    """
    import sys
    from skdp import PrivacyBudget
    from skdp.accounting import LaplaceEvent

    budget = PrivacyBudget(1.0, ledger=sys.argv[1])  # as a user would
    try:
        budget.spend(LaplaceEvent(1.0), label="second process")
        print("ok", flush=True)
    except Exception as exc:
        print(type(exc).__name__, flush=True)
    """
)


def _python(tmp_path, name, code):
    script = tmp_path / name
    script.write_text(code)
    return [sys.executable, str(script)]


def test_deleting_wal_and_shm_while_a_budget_is_open_cannot_double_spend(tmp_path):
    """A user deleted ``ledger.db-wal`` and ``-shm`` while a budget was open;
    a second process then spent the whole budget again (2x the limit)."""
    path = tmp_path / "ledger.db"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    holder = subprocess.Popen(
        _python(tmp_path, "holder.py", HOLDER_SCRIPT) + [str(path)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "spent", holder.stderr.read()
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        second = subprocess.run(
            _python(tmp_path, "spender.py", SPENDER_SCRIPT) + [str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
        assert second.stdout.strip() == "BudgetExceededError", second.stderr
        out, err = holder.communicate("go\n", timeout=DEADLINE)
        assert out.strip() == "BudgetExceededError", err
    finally:
        holder.kill()
        holder.communicate()
    labels = [e.label for e in PrivacyBudget.from_ledger(path).ledger]
    assert labels == ["holder"]
    assert PrivacyBudget.from_ledger(path).spent() == (1.0, 0.0)


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from skdp import PrivacyBudget
    from skdp.accounting import LaplaceEvent

    budget = PrivacyBudget(1.0, ledger=sys.argv[1])
    for k in range(3):
        budget.spend(LaplaceEvent(0.25), label=f"spend {k}")
    os.kill(os.getpid(), signal.SIGKILL)  # crash with the ledger open
    """
)


def test_a_copy_of_the_ledger_file_after_a_crash_keeps_every_spend(tmp_path):
    """A user copied ``ledger.db`` (without its ``-wal``) after a crash and
    the copy silently lost spends."""
    path = tmp_path / "ledger.db"
    crashed = subprocess.run(
        _python(tmp_path, "crash.py", CRASH_SCRIPT) + [str(path)],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    (tmp_path / "copy").mkdir()
    copy_ = tmp_path / "copy" / "ledger.db"
    shutil.copyfile(path, copy_)  # the database file only
    budget = PrivacyBudget.from_ledger(copy_)
    assert [e.label for e in budget.ledger] == ["spend 0", "spend 1", "spend 2"]
    assert budget.spent() == (0.75, 0.0)
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(0.5))
