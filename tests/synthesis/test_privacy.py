"""PMWSynthesizer spends what it says, once, with correctly calibrated noise."""

import math

import numpy as np
import pytest
from _data import marginal_counts

from skdp import BudgetExceededError, PMWSynthesizer, PrivacyBudget
from skdp.accounting import (
    ComposedEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    PureDPEvent,
    RDPAccountant,
)
from skdp.synthesis import _loop
from skdp.synthesis._loop import _measure
from skdp.synthesis._plan import plan_measurement, plan_privacy
from skdp.utils import check_random_source


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("n_rounds", [1, 16])
def test_gaussian_plan_spends_the_budget_and_no_more(epsilon, n_rounds):
    plan = plan_privacy(epsilon, 1e-9, "gaussian", 8, n_rounds, RDPAccountant())
    spent, _ = RDPAccountant().epsilon_delta(plan.events, 1e-9)
    assert 0.999 * epsilon <= spent <= epsilon
    kinds = [type(e) for e in plan.events]
    assert kinds.count(DiscreteGaussianEvent) == 8 + n_rounds
    assert kinds.count(ExponentialMechanismEvent) == n_rounds


def test_laplace_plan_is_pure_and_adds_up():
    plan = plan_privacy(1.0, 0.0, "laplace", 3, 10, RDPAccountant())
    assert RDPAccountant().epsilon_delta(plan.events, 0.0) == pytest.approx((1.0, 0))
    assert all(
        isinstance(e, PureDPEvent | ExponentialMechanismEvent) for e in plan.events
    )
    assert plan.select_epsilon == pytest.approx(plan.measure_epsilon)


def test_marginal_and_query_sensitivities_under_replace_one():
    # Brute force over random neighbours: replacing one row moves a marginal
    # table by <= 2/n in L1 and sqrt(2)/n in L2, a [0,1] query by <= 1/n,
    # and hence the selection score |error|_1 by <= 2/n.
    rng = np.random.default_rng(0)
    sizes, n = (3, 4, 2), 50
    codes = rng.integers(0, sizes, size=(n, 3))
    query = rng.uniform(size=math.prod(sizes))
    model_marginal = rng.dirichlet(np.ones(12)).reshape(3, 4)
    for _ in range(200):
        other = codes.copy()
        other[rng.integers(n)] = rng.integers(0, sizes)
        for clique in [(0,), (0, 1), (0, 1, 2)]:
            diff = (
                marginal_counts(codes, clique, sizes)
                - marginal_counts(other, clique, sizes)
            ) / n
            assert np.abs(diff).sum() <= 2 / n + 1e-12
            assert np.sqrt((diff**2).sum()) <= math.sqrt(2) / n + 1e-12
        hist = [
            np.bincount(np.ravel_multi_index(c.T, sizes), minlength=24) / n
            for c in (codes, other)
        ]
        assert abs(query @ (hist[0] - hist[1])) <= 1 / n + 1e-12
        scores = [
            np.abs(marginal_counts(c, (0, 1), sizes) / n - model_marginal).sum()
            for c in (codes, other)
        ]
        assert abs(scores[0] - scores[1]) <= 2 / n + 1e-12


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_measurement_noise_has_the_planned_scale(noise):
    plan = plan_privacy(1.0, 1e-6, noise, 4, 5, RDPAccountant())
    n, cells = 1000, 20_000
    truth = np.full(cells, 5.0)
    noise_plan = plan_measurement(plan, cells)
    noisy, sigma = _measure(truth, noise_plan, plan, check_random_source(0), n)
    if noise == "gaussian":
        expected = plan.noise_multiplier * math.sqrt(2) / n
        # Relative sd of a sample sd from N draws: 1/sqrt(2N) = 0.5%; 5 sd.
        tolerance = 5 / math.sqrt(2 * cells)
    else:
        expected = math.sqrt(2) * 2 / (plan.measure_epsilon * n)
        # Laplace kurtosis 6: relative sd of the sample sd sqrt(5/N)/2 = 0.8%.
        tolerance = 5 * math.sqrt(5 / cells) / 2
    assert sigma == pytest.approx(expected)
    assert np.std(noisy - truth / n) == pytest.approx(expected, rel=tolerance)


