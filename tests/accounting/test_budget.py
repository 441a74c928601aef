import copy
import math
import pickle

import pytest
from sklearn.base import BaseEstimator, clone

from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import (
    ApproxDPEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
    gaussian_epsilon,
)


def test_spend_records_events_in_order_with_labels():
    budget = PrivacyBudget(1.0)
    budget.spend(LaplaceEvent(0.25), label="first")
    budget.spend(LaplaceEvent(0.5, label="second"))
    assert [e.label for e in budget.ledger] == ["first", "second"]
    assert [e.index for e in budget.ledger] == [0, 1]
    assert budget.ledger[0].event == LaplaceEvent(0.25, label="first")
    assert budget.spent() == (0.75, 0.0)
    assert budget.remaining() == (0.25, 0.0)


def test_refused_spend_leaves_no_trace():
    budget = PrivacyBudget(1.0, 1e-6)
    budget.spend(LaplaceEvent(0.9))
    before = (budget.ledger, budget.spent())
    with pytest.raises(BudgetExceededError, match="would exceed the privacy budget"):
        budget.spend(LaplaceEvent(0.2), label="over")
    assert (budget.ledger, budget.spent()) == before
    assert not budget.check(LaplaceEvent(0.2))
    assert budget.check(LaplaceEvent(0.1))


def test_floating_point_sums_fit_exactly():
    budget = PrivacyBudget(1.0)
    for eps in (0.1, 0.2, 0.7):
        budget.spend(LaplaceEvent(eps))
    assert math.isclose(budget.spent()[0], 1.0)


def test_gaussian_needs_delta():
    budget = PrivacyBudget(10.0, 0.0)
    with pytest.raises(BudgetExceededError, match="needs delta > 0"):
        budget.spend(GaussianEvent(1.0))
    assert budget.ledger == []


def test_gaussian_spends_are_charged_their_own_delta_and_add_up():
    # composition="basic": each spend is certified (epsilon_i, delta_i) by
    # its exact profile (Balle & Wang) at the delta it names; they add.
    budget = PrivacyBudget(100.0, 1e-5)
    for _ in range(4):
        entry = budget.spend(GaussianEvent(2.0), delta=2.5e-6)
        assert entry.certificate[1] == 2.5e-6
        assert entry.certificate[0] == pytest.approx(
            gaussian_epsilon(2.0, 2.5e-6), abs=2e-4
        )
        assert entry.certificate[0] >= gaussian_epsilon(2.0, 2.5e-6)
    eps, delta = budget.spent()
    assert delta == pytest.approx(1e-5, rel=1e-12)
    assert eps == pytest.approx(4 * budget.ledger[0].certificate[0], rel=1e-12)
    report = budget.report()
    assert report.guarantee == "adaptive" and report.method == "basic filter"
    # Had the four been declared in advance: one Gaussian of multiplier 1.
    declared = budget.report(guarantee="declared")
    assert declared.guarantee == "declared"
    assert declared.epsilon == pytest.approx(gaussian_epsilon(1.0, 1e-5), rel=1e-9)
    # The delta is gone: a fifth Gaussian spend has none left.
    with pytest.raises(BudgetExceededError, match="no finite epsilon"):
        budget.spend(GaussianEvent(2.0))


def test_a_spend_is_certified_by_the_tightest_bound_of_its_own_event():
    budget = PrivacyBudget(100.0, 1e-5)
    budget.spend(LaplaceEvent(0.5))
    sgd = PoissonSubsampledGaussianEvent(0.01, 1.0, 1000)
    entry = budget.spend(sgd, delta=1e-5)
    own = PrivacyAccountant().compose([sgd], 1e-5)
    assert own.method == "pld"
    assert entry.certificate == (own.epsilon, 1e-5)
    assert budget.spent() == (pytest.approx(0.5 + own.epsilon, rel=1e-12), 1e-5)


def test_approx_events_take_their_delta_and_the_rest_takes_what_is_left():
    budget = PrivacyBudget(5.0, 1e-5)
    budget.spend(ApproxDPEvent(1.0, 4e-6))
    assert budget.spent() == (1.0, 4e-6)
    entry = budget.spend(GaussianEvent(3.0))  # delta=None: all that is left
    assert entry.certificate[1] == pytest.approx(6e-6, rel=1e-12)
    eps, delta = budget.spent()
    assert delta == pytest.approx(1e-5, rel=1e-12)
    assert eps == pytest.approx(1.0 + gaussian_epsilon(3.0, 6e-6), abs=2e-4)


def test_composed_event_counts_each_part():
    budget = PrivacyBudget(1.0)
    budget.spend(ComposedEvent((LaplaceEvent(0.3), LaplaceEvent(0.3))), label="two")
    assert budget.spent()[0] == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        budget.spend(ComposedEvent((LaplaceEvent(0.3), LaplaceEvent(0.3))))
    assert len(budget.ledger) == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0}, "epsilon must be > 0"),
        ({"epsilon": -1}, "epsilon must be > 0"),
        ({"epsilon": float("nan")}, "NaN"),
        ({"epsilon": "1"}, "real number"),
        ({"epsilon": 1, "delta": 1.0}, r"delta must be in \[0, 1\)"),
        ({"epsilon": 1, "delta": -0.1}, r"delta must be in \[0, 1\)"),
    ],
)
def test_invalid_limits_are_rejected(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        PrivacyBudget(**kwargs)


def test_spend_rejects_non_events():
    with pytest.raises(TypeError, match="PrivacyEvent"):
        PrivacyBudget(1.0).spend(0.5)


class _Holder(BaseEstimator):
    def __init__(self, budget=None, epsilon=1.0):
        self.budget = budget
        self.epsilon = epsilon


def test_clone_and_deepcopy_share_the_budget():
    budget = PrivacyBudget(1.0)
    est = _Holder(budget=budget)
    cloned = clone(est)
    assert cloned.budget is budget
    assert copy.deepcopy(budget) is budget
    assert copy.copy(budget) is budget
    cloned.budget.spend(LaplaceEvent(0.5), label="from clone")
    assert [e.label for e in budget.ledger] == ["from clone"]


def test_pickled_in_memory_budget_spends_into_the_original():
    # Pickling moves the in-memory ledger to a temporary shared file; the
    # copy and the original then spend from one ledger.
    budget = PrivacyBudget(1.0)
    budget.spend(LaplaceEvent(0.5), label="before")
    copy_ = pickle.loads(pickle.dumps(budget))
    assert copy_ is not budget
    assert [e.label for e in copy_.ledger] == ["before"]
    copy_.spend(LaplaceEvent(0.25), label="from the copy")
    assert [e.label for e in budget.ledger] == ["before", "from the copy"]
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(0.5))
    budget.spend(LaplaceEvent(0.25), label="last")
    assert copy_.spent() == budget.spent() == (1.0, 0.0)


def test_summary_and_repr_tell_what_was_spent():
    budget = PrivacyBudget(2.0, 1e-5)
    budget.spend(LaplaceEvent(0.5), label="count")
    budget.spend(GaussianEvent(5.0), label="mean")
    text = budget.summary()
    assert "count" in text and "mean" in text
    assert "LaplaceEvent(epsilon=0.5)" in text
    assert "composition:" in text
    assert "n_spends=2" in repr(budget)


def test_infinite_budget_records_without_limit():
    budget = PrivacyBudget(math.inf, 1e-5)
    for _ in range(50):
        budget.spend(LaplaceEvent(10.0))
    assert budget.spent()[0] == 500.0
