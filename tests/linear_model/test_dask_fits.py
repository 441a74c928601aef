"""The linear models on dask arrays and DataFrames: one data path.

A fit reads its rows through a row source (skdp/utils/_row_source.py) in
memory and on dask alike, plans from public parameters only (the gradient
method's mechanism, DP-SGD or full-batch gradient descent, follows
``batch_size``, never the backend) and draws all randomness in the client:
with the same ``random_state`` every method releases bitwise the same model
from a NumPy array and from a dask collection.
"""

import math
import warnings

import numpy as np
import pytest
from _data import clip_rows, dask_rows

from skdp import PrivacyBudget
from skdp.accounting import PrivacyAccountant
from skdp.accounting._analytic_gaussian import gaussian_noise_multiplier
from skdp.exceptions import ChargedFitError, PrivacyLeakWarning
from skdp.linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from skdp.linear_model._full_batch import (
    FULL_BATCH_GD,
    plan_full_batch_gd,
    run_full_batch_gd,
)
from skdp.linear_model._rows import RowSpec
from skdp.mechanisms import add_noise
from skdp.utils import check_random_source
from skdp.utils._row_source import row_source

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N, D, CHUNK = 2000, 5, 500


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X = clip_rows(X)
    X[::97] *= 3.0  # rows the bound scales down (inside the block functions)
    score = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=N)
    y2 = (score > 0).astype(int)
    y3 = np.digitize(score, [-0.3, 0.3])
    yr = X @ np.arange(1.0, D + 1) + 0.1 * rng.normal(size=N)
    return X, y2, y3, yr


X, Y2, Y3, YR = _data()


pytestmark = pytest.mark.usefixtures("dask_sync")


CASES = [
    (DPLogisticRegression, Y2, {"classes": [0, 1]}),
    (DPLogisticRegression, Y3, {"classes": [0, 1, 2]}),
    (DPLinearSVC, Y2, {"classes": [0, 1]}),
    (DPLinearSVC, Y3, {"classes": [0, 1, 2]}),
    (DPLinearRegression, YR, {"y_bounds": (-5, 5)}),
]
CASE_IDS = ["logistic-2", "logistic-3", "svc-2", "svc-3", "regression"]

#: Every method, the gradient method's two mechanisms apart (DP-SGD with a
#: few steps: on dask each step is one pass of tasks).
METHODS = {
    "objective": {"method": "objective"},
    "output": {"method": "output"},
    "objective-gaussian": {"method": "objective", "delta": 1e-5},
    "output-gaussian": {"method": "output", "delta": 1e-5},
    "dpsgd": {"method": "gradient", "batch_size": 400, "epochs": 2},
    "full-batch": {"method": "gradient", "batch_size": "full", "epochs": 15},
}


def _fit_both(Estimator, y, params, chunks=CHUNK, **method):
    memory = Estimator(data_norm=1.0, random_state=7, **params, **method)
    on_dask = Estimator(data_norm=1.0, random_state=7, **params, **method)
    return memory.fit(X, y), on_dask.fit(dask_rows(X, chunks), dask_rows(y, chunks))


def _assert_same_model(a, b):
    assert np.array_equal(a.coef_, b.coef_)
    assert np.array_equal(a.intercept_, b.intercept_)
    assert a.privacy_event_ == b.privacy_event_
    assert np.array_equal(a.n_iter_, b.n_iter_)


