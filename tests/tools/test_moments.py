"""The sensitivity of the pooled variance, checked against brute force.

``skdp.tools.var(X, axis=None)`` over ``p`` columns releases the population
variance (``ddof=0``) of all ``N = n p`` clipped values. Under replace-one
neighbours a row changes ``p`` of them. The declared sensitivity must hold
for every pair of neighbouring data sets and, to show that the bound is not
loose, be attained by one of them.
"""

import itertools

import numpy as np
import pytest

from skdp.tools._moments import plan_moments

LOWER, UPPER = -1.0, 2.0  # width w = 3
WIDTH = UPPER - LOWER


def _declared(n, p, lower=LOWER, upper=UPPER):
    """The sensitivity the plan of ``var(X, axis=None)`` noises with."""
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (p,))
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (p,))
    plan = plan_moments(lower, upper, n, 1.0, mean=False, pooled=True)
    return float(plan.var.sensitivities[0])


def _pooled_var(rows):
    """The exact statistic the release noises: ``np.var`` (``ddof=0``) of
    all entries, over the last two axes (``rows[..., n, p]``)."""
    flat = rows.reshape(*rows.shape[:-2], -1)
    return flat.var(axis=-1)


@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_pooled_variance_sensitivity_holds_and_is_attained_on_a_grid(n, p):
    # Every data set of n rows with values on the grid, and every
    # replacement of its last row (the statistic is symmetric in the rows,
    # so the last row stands for any). The grid holds both bounds, where the
    # worst case sits (the statistic is convex in the replaced row).
    n_grid = 4 if n * p <= 8 else 3
    grid = np.linspace(LOWER, UPPER, n_grid)
    rows = np.array(list(itertools.product(grid, repeat=p)))  # (g**p, p)
    if n > 1:
        others = np.array(list(itertools.product(rows, repeat=n - 1)))
    else:
        others = np.empty((1, 0, p))
    data = np.concatenate(
        [
            np.broadcast_to(others[:, None], (len(others), len(rows), n - 1, p)),
            np.broadcast_to(rows[None, :, None, :], (len(others), len(rows), 1, p)),
        ],
        axis=2,
    )  # (contexts, replacements, n, p)
    values = _pooled_var(data)
    largest_change = float((values.max(axis=1) - values.min(axis=1)).max())
    declared = _declared(n, p)
    # Holds: never exceeded (beyond float64 rounding of a variance of
    # magnitude w**2, 1e-12 relative).
    assert largest_change <= declared * (1 + 1e-12)
    # Attained: the maximiser (all values at one bound, one row moved to the
    # other) lies on the grid, so brute force finds the bound itself.
    assert largest_change == pytest.approx(declared, rel=1e-9)


@pytest.mark.parametrize("p", [2, 3, 5])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
def test_pooled_variance_sensitivity_holds_for_random_neighbours(n, p):
    rng = np.random.default_rng(1000 * n + p)
    n_trials = 20_000

    def draw(shape):
        # Half the values at a bound (where the worst cases are), half inside.
        inside = rng.uniform(LOWER, UPPER, shape)
        at_bound = rng.choice([LOWER, UPPER], shape)
        return np.where(rng.random(shape) < 0.5, at_bound, inside)

    data = draw((n_trials, n, p))
    neighbour = data.copy()
    neighbour[:, -1, :] = draw((n_trials, p))
    change = np.abs(_pooled_var(data) - _pooled_var(neighbour))
    declared = _declared(n, p)
    assert change.max() <= declared * (1 + 1e-12)
    # Random draws rarely come near the worst case for larger n p (every
    # value at the same bound); the pair the Notes name attains it exactly.
    everything_low = np.full((n, p), LOWER)
    one_row_high = everything_low.copy()
    one_row_high[-1] = UPPER
    if n == 1:  # one row: half of its values move
        one_row_high[-1, p // 2 :] = LOWER
    attained = _pooled_var(one_row_high) - _pooled_var(everything_low)
    assert attained == pytest.approx(declared, rel=1e-12)


def test_per_column_bounds_stay_within_the_pooled_width():
    # Columns with their own bounds: the plan uses the widest range,
    # max(upper) - min(lower), which covers every column.
    lower, upper = np.array([0.0, -1.0, 0.5]), np.array([1.0, 1.0, 3.0])
    n, p = 4, 3
    rng = np.random.default_rng(7)
    n_trials = 20_000
    shape = (n_trials, n, p)
    data = np.where(
        rng.random(shape) < 0.5,
        np.where(rng.random(shape) < 0.5, lower, upper),
        rng.uniform(lower, upper, shape),
    )
    neighbour = data.copy()
    neighbour[:, -1, :] = np.where(rng.random((n_trials, p)) < 0.5, lower, upper)
    change = np.abs(_pooled_var(data) - _pooled_var(neighbour))
    declared = _declared(n, p, lower, upper)
    assert declared == pytest.approx((n - 1) * (3.0 - -1.0) ** 2 / n**2)
    assert change.max() <= declared


@pytest.mark.parametrize("p", [1, 2, 3, 10])
@pytest.mark.parametrize("n", [2, 3, 100])
def test_pooled_variance_sensitivity_is_that_of_one_column(n, p):
    # (n - 1) w**2 / n**2 whatever the number of columns (see the Notes of
    # _pooled_var_sensitivity), the same as a single column's variance.
    assert _declared(n, p) == pytest.approx((n - 1) * WIDTH**2 / n**2, rel=1e-12)
    plan = plan_moments([LOWER], [UPPER], n, 1.0, mean=False)
    assert _declared(n, p) == pytest.approx(plan.var.sensitivities[0], rel=1e-12)


@pytest.mark.parametrize("p, largest", [(1, 0.0), (2, 1 / 4), (3, 2 / 9), (4, 1 / 4)])
def test_one_row_pooled_variance_sensitivity_is_its_largest_value(p, largest):
    # With one row every value changes: the variance of p values in [L, U]
    # can go from 0 to floor(p / 2) ceil(p / 2) w**2 / p**2.
    assert _declared(1, p) == pytest.approx(largest * WIDTH**2, rel=1e-12)
