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
    "m, selections, independent",
    [
        (1, 1, True),
        (2, 2, True),
        (3, 3, True),
        (4, 4, True),
        (9, 7, True),
        (19, 9, True),
        (43, 11, True),
        (44, 11, False),
        (99, 13, False),
    ],
)
def test_tree_levels_and_selections(m, selections, independent):
    levels = _tree(m)
    assert len(levels) == math.ceil(math.log2(m + 1))
    released = sorted(split for level in levels for _, split, _ in level)
    assert released == list(range(m))  # every quantile exactly once
    assert sum(min(2, len(level)) for level in levels) == selections
    # The plan recurses only when that needs at most a quarter of the
    # selections; method= forces one way.
    plan = plan_quantiles((0, 1), np.linspace(0.05, 0.95, m), 1.0, 10)
    assert plan.independent is independent
    assert plan.selections == (m if independent else selections)
    assert plan.levels == (() if independent else levels)
    assert plan.epsilon_per_selection == 1.0 / plan.selections
    forced = plan_quantiles(
        (0, 1), np.linspace(0.05, 0.95, m), 1.0, 10, method="recursive"
    )
    assert forced.levels == levels and forced.selections == selections
    forced = plan_quantiles(
        (0, 1), np.linspace(0.05, 0.95, m), 1.0, 10, method="independent"
    )
    assert forced.independent and forced.selections == m


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


def _node_cdf(data, low, high, target, epsilon, y):
    """Exact CDF at ``y`` of one EM selection over ``data`` in ``[low, high]``."""
    edges, probabilities = _exact_em(data, low, high, target, epsilon)
    below = np.clip((y - edges[:-1]) / np.maximum(np.diff(edges), 1e-300), 0, 1)
    return float(np.sum(probabilities * np.where(np.diff(edges) > 0, below, 0)))


def _node_pits(points, quantiles, epsilon, nodes, target_of, runs, seed):
    """Probability integral transforms of the given recursion nodes.

    For each run and node ``(start, split, stop)``, the exact conditional
    CDF of the node's output given its parents' outputs, with the node's
    target computed by ``target_of(start, split, stop, slice size)``: uniform
    on [0, 1] exactly when the node follows the exponential mechanism with
    that target.
    """
    plan = plan_quantiles(
        (0.0, 1.0), quantiles, epsilon, points.size, method="recursive"
    )
    exact = 2 * plan.utility_steps / plan.steps_per_nat  # epsilon' of a selection
    m = len(quantiles)
    source = check_random_source(seed)
    pits = {node: [] for node in nodes}
    for _ in range(runs):
        out = run_quantiles(plan, points, source)
        for start, split, stop in nodes:
            low = out[start - 1] if start > 0 else 0.0
            high = out[stop] if stop < m else 1.0
            inside = points[(points >= low) & ((points < high) | (stop == m))]
            target = target_of(start, split, stop, inside.size)
            cdf = _node_cdf(inside, low, high, target, exact, out[split])
            pits[(start, split, stop)].append(cdf)
    return {node: np.array(values) for node, values in pits.items()}


# 15 quantiles, forced to recurse: 7 selections. Levels:
# root (0, 7, 15); (0, 3, 7) at the lower bound and (8, 11, 15) at the upper
# bound; then (4, 5, 7) and (8, 9, 11) in the interior.
FIFTEEN = [k / 16 for k in range(1, 16)]
NODES = [(0, 7, 15), (0, 3, 7), (8, 11, 15), (4, 5, 7), (8, 9, 11)]


def _kss_target(start, split, stop, size, n, quantiles=FIFTEEN):
    q = quantiles[split]
    if start == 0:
        return q * n
    if stop == len(quantiles):
        return size - (1 - q) * n
    low, high = quantiles[start - 1], quantiles[stop]
    return (q - low) / (high - low) * size


def test_recursion_nodes_follow_the_exponential_mechanism_with_their_targets():
    # Tied data (8 of 18 values at 0.4) so that the targets matter. Every
    # node's output, given its parents', has the exact EM law at
    # epsilon / 7 = 1 with its target (at the lower bound q n, at the upper
    # bound s - (1 - q) n, else (q - q_p) / (q_r - q_p) s): its conditional
    # CDF at the output is uniform. The exact law is computed at the
    # sampler's epsilon' = 2 S / D, a hair (< 2**-17 relative) below
    # epsilon / 7.
    from scipy.stats import kstest

    points = np.sort(np.concatenate([np.full(8, 0.4), np.linspace(0.05, 0.95, 10)]))
    n = points.size
    pits = _node_pits(
        points,
        FIFTEEN,
        7.0,
        NODES,
        lambda a, j, b, s: _kss_target(a, j, b, s, n),
        400,
        20240601,
    )
    for node, values in pits.items():
        assert kstest(values, "uniform").pvalue > 1e-4, node
    # The test can fail: with the old targets fixed in advance ((q - q_p) n
    # from the lower end) the nodes at the upper bound are far from uniform.
    fixed = _node_pits(
        points,
        FIFTEEN,
        7.0,
        [(8, 11, 15)],
        lambda a, j, b, s: (FIFTEEN[j] - FIFTEEN[a - 1]) * n,
        400,
        20240601,
    )
    assert kstest(fixed[(8, 11, 15)], "uniform").pvalue < 1e-4