@pytest.mark.parametrize("Estimator, y, params", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_releases_the_in_memory_model(Estimator, y, params, method):
    # Same seed: the same subsamples and noise (drawn in the client in the
    # same order) and bitwise the same sums (the same block functions on
    # the same canonical blocks, added by the same tree): the same model.
    memory, on_dask = _fit_both(Estimator, y, params, **METHODS[method])
    _assert_same_model(memory, on_dask)
    if method in ("dpsgd", "full-batch"):
        assert on_dask.gradient_variant_ == memory.gradient_variant_
        assert on_dask.n_steps_ == memory.n_steps_


def test_adassp_releases_the_in_memory_model():
    memory, on_dask = _fit_both(
        DPLinearRegression, YR, {"y_bounds": (-5, 5)}, method="adassp"
    )
    _assert_same_model(memory, on_dask)


@pytest.mark.parametrize("chunks", [97, 1024, 2000, (1, 999, 0, 1000)])
def test_the_dask_chunking_does_not_change_the_model(chunks):
    # The row source rechunks to canonical blocks (public: a function of n),
    # empty chunks included, so the model does not depend on the chunking.
    for method in ("objective", "dpsgd"):
        memory, on_dask = _fit_both(
            DPLogisticRegression, Y3, {"classes": [0, 1, 2]}, chunks, **METHODS[method]
        )
        _assert_same_model(memory, on_dask)


@pytest.mark.slow
def test_a_distributed_cluster_releases_the_in_memory_model():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    try:
        with distributed.Client(cluster):
            with dask.config.set(scheduler="distributed"):
                for Estimator, y, params in CASES[1::2]:
                    for method in ("objective", "output", "dpsgd", "full-batch"):
                        memory, on_dask = _fit_both(
                            Estimator, y, params, **METHODS[method]
                        )
                        _assert_same_model(memory, on_dask)
                memory, on_dask = _fit_both(
                    DPLinearRegression, YR, {"y_bounds": (-5, 5)}, method="adassp"
                )
                _assert_same_model(memory, on_dask)
    finally:
        cluster.close()


def test_dataframe_input_sets_feature_names_and_matches_the_array():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    X_frame = dd.from_pandas(frame, npartitions=3)
    y_frame = dd.from_pandas(pd.Series(Y2), npartitions=3)
    params = dict(method="objective", data_norm=1.0, classes=[0, 1], random_state=1)
    from_frame = DPLogisticRegression(**params).fit(X_frame, y_frame)
    from_memory = DPLogisticRegression(**params).fit(frame, Y2)
    assert np.array_equal(from_frame.coef_, from_memory.coef_)
    assert list(from_frame.feature_names_in_) == list(frame.columns)
    assert from_frame.n_features_in_ == D
    assert from_frame.score(frame, Y2) > 0.9


def test_string_labels_on_dask():
    labels = np.array(["no", "yes"], dtype=object)[Y2]
    for method in (METHODS["objective"], METHODS["dpsgd"]):
        params = dict(data_norm=1.0, classes=["no", "yes"], random_state=1, **method)
        memory = DPLogisticRegression(**params).fit(X, labels)
        on_dask = DPLogisticRegression(**params).fit(
            dask_rows(X, CHUNK), dask_rows(labels, CHUNK)
        )
        assert np.array_equal(on_dask.coef_, memory.coef_)
        assert list(on_dask.classes_) == ["no", "yes"]


# --------------------------------------------------------- budget contract
def test_a_dask_fit_charges_its_event_exactly_once():
    budget = PrivacyBudget(epsilon=5.0, delta=1e-4)
    for method in (METHODS["objective"], METHODS["full-batch"], METHODS["dpsgd"]):
        clf = DPLogisticRegression(
            epsilon=1.0,
            data_norm=1.0,
            classes=[0, 1],
            budget=budget,
            random_state=0,
            **method,
        )
        before = len(budget.ledger)
        clf.fit(dask_rows(X, CHUNK), dask_rows(Y2, CHUNK))
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
        clf.fit(dask_rows(X, CHUNK), dask_rows(Y2, CHUNK))
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
        clf.fit(dask_rows(X_bad, CHUNK), dask_rows(y_bad, CHUNK))
    assert budget.spent() == (0.0, 0.0)


def test_non_numeric_dask_x_is_refused_from_metadata():
    clf = DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1])
    with pytest.raises(ValueError, match="numeric X"):
        clf.fit(dask_rows(X.astype(str), CHUNK), dask_rows(Y2, CHUNK))


_FAILURES = {"left": 0}


def _fails_after_validation(block):
    # The validation pass reads each of the 4 blocks once; later reads fail.
    _FAILURES["left"] -= 1
    if _FAILURES["left"] < 0:
        raise OSError("worker lost")
    return block


