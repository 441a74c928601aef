"""The linear models on dask arrays and DataFrames (skdp/linear_model/_dask.py).

Fits on a dask collection plan and charge once in the client and sum over
row blocks on the workers; 'objective', 'output' (and 'adassp') release the
same model as the in-memory fit with the same seed, 'gradient' runs
full-batch noisy gradient descent.
"""

import math
import warnings

import numpy as np
import pytest

from skdp import PrivacyBudget
from skdp.accounting import PrivacyAccountant
from skdp.accounting._analytic_gaussian import gaussian_noise_multiplier
from skdp.exceptions import ChargedFitError, PrivacyLeakWarning
from skdp.linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from skdp.linear_model._dask import (
    FULL_BATCH_GD,
    plan_full_batch_gd,
    run_full_batch_gd,
)
from skdp.mechanisms import add_noise
from skdp.utils import check_random_source

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N, D, CHUNK = 2000, 5, 500


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    score = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=N)
    y2 = (score > 0).astype(int)
    y3 = np.digitize(score, [-0.3, 0.3])
    yr = X @ np.arange(1.0, D + 1) + 0.1 * rng.normal(size=N)
    return X, y2, y3, yr


X, Y2, Y3, YR = _data()


def _dask(a):
    return da.from_array(a, chunks=CHUNK)


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


CASES = [
    (DPLogisticRegression, Y2, {"classes": [0, 1]}),
    (DPLogisticRegression, Y3, {"classes": [0, 1, 2]}),
    (DPLinearSVC, Y2, {"classes": [0, 1]}),
    (DPLinearSVC, Y3, {"classes": [0, 1, 2]}),
    (DPLinearRegression, YR, {"y_bounds": (-5, 5)}),
]


def _fit_both(Estimator, y, params, **fit_params):
    memory = Estimator(data_norm=1.0, random_state=7, **params, **fit_params)
    distributed = Estimator(data_norm=1.0, random_state=7, **params, **fit_params)
    return memory.fit(X, y), distributed.fit(_dask(X), _dask(y))


@pytest.mark.parametrize("Estimator, y, params", CASES)
@pytest.mark.parametrize("method", ["objective", "output"])
@pytest.mark.parametrize("delta", [None, 1e-5])
def test_exact_methods_release_the_in_memory_model(Estimator, y, params, method, delta):
    # Same seed, same noise (drawn in the client in the same order); the
    # solver runs on the same sums, up to their order of addition: equal to
    # the certified solver's residual (far below 1e-8 here).
    memory, dasked = _fit_both(Estimator, y, params, method=method, delta=delta)
    np.testing.assert_allclose(dasked.coef_, memory.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(dasked.intercept_, memory.intercept_, rtol=0, atol=1e-8)
    assert dasked.privacy_event_ == memory.privacy_event_
    assert dasked.n_iter_ == pytest.approx(memory.n_iter_)


def test_adassp_releases_the_in_memory_model():
    memory, dasked = _fit_both(
        DPLinearRegression, YR, {"y_bounds": (-5, 5)}, method="adassp"
    )
    np.testing.assert_allclose(dasked.coef_, memory.coef_, rtol=0, atol=1e-8)


def test_distributed_client_gives_the_same_models(client):
    for method in ("objective", "output"):
        memory, dasked = _fit_both(
            DPLogisticRegression, Y3, {"classes": [0, 1, 2]}, method=method
        )
        np.testing.assert_allclose(dasked.coef_, memory.coef_, rtol=0, atol=1e-8)
    reg = DPLinearSVC(
        method="gradient", data_norm=1.0, classes=[0, 1], max_iter=30, random_state=0
    )
    reg.fit(_dask(X), _dask(Y2))
    assert reg.gradient_variant_ == FULL_BATCH_GD
    assert reg.score(X, Y2) > 0.9


def test_dataframe_input_sets_feature_names_and_matches_the_array():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    X_frame = dd.from_pandas(frame, npartitions=3)
    y_frame = dd.from_pandas(pd.Series(Y2), npartitions=3)
    params = dict(method="objective", data_norm=1.0, classes=[0, 1], random_state=1)
    from_frame = DPLogisticRegression(**params).fit(X_frame, y_frame)
    from_memory = DPLogisticRegression(**params).fit(frame, Y2)
    np.testing.assert_allclose(from_frame.coef_, from_memory.coef_, atol=1e-8)
    assert list(from_frame.feature_names_in_) == list(frame.columns)
    assert from_frame.n_features_in_ == D
    assert from_frame.score(frame, Y2) > 0.9


def test_string_labels_on_dask():
    labels = np.array(["no", "yes"], dtype=object)[Y2]
    params = dict(
        method="objective", data_norm=1.0, classes=["no", "yes"], random_state=1
    )
    memory = DPLogisticRegression(**params).fit(X, labels)
    dasked = DPLogisticRegression(**params).fit(_dask(X), _dask(labels))
    np.testing.assert_allclose(dasked.coef_, memory.coef_, atol=1e-8)
    assert list(dasked.classes_) == ["no", "yes"]


# --------------------------------------------------------- budget contract
def test_a_dask_fit_charges_its_event_exactly_once():
    budget = PrivacyBudget(epsilon=5.0, delta=1e-4)
    for method in ("objective", "gradient"):
        clf = DPLogisticRegression(
            epsilon=1.0,
            max_iter=10,
            method=method,
            data_norm=1.0,
            classes=[0, 1],
            budget=budget,
            random_state=0,
        )
        before = len(budget.ledger)
        clf.fit(_dask(X), _dask(Y2))
        assert len(budget.ledger) == before + 1
        assert budget.ledger[-1].event == clf.privacy_event_
        assert clf.budget_entry_ == budget.ledger[-1]
    # A clone shares the budget (it is a parameter, not copied).
    from sklearn.base import clone

    assert clone(clf).budget is budget


def test_refused_charge_leaves_no_model_and_no_record():
    budget = PrivacyBudget(epsilon=0.5)
    clf = DPLogisticRegression(
        epsilon=1.0, method="objective", data_norm=1.0, classes=[0, 1], budget=budget
    )
    from skdp.exceptions import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        clf.fit(_dask(X), _dask(Y2))
    assert budget.ledger == []
    assert not hasattr(clf, "coef_")


@pytest.mark.parametrize(
    "X_bad, y_bad, params, match",
    [
        (np.where(np.arange(N)[:, None] == 1500, np.nan, X), Y2, {}, "NaN or infinity"),
        (X, np.where(np.arange(N) == 1999, 5, Y2), {}, "not in classes"),
    ],
)
def test_bad_input_raises_before_the_charge(X_bad, y_bad, params, match):
    budget = PrivacyBudget(epsilon=5.0)
    clf = DPLogisticRegression(
        method="objective", data_norm=1.0, classes=[0, 1], budget=budget, **params
    )
    with pytest.raises(ValueError, match=match):
        clf.fit(_dask(X_bad), _dask(y_bad))
    assert budget.spent() == (0.0, 0.0)


def test_non_numeric_dask_x_is_refused_from_metadata():
    clf = DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1])
    with pytest.raises(ValueError, match="numeric X"):
        clf.fit(_dask(X.astype(str)), _dask(Y2))


