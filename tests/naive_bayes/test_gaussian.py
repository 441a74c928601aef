"""DPGaussianNB: sensitivities, noise calibration, budget and the sklearn contract."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from _data import dask_rows
from sklearn.base import clone
from sklearn.naive_bayes import GaussianNB

from skdp import PrivacyBudget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.naive_bayes import DPGaussianNB
from skdp.naive_bayes._gaussian import (
    class_statistics,
    epsilon_shares,
    plan_gaussian_nb,
)


def _data(n=2000, n_features=3, n_classes=2, seed=0):
    """Classes with different means, inside the bounds (-3, 4)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    X = np.clip(rng.normal(loc=y[:, None], scale=1.5, size=(n, n_features)), -3, 4)
    return X, y


def _private(**params):
    n_classes = params.pop("n_classes", 2)
    defaults = dict(bounds=(-3, 4), classes=list(range(n_classes)), random_state=0)
    return DPGaussianNB(**{**defaults, **params})


# ------------------------------------------------------------ sensitivities
@pytest.mark.parametrize("n_classes", [2, 3])
def test_stated_sensitivities_bound_every_replacement(n_classes):
    # Replace one row by every corner of the box with every label, and by
    # the centre: no change of the counts, sums or squares exceeds its
    # stated L1 sensitivity (the corners and the centre are the extremes of
    # |u| and u**2 in each coordinate).
    d = 3
    plan = plan_gaussian_nb(1.0, d, n_classes, 30)
    rng = np.random.default_rng(1)
    U = rng.uniform(-0.5, 0.5, size=(30, d))
    U[0], U[1], U[2] = 0.5, 0.0, -0.5  # rows at the extremes, to be replaced
    labels = rng.integers(0, n_classes, size=30)
    base = class_statistics(U, labels, n_classes)
    points = [np.array(c) for c in itertools.product([-0.5, 0.5], repeat=d)]
    points.append(np.zeros(d))
    worst = np.zeros(3)
    for row in (0, 1, 2):
        for point, label in itertools.product(points, range(n_classes)):
            U2, labels2 = U.copy(), labels.copy()
            U2[row], labels2[row] = point, label
            for slot, (a, b) in enumerate(
                zip(base, class_statistics(U2, labels2, n_classes), strict=True)
            ):
                worst[slot] = max(worst[slot], np.abs(a - b).sum())
    stated = (plan.count_noise.sensitivity, d, d / 4)
    assert plan.sum_noise.sensitivity == d and plan.square_noise.sensitivity == d / 4
    assert np.all(worst <= np.array(stated) + 1e-12)
    # ... and they are attained: the sensitivities are not loose.
    np.testing.assert_allclose(worst, stated, rtol=1e-12)


def test_shares_add_up_and_follow_the_cube_root_rule():
    for d, k in [(1, 2), (3, 3), (103, 2), (10, 1)]:
        shares = epsilon_shares(d, k)
        assert sum(shares) == pytest.approx(1.0, abs=1e-15)
        assert all(s >= 0 for s in shares)
        # sum : square = d : d / 16**(1/3) for weight 1
        assert shares[1] / shares[2] == pytest.approx(16 ** (1 / 3))
    assert epsilon_shares(5, 1)[0] == 0.0  # one class: the count is public
    plan = plan_gaussian_nb(0.7, 4, 3, 100)
    parts = (plan.count_noise, plan.sum_noise, plan.square_noise)
    assert sum(p.event.epsilon for p in parts) == pytest.approx(0.7, rel=1e-15)
    assert plan.event.events == tuple(p.event for p in parts)


# -------------------------------------------------------------- calibration
def _released_statistics(clf, width, middle):
    """Undo the post-processing: the noisy counts, sums and squares released."""
    counts = clf.class_count_
    mean = (clf.theta_ - middle) / width
    variance = (clf.var_ - clf.var_smoothing_) / width**2
    sums = counts[:, None] * mean
    squares = counts[:, None] * (variance + mean**2 - 0.125)
    return counts, sums, squares


