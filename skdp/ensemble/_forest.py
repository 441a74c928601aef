"""Private random forests: random trees on private bins, noisy leaf statistics.

Each tree's structure is drawn at random, independently of the data (an
oblivious tree: at every level one feature and one bin threshold, chosen
uniformly), so it costs nothing; only the leaves read the data: their
class counts (classification) or their row counts and target sums
(regression), all trees at once, released with Gaussian noise. The bins
are those of the boosting (:mod:`skdp.ensemble._binning`), paid from the
same fit's budget. One charge per fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.base import ClassifierMixin, RegressorMixin

from ..accounting._events import ComposedEvent
from ..base import FitPlan
from ..mechanisms._additive import (
    NoisePlan,
    add_noise,
    grid_gaussian_noise_multiplier,
    plan_gaussian,
)
from ..utils._feasibility import check_memory
from ..utils._row_source import row_source
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    check_is_fitted,
    fit_context,
)
from ._base import BaseDPTreeEnsemble
from ._binning import (
    FINE_CELLS,
    FeatureSchema,
    edges_from_counts,
    encode_block,
    fine_counts_block,
)
from ._boosting import BINNING_SHARE
from ._inputs import prepare_classification, prepare_regression

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPRandomForestClassifier", "DPRandomForestRegressor"]

#: Value bins of a numeric feature in a forest (thresholds to draw from).
FOREST_BINS = 16
#: Regression: share of the leaves' budget spent on the target sums (the
#: rest on the row counts).
SUM_SHARE = 0.5


@dataclass(frozen=True)
class ForestPlan:
    """Every release of one forest fit, from public quantities only."""

    schema: FeatureSchema
    n_samples: int
    n_estimators: int
    depth: int
    outputs: int
    fine_noise: NoisePlan | None
    leaf_noise: NoisePlan
    sum_noise: NoisePlan | None
    event: Any = field(repr=False)


def _auto_depth(n_samples: int) -> int:
    """``max_depth="auto"``: about 50 rows a leaf, between 1 and 6 levels."""
    return int(min(max(math.floor(math.log2(max(n_samples, 2) / 50.0)), 1), 6))


def plan_forest(
    *,
    schema: FeatureSchema,
    n_samples: int,
    kind: str,
    n_classes: int,
    y_width: float,
    epsilon: float,
    delta: float,
    n_estimators: int,
    max_depth,
) -> ForestPlan:
    """Plan the releases of a forest fit; may raise, charges nothing.

    With ``T`` trees of ``L = 2**depth`` leaves: the fine-grid counts of the
    numeric features (sensitivity ``sqrt(2 F_num)``, as for the boosting);
    the leaves' class counts of every tree at once, ``T L K`` values (a
    replaced row leaves one cell and enters one in each tree: ``sqrt(2
    T)``); for regression the leaves' row counts (``sqrt(2 T)``) and sums
    of the targets centred on their declared range (each tree's sums move
    by at most the range ``w``: ``w sqrt T``). One Gaussian budget split by
    fixed shares, composed exactly.
    """
    n = max(int(n_samples), 1)
    depth = _auto_depth(n) if max_depth == "auto" else int(max_depth)
    leaves = 2**depth
    T = int(n_estimators)
    numeric = schema.numeric
    outputs = 1 if kind == "regression" else n_classes
    leaf_size = T * leaves * outputs
    check_memory(
        8.0 * 6 * T * leaves * max(outputs, 2),
        f"the forest's {T * leaves} leaves",
        "use fewer trees or a smaller max_depth",
    )
    parts = []
    rest = 1.0 - (BINNING_SHARE if numeric else 0.0)
    if kind == "regression":
        parts.append((math.sqrt(2.0 * T), T * leaves, rest * (1 - SUM_SHARE), float(n)))
        parts.append((y_width * math.sqrt(T), T * leaves, rest * SUM_SHARE,
                      float(n) * y_width))  # fmt: skip
    else:
        parts.append((math.sqrt(2.0 * T), leaf_size, rest, float(n)))
    if numeric:
        fine_size = len(numeric) * (FINE_CELLS + 1)
        fine_sensitivity = math.sqrt(2.0 * len(numeric))
        parts.append((fine_sensitivity, fine_size, BINNING_SHARE, float(n)))
    s = grid_gaussian_noise_multiplier(epsilon, delta, parts)

    def noise(sensitivity, size, share, magnitude):
        multiplier = s / math.sqrt(share)
        return plan_gaussian(
            sensitivity, size, noise_multiplier=multiplier, magnitude=magnitude
        )

    plans = [noise(*part) for part in parts]
    leaf_noise = plans[0]
    sum_noise = plans[1] if kind == "regression" else None
    fine_noise = plans[-1] if numeric else None
    return ForestPlan(
        schema,
        n,
        T,
        depth,
        outputs,
        fine_noise,
        leaf_noise,
        sum_noise,
        ComposedEvent(tuple(p.event for p in plans)),
    )


def _draw_structure(schema: FeatureSchema, cuts, T: int, depth: int, source):
    """Each tree's (feature, threshold) per level: uniform, data-independent."""
    codes = [
        (len(schema.categories[j]) + 1) if schema.categorical[j] else len(cuts[j]) + 2
        for j in range(schema.n_features)
    ]
    features = np.asarray(
        source.integers_below(schema.n_features, T * depth), dtype=np.int64
    ).reshape(T, depth)
    choices = np.array([max(codes[j] - 1, 1) for j in features.ravel()])
    thresholds = 1 + np.asarray(
        source.integers_below(choices, choices.size), dtype=np.int64
    ).reshape(T, depth)
    return features.astype(np.int64), thresholds


