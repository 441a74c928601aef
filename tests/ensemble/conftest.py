"""Shared data and probes of the tree-ensemble tests (``skdp.ensemble``).

The data helpers are fixtures returning factories, so that each test says
how many rows, features and classes it needs with a fixed seed. Every
dataset lies inside the public schema the tests declare: numeric features
in ``BOUNDS``, labels in ``range(n_classes)``, targets in ``Y_BOUNDS``.

``noise_draws`` records every discrete Gaussian draw of a fit (its sigma in
grid steps and its shape) while still drawing it, so a test can compare the
noise actually used with the plan.
"""

import numpy as np
import pytest

from skdp.mechanisms import _additive

BOUNDS = (0.0, 1.0)
Y_BOUNDS = (-1.0, 4.0)
COLOURS = ["blue", "green", "red"]


def _classification(n=2000, n_features=3, n_classes=2, seed=0, noise=0.1):
    """Uniform features in ``BOUNDS``; the label thresholds a noisy score."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(*BOUNDS, size=(n, n_features))
    score = X[:, 0] + 0.5 * X[:, 1] + noise * rng.normal(size=n)
    edges = np.quantile(score, np.arange(1, n_classes) / n_classes)
    return X, np.digitize(score, edges)


def _regression(n=2000, n_features=3, seed=0, noise=0.1):
    """``y = 3 x0 + x1**2`` plus noise, inside ``Y_BOUNDS`` (3 sd margin)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(*BOUNDS, size=(n, n_features))
    y = 3 * X[:, 0] + X[:, 1] ** 2 + noise * rng.normal(size=n)
    return X, np.clip(y, *Y_BOUNDS)


def _frame(n=2000, seed=0):
    """A DataFrame: two numeric columns (with NaN) and a string column.

    The label depends on ``x0`` and on the colour, so a model that
    ignores the categorical column is visibly worse.
    """
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(*BOUNDS, size=n)
    x1 = rng.uniform(*BOUNDS, size=n)
    colour = np.array(COLOURS, dtype=object)[rng.integers(0, 3, size=n)]
    score = x0 + np.where(colour == "red", 0.6, 0.0) + 0.1 * rng.normal(size=n)
    y = (score > 0.8).astype(int)
    x1[rng.uniform(size=n) < 0.05] = np.nan
    colour[rng.uniform(size=n) < 0.05] = None
    frame = pd.DataFrame({"x0": x0, "x1": x1, "colour": colour})
    return frame, y


@pytest.fixture
def classification_data():
    return _classification


@pytest.fixture
def regression_data():
    return _regression


@pytest.fixture
def mixed_frame():
    return _frame


@pytest.fixture
def noise_draws(monkeypatch):
    """``[(sigma, shape), ...]`` of every discrete Gaussian draw, in order."""
    calls = []
    real = _additive.sample_discrete_gaussian

    def recording(sigma, size, source):
        calls.append((float(sigma), tuple(np.atleast_1d(size).tolist())))
        return real(sigma, size, source)

    monkeypatch.setattr(_additive, "sample_discrete_gaussian", recording)
    return calls
