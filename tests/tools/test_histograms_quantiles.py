"""skdp.tools histogram, histogramdd, quantile and median."""

import warnings

import numpy as np
import pytest

from skdp import tools
from skdp.accounting import PrivacyBudget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.tools._histograms import project_counts

RNG = np.random.default_rng(7)
AGES = RNG.integers(17, 91, size=2000).astype(float)
ROWS = RNG.uniform(0, 10, size=(2000, 2))
EDGES = np.linspace(17, 97, 9)


def test_projection_is_nonexpansive_and_feasible():
    truth = np.array([50.0, 0.0, 30.0, 20.0])
    for s in range(50):
        noisy = truth + np.random.default_rng(s).laplace(0, 5, size=4)
        out = project_counts(noisy, 100.0)
        assert np.all(out >= 0) and out.sum() == pytest.approx(100.0)
        assert np.linalg.norm(out - truth) <= np.linalg.norm(noisy - truth) + 1e-9


def test_histogram_noise_calibration():
    # Two bins: the projection onto {h >= 0, h0 + h1 = n} averages the two
    # noises, h0 - true0 = (Z0 - Z1) / 2, with Z geometric of scale 2 / eps
    # (L1 sensitivity 2). Var((Z0 - Z1)/2) = Var(Z) / 2 = p / (1 - p)**2.
    x = np.repeat([0.25, 0.75], 500)
    eps, p = 1.0, np.exp(-0.5)
    errors = np.array(
        [
            tools.histogram(x, bins=2, range=(0, 1), epsilon=eps, random_state=s)[0][0]
            - 500
            for s in range(400)
        ]
    )
    variance = p / (1 - p) ** 2
    # The sample variance over 400 draws has relative SE about
    # sqrt((kurtosis - 1) / 400) < 0.2 here; allow 40%.
    assert abs(errors.var() / variance - 1) < 0.4


def test_histogram_matches_numpy_at_large_epsilon():
    hist, edges = tools.histogram(AGES, bins=EDGES, epsilon=1e4, random_state=0)
    want, want_edges = np.histogram(AGES, bins=EDGES)
    np.testing.assert_allclose(hist, want, atol=1e-6)
    np.testing.assert_array_equal(edges, want_edges)
    density, _ = tools.histogram(
        AGES, bins=EDGES, epsilon=1e4, density=True, random_state=0
    )
    np.testing.assert_allclose(density, np.histogram(AGES, EDGES, density=True)[0])


def test_histogramdd_matches_numpy_at_large_epsilon():
    ranges = [(0, 10), (0, 10)]
    hist, edges = tools.histogramdd(
        ROWS, bins=(3, 4), range=ranges, epsilon=1e4, random_state=0
    )
    want, _ = np.histogramdd(ROWS, bins=(3, 4), range=ranges)
    assert hist.shape == (3, 4)
    np.testing.assert_allclose(hist, want, atol=1e-6)


def test_histogram_values_outside_range_are_clipped_in():
    hist, _ = tools.histogram([-5.0, 0.5, 50.0], bins=2, range=(0, 1), epsilon=1e4)
    assert hist.tolist() == pytest.approx([1.0, 2.0])  # edges 0, 0.5, 1


def test_histogram_budget_and_refusal():
    budget = PrivacyBudget(epsilon=1.0)
    tools.histogram(AGES, bins=EDGES, epsilon=0.4, budget=budget)
    tools.histogramdd(ROWS, bins=2, range=[(0, 10)] * 2, epsilon=0.4, budget=budget)
    assert len(budget.ledger) == 2 and budget.spent()[0] == pytest.approx(0.8)
    with pytest.raises(BudgetExceededError):
        tools.histogram(AGES, bins=EDGES, epsilon=0.4, budget=budget)
    assert len(budget.ledger) == 2


def test_histogram_range_from_data_warns():
    with pytest.warns(PrivacyLeakWarning, match="range was not given"):
        tools.histogram(AGES, bins=5)
    with pytest.warns(PrivacyLeakWarning, match="dimension 1"):
        tools.histogramdd(ROWS, bins=[EDGES, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tools.histogram(AGES, bins=EDGES)
        tools.histogram(AGES, bins=5, range=(17, 90))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bins": [3, 2, 1]}, "strictly increasing"),
        ({"bins": 5, "range": (1, 0)}, "low <= high"),
        ({"bins": 0}, "bins"),
        ({"bins": "auto"}, "bins"),
    ],
)
def test_histogram_bad_input_before_charge(kwargs, match):
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(ValueError, match=match):
        tools.histogram(AGES, budget=budget, **kwargs)
    assert budget.ledger == []


def test_histogram_2d_input_refused():
    with pytest.raises(ValueError, match="histogramdd"):
        tools.histogram(ROWS, bins=3, range=(0, 10))


# -- quantiles ----------------------------------------------------------------
def test_quantile_shapes_like_numpy():
    q = [0.25, 0.5, 0.75]
    kw = dict(epsilon=1e3, bounds=(0, 10), random_state=0)
    assert isinstance(tools.quantile(ROWS[:, 0], 0.5, **kw), float)
    assert tools.quantile(ROWS[:, 0], q, **kw).shape == (3,)
    assert tools.quantile(ROWS, q, axis=0, **kw).shape == (3, 2)
    assert tools.quantile(ROWS, 0.5, axis=0, **kw).shape == (2,)
    assert isinstance(tools.median(ROWS[:, 0], **kw), float)
    got = tools.quantile(ROWS, q, axis=0, **kw)
    np.testing.assert_allclose(got, np.quantile(ROWS, q, axis=0), atol=0.1)


def test_quantile_is_monotone_and_in_bounds():
    q = np.linspace(0, 1, 11)
    for s in range(10):
        got = tools.quantile(AGES, q, epsilon=0.05, bounds=(17, 90), random_state=s)
        assert np.all(np.diff(got) >= 0) and got[0] >= 17 and got[-1] <= 90


def test_quantile_with_atoms():
    # 90% zeros: the quartiles lie in [0, 5000], the first interval of
    # positive length, not near the top of the range.
    x = np.where(np.arange(5000) % 10 == 0, 5000.0, 0.0)
    got = tools.quantile(x, [0.25, 0.5, 0.75], epsilon=1.0, bounds=(0, 99999),
                         random_state=0)  # fmt: skip
    assert np.all(got <= 5000)  # in the first interval of positive length


def test_quantile_budget_warning_and_errors():
    budget = PrivacyBudget(epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tools.quantile(AGES, [0.1, 0.9], epsilon=0.5, bounds=(17, 90), budget=budget)
    assert len(budget.ledger) == 1 and budget.spent()[0] == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError):
        tools.median(AGES, epsilon=0.6, bounds=(17, 90), budget=budget)
    assert len(budget.ledger) == 1
    with pytest.warns(PrivacyLeakWarning):
        tools.median(AGES)
    with pytest.raises(ValueError):
        tools.quantile(AGES, 1.5, bounds=(17, 90), budget=budget)
    with pytest.raises(ValueError, match="axis=0"):
        tools.median(ROWS, bounds=(0, 10), budget=budget)
    assert len(budget.ledger) == 1


def test_quantile_seed_reproduces():
    a = tools.quantile(AGES, [0.3, 0.6], bounds=(17, 90), random_state=1)
    b = tools.quantile(AGES, [0.3, 0.6], bounds=(17, 90), random_state=1)
    assert np.array_equal(a, b)