def _leaves(codes, features, thresholds) -> np.ndarray:
    """Leaf index of every row in every tree: shape (n_rows, T)."""
    T, depth = features.shape
    index = np.zeros((codes.shape[0], T), dtype=np.int32)  # depth <= 16
    thresholds = thresholds.astype(codes.dtype)
    for d in range(depth):
        index <<= 1
        index |= codes[:, features[:, d]] >= thresholds[:, d]
    return index


def _leaf_counts_block(codes, targets, features, thresholds, outputs, kind):
    T, depth = features.shape
    leaves = 2**depth
    index = _leaves(codes, features, thresholds)
    offset = (np.arange(T) * leaves)[None, :]
    cells = (offset + index).ravel()
    if kind == "regression":
        y = np.repeat(targets[:, 0], T)
        count = np.bincount(cells, minlength=T * leaves).astype(np.int64)
        total = np.bincount(cells, weights=y, minlength=T * leaves)
        return count, total
    label = np.repeat(targets[:, 0].astype(np.int64), T)
    return np.bincount(cells * outputs + label, minlength=T * leaves * outputs).astype(
        np.int64
    )


def run_forest(X, targets, plan: ForestPlan, kind: str, source):
    """Run a planned forest fit; returns the released model. Does not raise."""
    schema = plan.schema
    rows = row_source(X)
    cuts: list = [np.zeros(0, dtype=np.int64)] * schema.n_features
    if schema.numeric:
        fine = rows.block_sum(fine_counts_block, schema)
        noisy = add_noise(plan.fine_noise, fine, source)
        width = FINE_CELLS + 1
        for k, j in enumerate(schema.numeric):
            cuts[j] = edges_from_counts(noisy[k * width : k * width + FINE_CELLS],
                                        schema.n_bins)  # fmt: skip
    cuts = tuple(cuts)
    features, thresholds = _draw_structure(
        schema, cuts, plan.n_estimators, plan.depth, source
    )
    codes = rows.map_rows(
        encode_block, schema, cuts, dtype=np.int16, width=schema.n_features
    )
    leaf_rows = row_source(codes, targets.reshape(-1, 1))
    stats = leaf_rows.block_sum(
        _leaf_counts_block, features, thresholds, plan.outputs, kind
    )
    T, leaves = plan.n_estimators, 2**plan.depth
    if kind == "regression":
        count, total = stats
        noisy_count = np.maximum(add_noise(plan.leaf_noise, count, source), 0.0)
        noisy_total = add_noise(plan.sum_noise, total, source)
        return (
            cuts,
            features,
            thresholds,
            (
                noisy_count.reshape(T, leaves),
                noisy_total.reshape(T, leaves),
            ),
        )
    noisy = np.maximum(add_noise(plan.leaf_noise, stats, source), 0.0)
    return cuts, features, thresholds, (noisy.reshape(T, leaves, plan.outputs),)


