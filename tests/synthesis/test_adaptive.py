"""PMWSynthesizer's adaptive schedule: budget filter, scores, annealing."""

import math

import numpy as np
import pytest
from _data import marginal_counts

from skdp import PMWSynthesizer, PrivacyBudget
from skdp.accounting import (
    DiscreteGaussianEvent,
    ExponentialMechanismEvent,
    PrivacyAccountant,
    PureDPEvent,
    RDPAccountant,
    ZCDPEvent,
)
from skdp.synthesis import _loop
from skdp.synthesis._counting import code_marginals
from skdp.synthesis._loop import _measure, run_mwem, workload_weights
from skdp.synthesis._plan import (
    RoundSettings,
    _expected_abs_noise,
    plan_measurement,
    plan_privacy,
)
from skdp.synthesis._schedule import RoundSchedule
from skdp.utils import check_random_source


def _zcdp(event):
    """zCDP rho of one run event (bounded range for the selection)."""
    if isinstance(event, DiscreteGaussianEvent):
        return 0.5 / event.noise_multiplier**2
    assert isinstance(event, ExponentialMechanismEvent)
    return event.epsilon**2 / 8.0


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x0 = rng.integers(0, 4, n)
    x1 = (x0 + rng.integers(0, 2, n)) % 4
    x2 = rng.integers(0, 3, n)
    x3 = (x2 + (x0 > 1)) % 3
    return np.column_stack([x0, x1, x2, x3])


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_charged_budget_bounds_every_run(epsilon):
    """The charged zCDP event spends epsilon; the rounds run stay within it.

    The fit charges ZCDPEvent(rho). The rounds actually run (selections and
    measurements with adaptively chosen parameters) are, by the zCDP filter,
    sum(rho_t)-zCDP with sum(rho_t) <= rho; their composition computed
    afterwards by the accountant is therefore at most the charged epsilon.
    """
    accountant = PrivacyAccountant()
    plan = plan_privacy(epsilon, 1e-9, "gaussian", 4, 24, accountant, "adaptive")
    # (xi, rho)-zCDP: xi covers the lattice shift 2 sqrt(d) K / sigma**2 of
    # every discrete Gaussian measurement (4 + 24 at most, d = 1 cell here),
    # none more precise than one spending all of rho (s = 1 / sqrt(2 * 0.9 *
    # rho)), for either sensitivity (1 for a query, sqrt(2) for a marginal),
    # on the grid gamma = 2**(floor(log2(s * sensitivity)) - 32); K =
    # sensitivity / gamma + 1 steps, sigma = s K. Written out here.
    s_min = 1.0 / math.sqrt(2.0 * 0.9 * plan.total)
    shifts = []
    for sensitivity in (1.0, math.sqrt(2.0)):
        gamma = 2.0 ** (math.floor(math.log2(s_min * sensitivity)) - 32)
        k = sensitivity / gamma + 1.0
        shifts.append(2.0 * k / (s_min * k) ** 2)
    (charged_event,) = plan.events
    assert type(charged_event) is ZCDPEvent and charged_event.rho == plan.total
    assert charged_event.xi == pytest.approx(28 * max(shifts), rel=1e-12)
    assert charged_event.xi <= 28 * 2.0 / (s_min * 2.0**32)  # the general bound
    charged, _ = accountant.epsilon_delta(plan.events, 1e-9)
    assert 0.999 * epsilon <= charged <= epsilon
    codes = _data()
    candidates = [(0,), (1,), (2,), (3,), (0, 1), (2, 3), (0, 2), (1, 3), (0, 1, 3)]
    for seed in range(3):
        record = []
        run_mwem(
            code_marginals(codes, (4, 4, 3, 3)),
            (4, 4, 3, 3),
            plan,
            check_random_source(seed),
            candidates=candidates,
            round_iter=5,
            final_iter=5,
            weights=workload_weights([(0, 1, 3), (2, 3)], candidates),
            record=record,
        )
        spent = math.fsum(_zcdp(e) for e in record)
        assert spent <= plan.total
        # The last round spends the remainder: nothing is left unused.
        assert spent == pytest.approx(plan.total, rel=1e-6)
        composed, _ = RDPAccountant().epsilon_delta(record, 1e-9)
        assert composed <= charged * (1 + 1e-9)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_the_stopping_rule_never_overspends(noise):
    """Random annealing decisions: spend <= total, all of it, <= n_rounds."""
    delta = 1e-9 if noise == "gaussian" else 0.0
    rng = np.random.default_rng(0)
    for trial in range(300):
        n_rounds = int(rng.integers(1, 60))
        n_init = int(rng.integers(0, 10))
        epsilon = float(rng.choice([0.1, 1.0, 10.0]))
        plan = plan_privacy(
            epsilon, delta, noise, n_init, n_rounds, RDPAccountant(), "adaptive"
        )
        schedule = RoundSchedule(plan)
        spent = n_init * plan.first_round.measure_cost
        costs = []
        p_anneal = rng.uniform()
        while not schedule.done:
            settings, _ = schedule.next_round()
            costs.append(settings.cost)
            spent += settings.cost
            assert spent <= plan.total, trial
            schedule.end_round(anneal=bool(rng.uniform() < p_anneal))
        assert len(costs) <= n_rounds
        assert spent == pytest.approx(plan.total, rel=1e-6)
        # Budgets only grow (annealing) until the last round's remainder.
        assert all(b >= a * (1 - 1e-12) for a, b in zip(costs[:-2], costs[1:-1]))


