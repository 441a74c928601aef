"""DP-SGD's default hyperparameters: what they resolve to, and what they cost."""

import math

import numpy as np
import pytest
from _data import sphere_rows

from skdp import DPLogisticRegression
from skdp.accounting import DEFAULT_DELTA
from skdp.accounting._calibration import (
    calibrate_gaussian_noise_multiplier,
    epsilon_poisson_subsampled_gaussian,
)
from skdp.linear_model._dpsgd import MARGIN_NOISE_STD


def _fit(X, y, **params):
    params = {"data_norm": 1.0, "random_state": 0, **params}
    return DPLogisticRegression(method="gradient", **params).fit(X, y)


@pytest.mark.parametrize(
    "n, epsilon, n_classes", [(3000, 0.1, 2), (3000, 5.0, 2), (20000, 0.5, 3)]
)
def test_defaults_resolve_to_the_documented_rule(n, epsilon, n_classes):
    rng = np.random.default_rng(0)
    X = sphere_rows(rng, n, 5)
    y = rng.integers(n_classes, size=n)
    clf = _fit(X, y, epsilon=epsilon, classes=list(range(n_classes)))

    n_models = 1 if n_classes == 2 else n_classes
    R = math.hypot(1.0, 0.5)  # data_norm and intercept_scaling
    q = 256 / n
    steps = math.ceil(10 / q)
    continuous = calibrate_gaussian_noise_multiplier(epsilon, DEFAULT_DELTA, q, steps)
    clip = R * math.sqrt(n_models) / 2
    assert (clf.sampling_rate_, clf.n_steps_) == (q, steps)
    # The discrete event's lattice shift (at most steps * 4 sqrt(d) / (s 2**32),
    # d = n_models * 6 coefficients) needs a hair more noise than the
    # continuous calibration: at most a relative 1e-5 here.
    sigma = clf.noise_multiplier_
    assert continuous <= sigma <= continuous * (1 + 1e-5)
    cap = 2.5 * q * n / (math.sqrt(steps) * sigma * clip * R)
    assert clf.max_grad_norm_ == pytest.approx(clip, rel=1e-12)
    assert clf.learning_rate_ == pytest.approx(min(16 / R**2, n, cap), rel=1e-12)
    # The accountant gives the target epsilon for the resolved event (the
    # calibration bisects the multiplier to a relative 1e-6).
    spent = epsilon_poisson_subsampled_gaussian(q, sigma, steps, DEFAULT_DELTA)
    assert spent <= epsilon and spent == pytest.approx(epsilon, rel=1e-3)
    assert clf.epsilon_ == pytest.approx(epsilon, rel=1e-3)
    assert clf.delta_ == DEFAULT_DELTA


@pytest.mark.slow
def test_noise_cap_binds_at_small_epsilon_only():
    rng = np.random.default_rng(1)
    X = sphere_rows(rng, 5000, 4)
    y = (X[:, 0] > 0).astype(int)
    smoothness_step = 16 / 1.25  # 16 / R**2 with R**2 = 1 + 0.5**2
    rates = {
        eps: _fit(X, y, epsilon=eps, classes=[0, 1]).learning_rate_
        for eps in (0.1, 1.0, 10.0)
    }
    assert rates[0.1] < rates[1.0] < smoothness_step
    assert rates[10.0] == pytest.approx(smoothness_step)


def test_default_learning_rate_reads_no_data_values():
    rng = np.random.default_rng(2)
    X1, X2 = sphere_rows(rng, 4000, 3), 0.1 * sphere_rows(rng, 4000, 3)
    y1, y2 = rng.integers(2, size=4000), np.zeros(4000, dtype=int)
    fits = [_fit(X, y, epsilon=0.3, classes=[0, 1]) for X, y in ((X1, y1), (X2, y2))]
    assert fits[0].learning_rate_ == fits[1].learning_rate_
    assert fits[0].max_grad_norm_ == fits[1].max_grad_norm_


@pytest.mark.slow
def test_explicit_values_override_the_defaults():
    rng = np.random.default_rng(3)
    X = sphere_rows(rng, 2000, 3)
    y = (X[:, 0] > 0).astype(int)
    clf = _fit(X, y, classes=[0, 1], learning_rate=0.3, max_grad_norm=0.2)
    assert (clf.learning_rate_, clf.max_grad_norm_) == (0.3, 0.2)
    # Tiny C: the regulariser's cap n C binds.
    clf = _fit(X, y, classes=[0, 1], epsilon=10.0, C=1e-4)
    assert clf.learning_rate_ == pytest.approx(2000 * 1e-4)


def test_default_step_bounds_the_margin_noise():
    # Zero rows: every clipped gradient is 0 and the coefficients are the
    # averaged noise alone. Step t's noise has per-coordinate sd s and
    # enters every later iterate, so the average of iterates h..T-1
    # (m = T - h of them) has variance s**2 (h + (m+1)(2m+1) / (6m)).
    # Where the noise cap binds, s**2 T = (2.5 / R)**2 with R = data_norm = 1.
    n, d = 1000, 4000
    clf = _fit(
        np.zeros((n, d)),
        np.arange(n) % 2,
        epsilon=0.1,
        classes=[0, 1],
        fit_intercept=False,
        C=1e9,  # no shrinkage from the regulariser
    )
    steps = clf.n_steps_
    assert clf.learning_rate_ < 16.0  # the cap binds
    h = steps // 2
    m = steps - h
    factor = (h + (m + 1) * (2 * m + 1) / (6 * m)) / steps
    expected = MARGIN_NOISE_STD * math.sqrt(factor)
    # The sd estimate over 4000 independent coefficients has relative sd
    # 1/sqrt(8000) ~ 1.1%, so 5% is 4.5 sd; the grid slack adds below 1e-8.
    assert np.std(clf.coef_) == pytest.approx(expected, rel=0.05)
    assert abs(np.mean(clf.coef_)) < 5 * expected / math.sqrt(d)


def test_candidates_of_a_search_share_their_calibrations():
    # The noise calibration depends on (epsilon, delta, q, steps) and the
    # accountant only: GridSearchCV's candidates and clones that differ in C
    # or the clipping norm calibrate each (epsilon, training size) once.
    from sklearn.model_selection import GridSearchCV, KFold

    from skdp.accounting._calibration import _calibrate_gaussian_noise_multiplier

    rng = np.random.default_rng(0)
    X = sphere_rows(rng, 600, 4)
    y = (X[:, 0] > 0).astype(int)
    grid = {"epsilon": [0.5, 2.0], "C": [0.1, 1.0], "max_grad_norm": [0.5, 1.0]}
    search = GridSearchCV(
        DPLogisticRegression(
            method="gradient", data_norm=1.0, classes=[0, 1], epochs=2, delta=2e-7
        ),
        grid,
        cv=KFold(2),
    )
    _calibrate_gaussian_noise_multiplier.cache_clear()
    search.fit(X, y)
    info = _calibrate_gaussian_noise_multiplier.cache_info()
    # 8 candidates x 2 folds on 300 rows, then one refit on 600 rows: two
    # epsilons at n=300 and the best one at n=600 are calibrated.
    assert info.misses == 3
    assert info.hits == 8 * 2 - 2