class _BaseDPForest(BaseDPTreeEnsemble):
    _parameter_constraints: dict = {
        **BaseDPTreeEnsemble._parameter_constraints,
        "n_estimators": [Interval(Integral, 1, 10_000, closed="both")],
        "max_depth": [Interval(Integral, 1, 16, closed="both"), StrOptions({"auto"})],
    }
    _poor_score_on_tiny_data = False

    def _plan_for(self, schema, n, n_classes, y_width):
        return plan_forest(
            schema=schema,
            n_samples=n,
            kind=self._kind,
            n_classes=n_classes,
            y_width=y_width,
            epsilon=float(self.epsilon),
            delta=self._delta(),
            n_estimators=int(self.n_estimators),
            max_depth=self.max_depth,
        )

    def _store(self, plan, run):
        cuts, features, thresholds, leaves = run
        self.schema_ = plan.schema
        self.bin_thresholds_ = cuts
        self.tree_features_ = features
        self.tree_thresholds_ = thresholds
        self.max_depth_ = plan.depth
        return leaves


class DPRandomForestClassifier(ClassifierMixin, _BaseDPForest):
    """Differentially private random forest classifier.

    ``n_estimators`` random oblivious trees (every level splits on a
    feature and a bin threshold drawn uniformly, independently of the
    data) over privately chosen bins; the leaves' class counts of all trees
    are released at once with Gaussian noise. A prediction combines the
    trees' leaf log-probabilities. One charge per fit.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float or None, default=None
        Privacy parameter of the whole fit, in (0, 1). ``None`` follows
        skdp's default-delta rule (:ref:`default_delta`):
        :data:`~skdp.accounting.DEFAULT_DELTA`.
    n_estimators : int, default=100
    max_depth : int or "auto", default="auto"
        Levels of every tree (``2**max_depth`` leaves); ``"auto"`` gives
        about 50 rows a leaf, at most 6 levels.
    evidence_weight : float or "auto", default="auto"
        How strongly the averaged leaf log-odds move a prediction from the
        prior (averaging random trees shrinks them): ``"auto"`` is
        ``max_depth / 1.5``.
    bounds, categorical_features, categories, classes
        The public schema, as for
        :class:`~skdp.ensemble.DPHistGradientBoostingClassifier`.
    random_state : int, RandomState instance or None, default=None
        Draws the trees and the noise; ``None`` (the OS CSPRNG) for a
        release.
    budget : PrivacyBudget or None, default=None

    Attributes
    ----------
    classes_ : ndarray
    leaf_counts_ : ndarray of shape (n_estimators, 2**max_depth, n_classes)
        The released (noisy) class counts of every leaf.
    tree_features_, tree_thresholds_ : ndarray of shape (n_estimators, max_depth)
        The trees' random splits.
    bin_thresholds_ : tuple of ndarray
    max_depth_ : int
    privacy_event_, epsilon_, delta_, budget_entry_

    Notes
    -----
    **Guarantee.** ``(epsilon, delta)``-DP under replace-one. The trees'
    structure depends on the random source only; the releases are the
    numeric features' fine-grid counts (the bins; sensitivity ``sqrt(2
    F_num)``) and the leaves' class counts of every tree (a replaced row
    changes two counts by 1 in each tree: ``sqrt(2 n_estimators)``), two
    discrete Gaussian mechanisms composed exactly (``plan_forest()``).
    Predictions are post-processing.

    References
    ----------
    .. [1] S. Fletcher, M. Z. Islam, "Differentially Private Random
       Decision Forests using Smooth Sensitivity", Expert Systems with
       Applications 78, 2017 (random trees with noisy leaves).
    .. [2] P. Geurts, D. Ernst, L. Wehenkel, "Extremely Randomized Trees",
       Machine Learning 63, 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.ensemble import DPRandomForestClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(4000, 3))
    >>> y = (X[:, 0] > 0.5).astype(int)
    >>> clf = DPRandomForestClassifier(epsilon=1.0, bounds=(0, 1), classes=[0, 1],
    ...                                random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.8
    True
    """

    _parameter_constraints: dict = {
        **_BaseDPForest._parameter_constraints,
        "evidence_weight": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],  # fmt: skip
        "classes": ["array-like", None],
    }
    _data_bound_params = ("bounds", "categories", "classes")

    def __sklearn_tags__(self):
        return self._poor_score_tags(super().__sklearn_tags__())

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        n_estimators: int = 100,
        max_depth: int | str = "auto",
        evidence_weight: float | str = "auto",
        bounds: ArrayLike | tuple | None = None,
        categorical_features: ArrayLike | None = None,
        categories: list | None = None,
        classes: ArrayLike | None = None,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.evidence_weight = evidence_weight
        self.bounds = bounds
        self.categorical_features = categorical_features
        self.categories = categories
        self.classes = classes
        self.random_state = random_state
        self.budget = budget

    def _prepare_fit(self, X, y=None):
        return prepare_classification(self, X, y, FOREST_BINS)

    def _plan_fit(self, prepared) -> FitPlan:
        plan = self._plan_for(
            prepared["schema"], prepared["X"].shape[0], prepared["classes"].size, 1.0
        )
        return FitPlan(plan.event, self._delta(), {"forest": plan})

    def _run_fit(self, prepared, plan, source) -> None:
        forest: ForestPlan = plan.settings["forest"]
        run = run_forest(prepared["X"], prepared["labels"], forest, "classification",
                         source)  # fmt: skip
        (counts,) = self._store(forest, run)
        self.classes_ = prepared["classes"]
        self.leaf_counts_ = counts
        prior = counts[0].sum(axis=0) + 1.0
        self.class_log_prior_ = np.log(prior / prior.sum())
        weight = self.evidence_weight
        self.evidence_weight_ = forest.depth / 1.5 if weight == "auto" else weight

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the forest privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPRandomForestClassifier
        """
        return self._fit_private(X, y)

    def _log_scores(self, X):
        check_is_fitted(self)
        codes = self._codes(X)
        leaves = _leaves(codes, self.tree_features_, self.tree_thresholds_)
        counts = self.leaf_counts_ + 1.0  # one pseudo-count per class
        log_leaf = np.log(counts / counts.sum(axis=2, keepdims=True))
        T = counts.shape[0]
        mean = np.zeros((codes.shape[0], counts.shape[2]))
        for t in range(T):
            mean += log_leaf[t, leaves[:, t]]
        mean /= T
        prior = self.class_log_prior_
        return prior + self.evidence_weight_ * (mean - prior)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return softmax(self._log_scores(X), axis=1)

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Log of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return log_softmax(self._log_scores(X), axis=1)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Log-odds (two classes) or per-class scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        scores = self._log_scores(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        scores = self._log_scores(X)  # checks that the forest is fitted
        return self.classes_[np.argmax(scores, axis=1)]

    @property
    def feature_importances_(self) -> NDArray[np.float64]:
        """Share of the splits on each feature, weighted by the leaves' released
        spread of log-odds (released quantities only)."""
        check_is_fitted(self)
        counts = self.leaf_counts_ + 1.0
        log_leaf = np.log(counts / counts.sum(axis=2, keepdims=True))
        spread = log_leaf.std(axis=1).sum(axis=1)  # per tree
        importance = np.zeros(self.n_features_in_)
        for t in range(counts.shape[0]):
            np.add.at(importance, self.tree_features_[t], spread[t])
        total = importance.sum()
        if not total > 0:
            return np.full(self.n_features_in_, 1.0 / self.n_features_in_)
        return importance / total


class DPRandomForestRegressor(RegressorMixin, _BaseDPForest):
    """Differentially private random forest regressor.

    Random oblivious trees as in :class:`DPRandomForestClassifier`; each
    leaf releases its noisy row count and the noisy sum of its targets
    (clipped to their declared range). A tree predicts its leaf's mean,
    shrunk towards the overall mean where the leaf has few rows; the forest
    averages its trees.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float or None, default=None
        Privacy parameter of the whole fit, in (0, 1). ``None`` follows
        skdp's default-delta rule (:ref:`default_delta`):
        :data:`~skdp.accounting.DEFAULT_DELTA`.
    n_estimators : int, default=100
    max_depth : int or "auto", default="auto"
    bounds, categorical_features, categories
        The public schema.
    y_bounds : (lower, upper) or None, default=None
        The public target range; ``None`` reads it from ``y`` with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    random_state : int, RandomState instance or None, default=None
    budget : PrivacyBudget or None, default=None

    Attributes
    ----------
    leaf_counts_, leaf_sums_ : ndarray of shape (n_estimators, 2**max_depth)
        The released (noisy) statistics.
    tree_features_, tree_thresholds_, bin_thresholds_, max_depth_,
    y_bounds_, privacy_event_, epsilon_, delta_, budget_entry_

    Notes
    -----
    **Guarantee.** ``(epsilon, delta)``-DP under replace-one: the bins'
    fine-grid counts, the leaves' row counts (``sqrt(2 n_estimators)``) and
    their sums of the targets centred on the declared range (a tree's sums
    move by at most the range ``w``: ``w sqrt(n_estimators)``), discrete
    Gaussian mechanisms composed exactly (``plan_forest()``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.ensemble import DPRandomForestRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(4000, 2))
    >>> y = 3 * X[:, 0]
    >>> reg = DPRandomForestRegressor(epsilon=1.0, bounds=(0, 1), y_bounds=(0, 3),
    ...                               random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.5
    True
    """

    _kind = "regression"
    _poor_score_on_tiny_data = True
    _parameter_constraints: dict = {
        **_BaseDPForest._parameter_constraints,
        "y_bounds": [tuple, list, None],
    }
    _data_bound_params = ("bounds", "categories", "y_bounds")

    def __sklearn_tags__(self):
        return self._poor_score_tags(super().__sklearn_tags__())

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        n_estimators: int = 100,
        max_depth: int | str = "auto",
        bounds: ArrayLike | tuple | None = None,
        categorical_features: ArrayLike | None = None,
        categories: list | None = None,
        y_bounds: tuple[float, float] | None = None,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.bounds = bounds
        self.categorical_features = categorical_features
        self.categories = categories
        self.y_bounds = y_bounds
        self.random_state = random_state
        self.budget = budget

    def _prepare_fit(self, X, y=None):
        return prepare_regression(self, X, y, FOREST_BINS, origin="middle")

    def _plan_fit(self, prepared) -> FitPlan:
        lo, hi = prepared["y_bounds"]
        plan = self._plan_for(prepared["schema"], prepared["X"].shape[0], 1, hi - lo)
        return FitPlan(plan.event, self._delta(), {"forest": plan})

    def _run_fit(self, prepared, plan, source) -> None:
        forest: ForestPlan = plan.settings["forest"]
        run = run_forest(prepared["X"], prepared["labels"], forest, "regression",
                         source)  # fmt: skip
        counts, sums = self._store(forest, run)
        self.leaf_counts_ = counts
        self.leaf_sums_ = sums
        self.y_bounds_ = prepared["y_bounds"]

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the forest privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPRandomForestRegressor
        """
        return self._fit_private(X, y)

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        codes = self._codes(X)
        leaves = _leaves(codes, self.tree_features_, self.tree_thresholds_)
        counts, sums = self.leaf_counts_, self.leaf_sums_
        lo, hi = self.y_bounds_
        half = (hi - lo) / 2
        # Shrink each leaf's mean to 0 (the centre) by a pseudo-count of 5.
        means = np.clip(sums / (counts + 5.0), -half, half)
        T = counts.shape[0]
        out = np.zeros(codes.shape[0])
        for t in range(T):
            out += means[t, leaves[:, t]]
        return out / T + (lo + hi) / 2

    @property
    def feature_importances_(self) -> NDArray[np.float64]:
        """Share of the splits on each feature, weighted by the released spread
        of its trees' leaf means (released quantities only)."""
        check_is_fitted(self)
        means = self.leaf_sums_ / (self.leaf_counts_ + 5.0)
        spread = means.std(axis=1)
        importance = np.zeros(self.n_features_in_)
        for t in range(means.shape[0]):
            np.add.at(importance, self.tree_features_[t], spread[t])
        total = importance.sum()
        if not total > 0:
            return np.full(self.n_features_in_, 1.0 / self.n_features_in_)
        return importance / total
