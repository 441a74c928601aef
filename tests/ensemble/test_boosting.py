"""DPHistGradientBoostingClassifier and Regressor: the plan, the model, accuracy.

The privacy side (noise calibration, sensitivities, refusals) is in
test_ensemble_privacy.py; this module checks what the fitted model is:
its prediction methods agree with each other, the stages end at the
model, the released attributes have their documented meaning, and the
accuracy is what the noise allows (fixed seeds, wide margins: the values
in the comments are those of the seeds used).
"""

import math
import pickle

import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skdp import PrivacyBudget
from skdp.accounting import DEFAULT_DELTA
from skdp.accounting._analytic_gaussian import gaussian_noise_multiplier
from skdp.ensemble import (
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    _boosting,
)
from skdp.ensemble._binning import FINE_CELLS, auto_bins, encode_block


def _classifier(**params):
    return DPHistGradientBoostingClassifier(
        **{"bounds": (0, 1), "classes": [0, 1], "random_state": 0, **params}
    )


def _regressor(**params):
    return DPHistGradientBoostingRegressor(
        **{"bounds": (0, 1), "y_bounds": (-1, 4), "random_state": 0, **params}
    )


# ------------------------------------------------------------------- the plan
def test_auto_bins_and_l2_come_from_public_quantities(classification_data):
    X, y = classification_data(3000, n_features=4)
    clf = _classifier(epsilon=0.5, max_iter=6)
    plan = clf.privacy_plan(X, y).settings["boosting"]
    mu = 1.0 / gaussian_noise_multiplier(0.5, DEFAULT_DELTA)
    assert plan.schema.n_bins == auto_bins(3000, 4, mu, 6, 32)
    # l2="auto": four standard deviations of each round's gradient-sum
    # noise, plus one.
    for noise, l2 in zip(plan.gradient_noise, plan.l2, strict=True):
        assert l2 == pytest.approx(4 * noise.scale * noise.gamma + 1, rel=1e-12)
    fixed = _classifier(l2_regularization=2.5, max_bins=7).privacy_plan(X, y)
    fixed = fixed.settings["boosting"]
    assert fixed.l2 == (2.5,) * 4 and fixed.schema.n_bins == 7
    assert fixed.curvature == 0.25 and fixed.clip == 1.0 and fixed.outputs == 1


def test_losses_set_outputs_clip_and_curvature(classification_data, regression_data):
    X, y3 = classification_data(500, n_classes=3)
    plan = _classifier(classes=[0, 1, 2]).privacy_plan(X, y3).settings["boosting"]
    assert (plan.outputs, plan.curvature) == (3, 0.5)
    X, y = regression_data(500)
    plan = _regressor().privacy_plan(X, y).settings["boosting"]
    # The residuals are clipped to a quarter of the declared target range.
    assert (plan.outputs, plan.curvature, plan.clip) == (1, 1.0, 0.25 * 5)


def test_more_rounds_or_features_mean_more_noise_per_round(classification_data):
    X, y = classification_data(2000, n_features=3)

    def sigma(**params):
        noise = _classifier(max_bins=8, **params).privacy_plan(X, y)
        noise = noise.settings["boosting"].gradient_noise[0]
        return noise.scale * noise.gamma

    # The rounds share a fixed part of one Gaussian budget: the variance of a
    # round's noise grows about linearly in the number of rounds.
    ratio = (sigma(max_iter=16) / sigma(max_iter=4)) ** 2
    assert ratio == pytest.approx(4.0, rel=0.05)
    assert sigma(epsilon=4.0) < sigma(epsilon=1.0)


# ------------------------------------------------------------------ the model
def test_prediction_methods_agree_binary(classification_data):
    X, y = classification_data(2000)
    clf = _classifier().fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (2000, 2) and np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(expit(clf.decision_function(X)), proba[:, 1], atol=1e-12)
    np.testing.assert_allclose(
        clf.predict_log_proba(X), np.log(proba), rtol=1e-9, atol=1e-12
    )
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])


def test_prediction_is_the_sum_of_the_released_shape_functions(classification_data):
    X, y = classification_data(1000)
    clf = _classifier(max_bins=8).fit(X, y)
    codes = encode_block(X, None, clf.schema_, clf.bin_thresholds_).astype(int)
    score = clf.intercept_[0] + sum(clf.terms_[j][codes[:, j], 0] for j in range(3))
    np.testing.assert_allclose(clf.decision_function(X), score, rtol=1e-12)
    assert [t.shape for t in clf.terms_] == [(9, 1)] * 3
    assert all(len(c) <= 7 for c in clf.bin_thresholds_)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_stages_end_at_the_model(classification_data, n_classes):
    X, y = classification_data(1500, n_classes=n_classes)
    clf = _classifier(classes=list(range(n_classes)), max_iter=5).fit(X, y)
    probas = list(clf.staged_predict_proba(X[:200]))
    labels = list(clf.staged_predict(X[:200]))
    assert len(probas) == len(labels) == clf.n_iter_ == 5
    np.testing.assert_array_equal(probas[-1], clf.predict_proba(X[:200]))
    np.testing.assert_array_equal(labels[-1], clf.predict(X[:200]))
    for proba in probas:
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