_FAILURES = {"left": 0}


def _fails_after_validation(block):
    # The validation pass reads each of the 4 blocks once; later reads fail.
    _FAILURES["left"] -= 1
    if _FAILURES["left"] < 0:
        raise OSError("worker lost")
    return block


def test_a_worker_failure_after_the_charge_keeps_the_spend():
    budget = PrivacyBudget(epsilon=5.0)
    X_flaky = _dask(X).map_blocks(_fails_after_validation, meta=np.empty((0, 0)))
    _FAILURES["left"] = N // CHUNK
    clf = DPLogisticRegression(
        method="objective", data_norm=1.0, classes=[0, 1], budget=budget
    )
    with pytest.raises(ChargedFitError, match="the spend stands"):
        clf.fit(X_flaky, _dask(Y2))
    assert budget.spent()[0] == pytest.approx(1.0)
    assert not hasattr(clf, "coef_")


# ------------------------------------------------------ data-derived bounds
def test_omitted_bounds_warn_and_match_the_in_memory_fit():
    for Estimator, y, params in (
        (DPLogisticRegression, Y3, {}),
        (DPLinearRegression, YR, {}),
    ):
        with pytest.warns(PrivacyLeakWarning) as memory_warnings:
            memory = Estimator(method="objective", random_state=2, **params).fit(X, y)
        with pytest.warns(PrivacyLeakWarning) as dask_warnings:
            dasked = Estimator(method="objective", random_state=2, **params)
            dasked.fit(_dask(X), _dask(y))
        assert len(dask_warnings) == len(memory_warnings) == 2
        assert dasked.data_norm_ == pytest.approx(memory.data_norm_)
        np.testing.assert_allclose(dasked.coef_, memory.coef_, atol=1e-8)


def test_declared_bounds_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPLogisticRegression(
            method="gradient", data_norm=1.0, classes=[0, 1, 2], max_iter=5
        ).fit(_dask(X), _dask(Y3))
        DPLinearRegression(
            method="objective", data_norm=1.0, y_bounds=(-5, 5), random_state=0
        ).fit(_dask(X), _dask(YR))