def test_a_worker_failure_after_the_charge_keeps_the_spend():
    budget = PrivacyBudget(epsilon=5.0)
    X_flaky = dask_rows(X, CHUNK).map_blocks(
        _fails_after_validation, meta=np.empty((0, 0))
    )
    _FAILURES["left"] = N // CHUNK
    clf = DPLogisticRegression(
        method="objective", data_norm=1.0, classes=[0, 1], budget=budget
    )
    with pytest.raises(ChargedFitError, match="the spend stands"):
        clf.fit(X_flaky, dask_rows(Y2, CHUNK))
    assert budget.spent()[0] == pytest.approx(1.0)
    assert not hasattr(clf, "coef_")


# ------------------------------------------------------ data-derived bounds
def test_omitted_bounds_warn_and_match_the_in_memory_fit():
    for Estimator, y in ((DPLogisticRegression, Y3), (DPLinearRegression, YR)):
        with pytest.warns(PrivacyLeakWarning) as memory_warnings:
            memory = Estimator(method="objective", random_state=2).fit(X, y)
        with pytest.warns(PrivacyLeakWarning) as dask_warnings:
            on_dask = Estimator(method="objective", random_state=2)
            on_dask.fit(dask_rows(X, CHUNK), dask_rows(y, CHUNK))
        assert len(dask_warnings) == len(memory_warnings) == 2
        assert on_dask.data_norm_ == memory.data_norm_
        assert np.array_equal(on_dask.coef_, memory.coef_)


