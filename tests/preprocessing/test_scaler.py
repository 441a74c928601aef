"""DPStandardScaler: calibration, budget, leaks, sklearn integration."""

import warnings

import numpy as np
import pandas as pd
import pytest
from _data import dask_rows
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import StandardScaler

from skdp.accounting import PrivacyBudget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.preprocessing import DPStandardScaler

RNG = np.random.default_rng(0)
X = RNG.uniform(0.2, 0.8, size=(400, 2)) * [1, 10]
BOUNDS = ([0, 0], [1, 10])


def test_noise_calibration():
    # epsilon = 1 split in halves, each over 2 features: feature j's mean has
    # Laplace scale 2 w_j / (n epsilon / 2) and its variance
    # 2 (n - 1) w_j**2 / (n**2 epsilon / 2).
    n, w = 400, np.array([1.0, 10.0])
    mean_scale, var_scale = 4 * w / n, 4 * (n - 1) * w**2 / n**2
    fits = [DPStandardScaler(bounds=BOUNDS, random_state=s).fit(X) for s in range(300)]
    mean_err = np.abs([f.mean_ - X.mean(axis=0) for f in fits]).mean(axis=0)
    var_err = np.abs([f.var_ - X.var(axis=0) for f in fits]).mean(axis=0)
    # Mean |Laplace(b)| = b with SE b / sqrt(300) = 0.058 b: 5 SE = 0.29 b.
    # (The feasible-set clip stays >= 7 scales away for the variance.)
    assert np.all(np.abs(mean_err / mean_scale - 1) < 0.29)
    assert np.all(np.abs(var_err / var_scale - 1) < 0.29)


def test_budget_charged_once_and_refusal_leaves_nothing():
    budget = PrivacyBudget(epsilon=1.0)
    scaler = DPStandardScaler(epsilon=0.6, bounds=BOUNDS, budget=budget).fit(X)
    assert len(budget.ledger) == 1 and budget.spent()[0] == pytest.approx(0.6)
    assert scaler.epsilon_ == pytest.approx(0.6)
    assert scaler.budget_entry_ is budget.ledger[0] or scaler.budget_entry_
    with pytest.raises(BudgetExceededError):
        scaler.fit(X)
    assert len(budget.ledger) == 1
    assert not hasattr(scaler, "mean_") and not hasattr(scaler, "privacy_event_")


def test_clone_shares_the_budget():
    budget = PrivacyBudget(epsilon=1.0)
    scaler = DPStandardScaler(epsilon=0.5, bounds=BOUNDS, budget=budget)
    clone(scaler).fit(X)
    clone(scaler).fit(X)
    assert len(budget.ledger) == 2
    with pytest.raises(BudgetExceededError):
        clone(scaler).fit(X)


def test_with_mean_or_std_only_spends_all_on_one():
    scaler = DPStandardScaler(with_mean=False, bounds=BOUNDS, random_state=0).fit(X)
    assert scaler.mean_ is None and scaler.var_ is not None
    assert scaler.epsilon_ == pytest.approx(1.0)
    none = DPStandardScaler(with_mean=False, with_std=False, bounds=BOUNDS).fit(X)
    assert none.epsilon_ == 0.0
    np.testing.assert_array_equal(none.transform(X), X)


def test_leak_warning_only_without_bounds():
    with pytest.warns(PrivacyLeakWarning, match="bounds was not given"):
        DPStandardScaler(random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPStandardScaler(bounds=BOUNDS, random_state=0).fit(X)


@pytest.mark.parametrize(
    "bounds, data, match",
    [
        (([0, 0, 0], [1, 1, 1]), X, "one lower and one upper"),
        ((1, 0), X, "lower < upper"),
        (BOUNDS, np.where(X > 5, np.nan, X), "NaN"),
    ],
)
def test_bad_input_raises_before_charge(bounds, data, match):
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(ValueError, match=match):
        DPStandardScaler(bounds=bounds, budget=budget).fit(data)
    assert budget.ledger == []


def test_seed_reproduces():
    a = DPStandardScaler(bounds=BOUNDS, random_state=5).fit(X)
    b = DPStandardScaler(bounds=BOUNDS, random_state=5).fit(X)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    np.testing.assert_array_equal(a.var_, b.var_)


def test_matches_sklearn_at_large_epsilon():
    ours = DPStandardScaler(epsilon=1e5, bounds=BOUNDS, random_state=0).fit(X)
    theirs = StandardScaler().fit(X)
    np.testing.assert_allclose(ours.mean_, theirs.mean_, rtol=1e-4)
    np.testing.assert_allclose(ours.scale_, theirs.scale_, rtol=1e-3)
    np.testing.assert_allclose(ours.transform(X), theirs.transform(X), atol=1e-3)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)), X)
    assert ours.n_samples_seen_ == 400


