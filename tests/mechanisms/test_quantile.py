"""The private quantile mechanism: exact EM law, recursion, clipping, errors."""

import math

import numpy as np
import pytest

from skdp.accounting import (
    ExponentialMechanismEvent,
    PrivacyAccountant,
    SelfComposedEvent,
)
from skdp.mechanisms import (
    QuantilePlan,
    plan_quantiles,
    quantile_mechanism,
    run_quantiles,
)
from skdp.mechanisms._quantile import (
    LOG_LENGTH_ERROR,
    _interval_exponents,
    _steps,
    _tree,
)
from skdp.utils import check_random_source

# Chi-square thresholds at p = 1e-4 (fixed seeds: a pass cannot turn into a
# failure by chance, and a real miscalibration of a few percent in any cell
# moves the statistic far beyond these with the sample sizes below).
CHI2_P1E4 = {4: 23.51, 5: 25.74, 9: 33.72}


def _chi2(counts, probabilities):
    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() * np.asarray(probabilities)
    return float(((counts - expected) ** 2 / expected).sum())


def _exact_em(points, lower, upper, target, epsilon):
    """Interval edges and the exact EM probabilities, by direct formula."""
    edges = np.concatenate(([lower], np.sort(points), [upper]))
    lengths = np.diff(edges)
    weights = lengths * np.exp(-epsilon * np.abs(np.arange(lengths.size) - target) / 2)
    return edges, weights / weights.sum()


@pytest.mark.parametrize(
    "m, selections", [(1, 1), (2, 2), (3, 3), (4, 4), (9, 7), (19, 9), (99, 13)]
)
def test_tree_levels_and_selections(m, selections):
    levels = _tree(m)
    assert len(levels) == math.ceil(math.log2(m + 1))
    released = sorted(split for level in levels for _, split, _ in level)
    assert released == list(range(m))  # every quantile exactly once
    assert sum(min(2, len(level)) for level in levels) == selections
    assert plan_quantiles((0, 1), np.linspace(0.05, 0.95, m), 1.0, 10).selections == (
        selections
    )


@pytest.mark.parametrize("epsilon", [1e-6, 0.01, 0.3, 1.0, 7.0, 1e4, 1e12])
def test_calibration_leaves_room_for_rounding(epsilon):
    utility_steps, steps = _steps(epsilon)
    spent = 2 * utility_steps / steps + 2 / steps + 4 * LOG_LENGTH_ERROR
    assert spent <= epsilon
    assert spent >= epsilon * (1 - 1e-4)  # and wastes almost nothing


def test_exponents_match_the_exact_probabilities():
    # The integer exponents reproduce len * exp(-eps |i - t| / 2) to the
    # rounding the calibration pays for (relative 1e-5 here).
    rng = np.random.default_rng(3)
    points = np.sort(rng.uniform(0, 10, size=40))
    epsilon, target = 0.8, 13.3
    utility_steps, steps = _steps(epsilon)
    starts, lengths, exponents = _interval_exponents(
        points, 0.0, 10.0, target, utility_steps, steps
    )
    weights = np.exp(-exponents.astype(float) / steps)
    _, exact = _exact_em(points, 0.0, 10.0, target, 2 * utility_steps / steps)
    np.testing.assert_allclose(weights / weights.sum(), exact, rtol=1e-5)
    assert exponents.min() == 0


def test_single_quantile_follows_the_exponential_mechanism():
    # Tiny data with a tie: the zero-length interval must never be chosen.
    # Each positive interval is split into halves to test the uniform draw
    # inside it too: 10 cells, 9 degrees of freedom.
    points = np.array([0.1, 0.15, 0.6, 0.6, 0.9])
    epsilon, q = 2.0, 0.5
    edges, probabilities = _exact_em(points, 0.0, 1.0, q * points.size, epsilon)
    keep = np.diff(edges) > 0
    cells = np.unique(np.concatenate([edges, (edges[:-1] + edges[1:]) / 2]))
    cell_probabilities = np.repeat(probabilities[keep] / 2, 2)
    plan = plan_quantiles((0.0, 1.0), q, epsilon, points.size)
    source = check_random_source(20240514)
    draws = np.array([run_quantiles(plan, points, source)[0] for _ in range(2500)])
    counts = np.histogram(draws, bins=cells)[0]
    assert counts.size == 10
    assert _chi2(counts, cell_probabilities) < CHI2_P1E4[9]


def test_recursive_root_runs_at_its_share_of_epsilon():
    # Quartiles: the median is released first, from all the data, at
    # epsilon / 3 (three selections).
    points = np.array([0.05, 0.2, 0.3, 0.45, 0.8])
    epsilon = 6.0
    plan = plan_quantiles((0.0, 1.0), [0.25, 0.5, 0.75], epsilon, points.size)
    assert plan.selections == 3
    edges, probabilities = _exact_em(points, 0.0, 1.0, 2.5, epsilon / 3)
    source = check_random_source(77)
    draws = np.array([run_quantiles(plan, points, source) for _ in range(2000)])
    assert np.all(np.diff(draws, axis=1) >= 0)
    counts = np.histogram(draws[:, 1], bins=edges)[0]
    assert _chi2(counts, probabilities) < CHI2_P1E4[5]


