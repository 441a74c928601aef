"""The budget's accept/refuse rule: the two privacy filters and declared plans.

Expected values are computed here from first principles (the binomial law
of composed randomised responses, the Renyi conversion written out) or by
Google's dp_accounting, never with the code under test.
"""

import math

import numpy as np
import pytest
from _data import sphere_rows
from scipy import special, stats

from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import (
    ApproxDPEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
    RDPAccountant,
)
from skdp.accounting._filters import CertifiedEvent, filter_orders
from skdp.exceptions import LedgerError
from skdp.tools import count

pytest.importorskip("dp_accounting")
from dp_accounting_oracle import dp_accounting_epsilon  # noqa: E402


def _randomised_responses_epsilon(k, eps, delta):
    """Exact epsilon of k composed epsilon-randomised responses at delta."""
    j = np.arange(k + 1)
    losses = (2 * j - k) * eps
    masses = stats.binom.pmf(j, k, special.expit(eps))
    low, high = 0.0, k * eps
    for _ in range(200):
        mid = (low + high) / 2
        tail = float(np.sum(masses * np.maximum(-np.expm1(mid - losses), 0.0)))
        low, high = (mid, high) if tail > delta else (low, mid)
    return high


def _counts(budget, n, epsilon):
    data = np.ones((50, 1))
    for _ in range(n):
        count(data, epsilon=epsilon, budget=budget, random_state=0)


@pytest.mark.parametrize("composition", ["basic", "renyi"])
@pytest.mark.parametrize("n, epsilon", [(30, 1.0), (100, 0.1)])
def test_counts_report_at_least_their_exact_epsilon(composition, n, epsilon):
    """A count is randomised response (discrete Laplace, shift 1)."""
    delta = 1e-6
    budget = PrivacyBudget(1e3, delta, composition=composition)
    budget.spend(GaussianEvent(1000.0), delta=delta / 2)  # negligible, needs delta
    _counts(budget, n, epsilon)
    assert all(type(e.event) is DiscreteLaplaceEvent for e in budget.ledger[1:])
    exact = _randomised_responses_epsilon(n, epsilon, delta)
    for guarantee in ("adaptive", "declared"):
        report = budget.report(guarantee)
        assert report.guarantee == guarantee
        assert report.epsilon >= exact, guarantee
    # The declared (tight) figure is within the PLD's grid of exact, plus
    # the negligible Gaussian.
    declared = budget.report("declared").epsilon
    assert declared <= exact + 2e-2


def test_a_12_epsilon_budget_refuses_the_count_that_would_breach_it():
    """On main (c15a8ef) PrivacyBudget(12, 1e-6) accepted 26 counts at 0.5,
    whose exact composition is 12.74 > 12."""
    budget = PrivacyBudget(12.0, 1e-6)
    budget.spend(GaussianEvent(1000.0), delta=5e-7)
    accepted = 0
    with pytest.raises(BudgetExceededError):
        for _ in range(40):
            _counts(budget, 1, 0.5)
            accepted += 1
    exact = _randomised_responses_epsilon(accepted, 0.5, 1e-6)
    assert exact <= 12.0 and accepted >= 23
    assert _randomised_responses_epsilon(accepted + 3, 0.5, 1e-6) > 12.0


def test_counts_and_a_dpsgd_fit_report_at_least_dp_accounting():
    delta = 1e-5
    budget = PrivacyBudget(100.0, delta)
    _counts(budget, 10, 0.5)
    sgd = PoissonSubsampledGaussianEvent(0.01, 1.1, 1000)
    budget.spend(sgd, delta=delta)
    events = [e.event for e in budget.ledger]
    reference = dp_accounting_epsilon(events, "replace_one", delta)
    assert budget.report("declared").epsilon >= reference * (1 - 1e-3)
    assert budget.report("adaptive").epsilon >= reference


def test_the_renyi_filter_is_its_formula_at_the_fixed_orders():
    delta = 1e-6
    budget = PrivacyBudget(100.0, delta, composition="renyi")
    events = [GaussianEvent(5.0), LaplaceEvent(0.3), GaussianEvent(8.0)]
    for event in events:
        budget.spend(event)
    a = filter_orders()
    assert len(a) == 16 and a[0] == 1.25 and a[-1] == 1024
    curve = sum(RDPAccountant(a).rdp_curve(e) for e in events)
    # Canonne, Kamath & Steinke (2020), Proposition 12, at delta / 16.
    per_order = curve + (
        np.log(16 / delta) + (a - 1) * np.log(1 - 1 / a) - np.log(a)
    ) / (a - 1)
    assert budget.spent() == (pytest.approx(per_order.min(), rel=1e-12), delta)
    assert budget.report().method == "renyi filter"


def test_the_renyi_filter_adds_pure_spends_exactly_at_delta_zero():
    budget = PrivacyBudget(1.0, 1e-6, composition="renyi")
    for eps in (0.25, 0.25, 0.5):
        budget.spend(LaplaceEvent(eps))
    assert budget.spent() == (1.0, 0.0)
    with pytest.raises(BudgetExceededError):
        budget.spend(LaplaceEvent(0.01))