def test_mechanisms_get_the_planned_epsilon_and_sensitivity(monkeypatch):
    calls = {"select": [], "measure": []}
    real_select, real_measure = _loop.exponential_mechanism, _loop.add_noise

    def select(scores, sensitivity, epsilon, **kwargs):
        calls["select"].append((sensitivity, epsilon))
        return real_select(scores, sensitivity, epsilon, **kwargs)

    def measure(noise_plan, value, source):
        calls["measure"].append((noise_plan.sensitivity, noise_plan.event))
        return real_measure(noise_plan, value, source)

    monkeypatch.setattr(_loop, "exponential_mechanism", select)
    monkeypatch.setattr(_loop, "add_noise", measure)
    X = np.random.default_rng(0).integers(0, 3, size=(200, 3))
    # The fixed schedule: every round at the same planned settings (the
    # adaptive one is tested in test_adaptive.py).
    synth = PMWSynthesizer(
        n_rounds=4, schedule="fixed", categories=[[0, 1, 2]] * 3, random_state=0
    )
    synth.fit(X)
    plan = synth.mwem_plan_
    # Replace-one: a marginal moves by 2/n in L1 (selection score), sqrt(2)
    # in L2 counts (measurement); written out, not read from the code.
    assert calls["select"] == [(2 / 200, plan.select_epsilon)] * 4
    measured = [(k, type(e), e.noise_multiplier) for k, e in calls["measure"]]
    expected = (math.sqrt(2), DiscreteGaussianEvent, plan.noise_multiplier)
    assert measured == [expected] * (3 + 4)
    assert synth.privacy_event_.events == plan.events

    calls["select"].clear()
    calls["measure"].clear()
    queries = np.random.default_rng(1).uniform(size=(10, 27))
    synth.set_params(workload=queries).fit(X)
    plan = synth.mwem_plan_
    assert calls["select"] == [(1 / 200, plan.select_epsilon)] * 4
    measured = [(k, type(e), e.noise_multiplier) for k, e in calls["measure"]]
    assert measured == [(1.0, DiscreteGaussianEvent, plan.noise_multiplier)] * 4

    calls["measure"].clear()
    synth.set_params(workload=None, noise="laplace").fit(X)
    plan = synth.mwem_plan_
    # Laplace: L1 sensitivity 2 (counts) for a marginal, never 1.
    # The measurement that runs is the discrete Laplace of its table's grid;
    # the plan charges its pure epsilon.
    assert [k for k, _ in calls["measure"]] == [2.0] * (3 + 4)
    for _, event in calls["measure"]:
        assert isinstance(event, DiscreteLaplaceEvent)
        assert event.epsilon <= plan.measure_epsilon
        assert event.epsilon == pytest.approx(plan.measure_epsilon, rel=1e-8)


def test_laplace_measurement_noise_scale_is_two_over_epsilon():
    """The L1 sensitivity of a marginal under replace-one is 2 (not 1).

    The mean absolute noise of a Laplace measurement of scale b is b; with
    100,000 cells its standard error is b / sqrt(1e5), so 1 instead of 2
    (b halved) is 150 standard errors away.
    """
    plan = plan_privacy(1.0, 0.0, "laplace", 2, 3, RDPAccountant())
    cells, n = 100_000, 1000
    noisy, _ = _measure(
        np.zeros(cells), plan_measurement(plan, cells), plan, check_random_source(5), n
    )
    scale = 2.0 / plan.measure_epsilon
    assert np.mean(np.abs(noisy * n)) == pytest.approx(scale, rel=5 / math.sqrt(cells))


def test_one_charge_per_fit_and_refusal_leaves_no_model(monkeypatch):
    budget = PrivacyBudget(1.0, 1e-6)
    X = np.random.default_rng(0).integers(0, 2, size=(100, 3))
    synth = PMWSynthesizer(
        epsilon=0.9, delta=1e-7, categories=[[0, 1]] * 3, budget=budget, random_state=0
    ).fit(X)
    assert len(budget.ledger) == 1
    assert isinstance(budget.ledger[0].event, ComposedEvent)
    assert synth.epsilon_ <= 0.9 and synth.delta_ == 1e-7

    def no_data_access(*args, **kwargs):
        raise AssertionError("the data was used after a refused charge")

    monkeypatch.setattr("skdp.synthesis._pmw.run_mwem", no_data_access)
    with pytest.raises(BudgetExceededError):
        synth.fit(X)
    assert len(budget.ledger) == 1
    assert not hasattr(synth, "model_") and not hasattr(synth, "epsilon_")


@pytest.mark.parametrize(
    "params, match",
    [
        ({"workload": [(0, "nope")]}, "Unknown column"),
        ({"workload": [(0, 0)]}, "distinct columns"),
        ({"workload": np.ones((3, 7))}, "cells"),
        ({"workload": np.full((3, 8), 2.0)}, r"\[0, 1\]"),
        ({"delta": 0.0}, "delta > 0"),
    ],
)
def test_invalid_input_is_rejected_before_charging(params, match):
    budget = PrivacyBudget(1.0, 1e-6)
    X = np.random.default_rng(0).integers(0, 2, size=(30, 3))
    synth = PMWSynthesizer(categories=[[0, 1]] * 3, budget=budget, **params)
    with pytest.raises(ValueError, match=match):
        synth.fit(X)
    assert budget.ledger == []


def test_laplace_fit_spends_no_delta():
    X = np.random.default_rng(0).integers(0, 2, size=(50, 2))
    synth = PMWSynthesizer(
        noise="laplace",
        n_rounds=3,
        schedule="fixed",
        categories=[[0, 1]] * 2,
        random_state=0,
    ).fit(X)
    assert synth.epsilon_ == pytest.approx(1.0) and synth.delta_ == 0.0
    leaves = synth.privacy_event_.leaves()
    assert {type(e) for e in leaves} == {PureDPEvent, ExponentialMechanismEvent}
    # Adaptive: one pure-DP budget of the whole epsilon, no delta either.
    synth.set_params(schedule="adaptive").fit(X)
    assert synth.epsilon_ == pytest.approx(1.0) and synth.delta_ == 0.0
    assert [type(e) for e in synth.privacy_event_.leaves()] == [PureDPEvent]


def test_selection_never_offers_marginals_beyond_the_model_size():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, size=(300, 5))
    cap = 400
    synth = PMWSynthesizer(
        n_rounds=6, categories=[list(range(10))] * 5, max_model_size=cap, random_state=0
    ).fit(X)
    assert synth.model_.size <= cap
    assert all(len(c) <= 2 for c in synth.selected_)