def test_child_uses_the_public_target_rank_on_its_slice():
    # Two quantiles: q1 = 0.2 is the root; q2 = 0.8 is drawn from the values
    # at or above the root's output v, on [v, 1], with the public target
    # rank (0.8 - 0.2) n = 3, at epsilon / 2. Count how often it lands in
    # the top interval [0.9, 1] against the exact conditional probability.
    points = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    plan = plan_quantiles((0.0, 1.0), [0.2, 0.8], 4.0, points.size)
    assert plan.levels == (((0, 0, 2),), ((1, 1, 2),))
    source = check_random_source(5)
    hits, expected, variance = 0, 0.0, 0.0
    for _ in range(1500):
        low, high = run_quantiles(plan, points, source)
        above = points[points >= low]
        _, probabilities = _exact_em(above, low, 1.0, 3.0, 2.0)
        p = probabilities[-1] if above.size == 3 else None
        if p is None:
            continue
        hits += high >= 0.9
        expected += p
        variance += p * (1 - p)
    assert variance > 50
    assert abs(hits - expected) <= 5 * math.sqrt(variance)  # 5 standard errors


def test_outputs_are_sorted_in_bounds_and_clipped():
    rng = np.random.default_rng(8)
    for seed in range(30):
        values = rng.normal(size=rng.integers(0, 50)) * 10
        quantiles = rng.uniform(size=rng.integers(1, 12))
        epsilon = float(rng.choice([0.01, 1.0, 100.0]))
        result, _ = quantile_mechanism(
            values, quantiles, (-2.0, 3.0), epsilon, random_state=seed
        )
        assert result.shape == (np.unique(quantiles).size,)
        assert np.all(np.diff(result) >= 0)
        assert np.all((result >= -2.0) & (result <= 3.0))
    # Values outside the bounds are clipped to them: the same draws as on
    # the clipped column.
    values = np.concatenate([np.full(30, -1e9), rng.uniform(0, 1, 100), [7.0] * 20])
    raw, _ = quantile_mechanism(
        values, [0.1, 0.5, 0.95], (0.0, 1.0), 5.0, random_state=3
    )
    clipped, _ = quantile_mechanism(
        np.clip(values, 0, 1), [0.1, 0.5, 0.95], (0.0, 1.0), 5.0, random_state=3
    )
    np.testing.assert_array_equal(raw, clipped)


def test_accuracy_at_large_epsilon_matches_numpy():
    rng = np.random.default_rng(9)
    values = rng.lognormal(size=2000)
    quantiles = np.linspace(0.1, 0.9, 9)
    result, _ = quantile_mechanism(values, quantiles, (0, 50), 100.0, random_state=1)
    ranks = np.searchsorted(np.sort(values), result) / values.size
    np.testing.assert_allclose(ranks, quantiles, atol=0.01)


def test_event_and_reproducibility():
    values = np.arange(100.0)
    a, event = quantile_mechanism(
        values, [0.1, 0.5, 0.9], (0, 100), 0.9, random_state=4
    )
    b, _ = quantile_mechanism(values, [0.9, 0.1, 0.5], (0, 100), 0.9, random_state=4)
    np.testing.assert_array_equal(a, b)
    assert event == SelfComposedEvent(ExponentialMechanismEvent(0.3), 3)
    assert PrivacyAccountant().epsilon_delta([event], 0.0)[0] == pytest.approx(0.9)
    _, single = quantile_mechanism(values, 0.5, (0, 100), 0.9, label="median")
    assert single == ExponentialMechanismEvent(0.9, label="median")


def test_degenerate_data_and_extreme_quantiles():
    # All values equal, quantiles 0 and 1, and no data at all.
    values = np.full(50, 0.25)
    result, _ = quantile_mechanism(
        values, [0.0, 0.5, 1.0], (0, 1), 50.0, random_state=2
    )
    # Quantile 0 favours [0, 0.25] and quantile 1 [0.25, 1]; every point
    # but 0.25 is 25 ranks from the median, so it is uniform on [0, 1].
    assert result[0] <= 0.25 <= result[2]
    empty, _ = quantile_mechanism(np.array([]), [0.5], (0, 1), 1.0, random_state=2)
    assert 0 <= empty[0] <= 1
    # NaN reaching the run (a caller bug) does not raise.
    plan = plan_quantiles((0, 1), [0.5], 1.0, 3)
    out = run_quantiles(plan, np.array([np.nan, 0.5, 2.0]), check_random_source(0))
    assert 0 <= out[0] <= 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bounds": (1, 0)}, "lower < upper"),
        ({"bounds": (0, np.inf)}, "finite"),
        ({"bounds": (-1e308, 1e308)}, "too far apart"),
        ({"bounds": (0, 1, 2)}, "pair"),
        ({"quantiles": [0.5, 1.5]}, r"\[0, 1\]"),
        ({"quantiles": [np.nan]}, r"\[0, 1\]"),
        ({"quantiles": []}, "at least one"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 1e-13}, "exceed"),
        ({"values": np.ones((3, 2))}, "one-dimensional"),
        ({"values": [0.0, np.nan]}, "finite"),
    ],
)
def test_errors_come_before_any_draw(kwargs, match):
    arguments = {
        "values": np.arange(5.0),
        "quantiles": [0.5],
        "bounds": (0.0, 10.0),
        "epsilon": 1.0,
    }
    arguments.update(kwargs)
    generator = np.random.default_rng(0)
    state = generator.bit_generator.state
    with pytest.raises(ValueError, match=match):
        quantile_mechanism(**arguments, random_state=generator)
    assert generator.bit_generator.state == state  # nothing drawn


def test_plan_is_frozen_and_checks_n_samples():
    plan = plan_quantiles((0, 1), 0.5, 1.0, 10)
    assert isinstance(plan, QuantilePlan)
    with pytest.raises(AttributeError):
        plan.epsilon = 2.0
    with pytest.raises(TypeError, match="integer"):
        plan_quantiles((0, 1), 0.5, 1.0, 10.0)
    with pytest.raises(ValueError, match=">= 0"):
        plan_quantiles((0, 1), 0.5, 1.0, -1)