# --------------------------------------------------- full-batch gradient descent
def test_full_batch_noise_is_calibrated():
    epsilon, delta, steps = 1.0, 1e-5, 10
    plan = plan_full_batch_gd(
        epsilon=epsilon,
        delta=delta,
        C=1.0,
        n_samples=N,
        n_features=D,
        n_models=1,
        row_norm=1.0,
        steps=steps,
        learning_rate=None,
        max_grad_norm=0.5,
    )
    # T Gaussian mechanisms of multiplier s compose to one of s / sqrt(T):
    # s is sqrt(T) times the analytic Gaussian multiplier, a hair above
    # (the calibration errs towards more noise, relative tolerance 1e-6).
    single = gaussian_noise_multiplier(epsilon, delta)
    assert plan.noise_multiplier / math.sqrt(steps) == pytest.approx(single, rel=1e-4)
    assert plan.noise_multiplier / math.sqrt(steps) >= single * (1 - 1e-9)
    spent, _ = PrivacyAccountant().epsilon_delta([plan.event], delta)
    assert spent <= epsilon and spent == pytest.approx(epsilon, rel=1e-4)
    # Sensitivity 2 c under replace-one: the standard deviation is at least
    # s * 2 c (plus the grid's rounding allowance, sqrt(d) gamma).
    assert plan.noise_std >= plan.noise_multiplier * 2 * 0.5
    assert plan.noise_std == pytest.approx(plan.noise_multiplier * 2 * 0.5, rel=1e-3)

    # Empirical: on all-zero rows the clipped sum is 0, so one step with
    # learning rate 1 from W = 0 releases W = -noise / n. 400 seeds x 6
    # coordinates: the sample standard deviation has relative standard
    # error 1 / sqrt(2 * 2400) = 1.4%; 5 standard errors is 7.2%.
    one_step = plan_full_batch_gd(
        epsilon=epsilon,
        delta=delta,
        C=1.0,
        n_samples=N,
        n_features=D + 1,
        n_models=1,
        row_norm=1.0,
        steps=1,
        learning_rate=1.0,
        max_grad_norm=0.5,
    )
    zeros = (np.zeros((N, D + 1)), -np.ones((N, 1)))
    draws = np.concatenate(
        [
            -N * run_full_batch_gd(zeros, one_step, check_random_source(seed)).ravel()
            for seed in range(400)
        ]
    )
    assert abs(draws.std() / one_step.noise_std - 1) < 0.072
    assert abs(draws.mean()) < 5 * one_step.noise_std / math.sqrt(draws.size)


def test_full_batch_noise_carries_the_largest_clipped_sum():
    """A step's sum over 10**7 rows, up to n c per coordinate, is not clipped.

    At epsilon 10 over 100 steps the default grid (about 2**-32 of the noise
    sd) carries only about 2**18 noise sds, fewer than the n c = 10**7 c of
    10**7 rows whose clipped gradients agree (every row alike, at W = 0).
    """
    n = 10**7
    plan = plan_full_batch_gd(
        epsilon=10.0,
        delta=1e-5,
        C=1.0,
        n_samples=n,
        n_features=D,
        n_models=1,
        row_norm=1.0,
        steps=100,
        learning_rate=None,
        max_grad_norm=None,
    )
    largest = n * plan.max_grad_norm  # each row adds at most c per coordinate
    value = np.zeros(D)
    value[0], value[1] = largest, -largest / 3
    noisy = add_noise(plan.noise, value, check_random_source(0))
    # 6 sd: two-sided normal tail 2e-9 (the discrete Gaussian's is lighter).
    np.testing.assert_array_less(np.abs(noisy - value), 6 * plan.noise_std)


def test_full_batch_gd_is_what_runs_and_is_recorded():
    clf = DPLogisticRegression(
        epsilon=1.0, method="gradient", data_norm=1.0, classes=[0, 1], random_state=0
    ).fit(_dask(X), _dask(Y2))
    assert clf.gradient_variant_ == FULL_BATCH_GD
    assert clf.sampling_rate_ == 1.0
    assert clf.n_steps_ == clf.max_iter == 100
    assert clf.privacy_event_.count == 100
    assert clf.epsilon_ == pytest.approx(1.0, rel=1e-4) and clf.epsilon_ <= 1.0
    memory = DPLogisticRegression(
        method="gradient", data_norm=1.0, classes=[0, 1], batch_size=N, epochs=1
    ).fit(X, Y2)
    assert memory.gradient_variant_ == "dpsgd"
    # Accuracy sanity: near the non-private fit (0.95 here).
    assert clf.score(X, Y2) > 0.92


def test_full_batch_gd_on_dask_matches_its_in_memory_run():
    clf = DPLinearRegression(
        epsilon=2.0,
        method="gradient",
        data_norm=1.0,
        y_bounds=(-5, 5),
        max_iter=20,
        random_state=4,
    ).fit(_dask(X), _dask(YR))
    plan = clf.privacy_plan(_dask(X), _dask(YR)).settings["method"]
    Z = np.hstack([X, np.full((N, 1), 0.5)])
    t = np.clip(YR / 5.0, -1, 1)[:, None]
    W = run_full_batch_gd((Z, t), plan, check_random_source(4))
    np.testing.assert_allclose(clf.coef_, 5.0 * W[0, :D], atol=1e-8)


def test_seed_reproducibility():
    params = dict(method="gradient", data_norm=1.0, classes=[0, 1], max_iter=20)
    a = DPLinearSVC(random_state=3, **params)
    b = DPLinearSVC(random_state=3, **params)
    a.fit(_dask(X), _dask(Y2))
    b.fit(_dask(X), _dask(Y2))
    np.testing.assert_array_equal(a.coef_, b.coef_)