def test_pandas_output_and_column_transformer():
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(c=1.0)
    ct = ColumnTransformer(
        [("scale", DPStandardScaler(bounds=BOUNDS, random_state=0), ["a", "b"])],
        remainder="passthrough",
    ).set_output(transform="pandas")
    out = ct.fit_transform(frame)
    assert list(out.columns) == ["scale__a", "scale__b", "remainder__c"]
    scaler = DPStandardScaler(bounds=BOUNDS, random_state=0).fit(frame[["a", "b"]])
    assert list(scaler.get_feature_names_out()) == ["a", "b"]
    assert list(scaler.feature_names_in_) == ["a", "b"]


def test_a_variance_is_floored_at_its_own_noise_level():
    # Constant columns: the noisy variance would often be clipped to 0, and
    # scale_ would then be 1 whatever the bounds (a feature blown up by w).
    n, epsilon, width = 200, 0.2, np.array([10.0, 1000.0])
    X = np.zeros((n, 2))
    laplace_scale = 2 * (n - 1) * width**2 / n**2 / (epsilon / 2)  # d = 2 columns
    floor = np.minimum(np.sqrt(2) * laplace_scale, width**2 / 4)
    for seed in range(20):
        scaler = DPStandardScaler(
            epsilon=epsilon, bounds=(0, width), random_state=seed
        ).fit(X)
        # The grid's rounding slack makes the stated scale a hair larger.
        assert np.all(scaler.var_ >= floor * (1 - 1e-6))
        assert np.all(scaler.var_ <= width**2 / 4)
        np.testing.assert_allclose(scaler.scale_, np.sqrt(scaler.var_))


# ------------------------------------------------- one data path: dask input
def _large(n=5000):
    return np.random.default_rng(1).uniform(-0.5, 1.5, size=(n, 2)) * [1, 10]


@pytest.mark.parametrize(
    "params", [{}, {"with_std": False}, {"with_mean": False}, {"epsilon": 50.0}]
)
def test_a_dask_fit_releases_the_in_memory_scaler_bitwise(
    params, dask_sync, assert_same_fit
):
    # skdp.tools' moments: clipped sums about the bounds' midpoints, one pass.
    X = _large()
    memory = DPStandardScaler(bounds=BOUNDS, random_state=3, **params).fit(X)
    on_dask = DPStandardScaler(bounds=BOUNDS, random_state=3, **params).fit(
        dask_rows(X, columns=1)
    )
    assert_same_fit(memory, on_dask)


def test_a_dask_dataframe_fit_releases_the_pandas_scaler(dask_sync, assert_same_fit):
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(_large(), columns=["age", "hours"])
    memory = DPStandardScaler(bounds=BOUNDS, random_state=4).fit(frame)
    on_dask = DPStandardScaler(bounds=BOUNDS, random_state=4).fit(
        dd.from_pandas(frame, npartitions=4)
    )
    assert_same_fit(memory, on_dask)


@pytest.mark.parametrize("case", ["NaN", "infinity", "text"])
def test_dask_input_is_refused_like_memory_input(case, dask_sync, assert_same_refusal):
    X = _large().astype(object if case == "text" else float)
    X[4321, 1] = {"NaN": np.nan, "infinity": np.inf, "text": "x"}[case]

    def fit(data, budget):
        DPStandardScaler(bounds=BOUNDS, budget=budget).fit(data)

    assert_same_refusal(fit, X, dask_rows(X, columns=1))


def test_dask_input_needs_declared_bounds(dask_sync):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing is read
        with pytest.raises(ValueError, match="needs declared bounds"):
            DPStandardScaler().fit(dask_rows(_large(), columns=1))


def test_a_dask_fit_never_gathers_the_rows(dask_sync, largest_task_rows):
    with largest_task_rows() as seen:
        DPStandardScaler(bounds=BOUNDS).fit(dask_rows(_large(), columns=1))
    assert 0 < seen.rows <= 1024  # a fit that gathered X would show 5000


def test_a_fit_makes_no_copy_of_float64_rows(copies_of_x):
    X = np.random.default_rng(2).uniform(size=(100_000, 10))
    assert copies_of_x(lambda A: DPStandardScaler(bounds=(0, 1)).fit(A), X) < 0.5