def test_the_renyi_filter_beats_basic_composition_on_many_small_spends():
    basic = PrivacyBudget(1e3, 1e-6)
    renyi = PrivacyBudget(1e3, 1e-6, composition="renyi")
    for budget in (basic, renyi):
        budget.spend(GaussianEvent(1000.0), delta=5e-7)
        _counts(budget, 100, 0.1)
    assert renyi.spent()[0] < 0.65 * basic.spent()[0]


def test_the_renyi_filter_refuses_what_it_cannot_compose():
    budget = PrivacyBudget(10.0, 1e-5, composition="renyi")
    with pytest.raises(TypeError, match="Renyi filter"):
        budget.spend(ApproxDPEvent(1.0, 1e-6))
    assert budget.ledger == []


def test_a_ledger_keeps_the_rule_of_its_first_spend(tmp_path):
    path = tmp_path / "ledger.db"
    PrivacyBudget(5.0, 1e-5, composition="renyi", ledger=path).spend(GaussianEvent(4.0))
    other = PrivacyBudget(5.0, 1e-5, ledger=path)
    with pytest.raises(LedgerError, match="composition='renyi'"):
        other.spend(LaplaceEvent(0.1))
    with pytest.raises(LedgerError):
        other.spent()
    reopened = PrivacyBudget.from_ledger(path)
    assert reopened.composition == "renyi"
    reopened.spend(LaplaceEvent(0.1))
    assert len(reopened.ledger) == 2


def test_entries_record_what_was_charged():
    budget = PrivacyBudget(10.0, 1e-5)
    sgd = PoissonSubsampledGaussianEvent(0.02, 1.0, 300)
    entry = budget.spend(sgd, label="sgd", delta=4e-6)
    assert isinstance(entry.record, CertifiedEvent)
    assert entry.event == sgd.with_label("sgd")
    own = PrivacyAccountant().compose([sgd], 4e-6).epsilon
    assert entry.certificate == (own, 4e-6)
    pure = budget.spend(LaplaceEvent(0.3))
    assert pure.certificate == (0.3, 0.0)
    assert budget.spent() == (pytest.approx(own + 0.3, rel=1e-12), 4e-6)


def test_a_declared_plan_is_charged_once_and_tightly():
    budget = PrivacyBudget(5.0, 1e-5)
    fits = [GaussianEvent(4.0)] * 10 + [LaplaceEvent(0.2)]
    plan = budget.declare(fits, delta=1e-5)
    tight = PrivacyAccountant().compose(fits, 1e-5).epsilon
    assert plan.certificate == (tight, 1e-5)
    # 10 Gaussians of multiplier 4 are one of multiplier 4 / sqrt(10): far
    # below the basic filter's 10 spends at a tenth of delta each.
    one = PrivacyAccountant().compose([GaussianEvent(4.0)], 1e-6).epsilon
    assert tight < 0.5 * (10 * one + 0.2)
    spent = budget.spent()
    for event in fits:
        entry = budget.spend(event.with_label("fit"))
        assert entry.record.kind == "planned" and entry.record.plan == 0
        assert entry.certificate == (0.0, 0.0)
    assert budget.spent() == spent == (tight, 1e-5)
    assert budget.report("declared").epsilon == pytest.approx(tight, rel=1e-12)
    # The plan's slots are used up: one more of its events costs its own.
    with pytest.raises(BudgetExceededError):
        budget.spend(GaussianEvent(4.0))
    extra = budget.spend(LaplaceEvent(0.1))
    assert extra.record.kind == "certified"


def test_a_plan_that_does_not_fit_is_refused_and_records_nothing():
    budget = PrivacyBudget(1.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        budget.declare([GaussianEvent(1.0)] * 10, delta=1e-5)
    assert budget.ledger == []


def test_basic_composition_is_what_a_single_fit_costs():
    """A lone fit on a budget of its size fits exactly (no filter cost)."""
    from skdp.linear_model import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = sphere_rows(rng, 400, 3)
    y = (X[:, 0] > 0).astype(int)
    budget = PrivacyBudget(1.0, 1e-5)
    model = DPLogisticRegression(
        method="gradient",
        epsilon=1.0,
        delta=1e-5,
        data_norm=1.0,
        classes=[0, 1],
        budget=budget,
        random_state=0,
    ).fit(X, y)
    assert model.epsilon_ <= 1.0
    assert budget.spent() == (model.epsilon_, 1e-5)
    assert budget.ledger[0].certificate == (model.epsilon_, 1e-5)
    # Under the Renyi filter the same fit costs more than its own epsilon.
    renyi = PrivacyBudget(1.5, 1e-5, composition="renyi")
    model.set_params(budget=renyi).fit(X, y)
    assert renyi.spent()[0] > 1.05
    assert math.isfinite(renyi.spent()[0])
