"""Gaussian naive Bayes with differential privacy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin

from ..accounting._events import ComposedEvent
from ..base import FitPlan, PrivateEstimatorMixin
from ..mechanisms._additive import NoisePlan, add_noise, plan_laplace
from ..utils._bounds import (
    bounds_from_extremes,
    declared_bounds,
    refuse_undeclared,
    warn_bounds_read,
)
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._feasibility import check_magnitudes
from ..utils._labels import classes_from_labels, declared_classes
from ..utils._row_checks import FactsRequest, check_finite, fit_rows, read_facts
from ..utils._row_source import RowSource
from ..utils._sklearn_compat import (
    HasMethods,
    Interval,
    Real,
    check_is_fitted,
    fit_context,
    validate_data,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = [
    "DPGaussianNB",
    "GaussianNBPlan",
    "class_statistics",
    "epsilon_shares",
    "plan_gaussian_nb",
]

#: Smallest variance released, as a share of the squared width of the
#: bounds: keeps every variance positive even with ``var_smoothing=0``.
MIN_VARIANCE = 1e-12
#: Each variance is at least this multiple of the standard deviation of the
#: noise in its estimate (see :class:`DPGaussianNB`, Notes).
NOISE_FLOOR = 0.5

#: A noise scale of at least 1/_GRID_RANGE of a statistic's magnitude keeps
#: the statistic exact on the discrete noise's grid (see plan_gaussian_nb).
_GRID_RANGE = 2.0**16

#: Weight of the second-moment error against the mean error in the criterion
#: that splits epsilon (see ``epsilon_shares``).
SECOND_MOMENT_WEIGHT = 1.0


def epsilon_shares(n_features: int, n_classes: int) -> tuple[float, float, float]:
    """Fractions of epsilon spent on the class counts, sums and squares.

    In units where every feature ranges over ``[-1/2, 1/2]``, a class of
    ``n`` rows releases counts with Laplace noise of scale
    ``b_n = Delta_n / epsilon_n``, sums with ``b_s = d / epsilon_s`` and
    centred sums of squares with ``b_q = d / (4 epsilon_q)`` (see
    :class:`DPGaussianNB`, Notes). To first order the mean of a feature is
    off by ``(e_s - mu e_n) / n`` and its second moment by
    ``(e_q - c e_n) / n`` (``e_*`` the noises, ``|mu| <= 1/2``,
    ``|c| <= 1/8``). The shares minimise the sum over the ``d`` features of
    the worst-case variances of these two errors, the second weighted by
    :data:`SECOND_MOMENT_WEIGHT`::

        d**3 / eps_s**2 + w d**3 / (16 eps_q**2)
            + d (1/4 + w/64) Delta_n**2 / eps_n**2,

    whose minimum under ``eps_n + eps_s + eps_q = epsilon`` has every share
    proportional to the cube root of its coefficient. ``Delta_n`` is 1 for
    two classes, 2 beyond and 0 for one class (whose count is ``n``,
    public).

    Parameters
    ----------
    n_features : int
        ``d``, >= 1.
    n_classes : int
        ``K``, >= 1.

    Returns
    -------
    shares : tuple of float
        ``(count, sum, square)``, summing to 1.

    Examples
    --------
    >>> from skdp.naive_bayes._gaussian import epsilon_shares
    >>> [round(s, 3) for s in epsilon_shares(100, 2)]
    [0.021, 0.701, 0.278]
    >>> epsilon_shares(3, 1)[0]
    0.0
    """
    d = float(n_features)
    w = SECOND_MOMENT_WEIGHT
    count_sensitivity = _count_sensitivity(n_classes)
    coefficients = (
        d * (0.25 + w / 64.0) * count_sensitivity**2,
        d**3,
        w * d**3 / 16.0,
    )
    roots = [c ** (1.0 / 3.0) for c in coefficients]
    total = sum(roots)
    return tuple(r / total for r in roots)


def _count_sensitivity(n_classes: int) -> float:
    """L1 sensitivity of the released counts under replace-one."""
    if n_classes == 1:
        return 0.0  # the one count is n_samples, public
    # Two classes: only the count of the second is released (the first is
    # n_samples minus it), and a replaced row changes it by at most 1. More
    # classes: all counts are released and two of them change by 1.
    return 1.0 if n_classes == 2 else 2.0


@dataclass(frozen=True)
class GaussianNBPlan:
    """The noise of one private Gaussian naive Bayes fit.

    Attributes
    ----------
    count_noise : NoisePlan or None
        Laplace noise of the released class counts (``None`` for one class).
    sum_noise : NoisePlan
        Laplace noise of the per-class sums of the normalised features.
    square_noise : NoisePlan
        Laplace noise of the per-class centred sums of their squares.
    event : ComposedEvent
        The three parts' discrete Laplace events, at most ``epsilon`` in
        all.
    """

    count_noise: NoisePlan | None
    sum_noise: NoisePlan
    square_noise: NoisePlan
    event: ComposedEvent


def plan_gaussian_nb(
    epsilon, n_features: int, n_classes: int, n_samples: int
) -> GaussianNBPlan:
    """Plan the noisy counts, sums and sums of squares; epsilon-DP.

    Parameters
    ----------
    epsilon : float
        Total privacy parameter, > 0.
    n_features : int
        Number of features ``d`` (each normalised to ``[-1/2, 1/2]``).
    n_classes : int
        Number of classes ``K``.
    n_samples : int
        Number of rows ``n`` (public): the statistics are at most ``n``,
        ``n / 2`` and ``n / 8`` in absolute value.

    Returns
    -------
    plan : GaussianNBPlan

    Notes
    -----
    The discrete noise lives on a grid of about ``2**-32`` of its scale and
    holds values up to ``2**50`` grid steps, so a statistic of magnitude up
    to ``M`` is exact on the grid when the noise scale is at least
    ``M / 2**16`` (a margin of two). At a huge epsilon a part's share can
    ask for less noise than that; the part then gets that least noise (a
    relative error of ``2**-16`` of ``M`` at most, and a smaller epsilon
    than its share: the fit is more private than charged).

    Examples
    --------
    >>> from skdp.naive_bayes._gaussian import plan_gaussian_nb
    >>> plan = plan_gaussian_nb(1.0, n_features=4, n_classes=3, n_samples=100)
    >>> plan.sum_noise.sensitivity, plan.square_noise.sensitivity
    (4.0, 1.0)
    >>> [type(part).__name__ for part in plan.event.events]
    ['DiscreteLaplaceEvent', 'DiscreteLaplaceEvent', 'DiscreteLaplaceEvent']
    >>> from skdp.accounting._composition import pure_epsilon
    >>> bool(pure_epsilon([plan.event]) <= 1.0)
    True
    """
    epsilon = float(epsilon)
    d, k, n = int(n_features), int(n_classes), max(int(n_samples), 1)
    count_share, sum_share, _ = epsilon_shares(d, k)
    count_epsilon = count_share * epsilon
    sum_epsilon = sum_share * epsilon
    # The remainder, so that the three parts add up to epsilon.
    square_epsilon = epsilon - count_epsilon - sum_epsilon

    def part(sensitivity, share, size, magnitude):
        share = min(share, sensitivity * _GRID_RANGE / magnitude)
        return plan_laplace(sensitivity, share, size)

    count_noise = None
    if k > 1:
        size = 1 if k == 2 else k
        count_noise = part(_count_sensitivity(k), count_epsilon, size, n)
    sum_noise = part(float(d), sum_epsilon, k * d, n / 2)
    square_noise = part(d / 4.0, square_epsilon, k * d, n / 8)
    parts = [p for p in (count_noise, sum_noise, square_noise) if p is not None]
    event = ComposedEvent(tuple(p.event for p in parts))
    return GaussianNBPlan(count_noise, sum_noise, square_noise, event)


def class_statistics(U, labels, n_classes: int):
    """The exact statistics the fit releases with noise.

    Parameters
    ----------
    U : ndarray of shape (n_samples, n_features)
        Features normalised to ``[-1/2, 1/2]``.
    labels : ndarray of shape (n_samples,)
        Index of each row's class.
    n_classes : int

    Returns
    -------
    counts : ndarray of int64
        The released counts: none for one class, the second class's for
        two, every class's beyond.
    sums : ndarray of shape (n_classes, n_features)
        ``sum_{i in c} u_ij``.
    squares : ndarray of shape (n_classes, n_features)
        ``sum_{i in c} (u_ij**2 - 1/8)``.
    """
    counts = np.bincount(labels, minlength=n_classes).astype(np.int64)
    if n_classes <= 2:
        counts = counts[1:]
    return (
        counts,
        _per_class(U, labels, n_classes),
        _per_class(U**2 - 0.125, labels, n_classes),
    )


def _per_class(V, labels, n_classes: int) -> np.ndarray:
    """``sum_{i in c} V_i`` for each class: row by row, without BLAS."""
    columns = [
        np.bincount(labels, weights=V[:, j], minlength=n_classes)
        for j in range(V.shape[1])
    ]
    return np.stack(columns, axis=1).reshape(n_classes, V.shape[1])


def normalise(X, lower, upper):
    """``X`` clipped to the bounds and mapped to ``[-1/2, 1/2]`` (a new array)."""
    width = upper - lower
    middle = lower + width / 2
    U = (np.clip(X, lower, upper) - middle) / width
    # Rounding can leave |u| a hair above 1/2; the sensitivities assume not.
    return np.clip(U, -0.5, 0.5, out=U)


def _class_statistics_block(X, y, lower, upper, classes):
    """:func:`class_statistics` of one block of raw rows and labels."""
    U = normalise(np.asarray(X, dtype=np.float64), lower, upper)
    labels = np.searchsorted(classes, y)
    return class_statistics(U, labels, classes.size)


def _noise_std(plan: NoisePlan) -> float:
    """Standard deviation of a Laplace plan's noise, in value units."""
    return math.sqrt(2.0) * plan.scale * plan.gamma