def test_without_annealing_the_budget_matches_the_fixed_split():
    fixed = plan_privacy(1.0, 1e-9, "gaussian", 5, 10, PrivacyAccountant())
    adaptive = plan_privacy(
        1.0, 1e-9, "gaussian", 5, 10, PrivacyAccountant(), "adaptive"
    )
    assert adaptive.first_round.cost == pytest.approx(fixed.first_round.cost, rel=1e-5)
    assert adaptive.noise_multiplier == pytest.approx(fixed.noise_multiplier, rel=1e-5)


def test_laplace_adaptive_is_a_pure_dp_budget():
    plan = plan_privacy(2.0, 0.0, "laplace", 3, 12, RDPAccountant(), "adaptive")
    assert plan.total == 2.0
    assert RDPAccountant().epsilon_delta(plan.events, 0.0) == (2.0, 0.0)
    record = []
    run_mwem(
        code_marginals(_data(), (4, 4, 3, 3)),
        (4, 4, 3, 3),
        plan,
        check_random_source(0),
        candidates=[(0,), (1,), (2,), (3,), (0, 1), (2, 3)],
        round_iter=5,
        final_iter=5,
        record=record,
    )
    # The measured table is chosen privately, so a measurement charges the
    # discrete Laplace's pure epsilon (covering every candidate's grid).
    assert {type(e) for e in record} == {PureDPEvent, ExponentialMechanismEvent}
    assert math.fsum(e.epsilon for e in record) <= 2.0


def test_weighted_score_sensitivity_under_replace_one():
    """|score(D) - score(D')| <= w_C * 2/n, brute force over neighbours."""
    rng = np.random.default_rng(1)
    sizes, n = (3, 4, 2), 60
    codes = rng.integers(0, sizes, size=(n, 3))
    candidates = [(0,), (1,), (0, 1), (1, 2), (0, 1, 2)]
    weights = workload_weights([(0, 1, 2), (0, 1)], candidates)
    assert weights == {(0,): 2.0, (1,): 2.0, (0, 1): 4.0, (1, 2): 3.0, (0, 1, 2): 5.0}
    models = {
        c: rng.dirichlet(np.ones(math.prod(sizes[a] for a in c))) for c in candidates
    }
    penalty = 0.3  # public, cancels in the difference
    for _ in range(200):
        other = codes.copy()
        other[rng.integers(n)] = rng.integers(0, sizes)
        for c in candidates:
            score = [
                weights[c]
                * (
                    np.abs(marginal_counts(x, c, sizes).ravel() / n - models[c]).sum()
                    - penalty
                )
                for x in (codes, other)
            ]
            assert abs(score[0] - score[1]) <= weights[c] * 2 / n + 1e-12


