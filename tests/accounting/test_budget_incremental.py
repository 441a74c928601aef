"""The budget composes each entry once: spend, spent, summary and repr.

A counting accountant records every event it composes; the tests check that
a spend composes only the new event (outside the ledger's write lock), that
reports compose only entries recorded since the last one, and that ``repr``
composes nothing at all.
"""

import pickle

import pytest

from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import (
    GaussianEvent,
    LaplaceEvent,
    MemoryLedger,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
)


class CountingAccountant(PrivacyAccountant):
    """The default accountant, counting the events it composes."""

    def __init__(self):
        super().__init__()
        self.composed = []
        self.composed_under_lock = []
        self.under_lock = False
        self.reports = 0

    def extend(self, state, events):
        events = list(events)
        self.composed.extend(events)
        if self.under_lock:
            self.composed_under_lock.extend(events)
        return super().extend(state, events)

    def report(self, state, delta):
        self.reports += 1
        return super().report(state, delta)


class WatchedLedger(MemoryLedger):
    """A memory ledger that tells the accountant when its lock is held, and
    can simulate another process appending just before a spend."""

    def __init__(self, accountant, epsilon, delta):
        super().__init__(epsilon, delta)
        self.accountant = accountant
        self.sneak_in = None

    def append_if(self, event, label, check):
        if self.sneak_in is not None:
            other, self.sneak_in = self.sneak_in, None
            super().append_if(other, "other process", lambda events: None)

        def watched(events):
            self.accountant.under_lock = True
            try:
                return check(events)
            finally:
                self.accountant.under_lock = False

        return super().append_if(event, label, watched)


def _events(n):
    return [
        PoissonSubsampledGaussianEvent(0.02, 1.0 + 0.1 * (i % 7), 50 + i)
        if i % 2
        else LaplaceEvent(0.01 * (1 + i % 5))
        for i in range(n)
    ]


def _budget():
    accountant = CountingAccountant()
    ledger = WatchedLedger(accountant, 1e6, 1e-5)
    return PrivacyBudget(1e6, 1e-5, accountant=accountant, ledger=ledger), accountant


def test_each_spend_composes_only_the_new_event_outside_the_lock():
    budget, accountant = _budget()
    events = _events(12)
    for event in events:
        before = len(accountant.composed)
        budget.spend(event)
        # The new event is added to the ledger's state once, before the
        # ledger is locked; nothing else, whatever the ledger's length.
        assert accountant.composed[before:] == [event]
        assert accountant.composed_under_lock == []
    assert budget.report().epsilon == pytest.approx(
        _fold(PrivacyAccountant(), events), rel=1e-12
    )


def _fold(accountant, events):
    state = accountant.empty()
    for event in events:
        state = accountant.extend(state, [event])
    return accountant.report(state, 1e-5).epsilon


def test_an_entry_appended_meanwhile_is_composed_under_the_lock():
    budget, accountant = _budget()
    for event in _events(4):
        budget.spend(event)
    other = GaussianEvent(9.0)
    budget.store.sneak_in = other
    budget.spend(LaplaceEvent(0.05), label="mine")
    assert accountant.composed_under_lock == [other, LaplaceEvent(0.05, label="mine")]
    assert [e.label for e in budget.ledger][-2:] == ["other process", "mine"]
    expected = _fold(PrivacyAccountant(), [e.event for e in budget.ledger])
    assert budget.spent()[0] == pytest.approx(expected, rel=1e-12)


def test_reports_compose_only_new_entries_and_repr_composes_nothing():
    budget, accountant = _budget()
    for event in _events(6):
        budget.spend(event)
    composed, reports = len(accountant.composed), accountant.reports
    for _ in range(3):
        budget.spent()
        budget.summary()
        budget.remaining()
        repr(budget)
    assert len(accountant.composed) == composed
    assert accountant.reports <= reports + 1
    # Another handle on the ledger appends: the next report composes it once.
    budget.store.append_if(GaussianEvent(8.0), "elsewhere", lambda events: None)
    text = repr(budget)  # stale cache: shows the count, composes nothing
    assert "n_spends=7" in text and "spent=" not in text
    assert len(accountant.composed) == composed
    budget.spent()
    budget.summary()
    assert accountant.composed[composed:] == [GaussianEvent(8.0)]
    assert "spent=(" in repr(budget)


def test_repr_of_an_estimator_composes_nothing():
    sklearn = pytest.importorskip("sklearn")  # noqa: F841
    from skdp import DPLogisticRegression

    budget, accountant = _budget()
    for event in _events(20):
        budget.spend(event)
    composed, reports = len(accountant.composed), accountant.reports
    text = repr(DPLogisticRegression(budget=budget))
    assert "PrivacyBudget(" in text
    assert (len(accountant.composed), accountant.reports) == (composed, reports)


def test_refused_spend_keeps_the_state_and_says_what_was_spent():
    budget = PrivacyBudget(3.0, 1e-5)
    budget.spend(PoissonSubsampledGaussianEvent(0.02, 1.0, 200))
    spent = budget.spent()
    with pytest.raises(BudgetExceededError, match="already spent"):
        budget.spend(PoissonSubsampledGaussianEvent(0.02, 0.6, 2000))
    assert budget.spent() == spent and len(budget.ledger) == 1
    assert budget.check(LaplaceEvent(0.01))
    assert not budget.check(LaplaceEvent(5.0))
    assert budget.spent() == spent


def test_pickled_budget_leaves_the_composed_state_behind():
    budget = PrivacyBudget(10.0, 1e-5)
    budget.spend(PoissonSubsampledGaussianEvent(0.02, 1.0, 200))
    budget.spent()
    copy = pickle.loads(pickle.dumps(budget))
    assert copy._composed.state is None
    assert copy.spent() == budget.spent()


def test_sqlite_ledger_is_composed_incrementally(tmp_path):
    path = tmp_path / "ledger.db"
    budget = PrivacyBudget(100.0, 1e-5, ledger=path)
    other = PrivacyBudget.from_ledger(path)
    for event in _events(6):
        budget.spend(event)
    other.spend(GaussianEvent(5.0), label="other")
    budget.spend(LaplaceEvent(0.2))
    expected = _fold(PrivacyAccountant(), [e.event for e in budget.ledger])
    assert budget.spent()[0] == pytest.approx(expected, rel=1e-12)
    assert other.spent() == budget.spent()
