"""DPPCA: calibration of the noise, the budget contract, and accuracy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _data import clip_rows, dask_rows
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline

from skdp import PrivacyBudget
from skdp.accounting import DiscreteGaussianEvent, PureDPEvent
from skdp.decomposition import DPPCA
from skdp.decomposition._pca import (
    MEAN_WEIGHT,
    _moment_vector,
    _unpack_moments,
    bounded_moments,
    moment_sensitivity,
    noisy_moments,
)
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.mechanisms import add_noise
from skdp.utils import check_random_source


def _data(n=2000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.array([3.0, 1.5, 0.5, 0.2, 0.1, 0.1])[:d]
    X += np.array([1.0, -2.0, 0.5, 0.0, 0.0, 0.0])[:d]
    return clip_rows(X, 5.0)


# ------------------------------------------------------------- sensitivity
def test_moment_sensitivity_is_the_largest_change_and_is_attained():
    R, w = 2.0, MEAN_WEIGHT * 2.0
    delta = moment_sensitivity(R, w)
    assert delta == pytest.approx((math.sqrt(2) + MEAN_WEIGHT**2 / math.sqrt(2)) * 4)
    rng = np.random.default_rng(0)
    d = 4
    # Random pairs of rows in the R-ball never exceed it ...
    largest = 0.0
    for _ in range(3000):
        x, x2 = rng.normal(size=(2, d))
        x *= R * rng.uniform() ** 0.1 / np.linalg.norm(x)
        x2 *= R * rng.uniform() ** 0.1 / np.linalg.norm(x2)
        change = _moment_vector(x[None], w) - _moment_vector(x2[None], w)
        largest = max(largest, np.linalg.norm(change))
    assert largest <= delta * (1 + 1e-12)
    # ... and two rows of norm R at cosine -w**2 / (2 R**2) attain it.
    cosine = -(w**2) / (2 * R**2)
    x = R * np.array([1.0, 0, 0, 0])
    x2 = R * np.array([cosine, math.sqrt(1 - cosine**2), 0, 0])
    change = _moment_vector(x[None], w) - _moment_vector(x2[None], w)
    assert np.linalg.norm(change) == pytest.approx(delta, rel=1e-12)


# ------------------------------------------------------------- calibration
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_noise_matrix_is_symmetric_with_the_stated_variances(delta):
    """Empirical variances of the released Gram matrix and sums vs the plan.

    Gaussian (delta > 0): diagonal sd sigma = plan.scale * gamma, off the
    diagonal sigma / sqrt(2), the sums sigma / w. L2 vector (delta = 0):
    every coordinate of the released vector has variance E||b||**2 / m =
    (m + 1) scale**2 gamma**2 for m coordinates (the norm is Gamma(m,
    scale)), so the same ratios hold with that sigma.
    """
    X = _data(n=50, d=3)
    est = DPPCA(epsilon=50.0, delta=delta, data_norm=5.0)
    plan = est.privacy_plan(X)
    noise, weight = plan.settings["noise"], plan.settings["weight"]
    m = noise.size
    sigma = noise.scale * noise.gamma
    if delta == 0:
        sigma *= math.sqrt(m + 1)
    exact_gram, exact_sum = X.T @ X, X.sum(axis=0)
    gram, column_sum = noisy_moments(X, noise, weight, check_random_source(0))
    assert np.array_equal(gram, gram.T)
    runs = 3000
    if delta > 0:
        # Independent coordinates: one vectorised draw for all runs.
        tiled = np.tile(_moment_vector(X, weight), runs)
        draws = add_noise(noise, tiled, check_random_source(1)).reshape(runs, m)
    else:
        draws = np.array(
            [
                add_noise(noise, _moment_vector(X, weight), check_random_source(s))
                for s in range(runs)
            ]
        )
    gram_errors = np.empty((runs, 3, 3))
    sum_errors = np.empty((runs, 3))
    for run, draw in enumerate(draws):
        gram, column_sum = _unpack_moments(draw, 3, weight)
        assert np.array_equal(gram, gram.T)
        gram_errors[run] = gram - exact_gram
        sum_errors[run] = column_sum - exact_sum
    diagonal = gram_errors[:, [0, 1, 2], [0, 1, 2]].ravel()  # 9000 draws
    off = gram_errors[:, [0, 0, 1], [1, 2, 2]].ravel()  # 9000 draws
    # The variance of a variance estimate from N draws has relative sd
    # sqrt(2 / N) (Gaussian) and at most ~sqrt(3 / N) (the L2 vector's
    # heavier marginals): 1.5 % / 1.8 % at N = 9000; 6 sd = 11 %.
    tolerance = 6 * math.sqrt(3 / diagonal.size)
    assert np.mean(diagonal**2) / sigma**2 == pytest.approx(1, abs=tolerance)
    assert np.mean(off**2) / (sigma**2 / 2) == pytest.approx(1, abs=tolerance)
    assert abs(diagonal.mean()) < 6 * sigma / math.sqrt(diagonal.size)
    assert np.mean(sum_errors**2) / (sigma / weight) ** 2 == pytest.approx(
        1, abs=tolerance
    )


def test_released_mean_carries_the_stated_noise():
    """End to end: mean_ - true mean has sd sigma / (w n) per coordinate."""
    X = _data(n=40, d=2)
    est = DPPCA(epsilon=2.0, data_norm=5.0)
    plan = est.privacy_plan(X)
    sigma = plan.settings["noise"].scale * plan.settings["noise"].gamma
    expected_sd = sigma / (plan.settings["weight"] * X.shape[0])
    errors = np.array(
        [
            clone(est).set_params(random_state=seed).fit(X).mean_ - X.mean(axis=0)
            for seed in range(500)
        ]
    ).ravel()
    # 1000 draws: relative sd of the variance estimate sqrt(2 / 1000) = 4.5 %;
    # 6 sd = 27 %.
    assert np.mean(errors**2) / expected_sd**2 == pytest.approx(1, abs=0.27)


def test_plan_matches_the_requested_guarantee():
    X = _data()
    gaussian = DPPCA(epsilon=1.0, delta=1e-6, data_norm=5.0).privacy_plan(X)
    assert isinstance(gaussian.event, DiscreteGaussianEvent)
    assert gaussian.delta == 1e-6
    assert gaussian.settings["noise"].sensitivity == moment_sensitivity(5.0, 2.5)
    pure = DPPCA(epsilon=1.0, delta=0.0, data_norm=5.0).privacy_plan(X)
    assert isinstance(pure.event, PureDPEvent) and pure.delta == 0.0
    assert pure.event.epsilon == 1.0
    fitted = DPPCA(epsilon=0.7, delta=1e-6, data_norm=5.0, random_state=0).fit(X)
    assert fitted.epsilon_ == pytest.approx(0.7, rel=1e-6)
    assert fitted.delta_ == 1e-6


# ------------------------------------------------------------------ budget
def test_fit_charges_the_plan_once_and_refusal_leaves_nothing():
    X = _data()
    budget = PrivacyBudget(1.2, 1e-5)
    est = DPPCA(2, epsilon=1.0, data_norm=5.0, budget=budget, random_state=0)
    plan = est.privacy_plan(X)
    assert budget.ledger == []  # planning spends nothing
    est.fit(X)
    assert len(budget.ledger) == 1
    assert budget.ledger[0].event.noise_multiplier == plan.event.noise_multiplier
    assert est.privacy_event_ == budget.ledger[0].event
    # A second fit does not fit in the budget: refused, nothing recorded,
    # and the previous fit's attributes are gone.
    with pytest.raises(BudgetExceededError):
        est.fit(X)
    assert len(budget.ledger) == 1
    assert not [name for name in vars(est) if name.endswith("_")]


def test_clone_shares_the_budget():
    X = _data()
    budget = PrivacyBudget(3.0, 1e-4)
    est = DPPCA(2, epsilon=1.0, data_norm=5.0, budget=budget, random_state=0)
    copy = clone(est)
    assert copy.budget is budget
    est.fit(X)
    copy.fit(X)
    make_pipeline(clone(est)).fit(X)
    assert len(budget.ledger) == 3


# ---------------------------------------------------------------- warnings
def test_data_norm_read_from_data_warns_and_given_does_not():
    X = _data()
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        est = DPPCA(random_state=0).fit(X)
    assert est.data_norm_ == pytest.approx(np.linalg.norm(X, axis=1).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPPCA(data_norm=5.0, random_state=0).fit(X)


def test_rows_beyond_the_bound_are_scaled_down_in_the_blocks():
    X = _data(n=200)
    X[0] *= 1e6
    kept = X.copy()
    scaled = X.copy()
    scaled[0] *= 5.0 / np.linalg.norm(X[0])
    # The block function scales each row it reads (one rounding per entry,
    # then a sum of 200 terms: rtol 1e-12 is far above that).
    gram, column_sum = bounded_moments(X, None, 5.0)
    np.testing.assert_allclose(gram, scaled.T @ scaled, rtol=1e-12)
    np.testing.assert_allclose(column_sum, scaled.sum(axis=0), rtol=1e-12)
    # The plan holds the input itself, not a scaled copy, and leaves it alone.
    prepared, _ = DPPCA(data_norm=5.0)._plan_with_input(X)
    assert np.shares_memory(prepared.rows.X, X)
    np.testing.assert_array_equal(X, kept)


# ----------------------------------------------------- errors before charge
@pytest.mark.parametrize(
    "params, X, match",
    [
        ({"n_components": 5}, _data(d=4), "n_components"),
        ({"n_components": 0}, _data(), "n_components"),
        ({"epsilon": 0.0}, _data(), "epsilon"),
        ({"delta": 1.0}, _data(), "delta"),
        ({"data_norm": -1.0}, _data(), "data_norm"),
        ({}, np.full((10, 3), np.nan), "NaN"),
        ({"data_norm": 1e100}, _data(), "float64"),
        ({"epsilon": 1e4, "delta": 0.0}, _data(), "grid"),
    ],
)
def test_bad_input_is_refused_before_the_charge(params, X, match):
    budget = PrivacyBudget(10.0, 1e-3)
    est = DPPCA(data_norm=5.0, budget=budget).set_params(**params)
    with pytest.raises(ValueError, match=match):
        est.fit(X)
    assert budget.ledger == []


# -------------------------------------------------------- reproducibility
def test_a_seed_reproduces_the_fit_and_different_seeds_differ():
    X = _data()
    first = DPPCA(2, epsilon=0.5, data_norm=5.0, random_state=7).fit(X)
    again = DPPCA(2, epsilon=0.5, data_norm=5.0, random_state=7).fit(X)
    other = DPPCA(2, epsilon=0.5, data_norm=5.0, random_state=8).fit(X)
    np.testing.assert_array_equal(first.components_, again.components_)
    np.testing.assert_array_equal(first.mean_, again.mean_)
    assert not np.array_equal(first.mean_, other.mean_)
    assert DPPCA().__sklearn_tags__().non_deterministic
    assert not DPPCA(random_state=0).__sklearn_tags__().non_deterministic


# ---------------------------------------------------------------- accuracy
@pytest.mark.parametrize("delta, epsilon", [(1e-5, 200.0), (0.0, 30.0)])
def test_large_epsilon_is_close_to_sklearn(delta, epsilon):
    X = _data(n=5000, d=5)
    reference = PCA(3).fit(X)
    est = DPPCA(3, epsilon=epsilon, delta=delta, data_norm=5.0, random_state=0)
    est.fit(X)
    # Mean noise sd: sqrt(m + 1) Delta / (epsilon w n) < 5e-4 (pure, m = 20).
    np.testing.assert_allclose(est.mean_, reference.mean_, atol=3e-3)
    np.testing.assert_allclose(
        est.explained_variance_, reference.explained_variance_, rtol=1e-2
    )
    # Same sign convention as sklearn's (largest entry positive) up to noise.
    cosines = np.abs(np.sum(est.components_ * reference.components_, axis=1))
    assert np.all(cosines > 0.999)
    np.testing.assert_allclose(
        est.explained_variance_ratio_, reference.explained_variance_ratio_, atol=1e-2
    )
    np.testing.assert_allclose(
        np.abs(est.transform(X)), np.abs(reference.transform(X)), atol=0.05
    )


def test_moderate_epsilon_captures_most_of_the_variance():
    X = _data(n=20000, d=5)
    Xc = X - X.mean(axis=0)
    total = np.sum(Xc**2)

    def captured(components):
        return np.sum((Xc @ components.T) ** 2) / total

    best = captured(PCA(2).fit(X).components_)
    est = DPPCA(2, epsilon=1.0, data_norm=5.0, random_state=0).fit(X)
    assert captured(est.components_) > 0.98 * best


def test_transform_whiten_inverse_and_feature_names():
    X = _data(n=3000, d=4)
    est = DPPCA(2, whiten=True, epsilon=100.0, data_norm=5.0, random_state=0)
    Xt = est.fit_transform(X)
    # Whitened projections have unit variance (up to the small noise).
    np.testing.assert_allclose(Xt.var(axis=0, ddof=1), 1.0, rtol=0.05)
    back = est.inverse_transform(Xt)
    plain = DPPCA(2, epsilon=100.0, data_norm=5.0, random_state=0).fit(X)
    np.testing.assert_allclose(back, plain.inverse_transform(plain.transform(X)))
    assert list(est.get_feature_names_out()) == ["dppca0", "dppca1"]
    pd = pytest.importorskip("pandas")
    # Fitted on an array, so transform it as an array: the output is a frame.
    frame = est.set_output(transform="pandas").transform(X)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["dppca0", "dppca1"]


def test_all_components_and_noise_variance():
    X = _data(n=500, d=4)
    est = DPPCA(epsilon=1.0, data_norm=5.0, random_state=0).fit(X)
    assert est.n_components_ == 4 and est.noise_variance_ == 0.0
    assert est.explained_variance_ratio_.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(
        est.components_ @ est.components_.T, np.eye(4), atol=1e-10
    )
    two = DPPCA(2, epsilon=1.0, data_norm=5.0, random_state=0).fit(X)
    assert two.noise_variance_ == pytest.approx(est.explained_variance_[2:].mean())
    assert np.all(np.diff(est.explained_variance_) <= 0)
    assert np.all(est.explained_variance_ >= 0)


# ------------------------------------------------- one data path: dask input
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_a_dask_fit_releases_the_in_memory_model_bitwise(
    delta, dask_sync, assert_same_fit
):
    # Rows beyond data_norm are scaled inside the blocks; the Gram matrix
    # and the sums of five canonical blocks are added by the same tree.
    X = _data(n=5000, d=5) * 1.5  # some rows beyond the bound
    params = dict(n_components=3, delta=delta, data_norm=5.0, random_state=4)
    memory = DPPCA(**params).fit(X)
    on_dask = DPPCA(**params).fit(dask_rows(X, columns=2))
    assert_same_fit(memory, on_dask)
    np.testing.assert_array_equal(on_dask.transform(X), memory.transform(X))


def test_a_dask_dataframe_fit_releases_the_pandas_model(dask_sync, assert_same_fit):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(_data(n=5000), columns=list("abcd"))
    memory = DPPCA(2, data_norm=5.0, random_state=2).fit(frame)
    on_dask = DPPCA(2, data_norm=5.0, random_state=2).fit(
        dd.from_pandas(frame, npartitions=3)
    )
    assert_same_fit(memory, on_dask)


@pytest.mark.parametrize("case", ["NaN", "infinity", "text", "n_components"])
def test_dask_input_is_refused_like_memory_input(case, dask_sync, assert_same_refusal):
    X = _data(n=5000).astype(object if case == "text" else float)
    X[4321, 1] = {"NaN": np.nan, "infinity": np.inf, "text": "x"}.get(case, 0.0)
    n_components = 7 if case == "n_components" else None

    def fit(data, budget):
        DPPCA(n_components, data_norm=5.0, budget=budget).fit(data)

    assert_same_refusal(fit, X, dask_rows(X, columns=2))


def test_dask_input_needs_a_declared_data_norm(dask_sync):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing is read
        with pytest.raises(ValueError, match="needs declared data_norm"):
            DPPCA().fit(dask_rows(_data(n=5000), columns=2))


def test_a_dask_fit_never_gathers_the_rows(dask_sync, largest_task_rows):
    with largest_task_rows() as seen:
        DPPCA(data_norm=5.0).fit(dask_rows(_data(n=5000), columns=2))
    assert 0 < seen.rows <= 1024  # a fit that gathered X would show 5000


def test_a_fit_makes_no_copy_of_float64_rows(copies_of_x):
    # Rows are scaled to data_norm block by block (bound_rows scaled a copy).
    X = _data(n=100_000, d=6) * 1.5
    assert copies_of_x(lambda A: DPPCA(data_norm=5.0).fit(A), X) < 0.5
