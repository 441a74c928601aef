"""Processes racing to overspend one budget never overspend it (issue 5)."""

import pickle

import pytest
from _processes import warm_context

from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import LaplaceEvent

pytestmark = pytest.mark.slow  # processes racing on one ledger

N_PROCESSES = 8
ATTEMPTS = 10  # per process: 80 attempts of 0.05 against a budget of 2.0
EPSILON = 0.05
LIMIT = 2.0


def _race(budget_bytes, worker, barrier, results):
    budget = pickle.loads(budget_bytes)
    barrier.wait(timeout=120)
    outcomes = []
    for attempt in range(ATTEMPTS):
        label = f"worker {worker} attempt {attempt}"
        try:
            budget.spend(LaplaceEvent(EPSILON), label=label)
        except Exception as exc:  # every refusal must be BudgetExceededError
            outcomes.append((label, type(exc).__name__, str(exc)))
        else:
            outcomes.append((label, "ok", ""))
    results.put(outcomes)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_racing_processes_cannot_overspend(kind, tmp_path):
    ledger = tmp_path / "ledger.db" if kind == "sqlite" else None
    budget = PrivacyBudget(LIMIT, ledger=ledger)
    budget.spend(LaplaceEvent(EPSILON), label="parent, before the race")
    payload = pickle.dumps(budget)  # an in-memory budget moves to a file here

    ctx = warm_context(__name__)
    barrier = ctx.Barrier(N_PROCESSES)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=_race, args=(payload, k, barrier, results))
        for k in range(N_PROCESSES)
    ]
    for p in processes:
        p.start()
    outcomes = [o for _ in processes for o in results.get(timeout=300)]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0

    assert len(outcomes) == N_PROCESSES * ATTEMPTS
    refused = [o for o in outcomes if o[1] != "ok"]
    assert {o[1] for o in refused} == {"BudgetExceededError"}, refused[:3]
    accepted = {o[0] for o in outcomes if o[1] == "ok"}
    # 2.0 / 0.05 = 40 spends fit (up to the 1e-9 rounding slack), one was
    # made by the parent: exactly 39 of the 80 racing attempts succeed.
    assert len(accepted) == round(LIMIT / EPSILON) - 1

    # The parent's budget sees exactly the accepted spends, nothing more.
    ledger_labels = [e.label for e in budget.ledger]
    assert ledger_labels[0] == "parent, before the race"
    assert set(ledger_labels[1:]) == accepted and len(ledger_labels) == 40
    assert budget.spent()[0] == pytest.approx(LIMIT, rel=1e-12)
    assert budget.spent()[0] <= LIMIT * (1 + 1e-9)
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(EPSILON))
    if kind == "sqlite":
        reopened = PrivacyBudget.from_ledger(ledger)
        assert [e.label for e in reopened.ledger] == ledger_labels
