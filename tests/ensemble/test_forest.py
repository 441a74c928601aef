"""DPRandomForestClassifier and Regressor: random trees, released leaves, accuracy.

The privacy side is in test_ensemble_privacy.py. Here: the trees'
structure is valid and drawn from the random source only, a prediction is
the documented combination of the released leaves (recomputed here from
the fitted attributes), at a large epsilon the leaves are the exact
counts, and the accuracy at epsilon 5 is what the noise allows (fixed
seeds; the comments give the values of the seeds used).
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from skdp.ensemble import DPRandomForestClassifier, DPRandomForestRegressor
from skdp.ensemble._binning import encode_block
from skdp.ensemble._forest import FOREST_BINS, _auto_depth, _leaves


def _classifier(**params):
    return DPRandomForestClassifier(
        **{"bounds": (0, 1), "classes": [0, 1], "random_state": 0, **params}
    )


def _regressor(**params):
    return DPRandomForestRegressor(
        **{"bounds": (0, 1), "y_bounds": (-1, 4), "random_state": 0, **params}
    )


def _codes(forest, X):
    return encode_block(X, None, forest.schema_, forest.bin_thresholds_).astype(int)


def _leaf_of_every_row(forest, X):
    """Leaf index of each row in each tree, from the documented splits: at
    level d the row goes right (bit 1) when its code of feature
    ``tree_features_[t, d]`` is at least ``tree_thresholds_[t, d]``."""
    codes = _codes(forest, X)
    T, depth = forest.tree_features_.shape
    leaf = np.zeros((X.shape[0], T), dtype=int)
    for t in range(T):
        for d in range(depth):
            bit = codes[:, forest.tree_features_[t, d]] >= forest.tree_thresholds_[t, d]
            leaf[:, t] = 2 * leaf[:, t] + bit
    return leaf


# --------------------------------------------------------------- structure
def test_auto_depth_gives_about_fifty_rows_a_leaf():
    assert [_auto_depth(n) for n in (1, 100, 199, 200, 1600, 3199, 10**6)] == [
        1,
        1,
        1,
        2,
        5,
        5,
        6,
    ]


def test_trees_split_on_valid_features_and_thresholds(classification_data):
    X, y = classification_data(3000, n_features=4)
    forest = _classifier(n_estimators=50).fit(X, y)
    assert forest.max_depth_ == _auto_depth(3000) == 5
    T, depth = forest.tree_features_.shape
    assert (T, depth) == (50, 5)
    assert forest.leaf_counts_.shape == (50, 2**5, 2)
    assert np.all((forest.tree_features_ >= 0) & (forest.tree_features_ < 4))
    # A threshold splits a feature's codes (value bins, then missing) in two
    # non-empty parts: 1 <= threshold <= number of value bins.
    for t in range(T):
        for d in range(depth):
            j = forest.tree_features_[t, d]
            value_bins = len(forest.bin_thresholds_[j]) + 1
            assert 1 <= forest.tree_thresholds_[t, d] <= value_bins
    assert all(len(c) <= FOREST_BINS - 1 for c in forest.bin_thresholds_)
    # Every feature is split on somewhere (250 uniform draws among 4).
    assert set(np.unique(forest.tree_features_)) == {0, 1, 2, 3}


def test_leaves_follow_the_documented_splits(classification_data):
    X, y = classification_data(1000)
    forest = _classifier(n_estimators=7, max_depth=3).fit(X, y)
    np.testing.assert_array_equal(
        _leaves(_codes(forest, X), forest.tree_features_, forest.tree_thresholds_),
        _leaf_of_every_row(forest, X),
    )


def test_the_structure_does_not_depend_on_the_data(classification_data):
    X1, y1 = classification_data(2000, seed=1)
    X2, y2 = classification_data(2000, seed=2)
    a = _classifier(n_estimators=30).fit(X1, y1)
    b = _classifier(n_estimators=30).fit(X2, 1 - y2)
    np.testing.assert_array_equal(a.tree_features_, b.tree_features_)
    c = _classifier(n_estimators=30, random_state=1).fit(X1, y1)
    assert not np.array_equal(a.tree_features_, c.tree_features_)


# ------------------------------------------------------------ classification
def test_prediction_combines_the_released_leaves_as_documented(classification_data):
    # Each tree's leaf log-probabilities (one pseudo-count per class),
    # averaged over the trees, moved from the prior by evidence_weight_.
    X, y = classification_data(2000, n_classes=3)
    forest = _classifier(classes=[0, 1, 2], n_estimators=20, max_depth=4).fit(X, y)
    counts = forest.leaf_counts_ + 1.0
    log_leaf = np.log(counts / counts.sum(axis=2, keepdims=True))
    leaf = _leaf_of_every_row(forest, X)
    mean = np.mean([log_leaf[t, leaf[:, t]] for t in range(20)], axis=0)
    # The prior: the first tree's released class totals, one pseudo-count each.
    totals = forest.leaf_counts_[0].sum(axis=0) + 1.0
    prior = np.log(totals / totals.sum())
    np.testing.assert_allclose(forest.class_log_prior_, prior, rtol=1e-12)
    assert forest.evidence_weight_ == pytest.approx(4 / 1.5)
    scores = prior + forest.evidence_weight_ * (mean - prior)
    expected = np.exp(scores - logsumexp(scores, axis=1, keepdims=True))
    np.testing.assert_allclose(forest.predict_proba(X), expected, rtol=1e-10)
    np.testing.assert_array_equal(forest.predict(X), expected.argmax(axis=1))
    np.testing.assert_allclose(
        forest.predict_log_proba(X), np.log(expected), rtol=1e-9, atol=1e-12
    )


def test_binary_decision_function_is_the_log_odds(classification_data):
    X, y = classification_data(1500)
    forest = _classifier(evidence_weight=2.0, n_estimators=10).fit(X, y)
    assert forest.evidence_weight_ == 2.0
    proba = forest.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        forest.decision_function(X), np.log(proba[:, 1] / proba[:, 0]), atol=1e-9
    )


def test_large_epsilon_releases_the_exact_leaf_counts(classification_data):
    # Recounted here from the fitted trees; within six planned sigmas (about
    # 0.05 rows at epsilon 1e4; the floor at zero only moves a count closer).
    X, y = classification_data(3000)
    forest = _classifier(epsilon=1e4, n_estimators=20, max_depth=4).fit(X, y)
    noise = forest.privacy_plan(X, y).settings["forest"].leaf_noise
    sigma = noise.scale * noise.gamma
    assert sigma < 0.1
    leaf = _leaf_of_every_row(forest, X)
    exact = np.zeros((20, 16, 2))
    for t in range(20):
        np.add.at(exact[t], (leaf[:, t], y), 1)
    np.testing.assert_allclose(forest.leaf_counts_, exact, rtol=0, atol=6 * sigma)


def test_feature_importances_are_recomputed_from_released_values(classification_data):
    X, y = classification_data(5000, n_features=3)
    forest = _classifier(epsilon=5.0, n_estimators=60).fit(X, y)
    counts = forest.leaf_counts_ + 1.0
    log_leaf = np.log(counts / counts.sum(axis=2, keepdims=True))
    spread = log_leaf.std(axis=1).sum(axis=1)
    importance = np.zeros(3)
    for t in range(60):
        for j in forest.tree_features_[t]:
            importance[j] += spread[t]
    np.testing.assert_allclose(
        forest.feature_importances_, importance / importance.sum(), rtol=1e-12
    )
    # The label reads x0 most and x2 not at all.
    assert forest.feature_importances_[0] > forest.feature_importances_[2]


def test_accuracy_at_epsilon_5_on_an_easy_problem(classification_data):
    X, y = classification_data(5000)
    X_test, y_test = classification_data(5000, seed=1)
    # 0.92 with these seeds.
    assert _classifier(epsilon=5.0).fit(X, y).score(X_test, y_test) > 0.85


def test_three_classes(classification_data):
    X, y = classification_data(5000, n_classes=3)
    X_test, y_test = classification_data(5000, n_classes=3, seed=1)
    forest = _classifier(epsilon=5.0, classes=[0, 1, 2]).fit(X, y)
    assert forest.predict_proba(X_test).shape == (5000, 3)
    assert forest.decision_function(X_test).shape == (5000, 3)
    assert forest.score(X_test, y_test) > 0.7  # chance is 1/3


# ---------------------------------------------------------------- regression
def test_regressor_prediction_is_the_shrunk_leaf_means(regression_data):
    # A tree predicts its leaf's released sum over (count + 5), clipped to
    # half the range around its centre; the forest averages its trees.
    X, y = regression_data(2000)
    reg = _regressor(n_estimators=15, max_depth=3).fit(X, y)
    assert reg.leaf_counts_.shape == reg.leaf_sums_.shape == (15, 8)
    means = np.clip(reg.leaf_sums_ / (reg.leaf_counts_ + 5.0), -2.5, 2.5)
    leaf = _leaf_of_every_row(reg, X)
    expected = np.mean([means[t, leaf[:, t]] for t in range(15)], axis=0) + 1.5
    np.testing.assert_allclose(reg.predict(X), expected, rtol=1e-12)
    assert np.all((reg.predict(X) >= -1) & (reg.predict(X) <= 4))


def test_large_epsilon_releases_the_exact_leaf_counts_and_sums(regression_data):
    X, y = regression_data(3000)
    reg = _regressor(epsilon=1e4, n_estimators=10, max_depth=3).fit(X, y)
    plan = reg.privacy_plan(X, y).settings["forest"]
    count_sigma = plan.leaf_noise.scale * plan.leaf_noise.gamma
    sum_sigma = plan.sum_noise.scale * plan.sum_noise.gamma
    assert count_sigma < 0.1 and sum_sigma < 0.5  # six sigmas: the tolerance
    leaf = _leaf_of_every_row(reg, X)
    centred = np.clip(y, -1, 4) - 1.5
    for t in range(10):
        count = np.bincount(leaf[:, t], minlength=8)
        total = np.bincount(leaf[:, t], weights=centred, minlength=8)
        np.testing.assert_allclose(
            reg.leaf_counts_[t], count, rtol=0, atol=6 * count_sigma
        )
        np.testing.assert_allclose(reg.leaf_sums_[t], total, rtol=0, atol=6 * sum_sigma)


def test_regressor_importances_are_recomputed_from_released_values(regression_data):
    X, y = regression_data(3000)
    reg = _regressor(epsilon=5.0, n_estimators=40).fit(X, y)
    spread = (reg.leaf_sums_ / (reg.leaf_counts_ + 5.0)).std(axis=1)
    importance = np.zeros(3)
    for t in range(40):
        for j in reg.tree_features_[t]:
            importance[j] += spread[t]
    np.testing.assert_allclose(
        reg.feature_importances_, importance / importance.sum(), rtol=1e-12
    )


def test_regression_accuracy_at_epsilon_5(regression_data):
    X, y = regression_data(5000)
    X_test, y_test = regression_data(5000, seed=1)
    # 0.82 with these seeds (random oblivious trees of 16 bins; 0.83 at
    # epsilon 1e6).
    assert _regressor(epsilon=5.0).fit(X, y).score(X_test, y_test) > 0.7


# ----------------------------------------------------------------- DataFrames
def test_dataframe_with_a_text_column_and_missing_values(mixed_frame):
    frame, y = mixed_frame(5000)
    forest = _classifier(
        epsilon=5.0,
        categorical_features=[2],
        categories=[["blue", "green", "red"]],
    ).fit(frame, y)
    assert list(forest.feature_names_in_) == ["x0", "x1", "colour"]
    probe = frame.iloc[:3].copy()
    probe["x0"], probe["x1"] = 0.5, np.nan
    probe["colour"] = ["red", None, "purple"]
    proba = forest.predict_proba(probe)
    np.testing.assert_array_equal(proba[1], proba[2])  # None and unseen alike
    assert forest.score(frame, y) > 0.8  # 0.9 with this seed