def test_each_noisy_quantity_has_the_planned_laplace_scale():
    # 400 seeded fits on fixed data; no post-processing binds (counts near
    # 1000, means near the middle, variances far from both clips), so the
    # released statistics minus the exact ones are the noise itself.
    n_fits, d = 400, 3
    X, y = _data(2000, d)
    lower, upper = -3.0, 4.0
    width, middle = upper - lower, (upper + lower) / 2
    U = (X - middle) / width
    exact = class_statistics(U, y, 2)
    plan = plan_gaussian_nb(1.0, d, 2, 2000)
    errors = [[], [], []]
    for seed in range(n_fits):
        clf = _private(random_state=seed).fit(X, y)
        released = _released_statistics(clf, width, middle)
        errors[0].append(released[0][1] - exact[0][0])  # the released count
        errors[1].append((released[1] - exact[1]).ravel())
        errors[2].append((released[2] - exact[2]).ravel())
    for noise, plan_part in zip(
        errors, (plan.count_noise, plan.sum_noise, plan.square_noise), strict=True
    ):
        noise = np.concatenate([np.atleast_1d(e) for e in noise])
        scale = plan_part.scale * plan_part.gamma
        m = noise.size
        # Laplace(b): variance 2 b**2, kurtosis 6, so the sample variance
        # has relative standard deviation sqrt(5 / m) (0.11 for m = 400,
        # 0.046 for m = 2400); five of them is the tolerance. The mean has
        # standard deviation sqrt(2 / m) b.
        assert np.var(noise) / (2 * scale**2) == pytest.approx(
            1.0, abs=5 * np.sqrt(5 / m)
        )
        assert abs(np.mean(noise)) < 5 * np.sqrt(2 / m) * scale


# ------------------------------------------------------------------- budget
def test_fit_charges_the_plan_once():
    X, y = _data(500)
    budget = PrivacyBudget(epsilon=2.0)
    clf = _private(epsilon=0.8, budget=budget)
    plan = clf.privacy_plan(X, y)
    assert len(budget.ledger) == 0  # planning charges nothing
    clf.fit(X, y)
    assert len(budget.ledger) == 1 and budget.ledger[0] == clf.budget_entry_
    assert clf.privacy_event_ == plan.event.with_label(clf.privacy_event_.label)
    assert clf.epsilon_ == pytest.approx(0.8) and clf.delta_ == 0.0
    assert budget.spent()[0] == pytest.approx(0.8)


def test_refused_fit_leaves_no_model_no_record_and_draws_no_noise(monkeypatch):
    X, y = _data(500)
    budget = PrivacyBudget(epsilon=1.5)
    clf = _private(budget=budget).fit(X, y)

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn before the budget was charged")

    monkeypatch.setattr("skdp.utils._random.RandomSource.words", no_noise)
    with pytest.raises(BudgetExceededError):
        clf.fit(X, y)
    assert not hasattr(clf, "theta_") and not hasattr(clf, "classes_")
    assert not hasattr(clf, "epsilon_") and len(budget.ledger) == 1


def test_clone_shares_the_budget():
    X, y = _data(500)
    budget = PrivacyBudget(epsilon=3.0)
    clf = _private(budget=budget)
    copy = clone(clf)
    assert copy.budget is budget
    clf.fit(X, y)
    copy.fit(X, y)
    assert len(budget.ledger) == 2 and budget.spent()[0] == pytest.approx(2.0)


def test_bad_input_raises_before_the_charge():
    X, y = _data(300)
    budget = PrivacyBudget(epsilon=1.0)
    bad = [
        (dict(bounds=(1.0, 0.0)), "lower < upper"),
        (dict(bounds=(0.0, np.inf)), "finite"),
        (dict(bounds=(0.0, 1.0, 2.0)), "pair"),
        (dict(bounds=([0.0, 0.0], [1.0, 1.0])), "each of the 3 features"),
        (dict(bounds=(-1e200, 1e200)), "float64"),
        (dict(classes=[0, 2]), "not in classes"),
        (dict(priors=[0.5, 0.6]), "sum of the priors"),
        (dict(priors=[1.0]), "one entry per class"),
        (dict(epsilon=-1.0), "epsilon"),
    ]
    for params, match in bad:
        with pytest.raises(ValueError, match=match):
            _private(budget=budget, **params).fit(X, y)
    with pytest.raises(ValueError):
        _private(budget=budget).fit(X, y[:-1])
    assert len(budget.ledger) == 0 and budget.spent() == (0.0, 0.0)


