"""Tests for skdp.datasets.make_lecture_example."""

import numpy as np
import pytest

from skdp.datasets import make_lecture_example

TRUE_DISTRIBUTION = [0.10, 0.05, 0.15, 0.10, 0.20, 0.08, 0.12, 0.20]


def test_shapes_and_dtypes():
    example = make_lecture_example()
    assert example.data.shape == (100, 3)
    assert example.universe.shape == (8, 3)
    assert example.queries.shape == (100, 8)
    assert example.true_distribution.shape == (8,)
    assert example.data.dtype == np.int64
    assert example.universe.dtype == np.int64
    assert example.queries.dtype == np.float64
    assert set(np.unique(example.data)) <= {0, 1}


def test_universe_in_binary_order():
    universe = make_lecture_example().universe
    expected = [[int(bit) for bit in format(k, "03b")] for k in range(8)]
    np.testing.assert_array_equal(universe, expected)


def test_true_distribution():
    distribution = make_lecture_example().true_distribution
    np.testing.assert_allclose(distribution, TRUE_DISTRIBUTION)
    assert distribution.sum() == pytest.approx(1.0)


def test_queries_in_unit_interval():
    queries = make_lecture_example().queries
    assert queries.min() >= 0.0
    assert queries.max() <= 1.0
    # 800 uniform draws: mean 1/2, standard error sqrt(1/12 / 800) ~ 0.0102;
    # allow 4 standard errors.
    assert queries.mean() == pytest.approx(0.5, abs=4 * np.sqrt(1 / 12 / 800))


@pytest.mark.parametrize("random_state", [0, 1, 2])
def test_empirical_distribution_close_to_true(random_state):
    example = make_lecture_example(random_state=random_state)
    cells = example.data @ np.array([4, 2, 1])
    n_samples = len(cells)
    empirical = np.bincount(cells, minlength=8) / n_samples
    true = example.true_distribution
    # Each cell frequency is Binomial(n, p) / n with standard deviation
    # sqrt(p (1 - p) / n), at most 0.04 here; allow 4 standard deviations
    # per cell (two-sided 6e-5 per cell, < 1e-3 over 8 cells and 3 seeds).
    tolerance = 4 * np.sqrt(true * (1 - true) / n_samples)
    assert np.all(np.abs(empirical - true) <= tolerance), (empirical, true)


def test_random_state_reproducible():
    first = make_lecture_example(random_state=3)
    second = make_lecture_example(random_state=3)
    other = make_lecture_example(random_state=4)
    np.testing.assert_array_equal(first.data, second.data)
    np.testing.assert_array_equal(first.queries, second.queries)
    assert not np.array_equal(first.queries, other.queries)


def test_accepts_random_state_instance():
    rng = np.random.RandomState(0)
    example = make_lecture_example(random_state=rng)
    assert example.data.shape == (100, 3)