def test_declared_bounds_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPLogisticRegression(
            method="gradient",
            batch_size="full",
            epochs=5,
            data_norm=1.0,
            classes=[0, 1, 2],
        ).fit(dask_rows(X, CHUNK), dask_rows(Y3, CHUNK))
        DPLinearRegression(
            method="objective", data_norm=1.0, y_bounds=(-5, 5), random_state=0
        ).fit(dask_rows(X, CHUNK), dask_rows(YR, CHUNK))


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
    # DP-SGD at rate 1: T Gaussian mechanisms of sensitivity 2 c and
    # standard deviation s c, which compose to one of multiplier
    # s / (2 sqrt(T)) against 2 c: that is the analytic Gaussian
    # multiplier, a hair above (the calibration errs towards more noise and
    # leaves room for the grid's lattice shift).
    assert type(plan.event).__name__ == "PoissonSubsampledDiscreteGaussianEvent"
    assert plan.event.sampling_rate == 1.0 and plan.event.steps == steps
    single = gaussian_noise_multiplier(epsilon, delta)
    merged = plan.noise_multiplier / (2 * math.sqrt(steps))
    assert merged == pytest.approx(single, rel=1e-3)
    assert merged >= single * (1 - 1e-9)
    spent, _ = PrivacyAccountant().epsilon_delta([plan.event], delta)
    assert spent <= epsilon and spent == pytest.approx(epsilon, rel=1e-3)
    # The standard deviation is s c (plus the grid's rounding allowance,
    # sqrt(d) gamma).
    assert plan.noise_std >= plan.noise_multiplier * 0.5
    assert plan.noise_std == pytest.approx(plan.noise_multiplier * 0.5, rel=1e-3)

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
    rows = row_source(np.zeros((N, D + 1)), -np.ones((N, 1)))
    spec = RowSpec(n_features=D + 1)
    draws = np.concatenate(
        [
            -N * run_full_batch_gd(rows, spec, one_step, check_random_source(s)).ravel()
            for s in range(400)
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


@pytest.mark.parametrize("on_dask", [False, True], ids=["memory", "dask"])
def test_the_plan_chooses_the_gradient_mechanism_from_batch_size(on_dask):
    data = (dask_rows(X, CHUNK), dask_rows(Y2, CHUNK)) if on_dask else (X, Y2)
    params = dict(method="gradient", data_norm=1.0, classes=[0, 1], random_state=0)
    full = DPLogisticRegression(batch_size="full", epochs=100, **params).fit(*data)
    assert full.gradient_variant_ == FULL_BATCH_GD
    assert full.sampling_rate_ == 1.0
    assert full.n_steps_ == full.privacy_event_.steps == 100
    assert full.epsilon_ == pytest.approx(1.0, rel=1e-4) and full.epsilon_ <= 1.0
    assert full.score(X, Y2) > 0.92  # the non-private fit's is 0.95
    # A batch as large as the data samples every row: full-batch as well.
    as_large = DPLogisticRegression(batch_size=N, epochs=3, **params).fit(*data)
    assert as_large.gradient_variant_ == FULL_BATCH_GD and as_large.n_steps_ == 3
    # A smaller batch: Poisson-subsampled DP-SGD, on either backend.
    sgd = DPLogisticRegression(batch_size=500, epochs=2, **params).fit(*data)
    assert sgd.gradient_variant_ == "dpsgd"
    assert sgd.sampling_rate_ == 0.25 and sgd.n_steps_ == 8
    assert type(sgd.privacy_event_).__name__ == "PoissonSubsampledDiscreteGaussianEvent"


def test_full_batch_gd_on_dask_matches_its_run_on_the_bounded_rows():
    clf = DPLinearRegression(
        epsilon=2.0,
        method="gradient",
        batch_size="full",
        epochs=20,
        data_norm=1.0,
        y_bounds=(-5, 5),
        random_state=4,
    ).fit(dask_rows(X, CHUNK), dask_rows(YR, CHUNK))
    plan = clf.privacy_plan(dask_rows(X, CHUNK), dask_rows(YR, CHUNK)).settings[
        "method"
    ]
    # The same run on rows bounded by hand: the block functions bound them.
    Z = clip_rows(X)
    Z = np.hstack([Z, np.full((N, 1), 0.5)])
    t = np.clip(YR / 5.0, -1, 1)[:, None]
    W = run_full_batch_gd(
        row_source(Z, t), RowSpec(n_features=D + 1), plan, check_random_source(4)
    )
    np.testing.assert_allclose(clf.coef_, 5.0 * W[0, :D], rtol=0, atol=1e-9)


def test_dpsgd_on_dask_reads_only_the_blocks_with_sampled_rows(monkeypatch):
    # 3 blocks of 1024 rows; rows sampled from blocks 0 and 2 only: block 1
    # gets no task, and the chunk's sum is the in-memory one.
    import skdp.utils._row_source as module
    from skdp.linear_model._dpsgd import clipped_rows_sum
    from skdp.utils._row_source import DaskRowSource

    taken = []
    take = module._take_rows

    def counting(X, y, chosen):
        taken.append(chosen.tolist())
        return take(X, y, chosen)

    monkeypatch.setattr(module, "_take_rows", counting)
    rng = np.random.default_rng(0)
    big = rng.normal(size=(3000, 3))
    rows = row_source(dask_rows(big, 600), dask_rows(np.ones(3000), 600))
    assert isinstance(rows, DaskRowSource) and rows.n_blocks == 3
    spec = RowSpec(data_norm=1.0, intercept=0.5, bounds=(-2.0, 2.0), n_features=3)
    W = rng.normal(size=(1, 4))
    chosen = np.array([5, 17, 2500])
    total = rows.subsample_sum(clipped_rows_sum, chosen, spec, W, 0.3, None)
    assert sorted(taken) == [[5, 17], [452]]  # 2500 is row 452 of block 2
    memory = row_source(big, np.ones(3000)).subsample_sum(
        clipped_rows_sum, chosen, spec, W, 0.3, None
    )
    assert np.array_equal(total, memory)


def test_seed_reproducibility():
    params = dict(method="gradient", data_norm=1.0, classes=[0, 1], batch_size=500)
    a = DPLinearSVC(random_state=3, epochs=1, **params)
    b = DPLinearSVC(random_state=3, epochs=1, **params)
    a.fit(dask_rows(X, CHUNK), dask_rows(Y2, CHUNK))
    b.fit(dask_rows(X, CHUNK), dask_rows(Y2, CHUNK))
    np.testing.assert_array_equal(a.coef_, b.coef_)
