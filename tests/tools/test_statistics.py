"""skdp.tools mean, var, std, sum and count: calibration, budget, leaks."""

import warnings

import numpy as np
import pytest

from skdp import tools
from skdp.accounting import PrivacyBudget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.mechanisms._additive import add_noise, plan_laplace
from skdp.utils import check_random_source

RNG = np.random.default_rng(12345)
X1 = RNG.uniform(0.2, 0.8, size=400)  # 1-D, inside bounds (0, 1)
X2 = RNG.uniform(0.2, 0.8, size=(400, 3))
SEEDS = range(400)
BOUNDED = ["mean", "var", "std", "sum"]


def _mean_abs(errors):
    return float(np.mean(np.abs(errors)))


# -- (1) calibration ---------------------------------------------------------
@pytest.mark.parametrize(
    "name, exact, scale",
    [
        # Laplace scale: sensitivity / epsilon, epsilon = 1, n = 400, w = 1.
        ("mean", X1.mean(), 1 / 400),
        ("sum", X1.sum(), 1.0),
        ("var", X1.var(), 399 / 400**2),
    ],
)
def test_noise_matches_stated_laplace_scale(name, exact, scale):
    errors = [
        getattr(tools, name)(X1, epsilon=1.0, bounds=(0, 1), random_state=s) - exact
        for s in SEEDS
    ]
    # |Laplace(b)| has mean b and standard deviation b: over 400 seeds the
    # mean absolute error is b +- b / 20; 5 standard errors is 0.25 b. The
    # clip to the feasible set never binds (the values are >= 30 b inside).
    assert abs(_mean_abs(errors) - scale) < 0.25 * scale


def test_axis0_splits_epsilon_over_columns():
    errors = np.array(
        [
            tools.mean(X2, axis=0, epsilon=1.0, bounds=(0, 1), random_state=s)
            - X2.mean(axis=0)
            for s in SEEDS
        ]
    )
    scale = 3 / 400  # three columns share epsilon: L1 sensitivity 3 / n
    # Each column's mean absolute error is b +- b / 20 (400 seeds); 5 SE.
    assert np.all(np.abs(np.abs(errors).mean(axis=0) - scale) < 0.25 * scale)


@pytest.mark.parametrize("name", ["var", "std"])
def test_pooled_variance_noise_matches_its_sensitivity(name):
    # axis=None over 3 columns: the variance of all 1200 entries, Laplace
    # scale (n - 1) w**2 / n**2 / epsilon = 399 / 400**2 (n = 400 rows, w = 1;
    # tests/tools/test_moments.py checks the sensitivity). std is its square
    # root, so its noise is compared on the squared release.
    exact = X2.var()
    released = np.array(
        [
            getattr(tools, name)(X2, epsilon=1.0, bounds=(0, 1), random_state=s)
            for s in range(1600)
        ]
    )
    errors = (released**2 if name == "std" else released) - exact
    scale = 399 / 400**2
    # Over 1600 seeds the mean absolute error is b +- b / 40; 5 standard
    # errors is 0.125 b, half the gap to the former scale (1.25 b). The
    # clip to [0, 1/4] never binds: the variance (0.03) is 12 b inside.
    assert abs(_mean_abs(errors) - scale) < 0.125 * scale


def test_count_noise_is_geometric():
    x = np.arange(400) % 2 == 0  # 200 non-zero, far from 0 and 400
    errors = [tools.count(x, epsilon=0.5, random_state=s) - 200 for s in SEEDS]
    assert all(isinstance(c, int) for c in errors)
    p = np.exp(-0.5)
    expected = 2 * p / (1 - p**2)  # E|Z| of the two-sided geometric
    # sd(|Z|) <= sqrt(E Z**2) = sqrt(2 p) / (1 - p) = 2.8: SE 0.14 over 400
    # seeds; 5 SE = 0.7.
    assert abs(_mean_abs(errors) - expected) < 0.7


def test_integer_plan_is_the_geometric_mechanism():
    plan = plan_laplace(2.0, 0.5, 1000, integer=True)
    assert plan.gamma == 1.0 and plan.scale == 4.0
    noise = add_noise(plan, np.zeros(1000), check_random_source(0))
    assert np.all(noise == np.round(noise))
    p = np.exp(-0.25)
    # E|Z| = 2p / (1 - p^2) = 3.94; sd(|Z|) <= sqrt(2p)/(1-p) = 5.7, SE over
    # 1000 draws 0.18; 5 SE = 0.9.
    assert abs(np.abs(noise).mean() - 2 * p / (1 - p**2)) < 0.9


def test_magnitude_keeps_large_values_exact():
    # n epsilon = 2e9 is far beyond the 2**18 noise scales the default grid
    # carries; the coarser grid keeps the mean unclipped.
    x = np.full(2_000_000, 0.9)
    value = tools.mean(x, epsilon=1000.0, bounds=(0, 1), random_state=0)
    assert abs(value - 0.9) < 1e-6