def test_regressor_stages_end_at_the_model(regression_data):
    X, y = regression_data(1500)
    reg = _regressor(max_iter=4).fit(X, y)
    stages = list(reg.staged_predict(X[:100]))
    assert len(stages) == reg.n_iter_ == 4
    np.testing.assert_array_equal(stages[-1], reg.predict(X[:100]))
    # The boosting improves on the first cycle.
    errors = [np.mean((s - y[:100]) ** 2) for s in reg.staged_predict(X[:100])]
    assert errors[-1] < errors[0]


def test_three_classes_and_string_labels(classification_data):
    X, y = classification_data(5000, n_classes=3)
    names = np.array(["low", "mid", "top"], dtype=object)
    clf = _classifier(epsilon=5.0, classes=list(names)).fit(X, names[y])
    assert list(clf.classes_) == ["low", "mid", "top"]
    proba = clf.predict_proba(X)
    assert proba.shape == (5000, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert clf.decision_function(X).shape == (5000, 3)
    # Three ordered classes of a noisy score: 0.78 with this seed; chance 1/3.
    assert clf.score(X, names[y]) > 0.7
    assert [t.shape[1] for t in clf.terms_] == [3, 3, 3]


def test_feature_importances_are_recomputed_from_released_values(classification_data):
    # Independent of _importances: each feature's count-weighted mean
    # absolute deviation of its shape function, normalised.
    X, y = classification_data(5000, n_features=3, n_classes=3)
    clf = _classifier(epsilon=5.0, classes=[0, 1, 2]).fit(X, y)
    spreads = []
    for term, count in zip(clf.terms_, clf.bin_counts_, strict=True):
        weight = count + 1e-12
        mean = (weight[:, None] * term).sum(axis=0) / weight.sum()
        spreads.append(np.sum(weight[:, None] * np.abs(term - mean)))
    np.testing.assert_allclose(
        clf.feature_importances_, np.array(spreads) / np.sum(spreads), rtol=1e-10
    )
    # The label reads x0 and x1 (weight 1 and 0.5), not x2.
    importance = clf.feature_importances_
    assert importance[0] > importance[1] > importance[2]


def test_accuracy_at_epsilon_5_on_an_easy_problem(classification_data):
    X, y = classification_data(5000)
    X_test, y_test = classification_data(5000, seed=1)
    # 0.91 with these seeds; the noise-free limit is 0.92.
    assert _classifier(epsilon=5.0).fit(X, y).score(X_test, y_test) > 0.85


def test_regression_accuracy_at_epsilon_5(regression_data):
    X, y = regression_data(5000)
    X_test, y_test = regression_data(5000, seed=1)
    reg = _regressor(epsilon=5.0).fit(X, y)
    assert reg.score(X_test, y_test) > 0.95  # 0.98 with these seeds
    assert reg.y_bounds_ == (-1.0, 4.0)


def _noise_free(monkeypatch):
    monkeypatch.setattr(_boosting, "add_noise", lambda plan, value, source: value)


def test_large_epsilon_approaches_the_noise_free_fit(classification_data, monkeypatch):
    # The reference is the same algorithm without noise (the values the
    # noise would be added to, released as they are), and for the accuracy
    # scikit-learn's logistic regression, near the best on this problem (the
    # label thresholds a linear score).
    X, y = classification_data(5000)
    X_test, y_test = classification_data(5000, seed=1)
    private = {
        epsilon: _classifier(epsilon=epsilon, max_bins=16).fit(X, y)
        for epsilon in (1.0, 1e2, 1e4)
    }
    _noise_free(monkeypatch)
    # The same epsilon for the reference: l2_regularization="auto" reads it.
    exact = {
        epsilon: _classifier(epsilon=epsilon, max_bins=16).fit(X, y)
        for epsilon in private
    }
    gaps = [
        np.abs(private[e].predict_proba(X_test) - exact[e].predict_proba(X_test))
        for e in private
    ]
    # The mean gap in probability shrinks with the noise (0.05, 0.004 and
    # 1e-4 with this seed); at 1e4 every test row is within 0.01.
    means = [gap.mean() for gap in gaps]
    assert means[0] > 3 * means[1] > 9 * means[2], means
    assert gaps[2].max() < 0.01
    for a, b in zip(
        private[1e4].bin_thresholds_, exact[1e4].bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(a, b)
    reference = LogisticRegression().fit(X, y).score(X_test, y_test)
    assert private[1e4].score(X_test, y_test) > reference - 0.02


def test_large_epsilon_intercepts_are_the_exact_ones(
    classification_data, regression_data
):
    X, y = classification_data(4000)
    clf = _classifier(epsilon=1e4).fit(X, y)
    rate = y.mean()
    assert clf.intercept_[0] == pytest.approx(math.log(rate / (1 - rate)), abs=1e-3)
    X, y3 = classification_data(4000, n_classes=3)
    clf = _classifier(epsilon=1e4, classes=[0, 1, 2]).fit(X, y3)
    np.testing.assert_allclose(
        clf.intercept_, np.log(np.bincount(y3) / y3.size), atol=1e-3
    )
    X, yr = regression_data(4000)
    reg = _regressor(epsilon=1e4).fit(X, yr)
    # Held relative to the lower target bound (predict adds it back).
    assert reg.intercept_[0] == pytest.approx(np.mean(yr) + 1.0, abs=1e-3)


def test_released_bin_counts_are_floored_at_zero(classification_data):
    X, y = classification_data(300)
    clf = _classifier(epsilon=0.05).fit(X, y)
    assert all(np.all(c >= 0) for c in clf.bin_counts_)
    # The NaN-free data's missing bins hold noise only (floored).
    assert len(clf.bin_counts_) == 3


def test_no_l2_and_an_empty_bin_still_give_a_finite_model():
    # No row holds the category "b": its released count is noise floored
    # at zero, and with l2_regularization=0 the Newton step divided by it.
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.random(400), np.full(400, "a", dtype=object)])
    y = (X[:, 0].astype(float) > 0.5).astype(int)
    clf = _classifier(
        l2_regularization=0.0,
        categorical_features=[1],
        categories=[["a", "b"]],
        epsilon=1.0,
    ).fit(X, y)
    assert all(np.all(np.isfinite(t)) for t in clf.terms_)
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_seed_reproduces_the_fit_and_other_seeds_differ(classification_data):
    X, y = classification_data(1000)
    a, b = _classifier(random_state=3).fit(X, y), _classifier(random_state=3).fit(X, y)
    c = _classifier(random_state=4).fit(X, y)
    for u, v in zip(a.terms_, b.terms_, strict=True):
        np.testing.assert_array_equal(u, v)
    assert not all(
        np.array_equal(u, v) for u, v in zip(a.terms_, c.terms_, strict=True)
    )