def test_independent_draws_are_sorted_exponential_mechanisms():
    # Two quantiles are drawn independently from all the data at epsilon / 2
    # each and sorted: the smaller output is the minimum of two independent
    # EM draws, P(min <= y) = 1 - (1 - F_1(y)) (1 - F_2(y)).
    points = np.array([0.05, 0.2, 0.3, 0.45, 0.8])
    epsilon = 6.0
    plan = plan_quantiles((0.0, 1.0), [0.2, 0.8], epsilon, points.size)
    assert plan.independent and plan.selections == 2
    source = check_random_source(77)
    draws = np.array([run_quantiles(plan, points, source) for _ in range(2000)])
    assert np.all(np.diff(draws, axis=1) >= 0)
    edges = np.concatenate(([0.0], points, [1.0]))
    per = 2 * plan.utility_steps / plan.steps_per_nat  # epsilon' of a selection

    def min_cdf(y):
        f1 = _node_cdf(points, 0.0, 1.0, 1.0, per, y)
        f2 = _node_cdf(points, 0.0, 1.0, 4.0, per, y)
        return 1 - (1 - f1) * (1 - f2)

    cdf = np.array([min_cdf(y) for y in edges])
    counts = np.histogram(draws[:, 0], bins=edges)[0]
    assert _chi2(counts, np.diff(cdf)) < CHI2_P1E4[5]


def _tied_columns():
    # 90% zeros at the lower bound then values spread over (1, 100); and 45%
    # of the values at 40, in the middle of the range.
    rng = np.random.default_rng(11)
    zeros = np.concatenate([np.zeros(9000), rng.uniform(1, 100, 1000)])
    forty = np.concatenate([np.full(4500, 40.0), rng.uniform(0, 100, 5500).round(1)])
    return {"zeros": zeros, "forty": forty}


def _worst_rank_error(values, quantiles, method, seed):
    """Largest fraction of rows strictly between a released and the exact quantile."""
    data = np.sort(values)
    plan = plan_quantiles((0, 100), quantiles, 200.0, values.size, method=method)
    released = run_quantiles(plan, values, check_random_source(seed))
    exact = np.quantile(data, quantiles)
    low, high = np.minimum(released, exact), np.maximum(released, exact)
    between = np.searchsorted(data, high, "left") - np.searchsorted(data, low, "right")
    return np.max(np.maximum(between, 0)) / data.size


@pytest.mark.parametrize("m", [3, 9, 19, 43])
def test_tied_data_quantiles_are_accurate(m):
    # The default policy (independent sorted draws below 44 quantiles) at a
    # large epsilon: every released quantile is exact in rank on both tied
    # columns (targets fixed in advance in the recursion left 10% and 17%
    # of the rows between a released and the exact quantile, whatever
    # epsilon).
    quantiles = np.arange(1, m + 1) / (m + 1)
    for name, values in _tied_columns().items():
        for seed in range(3):
            assert _worst_rank_error(values, quantiles, "auto", seed) <= 0.002, name


def test_recursion_on_tied_data_is_bounded_by_the_atoms():
    # The recursion (the default from 44 quantiles) no longer drifts to a
    # bound on tied data: nodes at the bounds count from them exactly. Its
    # interior nodes can still be shifted by a parent released at the far
    # end of an atom (documented in quantile_mechanism): here at most 1.5%
    # and 5.4% of the rows with 99 quantiles, against 10% and 17% with
    # targets fixed in advance.
    quantiles = np.arange(1, 100) / 100
    columns = _tied_columns()
    for seed in range(2):
        assert _worst_rank_error(columns["zeros"], quantiles, "auto", seed) <= 0.02
        assert _worst_rank_error(columns["forty"], quantiles, "auto", seed) <= 0.06
    # The nodes at the bounds are exact: with 19 quantiles forced through
    # the recursion, the zeros column (whose atom is at the bound) is exact.
    quantiles = np.arange(1, 20) / 20
    assert _worst_rank_error(columns["zeros"], quantiles, "recursive", 0) <= 0.002


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