# --------------------------------------------------------------- leakage
def test_data_derived_bounds_and_classes_warn_and_public_ones_do_not():
    X, y = _data(300)
    with pytest.warns(PrivacyLeakWarning, match="bounds was not given"):
        DPGaussianNB(classes=[0, 1], random_state=0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="classes was not given"):
        DPGaussianNB(bounds=(-3, 4), random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _private().fit(X, y)


def test_data_derived_bounds_of_a_constant_feature_are_widened():
    X, y = _data(300)
    X[:, 1] = 2.0
    with pytest.warns(PrivacyLeakWarning):
        clf = DPGaussianNB(classes=[0, 1], random_state=0).fit(X, y)
    assert clf.bounds_[0][1] == 1.5 and clf.bounds_[1][1] == 2.5


# ---------------------------------------------------- released attributes
def test_post_processing_keeps_every_attribute_in_range():
    # Tiny epsilon: the noise dwarfs the statistics, so every clip binds.
    X, y = _data(50, n_classes=3)
    for seed in range(20):
        clf = _private(epsilon=1e-3, n_classes=3, random_state=seed).fit(X, y)
        assert np.all(clf.class_count_ >= 1)
        assert clf.class_prior_.sum() == pytest.approx(1.0)
        assert np.all((clf.theta_ >= -3) & (clf.theta_ <= 4))
        variance = clf.var_ - clf.var_smoothing_
        assert np.all(variance > 0) and np.all(variance <= 3.5**2 * (1 + 1e-12))
        proba = clf.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_two_class_counts_add_up_to_n_and_public_priors_are_kept():
    X, y = _data(400)
    clf = _private(priors=[0.3, 0.7]).fit(X, y)
    assert clf.class_count_.sum() == 400
    np.testing.assert_array_equal(clf.class_prior_, [0.3, 0.7])


def test_one_class_releases_its_count_exactly():
    X, _ = _data(100)
    clf = _private(classes=[5]).fit(X, np.full(100, 5))
    assert clf.class_count_.tolist() == [100.0]
    assert clf.predict(X[:3]).tolist() == [5, 5, 5]


def test_values_outside_the_bounds_are_clipped():
    X, y = _data(500)
    inside = _private(random_state=3).fit(X, y)
    X_far = X.copy()
    X_far[X_far >= 4] = 1e6  # clipped back to 4
    far = _private(random_state=3).fit(X_far, y)
    np.testing.assert_array_equal(inside.theta_, far.theta_)


# ------------------------------------------------ reproducibility, accuracy
def test_seed_reproduces_the_fit_and_differs_across_seeds():
    X, y = _data(500)
    a = _private(random_state=7).fit(X, y)
    b = _private(random_state=7).fit(X, y)
    c = _private(random_state=8).fit(X, y)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    np.testing.assert_array_equal(a.var_, b.var_)
    assert not np.array_equal(a.theta_, c.theta_)


def test_large_epsilon_matches_sklearn():
    X, y = _data(3000, n_features=4, n_classes=3)
    X_test, y_test = _data(3000, n_features=4, n_classes=3, seed=1)
    private = _private(epsilon=1e4, n_classes=3, var_smoothing=1e-9).fit(X, y)
    exact = GaussianNB().fit(X, y)
    np.testing.assert_allclose(private.theta_, exact.theta_, atol=1e-2)
    np.testing.assert_allclose(private.var_, exact.var_, rtol=2e-2)
    assert abs(private.score(X_test, y_test) - exact.score(X_test, y_test)) < 0.01
    # At the default epsilon = 1 the model is still close on 3000 rows.
    default = _private(n_classes=3).fit(X, y)
    assert default.score(X_test, y_test) > exact.score(X_test, y_test) - 0.03


def test_predict_methods_agree():
    X, y = _data(500, n_classes=3)
    clf = _private(n_classes=3).fit(X, y)
    joint = clf.predict_joint_log_proba(X)
    np.testing.assert_allclose(
        clf.predict_log_proba(X), np.log(clf.predict_proba(X)), atol=1e-12
    )
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[joint.argmax(axis=1)])