def test_pickle_keeps_the_predictions(classification_data):
    X, y = classification_data(800)
    clf = _classifier(max_iter=3).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    assert len(list(again.staged_predict(X))) == 3


# ----------------------------------------------------------------- DataFrames
def test_dataframe_with_a_text_column_and_missing_values(mixed_frame):
    frame, y = mixed_frame(5000)
    clf = _classifier(
        epsilon=5.0,
        categorical_features=[2],
        categories=[["blue", "green", "red"]],
        max_bins=8,
    ).fit(frame, y)
    assert list(clf.feature_names_in_) == ["x0", "x1", "colour"]
    assert clf.schema_.categorical == (False, False, True)
    assert clf.bin_thresholds_[2].size == 0 and clf.terms_[2].shape == (4, 1)
    # NaN and None go to the missing bins; an unseen category too.
    probe = frame.iloc[:4].copy()
    probe["x0"] = 0.5
    probe["x1"] = [np.nan, 0.5, 0.5, 0.5]
    probe["colour"] = ["red", None, "purple", "blue"]
    codes = encode_block(
        np.column_stack([probe[c].to_numpy(dtype=object) for c in probe.columns]),
        None,
        clf.schema_,
        clf.bin_thresholds_,
    )
    assert codes[0, 1] == clf.n_bins_ == 8
    assert codes[1, 2] == codes[2, 2] == 3 and codes[3, 2] == 0
    proba = clf.predict_proba(probe)
    np.testing.assert_array_equal(proba[1], proba[2])  # None and unseen alike
    # The colour matters as in the data: red adds 0.6 to the score.
    assert proba[0, 1] > proba[3, 1] + 0.2
    assert clf.score(frame, y) > 0.85  # 0.93 with this seed
    assert FINE_CELLS == 128


def test_the_plan_counts_the_memory_of_the_stages(monkeypatch):
    # The fit keeps every cycle's shape functions (staged_predict): rounds x
    # bins x 8 bytes. 40 features of 1025 codes over 400 cycles need 131 MB
    # of stages, more than the 100 MB this test allows: refused before the
    # charge (before, the plan counted the statistics alone, 2.6 MB, and the
    # fit would have run out of memory after the charge).
    monkeypatch.setattr("skdp.utils._feasibility.available_memory", lambda: 10**8)
    X = np.random.default_rng(0).uniform(size=(50, 40))
    y = np.arange(50) % 2
    budget = PrivacyBudget(epsilon=1.0, delta=1e-4)
    clf = _classifier(max_bins=1024, max_iter=400, budget=budget)
    with pytest.raises(MemoryError, match="nothing was charged"):
        clf.fit(X, y)
    assert len(budget.ledger) == 0
    _classifier(max_bins=1024, max_iter=40).privacy_plan(X, y)  # 13 MB: fine
