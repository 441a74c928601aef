"""Private gradient boosting on binned features (cyclic, one feature a round).

Each round updates one feature's shape function: the per-bin sums of the
rows' clipped loss gradients are released with Gaussian noise and turned
into a Newton step, ``-learning_rate * G_b / (H_b + lambda)`` with
``H_b`` the bin's noisy row count (at least 1) times the curvature bound. Rounds
cycle over the features ``max_iter`` times (the boosting of shape
functions of explainable boosting machines, Lou, Caruana & Gehrke 2012;
its private form, DP-EBM, Nori, Bhatt, Caruana et al. 2021). Every release
is a Gaussian mechanism whose parameters are fixed before the fit runs, so
the whole fit is one composition of Gaussian mechanisms, accounted
exactly, and charged once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import expit, log_softmax, softmax
from sklearn.base import ClassifierMixin, RegressorMixin

from ..accounting._analytic_gaussian import gaussian_noise_multiplier
from ..accounting._events import ComposedEvent, SelfComposedEvent
from ..base import FitPlan
from ..mechanisms._additive import (
    NoisePlan,
    add_noise,
    grid_gaussian_noise_multiplier,
    plan_gaussian,
)
from ..utils._dask import is_dask_collection
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
    auto_bins,
    edges_from_counts,
    encode_block,
    fine_counts_block,
)
from ._inputs import prepare_classification, prepare_regression

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPHistGradientBoostingClassifier", "DPHistGradientBoostingRegressor"]

#: Shares of the fit's Gaussian budget (of ``s**-2``): the private bins,
#: the bins' row counts, the intercept; the rounds share the rest equally.
BINNING_SHARE = 0.1
COUNT_SHARE = 0.05
INTERCEPT_SHARE = 0.01
#: Regression: the residuals are clipped to this fraction of the declared
#: target range (after the intercept, residuals are rarely larger; clipping
#: at the whole range multiplies the noise by 4).
REGRESSION_CLIP = 0.25
#: The default ``l2_regularization="auto"``: this many standard deviations
#: of a bin's gradient-sum noise (plus 1), shrinking noisy bins to zero.
#: It, ``max_iter=8`` and ``learning_rate=0.5`` were chosen on validation
#: splits of the training rows (``benchmarks/tune_trees.py``).
NOISE_SHRINKAGE = 4.0


# -- the plan -----------------------------------------------------------------


@dataclass(frozen=True)
class BoostingPlan:
    """Every release of one fit, from public quantities only."""

    schema: FeatureSchema
    n_samples: int
    outputs: int  # scores per row: 1 (binary, regression) or n_classes
    rounds: int
    fine_noise: NoisePlan | None
    count_noise: NoisePlan
    intercept_noise: NoisePlan
    gradient_noise: tuple  # one NoisePlan per feature
    clip: float
    curvature: float
    l2: tuple  # lambda per feature (in the gradient sums' units)
    learning_rate: float
    event: Any = field(repr=False)


def _loss_terms(kind: str, n_classes: int, y_width: float):
    """``(outputs, clip, gradient-sum sensitivity, curvature bound)`` of a loss.

    Binary log loss: one score, gradient ``p - y`` in ``(-1, 1)``, so a row
    replaced within a bin moves that bin's sum by less than 2 and across
    bins moves two sums by less than 1 each (L2 below ``sqrt 2``): L2
    sensitivity 2; curvature ``p (1 - p) <= 1/4``. Softmax over ``K``
    classes: gradient ``p - e_y`` of L2 norm at most ``sqrt 2``, sensitivity
    ``2 sqrt 2``; curvature at most ``1/2`` per score (``p_k (1 - p_k)``,
    bounded by 1/4, taken as 1/2 for the coupled scores). Squared error:
    gradient ``f - y`` clipped to ``[-c, c]``, ``c`` =
    :data:`REGRESSION_CLIP` times the declared target range ``w``,
    sensitivity ``2 c``, curvature 1.
    """
    if kind == "regression":
        clip = REGRESSION_CLIP * y_width
        return 1, clip, 2.0 * clip, 1.0
    if n_classes == 2:
        return 1, 1.0, 2.0, 0.25
    return n_classes, 1.0, 2.0 * math.sqrt(2.0), 0.5


def plan_boosting(
    *,
    schema: FeatureSchema,
    n_samples: int,
    kind: str,
    n_classes: int,
    y_width: float,
    epsilon: float,
    delta: float,
    rounds: int,
    learning_rate: float,
    l2_regularization,
    max_bins,
) -> BoostingPlan:
    """Plan every release of a boosting fit; may raise, charges nothing.

    The releases, each a discrete Gaussian on a grid
    (:func:`~skdp.mechanisms.plan_gaussian`), with their L2 sensitivities
    under replace-one:

    * the fine-grid counts of every numeric feature at once (a replaced row
      leaves one cell and enters one per feature): ``sqrt(2 F_num)``;
    * the row count of every feature's bins at once: ``sqrt(2 F)``;
    * the intercept: the class counts (``sqrt 2``; binary: the positives,
      1) or the sum of the targets clipped to their declared range
      (``w``);
    * ``rounds * F`` gradient sums, one feature's bins each (see
      :func:`_loss_terms`).

    Their multipliers split one Gaussian budget by fixed shares of
    ``s**-2`` (:data:`BINNING_SHARE`, :data:`COUNT_SHARE`,
    :data:`INTERCEPT_SHARE`, the rest to the rounds), so that the
    composition, which is one Gaussian mechanism of multiplier ``s`` plus
    the releases' lattice shifts, is ``(epsilon, delta)``-DP
    (:func:`~skdp.mechanisms._additive.grid_gaussian_noise_multiplier`).
    """
    n_features = schema.n_features
    numeric = schema.numeric
    outputs, clip, sensitivity, curvature = _loss_terms(kind, n_classes, y_width)
    n = max(int(n_samples), 1)
    releases = rounds * n_features
    shares = {"counts": COUNT_SHARE, "intercept": INTERCEPT_SHARE}
    if numeric:
        shares["bins"] = BINNING_SHARE
    rest = 1.0 - sum(shares.values())
    mu = 1.0 / gaussian_noise_multiplier(epsilon, delta)
    if max_bins == "auto":
        n_bins = auto_bins(n, n_features, mu, rounds, 32)
    else:
        n_bins = int(max_bins)
    schema = FeatureSchema(
        schema.categorical, schema.categories, schema.lower, schema.upper, n_bins
    )
    sizes = [schema.max_codes(j) * outputs for j in range(n_features)]
    count_size = sum(schema.max_codes(j) for j in range(n_features))
    intercept = (1.0, 1) if outputs == 1 and kind != "regression" else None
    if kind == "regression":
        intercept = (y_width, 1)
    elif outputs > 1:
        intercept = (math.sqrt(2.0), outputs)
    parts = [
        (math.sqrt(2.0 * n_features), count_size, shares["counts"], float(n)),
        (intercept[0], intercept[1], shares["intercept"], float(n) * max(y_width, 1.0)),
    ]
    if numeric:
        fine_size = len(numeric) * (FINE_CELLS + 1)
        parts.append(
            (math.sqrt(2.0 * len(numeric)), fine_size, shares["bins"], float(n))
        )
    per_round = rest / releases
    for size in sizes:
        parts += [(sensitivity, size, per_round, float(n) * clip)] * rounds
    check_memory(  # the statistics, and the shape functions of every stage
        8.0 * ((sum(sizes) + count_size) * 4 + sum(sizes) * rounds),
        f"the boosting's {sum(sizes)} per-bin statistics over {rounds} stages",
        "use fewer bins or rounds, or declare fewer categories",
    )
    s = grid_gaussian_noise_multiplier(epsilon, delta, parts)

    def noise(sensitivity, size, share, magnitude):
        return plan_gaussian(
            sensitivity,
            size,
            noise_multiplier=s / math.sqrt(share),
            magnitude=magnitude,
        )

    count_noise = noise(*parts[0])
    intercept_noise = noise(*parts[1])
    fine_noise = noise(*parts[2]) if numeric else None
    gradient_noise = tuple(
        noise(sensitivity, size, per_round, float(n) * clip) for size in sizes
    )
    l2 = []
    for plan in gradient_noise:
        sigma = plan.scale * plan.gamma
        if l2_regularization == "auto":
            l2.append(NOISE_SHRINKAGE * sigma + 1.0)
        else:
            l2.append(float(l2_regularization))
    events = [count_noise.event, intercept_noise.event]
    if fine_noise is not None:
        events.append(fine_noise.event)
    events += [SelfComposedEvent(plan.event, rounds) for plan in gradient_noise]
    return BoostingPlan(
        schema,
        n,
        outputs,
        rounds,
        fine_noise,
        count_noise,
        intercept_noise,
        gradient_noise,
        clip,
        curvature,
        tuple(l2),
        float(learning_rate),
        ComposedEvent(tuple(events)),
    )


# -- the run -------------------------------------------------------------------


def _gradient_block(codes, targets, j, size, kind, outputs, clip):
    """Per-bin sums of feature ``j``'s clipped gradients over a block.

    ``targets`` holds the label (or target) in column 0 and the rows'
    current scores in the other columns.
    """
    label, scores = targets[:, 0], targets[:, 1:]
    if kind == "regression":
        gradient = np.clip(scores[:, 0] - label, -clip, clip)[:, None]
    elif outputs == 1:
        gradient = (expit(scores[:, 0]) - label)[:, None]
    else:
        gradient = softmax(scores, axis=1)
        gradient[np.arange(label.size), label.astype(int)] -= 1.0
    bins = codes[:, j].astype(np.int64)
    out = np.zeros((size, outputs))
    for k in range(outputs):
        out[:, k] = np.bincount(bins, weights=gradient[:, k], minlength=size)
    return out.ravel()


def _bin_counts_block(codes, _, sizes):
    return np.concatenate(
        [
            np.bincount(codes[:, j].astype(np.int64), minlength=size)
            for j, size in enumerate(sizes)
        ]
    ).astype(np.int64)


class _Rows:
    """The fit's per-row state in memory or on dask: the bin codes and the
    targets (column 0 the label or target, then the rows' current scores),
    kept where the rows are and updated in place round by round."""

    def __init__(self, codes, labels, base):
        base = np.asarray(base, float)
        if is_dask_collection(codes):
            import dask.array as da

            # Every round reads them: computed once, kept on the workers, in
            # the codes' chunks (one task per group of blocks).
            codes = codes.persist()
            n, rows = codes.shape[0], codes.chunks[0]
            scores = da.broadcast_to(base, (n, base.size), chunks=(rows, -1))
            column = labels.astype(float).rechunk(rows)[:, None]
            targets = da.concatenate([column, scores], axis=1)
            targets = targets.rechunk({0: rows, 1: -1}).persist()
        else:
            targets = np.empty((codes.shape[0], 1 + base.size))
            targets[:, 0] = labels
            targets[:, 1:] = base
        self.codes, self.targets = codes, targets

    def source(self):
        return row_source(self.codes, self.targets)

    def update(self, j, step):
        """Add feature ``j``'s step (per bin and output) to every row's score."""
        if is_dask_collection(self.codes):
            import dask.array as da

            self.targets = da.map_blocks(
                _add_step,
                self.codes,
                self.targets,
                j,
                step,
                dtype=float,
                chunks=self.targets.chunks,
            ).persist()
        else:
            self.targets[:, 1:] += step[self.codes[:, j].astype(np.int64)]


def _add_step(codes, targets, j, step):
    out = targets.copy()
    out[:, 1:] += step[codes[:, j].astype(np.int64)]
    return out


def run_boosting(X, labels, plan: BoostingPlan, kind: str, source):
    """Run a planned boosting fit; returns the released model. Does not raise."""
    schema = plan.schema
    rows = row_source(X)
    n_features = schema.n_features
    numeric = schema.numeric

    # 1. Private bins: noisy fine-grid counts, then edges (post-processing).
    cuts: list = [np.zeros(0, dtype=np.int64)] * n_features
    if numeric:
        fine = rows.block_sum(fine_counts_block, schema)
        noisy = add_noise(plan.fine_noise, fine, source)
        width = FINE_CELLS + 1
        for k, j in enumerate(numeric):
            counts = noisy[k * width : k * width + FINE_CELLS]
            cuts[j] = edges_from_counts(counts, schema.n_bins)
    cuts = tuple(cuts)
    codes = rows.map_rows(
        encode_block, schema, cuts, dtype=np.int16, width=schema.n_features
    )

    # 2. The rows per bin (for the Newton steps' curvature), all features.
    sizes = [schema.max_codes(j) for j in range(n_features)]
    counts = row_source(codes).block_sum(_bin_counts_block, sizes)
    noisy_counts = np.maximum(add_noise(plan.count_noise, counts, source), 0.0)
    bin_counts = np.split(noisy_counts, np.cumsum(sizes)[:-1])

    # 3. The intercept.
    n = plan.n_samples
    if kind == "regression":
        total = row_source(labels.reshape(-1, 1)).block_sum(
            lambda y, _: np.array([float(y.sum())])
        )
        mean = float(add_noise(plan.intercept_noise, total, source)[0]) / n
        base = np.array([mean])
    elif plan.outputs == 1:
        positives = row_source(labels.reshape(-1, 1)).block_sum(
            lambda y, _: np.array([float(y.sum())])
        )
        rate = float(add_noise(plan.intercept_noise, positives, source)[0]) / n
        rate = min(max(rate, 0.5 / n), 1.0 - 0.5 / n)
        base = np.array([math.log(rate / (1.0 - rate))])
    else:
        K = plan.outputs
        per_class = row_source(labels.reshape(-1, 1)).block_sum(
            lambda y, _: np.bincount(y[:, 0].astype(np.int64), minlength=K).astype(
                float
            )
        )
        noisy = np.maximum(add_noise(plan.intercept_noise, per_class, source), 0.5)
        base = np.log(noisy / noisy.sum())

    # 4. The rounds: cycle over the features.
    state = _Rows(codes, labels.astype(float), base)
    terms = [np.zeros((size, plan.outputs)) for size in sizes]
    stages = []
    for _ in range(plan.rounds):
        for j in range(n_features):
            size = sizes[j]
            G = state.source().block_sum(
                _gradient_block, j, size, kind, plan.outputs, plan.clip
            )
            noisy = add_noise(plan.gradient_noise[j], G, source).reshape(
                size, plan.outputs
            )
            # A bin's curvature as if it held at least one row: with
            # l2_regularization=0 an empty (or noisy-empty) bin would divide
            # by zero. Post-processing of the released counts.
            H = plan.curvature * np.maximum(bin_counts[j][:, None], 1.0)
            step = -plan.learning_rate * noisy / (H + plan.l2[j])
            if plan.outputs > 1:
                step -= step.mean(axis=1, keepdims=True)  # softmax is shift-free
            terms[j] = terms[j] + step
            state.update(j, step)
        stages.append([t.copy() for t in terms])
    return cuts, base, terms, stages, bin_counts


def _importances(terms, counts) -> np.ndarray:
    """Each feature's share of the count-weighted spread of its shape function.

    Released quantities only: the released (noisy) bin counts and terms.
    """
    spread = []
    for term, count in zip(terms, counts, strict=True):
        weights = count + 1e-12
        centred = term - np.average(term, axis=0, weights=weights)
        spread.append(float(np.sum(weights * np.abs(centred).sum(axis=1))))
    spread = np.array(spread)
    total = spread.sum()
    if not total > 0:
        return np.full(spread.size, 1.0 / spread.size)
    return spread / total


# -- the estimators -----------------------------------------------------------


class _BaseDPBoosting(BaseDPTreeEnsemble):
    _parameter_constraints: dict = {
        **BaseDPTreeEnsemble._parameter_constraints,
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, 10_000, closed="both")],
        "max_bins": [Interval(Integral, 2, 1024, closed="both"), StrOptions({"auto"})],
        "l2_regularization": [
            Interval(Real, 0, None, closed="left"),
            StrOptions({"auto"}),
        ],
    }

    def _bins_cap(self) -> int:
        return 32 if self.max_bins == "auto" else int(self.max_bins)

    def _plan_for(self, schema, n_samples, n_classes, y_width):
        return plan_boosting(
            schema=schema,
            n_samples=n_samples,
            kind=self._kind,
            n_classes=n_classes,
            y_width=y_width,
            epsilon=float(self.epsilon),
            delta=self._delta(),
            rounds=int(self.max_iter),
            learning_rate=float(self.learning_rate),
            l2_regularization=self.l2_regularization,
            max_bins=self.max_bins,
        )

    def _run_fit(self, prepared, plan, source) -> None:
        X, labels = prepared["X"], prepared["labels"]
        boosting: BoostingPlan = plan.settings["boosting"]
        cuts, base, terms, stages, counts = run_boosting(
            X, labels, boosting, self._kind, source
        )
        self.bin_thresholds_ = cuts
        self.schema_ = boosting.schema
        self.intercept_ = base
        self.terms_ = terms
        self._stages = stages
        self.bin_counts_ = counts
        self.n_iter_ = boosting.rounds
        self.n_bins_ = boosting.schema.n_bins
        self.feature_importances_ = _importances(terms, counts)

    # -- prediction -----------------------------------------------------------
    def _raw_scores(self, X, terms=None) -> np.ndarray:
        codes = self._codes(X)  # checks that the model is fitted
        terms = self.terms_ if terms is None else terms
        scores = np.tile(self.intercept_, (codes.shape[0], 1))
        for j, term in enumerate(terms):
            scores += term[codes[:, j]]
        return scores


class DPHistGradientBoostingClassifier(ClassifierMixin, _BaseDPBoosting):
    """Differentially private gradient boosting classifier on binned features.

    Boosts one shape function per feature (each feature's bins get a
    score), cycling over the features ``max_iter`` times; every round's
    per-bin gradient sums are released with Gaussian noise. The bins of
    numeric features come from a private release of fine-grid counts over
    their declared bounds; categorical features have one bin per declared
    category; missing values (NaN, undeclared categories) have a bin of
    their own. One charge per fit.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of the whole fit, > 0.
    delta : float or None, default=None
        Privacy parameter of the whole fit, in (0, 1). ``None`` follows
        skdp's default-delta rule (:ref:`default_delta`):
        :data:`~skdp.accounting.DEFAULT_DELTA`.
    learning_rate : float, default=0.5
        Fraction of each round's Newton step applied.
    max_iter : int, default=8
        Cycles over the features (each cycle is one round per feature).
    max_bins : int or "auto", default="auto"
        Most value bins of a numeric feature. ``"auto"`` chooses from
        public quantities (rows, features, epsilon, rounds): fewer bins when
        the noise per bin would swamp its rows' signal
        (``auto_bins()``).
    l2_regularization : float or "auto", default="auto"
        ``lambda`` of the Newton steps ``-learning_rate G / (H + lambda)``;
        ``"auto"`` is four times the standard deviation of the gradient sums'
        noise (plus 1), a public quantity that shrinks bins whose noisy
        sums are mostly noise.
    bounds : (lower, upper) or None, default=None
        Public bounds of the numeric features (scalars or one per
        feature; entries of categorical features are ignored). ``None``
        reads them from the data, with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    categorical_features : array-like of int or bool, default=None
        The categorical features (indices or a mask). Columns of strings
        are categorical in any case.
    categories : list of array-like, default=None
        The public categories of each categorical feature, in order.
        ``None`` reads them from the data, with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    classes : array-like, default=None
        The public labels. ``None`` reads them from ``y`` with a warning.
    random_state : int, RandomState instance or None, default=None
        ``None`` draws the noise from the OS CSPRNG (the only choice for a
        release); a seed gives reproducible noise, for tests only.
    budget : PrivacyBudget or None, default=None
        Charged once per fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    terms_ : list of ndarray
        Per feature, the score of each bin (one column per output).
    intercept_ : ndarray
    bin_thresholds_ : tuple of ndarray
        Per numeric feature, the fine-grid cells where its bins start.
    bin_counts_ : list of ndarray
        The released (noisy) row count of every bin.
    feature_importances_ : ndarray of shape (n_features,)
        Each feature's share of the count-weighted spread of its released
        shape function (released quantities only).
    n_iter_ : int
    privacy_event_, epsilon_, delta_, budget_entry_
        The fit's privacy record.

    See Also
    --------
    DPHistGradientBoostingRegressor : The same for regression.
    sklearn.ensemble.HistGradientBoostingClassifier : The non-private model.

    Notes
    -----
    **Guarantee.** ``(epsilon, delta)``-DP for datasets that differ by
    replacing one row (features and label). The fit is a fixed sequence of
    discrete Gaussian releases (``plan_boosting()``: fine-grid counts for
    the bins, the bins' row counts, the class counts, and ``max_iter``
    times each feature's per-bin gradient sums, sensitivity 2 for two
    classes and ``2 sqrt 2`` for more), composed exactly as one Gaussian
    mechanism (Balle & Wang 2018) plus their lattice shifts
    (:class:`~skdp.accounting.DiscreteGaussianEvent`). The gradients are
    bounded by the loss (``p - y``), so no clipping bias. Every fitted
    attribute is post-processing of the released values.

    References
    ----------
    .. [1] H. Nori, R. Caruana, Z. Bu, J. H. Shen, J. Kulkarni,
       "Accuracy, Interpretability, and Differential Privacy via
       Explainable Boosting", ICML 2021.
    .. [2] Y. Lou, R. Caruana, J. Gehrke, "Intelligible Models for
       Classification and Regression", KDD 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.ensemble import DPHistGradientBoostingClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(4000, 3))
    >>> y = (X[:, 0] + 0.2 * rng.normal(size=4000) > 0.5).astype(int)
    >>> clf = DPHistGradientBoostingClassifier(
    ...     epsilon=1.0, bounds=(0, 1), classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.75
    True
    """

    _parameter_constraints: dict = {
        **_BaseDPBoosting._parameter_constraints,
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
        learning_rate: float = 0.5,
        max_iter: int = 8,
        max_bins: int | str = "auto",
        l2_regularization: float | str = "auto",
        bounds: ArrayLike | tuple | None = None,
        categorical_features: ArrayLike | None = None,
        categories: list | None = None,
        classes: ArrayLike | None = None,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_bins = max_bins
        self.l2_regularization = l2_regularization
        self.bounds = bounds
        self.categorical_features = categorical_features
        self.categories = categories
        self.classes = classes
        self.random_state = random_state
        self.budget = budget

    def _prepare_fit(self, X, y=None):
        return prepare_classification(self, X, y, self._bins_cap())

    def _plan_fit(self, prepared) -> FitPlan:
        boosting = self._plan_for(
            prepared["schema"], prepared["X"].shape[0], prepared["classes"].size, 1.0
        )
        return FitPlan(boosting.event, self._delta(), {"boosting": boosting})

    def _run_fit(self, prepared, plan, source) -> None:
        self.classes_ = prepared["classes"]
        super()._run_fit(prepared, plan, source)

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric features (NaN for missing), categorical ones as values.
            A dask array or DataFrame is read where it lies.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPHistGradientBoostingClassifier
        """
        return self._fit_private(X, y)

    def _scores_to_proba(self, scores):
        if scores.shape[1] == 1:
            p = expit(scores[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """The model's raw score (log-odds for two classes, per class otherwise).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        scores = self._raw_scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._scores_to_proba(self._raw_scores(X))

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Log of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self._raw_scores(X)
        if scores.shape[1] == 1:
            scores = np.column_stack([np.zeros(scores.shape[0]), scores[:, 0]])
        return log_softmax(scores, axis=1)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def staged_predict_proba(self, X: ArrayLike) -> Iterator[NDArray[np.float64]]:
        """Class probabilities after each cycle over the features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Yields
        ------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        for terms in self._stages:
            yield self._scores_to_proba(self._raw_scores(X, terms))

    def staged_predict(self, X: ArrayLike) -> Iterator[NDArray[Any]]:
        """Predicted labels after each cycle over the features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Yields
        ------
        labels : ndarray of shape (n_samples,)
        """
        for proba in self.staged_predict_proba(X):
            yield self.classes_[np.argmax(proba, axis=1)]


class DPHistGradientBoostingRegressor(RegressorMixin, _BaseDPBoosting):
    """Differentially private gradient boosting regressor on binned features.

    The regression form of :class:`DPHistGradientBoostingClassifier`:
    squared error, the targets clipped to their declared range.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float or None, default=None
        Privacy parameter of the whole fit, in (0, 1). ``None`` follows
        skdp's default-delta rule (:ref:`default_delta`):
        :data:`~skdp.accounting.DEFAULT_DELTA`.
    learning_rate : float, default=0.5
    max_iter : int, default=8
    max_bins : int or "auto", default="auto"
    l2_regularization : float or "auto", default="auto"
    bounds : (lower, upper) or None, default=None
    categorical_features : array-like of int or bool, default=None
    categories : list of array-like, default=None
    y_bounds : (lower, upper) or None, default=None
        The public range of the target; ``None`` reads it from ``y`` with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    random_state : int, RandomState instance or None, default=None
    budget : PrivacyBudget or None, default=None

    Attributes
    ----------
    terms_, intercept_, bin_thresholds_, bin_counts_, feature_importances_,
    n_iter_, privacy_event_, epsilon_, delta_, budget_entry_
        As for the classifier.

    Notes
    -----
    **Guarantee.** ``(epsilon, delta)``-DP under replace-one: as for the
    classifier, with the gradients ``f - y`` clipped to ``[-c, c]``, ``c =
    w / 4`` for the declared target width ``w`` (sensitivity ``2 c`` per
    bin sum; a clipped residual only slows its bin's step), the
    intercept the noisy sum of the clipped targets (sensitivity ``w``) over
    the public ``n``, and curvature 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.ensemble import DPHistGradientBoostingRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(4000, 2))
    >>> y = 3 * X[:, 0] + rng.normal(scale=0.1, size=4000)
    >>> reg = DPHistGradientBoostingRegressor(
    ...     epsilon=1.0, bounds=(0, 1), y_bounds=(-1, 4), random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.8
    True
    """

    _kind = "regression"
    _parameter_constraints: dict = {
        **_BaseDPBoosting._parameter_constraints,
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
        learning_rate: float = 0.5,
        max_iter: int = 8,
        max_bins: int | str = "auto",
        l2_regularization: float | str = "auto",
        bounds: ArrayLike | tuple | None = None,
        categorical_features: ArrayLike | None = None,
        categories: list | None = None,
        y_bounds: tuple[float, float] | None = None,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_bins = max_bins
        self.l2_regularization = l2_regularization
        self.bounds = bounds
        self.categorical_features = categorical_features
        self.categories = categories
        self.y_bounds = y_bounds
        self.random_state = random_state
        self.budget = budget

    def _prepare_fit(self, X, y=None):
        return prepare_regression(self, X, y, self._bins_cap(), origin="lower")

    def _plan_fit(self, prepared) -> FitPlan:
        lo, hi = prepared["y_bounds"]
        boosting = self._plan_for(
            prepared["schema"], prepared["X"].shape[0], 1, hi - lo
        )
        return FitPlan(boosting.event, self._delta(), {"boosting": boosting})

    def _run_fit(self, prepared, plan, source) -> None:
        super()._run_fit(prepared, plan, source)
        self.y_bounds_ = prepared["y_bounds"]

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPHistGradientBoostingRegressor
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
        return self._raw_scores(X)[:, 0] + self.y_bounds_[0]

    def staged_predict(self, X: ArrayLike) -> Iterator[NDArray[Any]]:
        """Predicted targets after each cycle over the features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Yields
        ------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        for terms in self._stages:
            yield self._raw_scores(X, terms)[:, 0] + self.y_bounds_[0]
