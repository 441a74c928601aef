"""SIGKILL at random points of a stream of spends, on both ledgers.

``test_crash_durability.py`` kills a spender at chosen points of one spend.
Here two processes spend a small epsilon again and again on one ledger
(SQLite file, or PostgreSQL when a server is available) and each is killed
at a random moment after its first spend began (seeded delays; where in a
spend the kill lands is up to the scheduler), many times over; halfway the
test spends all but three spends' worth, so that the later kills land at
the limit.
After every kill the test reopens the ledger as the next run of a script
would and checks:

* it opens, or is refused with ``LedgerError`` (never silently reset: it
  never has fewer entries than before);
* every spend a child reported as recorded (after ``spend`` returned) is in
  it, and nothing else but at most the one spend each killed child had in
  flight;
* the total spent never exceeds the limit; the entries' indices run on
  without a gap (and SQLite's integrity check passes).

The counts (faults injected, survived, refused on opening, lost spends,
overspends) go to the file named by ``SKDP_FAULT_COUNTS`` when it is set
(``benchmarks/hostile_counts.py`` prints them).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

import skdp
from skdp import LedgerError, PrivacyBudget
from skdp.accounting import LaplaceEvent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (hasattr(signal, "SIGKILL") and hasattr(os, "fork")),
        reason="needs POSIX signals and fork",
    ),
]

REPO = Path(skdp.__file__).resolve().parents[1]
DEADLINE = 120  # seconds to wait for the spawner (never asserted on)
LIMIT = 6.0  # epsilon of the ledger
SPEND = 0.01  # epsilon of one spend
ROUNDS = 24  # rounds of two killed spenders: 48 kills (the test tops the
# budget up to three spends short of its limit halfway)
MAX_DELAY = 0.4  # seconds before a kill, drawn uniformly

# Imports skdp once, then per round forks two spenders that reopen the ledger
# (as a script's next run would) and spend until killed. A spender reports a
# spend as recorded only after ``spend`` returned, with one append to the
# report file (a whole line: a SIGKILL cannot split it).
SPAWNER = textwrap.dedent(
    """
    import os, signal, sys, time
    from skdp import BudgetExceededError, LedgerError, PrivacyBudget
    from skdp.accounting import LaplaceEvent

    target, reports, limit, spend = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:5])
    if target.startswith("postgres"):
        import psycopg  # once here, not in every child (seconds on a busy machine)

    def spender(name):
        fd = os.open(reports, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            budget = PrivacyBudget(limit, ledger=target)
            k = 0
            while True:
                label = f"{name} {k}"
                os.write(fd, f"trying {label}\\n".encode())
                try:
                    budget.spend(LaplaceEvent(spend), label=label)
                    os.write(fd, f"recorded {label}\\n".encode())
                except BudgetExceededError:
                    os.write(fd, f"refused {label}\\n".encode())
                k += 1
        except LedgerError:
            os.write(fd, f"ledgererror {name}\\n".encode())
        except BaseException as exc:
            os.write(fd, f"crashed {name} {type(exc).__name__}\\n".encode())
        finally:
            os._exit(0)

    print("ready", flush=True)
    for line in sys.stdin:
        round_, *delays = line.split()
        pids = []
        for s in range(len(delays)):
            pid = os.fork()
            if pid == 0:
                spender(f"r{round_}s{s}")
            pids.append(pid)
        # Each child is killed its delay after it began its first spend (so
        # every kill lands in the stream, however slow the machine).
        names = [f"r{round_}s{s} 0" for s in range(len(pids))]
        due = [None] * len(pids)
        give_up = time.monotonic() + 60
        while any(pid is not None for pid in pids):
            with open(reports) as f:
                text = f.read()
            now = time.monotonic()
            for s, pid in enumerate(pids):
                if pid is None:
                    continue
                if due[s] is None and (f"trying {names[s]}" in text or now > give_up):
                    due[s] = now + float(delays[s])
                if due[s] is not None and now >= due[s]:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    pids[s] = None
            time.sleep(0.002)
        print("done", flush=True)
    """
)


def _report(counts):
    path = os.environ.get("SKDP_FAULT_COUNTS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(counts) + "\n")


def _read(ledger):
    """``(entries, spent)`` of the reopened ledger, or ``None`` if refused."""
    try:
        budget = PrivacyBudget.from_ledger(ledger)
    except LedgerError:
        return None
    try:
        return budget.ledger, budget.spent()[0]
    finally:
        budget.store.close()


def _top_up(ledger):
    """Spend all but three spends' worth in one go (how fast the children
    spend depends on the machine; whether kills land at the limit must not)."""
    budget = PrivacyBudget.from_ledger(ledger)
    try:
        left = budget.remaining()[0] - 3 * SPEND
        if left > 0:
            budget.spend(LaplaceEvent(left), label="top-up")
    finally:
        budget.store.close()


def _kill_at_random(ledger, reports, what, seed):
    rng = np.random.default_rng(seed)
    spawner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SPAWNER,
            str(ledger),
            str(reports),
            str(LIMIT),
            str(SPEND),
        ],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    counts = dict(
        fault="SIGKILL at a random moment of a stream of spends",
        ledger=what, injected=0, survived=0, refused_on_opening=0,
        lost_spends=0, overspends=0, recorded=0, inside_spend_call=0,
    )  # fmt: skip
    problems, lost_ever = [], set()
    try:
        assert spawner.stdout.readline().strip() == "ready", spawner.stderr.read()
        seen = 0
        for round_ in range(ROUNDS):
            if round_ == ROUNDS // 2:
                _top_up(ledger)  # the later kills land at the limit
            delays = rng.uniform(0.0, MAX_DELAY, size=2)
            spawner.stdin.write(f"{round_} {delays[0]:.4f} {delays[1]:.4f}\n")
            spawner.stdin.flush()
            line = spawner.stdout.readline()
            assert line.startswith("done"), spawner.stderr.read()[-3000:]
            counts["injected"] += 2
            lines = Path(reports).read_text().splitlines()
            crashed = [x for x in lines if x.startswith(("crashed", "ledgererror"))]
            assert not crashed, crashed
            last = {}
            for x in lines:
                if x.startswith(("trying", "recorded", "refused")):
                    kind, label = x.split(" ", 1)
                    last[label.rsplit(" ", 1)[0]] = kind
            counts["inside_spend_call"] = sum(k == "trying" for k in last.values())
            recorded = {x.split(" ", 1)[1] for x in lines if x.startswith("recorded")}
            tried = [x.split(" ", 1)[1] for x in lines if x.startswith("trying")]
            last_tried = {label.rsplit(" ", 1)[0]: label for label in tried}
            state = _read(ledger)
            if state is None:
                # Refused, never reset: allowed, but then nothing goes on.
                counts["refused_on_opening"] += 2
                break
            entries, spent = state
            labels = [e.label for e in entries]
            lost = recorded - set(labels)
            ours = {"first", "top-up"}
            unknown = set(labels) - set(tried) - ours
            # Committed but not reported: only a killed child's last spend.
            in_flight = set(labels) - recorded - ours
            stray = {x for x in in_flight if last_tried.get(x.rsplit(" ", 1)[0]) != x}
            lost_ever |= lost
            counts["lost_spends"] = len(lost_ever)
            counts["overspends"] += int(spent > LIMIT)
            counts["recorded"] = len(recorded)
            ok = (
                not lost
                and not unknown
                and spent <= LIMIT
                and len(labels) >= seen
                and len(labels) == len(set(labels))
                and [e.index for e in entries] == list(range(len(entries)))
                and not stray
            )
            if ok:
                counts["survived"] += 2
            else:
                problems.append(
                    (round_, sorted(lost), sorted(unknown), sorted(stray), spent)
                )
            seen = len(labels)
    finally:
        spawner.kill()
        spawner.communicate(timeout=DEADLINE)
    _report(counts)
    return counts, problems


def _assert_survived(counts, problems):
    assert problems == []
    assert counts["lost_spends"] == 0 and counts["overspends"] == 0
    assert counts["survived"] == counts["injected"] == 2 * ROUNDS


def test_sigkill_at_random_points_of_sqlite_spends(tmp_path):
    ledger = tmp_path / "ledger.db"
    PrivacyBudget(LIMIT, ledger=ledger).spend(LaplaceEvent(SPEND), label="first")
    counts, problems = _kill_at_random(ledger, tmp_path / "reports.log", "SQLite", 26)
    _assert_survived(counts, problems)
    # The later kills landed at the limit: it was reached, never passed.
    entries, spent = _read(ledger)
    assert LIMIT - SPEND < spent <= LIMIT
    with sqlite3.connect(ledger) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_sigkill_at_random_points_of_postgres_spends(postgres_url, tmp_path):
    target = f"{postgres_url}#kills-{uuid.uuid4().hex[:12]}"
    PrivacyBudget(LIMIT, ledger=target).spend(LaplaceEvent(SPEND), label="first")
    counts, problems = _kill_at_random(
        target, tmp_path / "reports.log", "PostgreSQL", 27
    )
    _assert_survived(counts, problems)
    entries, spent = _read(target)
    assert LIMIT - SPEND < spent <= LIMIT
