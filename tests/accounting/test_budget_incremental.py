"""The budget adds each entry once: spend, spent, summary and repr.

A counting accountant records every event it composes and a counting filter
every record it adds; the tests check that a spend composes only the new
event (its certificate, outside the ledger's write lock), that under the
lock the filter adds only the new record (and those other processes
appended meanwhile), that reports add only entries recorded since the last
one, and that ``repr`` adds nothing at all.
"""

import math
import pickle

import pytest

from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import (
    GaussianEvent,
    LaplaceEvent,
    MemoryLedger,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
    _filters,
)
from skdp.accounting import _budget as budget_module
from skdp.accounting._composition import _REPORTS, pure_epsilon


class CountingAccountant(PrivacyAccountant):
    """The default accountant, counting the events it composes."""

    def __init__(self):
        super().__init__()
        self.composed = []
        self.composed_under_lock = []
        self.under_lock = False

    def extend(self, state, events):
        events = list(events)
        self.composed.extend(events)
        if self.under_lock:
            self.composed_under_lock.extend(events)
        return super().extend(state, events)


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


@pytest.fixture
def counted(monkeypatch):
    """Every record the budget's filters add, and whether under the lock."""
    added = []

    class Counting(_filters.BasicFilter):
        def add(self, state, record):
            added.append(record)
            return super().add(state, record)

    monkeypatch.setitem(budget_module.FILTERS, "basic", Counting)
    _REPORTS.clear()  # composition reports are cached across accountants
    return added


DELTA = 1e-5


def _events(n):
    return [
        PoissonSubsampledGaussianEvent(0.02, 1.0 + 0.1 * (i % 7), 50 + i)
        if i % 2
        else LaplaceEvent(0.01 * (1 + i % 5))
        for i in range(n)
    ]


def _spend(budget, event, label=None):
    # Each Gaussian spend is charged a fixed share of delta.
    delta = None if pure_epsilon([event]) is not None else DELTA / 100
    return budget.spend(event, label, delta=delta)


def _budget():
    accountant = CountingAccountant()
    ledger = WatchedLedger(accountant, 1e6, DELTA)
    return PrivacyBudget(1e6, DELTA, accountant=accountant, ledger=ledger), accountant


def _basic_total(entries):
    """The basic filter's total, recomputed from the entries' own events."""
    accountant = PrivacyAccountant()
    total = []
    for entry in entries:
        pure = pure_epsilon([entry.event])
        if pure is not None:
            total.append(pure)
        else:
            total.append(accountant.epsilon_delta([entry.event], DELTA / 100)[0])
    return math.fsum(total)


def test_each_spend_composes_only_the_new_event_outside_the_lock(counted):
    budget, accountant = _budget()
    events = _events(12)
    for event in events:
        before, added = len(accountant.composed), len(counted)
        _spend(budget, event)
        # The new event is composed once (its certificate), before the
        # ledger is locked; nothing else, whatever the ledger's length. The
        # filter adds only the new record.
        if pure_epsilon([event]) is None:
            assert accountant.composed[before:] == [event]
        else:
            assert accountant.composed[before:] == []
        assert accountant.composed_under_lock == []
        assert [r.event for r in counted[added:]] == [event]
    assert budget.report().epsilon == pytest.approx(
        _basic_total(budget.ledger), rel=1e-12
    )


def test_an_entry_appended_meanwhile_is_added_under_the_lock(counted):
    budget, accountant = _budget()
    for event in _events(4):
        _spend(budget, event)
    other = GaussianEvent(9.0)
    entry = PrivacyBudget(1e6, DELTA).spend(other, "other process", delta=DELTA / 100)
    budget.store.sneak_in = entry.record
    added = len(counted)
    _spend(budget, LaplaceEvent(0.05), label="mine")
    # Under the lock: the other process's record, then ours; no composition.
    assert [r.label for r in counted[added:]] == ["other process", "mine"]
    assert accountant.composed_under_lock == []
    assert [e.label for e in budget.ledger][-2:] == ["other process", "mine"]
    assert budget.spent()[0] == pytest.approx(_basic_total(budget.ledger), rel=1e-12)


def test_reports_add_only_new_entries_and_repr_adds_nothing(counted):
    budget, accountant = _budget()
    for event in _events(6):
        _spend(budget, event)
    composed, added = len(accountant.composed), len(counted)
    for _ in range(3):
        budget.spent()
        budget.remaining()
        repr(budget)
    assert (len(accountant.composed), len(counted)) == (composed, added)
    # Another handle on the ledger appends: the next report adds it once.
    entry = PrivacyBudget(1e6, DELTA).spend(GaussianEvent(8.0), delta=DELTA / 100)
    added = len(counted)  # that budget's own filter added the record once
    budget.store.append_if(entry.record, "elsewhere", lambda events: None)
    text = repr(budget)  # stale cache: shows the count, adds nothing
    assert "n_spends=7" in text and "spent=" not in text
    assert len(counted) == added
    budget.spent()
    budget.spent()
    assert counted[added:] == [entry.record]
    assert len(accountant.composed) == composed
    assert "spent=(" in repr(budget)


def test_repr_of_an_estimator_composes_nothing(counted):
    from skdp import DPLogisticRegression

    budget, accountant = _budget()
    for event in _events(20):
        _spend(budget, event)
    budget.spent()
    composed, added = len(accountant.composed), len(counted)
    text = repr(DPLogisticRegression(budget=budget))
    assert "PrivacyBudget(" in text and "spent=(" in text
    assert (len(accountant.composed), len(counted)) == (composed, added)


def test_refused_spend_keeps_the_state_and_says_what_was_spent():
    budget = PrivacyBudget(3.0, 1e-5)
    budget.spend(PoissonSubsampledGaussianEvent(0.02, 1.0, 200), delta=5e-6)
    spent = budget.spent()
    with pytest.raises(BudgetExceededError, match="already spent"):
        budget.spend(PoissonSubsampledGaussianEvent(0.02, 0.6, 2000), delta=5e-6)
    assert budget.spent() == spent and len(budget.ledger) == 1
    assert budget.check(LaplaceEvent(0.01))
    assert not budget.check(LaplaceEvent(5.0))
    assert budget.spent() == spent


def test_pickled_budget_leaves_the_filter_totals_behind():
    budget = PrivacyBudget(10.0, 1e-5)
    budget.spend(PoissonSubsampledGaussianEvent(0.02, 1.0, 200))
    budget.spent()
    copy = pickle.loads(pickle.dumps(budget))
    assert copy._tally.state is None
    assert copy.spent() == budget.spent()


def test_sqlite_ledger_is_added_up_incrementally(tmp_path):
    path = tmp_path / "ledger.db"
    budget = PrivacyBudget(100.0, DELTA, ledger=path)
    other = PrivacyBudget.from_ledger(path)
    for event in _events(6):
        _spend(budget, event)
    other.spend(GaussianEvent(5.0), label="other", delta=DELTA / 100)
    _spend(budget, LaplaceEvent(0.2))
    assert budget.spent()[0] == pytest.approx(_basic_total(budget.ledger), rel=1e-12)
    assert other.spent() == budget.spent()