# -- (2) budget ----------------------------------------------------------------
@pytest.mark.parametrize("name", BOUNDED + ["count"])
def test_budget_charged_exactly_once(name):
    budget = PrivacyBudget(epsilon=5.0)
    kwargs = {} if name == "count" else {"bounds": (0, 1)}
    getattr(tools, name)(X2, axis=0, epsilon=0.7, budget=budget, **kwargs)
    assert len(budget.ledger) == 1
    assert budget.spent()[0] == pytest.approx(0.7)
    assert budget.ledger[0].label.startswith(f"skdp.tools.{name}")


@pytest.mark.parametrize("name", BOUNDED + ["count"])
def test_refused_spend_releases_nothing(name):
    budget = PrivacyBudget(epsilon=0.5)
    kwargs = {} if name == "count" else {"bounds": (0, 1)}
    with pytest.raises(BudgetExceededError):
        getattr(tools, name)(X1, epsilon=1.0, budget=budget, **kwargs)
    assert budget.ledger == []


# -- (3) leaks -----------------------------------------------------------------
@pytest.mark.parametrize("name", BOUNDED)
def test_warns_when_bounds_omitted(name):
    with pytest.warns(PrivacyLeakWarning, match="bounds was not given"):
        getattr(tools, name)(X1, random_state=0)


@pytest.mark.parametrize("name", BOUNDED + ["count"])
def test_no_warning_when_bounds_given(name):
    kwargs = {} if name == "count" else {"bounds": (0, 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(tools, name)(X1, random_state=0, **kwargs)


# -- (4) errors before the charge ---------------------------------------------
@pytest.mark.parametrize(
    "a, kwargs, match",
    [
        (X1, {"bounds": (1, 0)}, "lower < upper"),
        (X1, {"bounds": (0, np.inf)}, "finite"),
        (X1, {"bounds": (0, 1, 2)}, "pair"),
        (X2, {"bounds": ([0, 0], [1, 1])}, "one lower and one upper"),
        (np.array([0.5, np.nan]), {"bounds": (0, 1)}, "finite input"),
        (X2, {"bounds": (0, 1), "axis": 1}, "axis=None or axis=0"),
        (np.array([]), {"bounds": (0, 1)}, "at least one"),
        (X1, {"bounds": (0, 1e200)}, "float64"),
    ],
)
@pytest.mark.parametrize("name", BOUNDED)
def test_bad_input_raises_before_charge(name, a, kwargs, match):
    budget = PrivacyBudget(epsilon=10.0)
    with pytest.raises(ValueError, match=match):
        getattr(tools, name)(a, budget=budget, **kwargs)
    assert budget.ledger == []


def test_invalid_parameters_rejected():
    with pytest.raises(ValueError, match="epsilon"):
        tools.mean(X1, epsilon=0.0, bounds=(0, 1))
    with pytest.raises((ValueError, TypeError), match="budget"):
        tools.mean(X1, bounds=(0, 1), budget="lots")


# -- (5) reproducibility ---------------------------------------------------------
@pytest.mark.parametrize("name", BOUNDED)
def test_seed_reproduces(name):
    f = getattr(tools, name)
    a = f(X2, axis=0, bounds=(0, 1), random_state=3)
    b = f(X2, axis=0, bounds=(0, 1), random_state=3)
    c = f(X2, axis=0, bounds=(0, 1), random_state=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


# -- (6) accuracy and shapes -----------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("name", BOUNDED)
def test_large_epsilon_matches_numpy(name, axis):
    got = getattr(tools, name)(
        X2, axis=axis, epsilon=1e5, bounds=(0, 1), random_state=0
    )
    want = getattr(np, name)(X2, axis=axis)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_count_shapes_and_accuracy():
    x = X2 > 0.5
    assert tools.count(x, axis=0, epsilon=1e5, random_state=0).tolist() == list(
        np.count_nonzero(x, axis=0)
    )
    assert tools.count(x, epsilon=1e5, random_state=0) == np.count_nonzero(x)


def test_outputs_in_feasible_set():
    x = np.zeros(10)  # tiny n: the noise is large, the clip binds
    for s in range(20):
        assert 0 <= tools.mean(x, epsilon=0.1, bounds=(0, 1), random_state=s) <= 1
        assert 0 <= tools.var(x, epsilon=0.1, bounds=(0, 1), random_state=s) <= 0.25
        assert 0 <= tools.sum(x, epsilon=0.1, bounds=(0, 1), random_state=s) <= 10
        assert 0 <= tools.count(x, epsilon=0.1, random_state=s) <= 10


def test_declared_bounds_must_have_positive_width():
    # One policy for every bounded tool and estimator (skdp.utils._bounds):
    # declared bounds need lower < upper; a constant public column is
    # better dropped than given a zero-width box. Refused before the charge.
    X = np.column_stack([np.full(50, 3.0), X2[:50, 0]])
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(ValueError, match="lower < upper for every column"):
        tools.mean(X, axis=0, bounds=([3, 0], [3, 1]), budget=budget)
    assert budget.ledger == []