def test_pickle_roundtrip_keeps_predictions():
    X, y = _data(300)
    clf = _private().fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


# ------------------------------------------------- one data path: dask input
@pytest.mark.parametrize("n_classes", [1, 2, 3])
def test_a_dask_fit_releases_the_in_memory_model_bitwise(
    n_classes, dask_sync, assert_same_fit
):
    # 5000 rows: five canonical blocks, added by the same tree either way;
    # the noise is drawn in the client in the same order.
    X, y = _data(5000, n_features=4, n_classes=n_classes)
    memory = _private(n_classes=n_classes, random_state=3).fit(X, y)
    on_dask = _private(n_classes=n_classes, random_state=3).fit(
        dask_rows(X, columns=2), dask_rows(y)
    )
    assert_same_fit(memory, on_dask)


def test_a_dask_dataframe_fit_releases_the_pandas_model(dask_sync, assert_same_fit):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = _data(5000, n_classes=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    labels = pd.Series(np.array(["x", "y", "z"], dtype=object)[y], dtype=object)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        memory = DPGaussianNB(bounds=(-3, 4), random_state=1).fit(frame, labels)
    import dask

    # Object labels stay objects (not dask's pyarrow strings, which it
    # warns it converts back).
    with dask.config.set({"dataframe.convert-string": False}):
        rows = dd.from_pandas(frame, npartitions=4)
        targets = dd.from_pandas(labels, npartitions=4)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        on_dask = DPGaussianNB(bounds=(-3, 4), random_state=1).fit(rows, targets)
    assert_same_fit(memory, on_dask)
    assert on_dask.feature_names_in_.tolist() == ["a", "b", "c"]


def _bad_inputs(n=5000):
    X, y = _data(n)
    nan, inf, text = X.copy(), X.copy(), X.astype(object)
    nan[4321, 1], inf[4321, 2], text[4321, 0] = np.nan, -np.inf, "forty-two"
    y_nan = y.astype(float)
    y_nan[4999] = np.nan
    y_other = y.copy()
    y_other[4999] = 7
    return {
        "X NaN": (nan, y, {}),
        "X infinity": (inf, y, {}),
        "X text": (text, y, {}),
        "y NaN": (X, y_nan, {}),
        "y outside classes": (X, y_other, {}),
        "y continuous": (X, y + 0.5, {"classes": None}),
        "one class read": (X, np.zeros(n, dtype=int), {"classes": None}),
        "n_samples differ": (X, y[:-1], {}),
    }


@pytest.mark.parametrize("case", sorted(_bad_inputs()))
def test_dask_input_is_refused_like_memory_input(case, dask_sync, assert_same_refusal):
    X, y, params = _bad_inputs()[case]

    def fit(data, budget):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            _private(budget=budget, **params).fit(*data)

    assert_same_refusal(fit, (X, y), (dask_rows(X, columns=2), dask_rows(y)))


def test_dask_input_needs_declared_bounds(dask_sync):
    X, y = _data(5000)
    with pytest.raises(ValueError, match="needs declared bounds"):
        DPGaussianNB(classes=[0, 1]).fit(dask_rows(X, columns=2), dask_rows(y))


def test_a_dask_fit_never_gathers_the_rows(dask_sync, largest_task_rows):
    # Validation and statistics run block by block: no task returns more
    # rows than a chunk or a canonical block (a fit that converted the
    # dask array with np.asarray would show all 5000).
    X, y = _data(5000)
    with largest_task_rows() as seen:
        _private().fit(dask_rows(X, columns=2), dask_rows(y))
    assert 0 < seen.rows <= 1024


def test_a_fit_makes_no_copy_of_float64_rows(copies_of_x):
    # Each block is clipped and normalised where it is: the fit's temporary
    # memory is a few blocks (1024 rows), not the normalised copy of X the
    # whole-array fit made (2.4 copies at this size).
    X, y = _data(100_000, n_features=10)
    used = copies_of_x(lambda A: _private().fit(A, y[: len(A)]), X)
    assert used < 0.5