def test_selection_uses_the_largest_weight_as_sensitivity(monkeypatch):
    calls = []
    real = _loop.exponential_mechanism

    def spy(scores, sensitivity, epsilon, **kwargs):
        calls.append((sensitivity, epsilon))
        return real(scores, sensitivity, epsilon, **kwargs)

    monkeypatch.setattr(_loop, "exponential_mechanism", spy)
    plan = plan_privacy(1.0, 1e-9, "gaussian", 4, 6, RDPAccountant(), "adaptive")
    candidates = [(0,), (1,), (2,), (3,), (0, 1), (2, 3), (0, 1, 3)]
    weights = workload_weights([(0, 1, 3), (2, 3)], candidates)
    record = []
    run_mwem(
        code_marginals(_data(), (4, 4, 3, 3)),
        (4, 4, 3, 3),
        plan,
        check_random_source(0),
        candidates=candidates,
        round_iter=5,
        final_iter=5,
        weights=weights,
        record=record,
    )
    selections = [e for e in record if isinstance(e, ExponentialMechanismEvent)]
    # Written out: the largest weight among the candidates offered, times
    # 2/n: 4 for (0, 1, 3) (= 3 + 1); 3 for (2, 3) (= 1 + 2), the largest
    # while the 48-cell (0, 1, 3) is left out because its expected noise
    # exceeds 2.
    assert weights[(0, 1, 3)] == 4.0 and weights[(2, 3)] == 3.0
    assert set(s for s, _ in calls) <= {3.0 * 2 / 400, 4.0 * 2 / 400}
    assert len(calls) == len(selections)
    assert [e for _, e in calls] == [e.epsilon for e in selections]


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_score_penalty_is_the_expected_absolute_noise(noise):
    """The public penalty E|noise| per cell matches the measured noise.

    Mean absolute value of 20,000 noise draws: relative standard error below
    1/sqrt(20000) * sd(|Z|)/E|Z| (<= 1.0 for both laws) = 0.7%; 5 sd.
    """
    settings = RoundSettings.from_unit(noise, 0.01)
    n, cells = 1000, 20_000
    truth = np.full(cells, 7.0)
    noise_plan = plan_measurement(settings, cells)
    noisy, _ = _measure(truth, noise_plan, settings, check_random_source(3), n)
    mean_abs = float(np.mean(np.abs(noisy * n - truth)))
    expected = _expected_abs_noise(settings)
    assert mean_abs == pytest.approx(expected, rel=5 / math.sqrt(cells))


def test_round_settings_spend_their_unit():
    for noise in ("gaussian", "laplace"):
        for unit in (1e-6, 0.01, 3.0):
            settings = RoundSettings.from_unit(noise, unit)
            assert settings.cost == pytest.approx(unit, rel=1e-12)
    gauss = RoundSettings.from_unit("gaussian", 0.01)
    assert gauss.measure_cost == pytest.approx(0.009)  # 90% measures (AIM)
    assert gauss.select_epsilon == pytest.approx(math.sqrt(8 * 0.001))


def test_fit_charges_the_zcdp_budget_once_and_is_reproducible():
    X = _data()
    budget = PrivacyBudget(3.0, 1e-6)
    params = dict(categories=[[0, 1, 2, 3]] * 2 + [[0, 1, 2]] * 2, random_state=7)
    synth = PMWSynthesizer(budget=budget, **params).fit(X)
    assert len(budget.ledger) == 1
    assert [type(e) for e in synth.privacy_event_.leaves()] == [ZCDPEvent]
    assert 0.999 <= synth.epsilon_ <= 1.0
    again = PMWSynthesizer(**params).fit(X)
    assert again.selected_ == synth.selected_
    np.testing.assert_array_equal(again.marginal([0, 1]), synth.marginal([0, 1]))
    assert len(synth.selected_) <= max(32, 16 * 4)


def test_bad_schedule_is_refused_before_the_charge():
    budget = PrivacyBudget(3.0, 1e-6)
    with pytest.raises(ValueError, match="schedule"):
        PMWSynthesizer(schedule="annealed", budget=budget).fit(_data())
    assert budget.ledger == []


def test_adaptive_is_accurate_at_large_epsilon():
    X = _data(n=2000)
    synth = PMWSynthesizer(
        epsilon=50.0,
        categories=[[0, 1, 2, 3]] * 2 + [[0, 1, 2]] * 2,
        workload=[(0, 1), (2, 3), (0, 3)],
        random_state=0,
    ).fit(X)
    for c in [(0, 1), (2, 3), (0, 3)]:
        truth = marginal_counts(X, c, (4, 4, 3, 3)) / len(X)
        # Measured almost exactly: L1 error well below that of independence.
        assert np.abs(synth.marginal(list(c)) - truth).sum() < 0.03


def test_an_accountant_without_zcdp_is_refused_before_the_charge():
    """A PLD-only budget cannot account the zCDP budget: refused, nothing spent."""
    from skdp.accounting import PLDAccountant

    budget = PrivacyBudget(3.0, 1e-6, accountant=PLDAccountant())
    X = _data()
    categories = [[0, 1, 2, 3]] * 2 + [[0, 1, 2]] * 2
    with pytest.raises(ValueError, match="schedule='fixed'"):
        PMWSynthesizer(budget=budget, categories=categories).fit(X)
    assert budget.ledger == []
    PMWSynthesizer(
        budget=budget, categories=categories, schedule="fixed", random_state=0
    ).fit(X)
    assert len(budget.ledger) == 1