@dataclass(frozen=True)
class _NBInput:
    """Validated data of one fit and the public facts its plan reads."""

    rows: RowSource  # validated rows and labels (in memory or on dask)
    classes: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    priors: np.ndarray | None


class DPGaussianNB(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Gaussian naive Bayes with differential privacy.

    Each class is modelled, as in :class:`sklearn.naive_bayes.GaussianNB`,
    by a Gaussian per feature; its count, means and variances come from
    noisy class counts, noisy per-class sums and noisy per-class sums of
    squares of the features clipped to public ``bounds`` (the Laplace
    mechanism, epsilon-DP for all three together). The fit charges
    ``budget`` once, after validating its input and before touching the
    data.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of the fit, > 0.
    bounds : tuple (lower, upper) or None, default=None
        Public bounds of the features: scalars or arrays of shape
        ``(n_features,)``, with ``lower < upper``. Values outside are
        clipped to them. ``None`` reads them from the data (the range of
        each feature, widened to length 1 when the feature is constant) and
        emits a :class:`~skdp.PrivacyLeakWarning`: the ranges are then not
        protected. Dask input needs declared bounds (nothing is read from
        dask data to set them).
    classes : array-like of shape (n_classes,) or None, default=None
        The public list of possible labels. ``None`` reads it from ``y`` and
        emits a :class:`~skdp.PrivacyLeakWarning`. Labels of ``y`` outside
        ``classes`` raise an error.
    priors : array-like of shape (n_classes,) or None, default=None
        Public prior probabilities of the classes (in the order of the
        sorted ``classes``). When given, ``class_prior_`` is ``priors``;
        the class counts are still released with noise because the means
        and variances divide by them. ``None`` uses the noisy class
        frequencies.
    var_smoothing : float, default=1e-2
        Every variance of feature ``j`` gets
        ``var_smoothing * ((upper_j - lower_j) / 2)**2`` added: that share
        of the largest variance the bounds allow. scikit-learn's default,
        ``1e-9`` of the largest *observed* variance, reads the data; here
        the amount is public. The default is larger than scikit-learn's:
        bounds are usually wider than the data, and with them the noise, so
        a small absolute floor would let one feature's tiny variance
        outvote the others (see Notes for the floor that follows the
        noise).
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the operating system's CSPRNG: the only
        choice for a release. A seed makes fits reproducible, which is for
        tests and examples only: whoever knows the seed can remove the
        noise.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by every fit; ``None`` records the spend only
        on the estimator.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels (sorted).
    class_count_ : ndarray of shape (n_classes,)
        Noisy number of training rows of each class, at least 1 (with two
        classes the two add up to ``n_samples``).
    class_prior_ : ndarray of shape (n_classes,)
        ``priors``, or ``class_count_`` normalised.
    theta_ : ndarray of shape (n_classes, n_features)
        Noisy mean of each feature per class, within the bounds.
    var_ : ndarray of shape (n_classes, n_features)
        Noisy variance of each feature per class, within
        ``[0, ((upper - lower) / 2)**2]``, plus ``var_smoothing_``.
    var_smoothing_ : ndarray of shape (n_features,)
        The amount added to the variances of each feature. scikit-learn's
        ``GaussianNB`` calls its (scalar) counterpart ``epsilon_``; in skdp
        ``epsilon_`` is the privacy spent, as for every private estimator.
    bounds_ : tuple of ndarray
        ``(lower, upper)`` used, each of shape ``(n_features,)``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` has string feature names.
    privacy_event_ : PrivacyEvent
        What the fit charged: the composition of the three parts'
        :class:`~skdp.accounting.DiscreteLaplaceEvent` (at most ``epsilon``).
    epsilon_, delta_ : float
        What ``privacy_event_`` costs (``delta_`` is 0).
    budget_entry_ : LedgerEntry or None
        The fit's entry in ``budget``.

    See Also
    --------
    sklearn.naive_bayes.GaussianNB : The non-private estimator.

    Notes
    -----
    **Guarantee.** epsilon-DP under *replace one row* (features and label);
    ``n_samples`` is public.

    **Mechanism.** Each feature is clipped to ``[lower_j, upper_j]`` and
    normalised to ``u_j = (x_j - m_j) / w_j`` in ``[-1/2, 1/2]``, with
    ``m_j`` the midpoint and ``w_j = upper_j - lower_j`` the width of the
    bounds. For each class ``c`` the fit releases, with discrete Laplace
    noise (:func:`~skdp.mechanisms.plan_laplace`):

    * the count ``n_c`` (with two classes only ``n_1``; ``n_0 = n - n_1``):
      replacing a row moves it between at most two classes, so the L1
      sensitivity is 1 for two classes and 2 beyond (one class: the count
      is ``n``, public, and is not released with noise);
    * the sums ``S_cj = sum_{i in c} u_ij``: a replaced row changes one
      class's sums by ``u - u'`` or two classes' sums by ``u`` and
      ``-u'``; either way by at most ``sum_j 1 = d`` in L1 norm. Centring
      at the midpoint is what keeps this at ``d``: uncentred sums of
      features in ``[0, 1]`` have sensitivity ``2 d`` when the row changes
      class;
    * the sums ``Q_cj = sum_{i in c} (u_ij**2 - 1/8)``: each term lies in
      ``[-1/8, 1/8]``, so the L1 sensitivity is ``d / 4`` in both cases.

    Rescaling each part by its sensitivity makes the three one vector
    release of L1 sensitivity ``eps_n + eps_s + eps_q = epsilon`` at unit
    noise scale: one Laplace mechanism, epsilon-DP (Dwork, McSherry,
    Nissim & Smith 2006, Theorem 1; Dwork & Roth 2014, Theorem 3.6),
    charged as the composition of their three
    :class:`~skdp.accounting.DiscreteLaplaceEvent` (pure, at most
    ``epsilon`` in all). The discrete noise is calibrated
    to each part's sensitivity plus its rounding slack. epsilon is split to
    minimise the first-order error of the means and second moments
    (``epsilon_shares``): about 2 %, 70 % and 28 % for 100 features and
    two classes.

    **Post-processing** (free): counts are made to add up to ``n`` (more
    than two classes: the same shift to every count) and raised to at least
    1; means ``S / n_c`` are clipped to ``[-1/2, 1/2]``; second moments
    ``Q / n_c + 1/8`` to ``[mean**2, 1/4]``, so that the variance estimate
    lies in ``[0, (1/2 - mean) (1/2 + mean)]`` (Bhatia-Davis: no variable
    in the bounds varies more). A noisy variance can come out near zero,
    and a feature with a near-zero variance outvotes all the others, so
    each variance is then raised to at least ``NOISE_FLOOR = 0.5`` times
    the standard deviation of its own noise, ``sqrt(2) b_q / n_c`` (a
    public scale over a released count; capped at ``1/4``, the largest
    variance the bounds allow). The floor vanishes as epsilon or ``n_c``
    grows; at small epsilon it makes uninformative features flat, so the
    prior decides. Then the units are undone and ``var_smoothing_`` is
    added: every ``var_`` lies in ``[0, ((upper - lower) / 2)**2]`` plus
    ``var_smoothing_`` (and above ``1e-12`` of the squared width).

    **Compared with** Vaidya, Shafiq, Basu & Hong (2013) and diffprivlib,
    which split epsilon in equal thirds and release uncentred sums and the
    squared deviations from the noisy mean, per class, under *add or remove
    one row*: there, moving a row between classes touches two classes'
    statistics, so the same noise is ``2 epsilon``-DP under *replace one
    row*. Here the same relation as every skdp estimator holds, and
    centring, the split and the clipping above make the noise smaller.

    ``sample_weight`` is not supported (weights change the sensitivity);
    neither is ``partial_fit`` (each call would be a new release).

    References
    ----------
    .. [1] J. Vaidya, B. Shafiq, A. Basu, Y. Hong, "Differentially Private
       Naive Bayes Classification", WI-IAT 2013, Section IV.B (Gaussian
       attributes).
    .. [2] C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating Noise
       to Sensitivity in Private Data Analysis", TCC 2006, Theorem 1.
    .. [3] R. Bhatia, C. Davis, "A Better Bound on the Variance", The
       American Mathematical Monthly 107(4), 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import PrivacyBudget
    >>> from skdp.naive_bayes import DPGaussianNB
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=2000)
    >>> X = rng.normal(loc=y[:, None], scale=0.5, size=(2000, 3))
    >>> budget = PrivacyBudget(epsilon=2.0)
    >>> clf = DPGaussianNB(epsilon=1.0, bounds=(-2, 3), classes=[0, 1],
    ...                    budget=budget, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    >>> clf.epsilon_, budget.spent()
    (1.0, (1.0, 0.0))
    """

    _data_bound_params = ("bounds", "classes")
    _parameter_constraints: dict = {
        "epsilon": [EPSILON_CONSTRAINT],
        "bounds": ["array-like", None],
        "classes": ["array-like", None],
        "priors": ["array-like", None],
        "var_smoothing": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        bounds: ArrayLike | None = None,
        classes: ArrayLike | None = None,
        priors: ArrayLike | None = None,
        var_smoothing: float = 1e-2,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.classes = classes
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.random_state = random_state
        self.budget = budget

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With random_state=None the noise comes from the OS CSPRNG.
        tags.non_deterministic = self.random_state is None
        return tags

    # ------------------------------------------------------------------ fit
    def _check_bounds(self, lower, upper) -> None:
        check_magnitudes(
            type(self).__name__,
            **{
                "the largest bound": float(np.max(np.abs([lower, upper]))),
                "the widest range": float(np.max(upper - lower)),
            },
        )

    def _resolve_priors(self, n_classes: int) -> np.ndarray | None:
        if self.priors is None:
            return None
        priors = np.asarray(self.priors, dtype=float)
        if priors.shape != (n_classes,):
            raise ValueError(
                f"priors must have one entry per class ({n_classes}), got "
                f"shape {priors.shape}."
            )
        if not np.all(np.isfinite(priors)) or np.any(priors < 0):
            raise ValueError("priors must be non-negative and finite.")
        if not np.isclose(priors.sum(), 1.0):
            raise ValueError("The sum of the priors should be 1.")
        return priors

    def _prepare_fit(self, X, y=None):
        """Validated rows and the public facts of the plan (one pass over them).

        Public parameters are checked first; then one pass over the rows
        refuses non-finite values and labels outside ``classes`` (and reads
        the labels, or in memory the bounds, when they are not declared).
        """
        name = type(self).__name__
        rows = fit_rows(self, X, y, supervised=True)
        declared = None
        if self.classes is not None:
            # One declared class is allowed: its count is n, released exactly.
            declared = declared_classes(self.classes, min_declared=1)
            priors = self._resolve_priors(declared.size)
        lower = upper = None
        if self.bounds is not None:
            lower, upper = declared_bounds(self.bounds, rows.n_features)
            self._check_bounds(lower, upper)
        elif rows.is_dask:
            refuse_undeclared(name)
        else:
            warn_bounds_read(estimator=name)
        facts = read_facts(
            rows,
            FactsRequest(
                extremes=lower is None,
                classes=declared,
                labels=declared is None,
                targets=True,
            ),
        )
        check_finite(facts, name, rows.y.dtype)
        classes = classes_from_labels(facts.labels, declared, facts.outside, name)
        if declared is None:
            priors = self._resolve_priors(classes.size)
        if lower is None:
            lower, upper = bounds_from_extremes(facts.low, facts.high)
            self._check_bounds(lower, upper)
        return _NBInput(rows, classes, lower, upper, priors)

    def _plan_fit(self, prepared) -> FitPlan:
        """The event and noise of this fit, from public quantities only."""
        n_samples, n_features = prepared.rows.n_samples, prepared.rows.n_features
        nb_plan = plan_gaussian_nb(
            self.epsilon, n_features, prepared.classes.size, n_samples
        )
        return FitPlan(nb_plan.event, 0.0, {"noise": nb_plan})

    def _run_fit(self, prepared, plan, source) -> None:
        """Noisy statistics and their post-processing; cannot raise."""
        nb_plan: GaussianNBPlan = plan.settings["noise"]
        rows, classes = prepared.rows, prepared.classes
        lower, upper = prepared.lower, prepared.upper
        n_samples = rows.n_samples
        n_classes = classes.size
        # One pass: each block's rows are clipped and normalised where they
        # are (on the workers for dask); only the sums come back.
        counts, sums, squares = rows.block_sum(
            _class_statistics_block, lower, upper, classes
        )

        # The three noisy releases.
        if n_classes == 1:
            noisy_counts = np.array([float(n_samples)])
        elif n_classes == 2:
            second = add_noise(nb_plan.count_noise, counts, source)[0]
            noisy_counts = np.array([n_samples - second, second])
        else:
            noisy_counts = add_noise(nb_plan.count_noise, counts, source)
        noisy_sums = add_noise(nb_plan.sum_noise, sums, source)
        noisy_squares = add_noise(nb_plan.square_noise, squares, source)

        # Post-processing.
        if n_classes > 2:
            noisy_counts = noisy_counts + (n_samples - noisy_counts.sum()) / n_classes
        noisy_counts = np.maximum(noisy_counts, 1.0)
        mean = np.clip(noisy_sums / noisy_counts[:, None], -0.5, 0.5)
        second_moment = noisy_squares / noisy_counts[:, None] + 0.125
        second_moment = np.clip(second_moment, mean**2, 0.25)
        variance = np.maximum(second_moment - mean**2, MIN_VARIANCE)

        width = upper - lower
        self.classes_ = classes
        self.class_count_ = noisy_counts
        if prepared.priors is not None:
            self.class_prior_ = prepared.priors.copy()
        else:
            self.class_prior_ = noisy_counts / noisy_counts.sum()
        self.theta_ = np.clip(lower + width / 2 + width * mean, lower, upper)
        self.var_smoothing_ = float(self.var_smoothing) * (width / 2) ** 2
        # The noise of the second moment has standard deviation
        # sqrt(2) b_q / n_c, a public scale over a released count.
        square_noise = _noise_std(nb_plan.square_noise) / noisy_counts[:, None]
        floor = np.minimum(NOISE_FLOOR * square_noise, 0.25)
        variance = np.maximum(variance, floor)
        self.var_ = width**2 * variance + self.var_smoothing_
        self.bounds_ = (lower, upper)

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (dense), or a dask array or DataFrame: the
            statistics are then summed over row blocks on the workers and
            only the sums reach the client (``bounds`` must be declared).
        y : array-like of shape (n_samples,)
            Labels (a dask array or Series with dask ``X``).

        Returns
        -------
        self : DPGaussianNB
            Fitted estimator.
        """
        return self._fit_private(X, y)

    # -------------------------------------------------------------- predict
    def predict_joint_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Log of ``P(x, c)`` for every class: log prior plus log likelihood.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        joint_log_proba : ndarray of shape (n_samples, n_classes)

        Notes
        -----
        Rows are clipped to ``bounds_`` first, as the training rows were: a
        value beyond the bounds is scored as the bound (and a value near
        float64's limit no longer overflows the squares into NaN).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        X = np.clip(X, *self.bounds_)
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.class_prior_)
        normaliser = -0.5 * np.sum(np.log(2.0 * np.pi * self.var_), axis=1)
        quadratic = np.stack(
            [
                np.sum((X - theta) ** 2 / var, axis=1)
                for theta, var in zip(self.theta_, self.var_, strict=True)
            ],
            axis=1,
        )
        return log_prior + normaliser - 0.5 * quadratic

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        joint = self.predict_joint_log_proba(X)
        return self.classes_[np.argmax(joint, axis=1)]

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Log of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        joint = self.predict_joint_log_proba(X)
        return joint - logsumexp(joint, axis=1, keepdims=True)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return np.exp(self.predict_log_proba(X))
