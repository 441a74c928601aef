"""Statistical lower bounds on the epsilon a mechanism actually spends.

A differentially private mechanism ``M`` satisfies, for neighbouring
datasets ``D, D'`` and every set of outputs ``E``,
``P[M(D) in E] <= exp(epsilon) P[M(D') in E] + delta``. Running ``M`` many
times on both datasets and counting how often a scalar statistic of the
output falls in a threshold set ``E`` estimates both probabilities; with
exact binomial (Clopper-Pearson) confidence bounds the inequality turns into
a lower bound on epsilon that holds with the stated confidence. A bound
above the claimed epsilon is evidence of a bug in the mechanism, its
calibration or its accounting; a bound below it proves nothing about
privacy (an audit can only find leaks, never certify their absence).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from sklearn.base import BaseEstimator, clone

from ..utils._sklearn_compat import Interval, validate_params

__all__ = ["AuditResult", "audit_epsilon", "audit_estimator", "audit_scores"]


@dataclass(frozen=True)
class AuditResult:
    """What a privacy audit found: a lower bound on epsilon and its evidence.

    The bound comes from one event ``E`` on the statistic, ``statistic >
    threshold`` (``tail="upper"``) or ``statistic <= threshold``
    (``tail="lower"``), chosen on the first half of the runs. On the second
    half, ``counts[0]`` of ``n_evaluation`` runs on the dataset and
    ``counts[1]`` of ``n_evaluation`` runs on the neighbour fell in ``E``.

    Attributes
    ----------
    epsilon_lower_bound : float
        With probability at least ``confidence`` over the audit's runs, the
        mechanism is not ``(epsilon, delta)``-DP for any epsilon below this
        value. ``0.0`` when the runs show no evidence.
    threshold : float
        The threshold of the event.
    tail : {"upper", "lower"}
        ``"upper"``: the event is ``statistic > threshold``; ``"lower"``:
        ``statistic <= threshold``.
    more_likely_under : {"dataset", "neighbour"}
        The dataset under which the event is more likely (the numerator of
        the likelihood ratio).
    counts : tuple of int
        ``(runs on the dataset in E, runs on the neighbour in E)`` in the
        evaluation half.
    n_evaluation : int
        Runs per dataset in the evaluation half.
    n_runs : int
        Runs per dataset in total (selection plus evaluation).
    delta : float
        The delta the bound is computed for.
    confidence : float
        Confidence level of the bound.
    probability_bounds : tuple of float
        ``(lower bound on P[E] under the more likely dataset, upper bound on
        P[E] under the other)``, each a one-sided Clopper-Pearson bound at
        level ``(1 - confidence) / 2``.
    claimed_epsilon : float or None
        The epsilon the mechanism claims, when known (set by
        :func:`audit_estimator` from the fitted ``epsilon_``).
    scores : tuple of ndarray
        The statistic of every run, on the dataset and on the neighbour
        (not shown in the repr).
    """

    epsilon_lower_bound: float
    threshold: float
    tail: str
    more_likely_under: str
    counts: tuple[int, int]
    n_evaluation: int
    n_runs: int
    delta: float
    confidence: float
    probability_bounds: tuple[float, float]
    claimed_epsilon: float | None = None
    scores: tuple[np.ndarray, np.ndarray] = field(default=(), repr=False, compare=False)

    @property
    def violation(self) -> bool:
        """True when the lower bound exceeds the claimed epsilon (a bug)."""
        return (
            self.claimed_epsilon is not None
            and self.epsilon_lower_bound > self.claimed_epsilon
        )

    def __str__(self) -> str:
        op = ">" if self.tail == "upper" else "<="
        claimed = (
            ""
            if self.claimed_epsilon is None
            else f" (claimed epsilon {self.claimed_epsilon:.4g})"
        )
        return (
            f"epsilon >= {self.epsilon_lower_bound:.4f}{claimed} at delta="
            f"{self.delta:.3g} with confidence {self.confidence:g}; event "
            f"'statistic {op} {self.threshold:.6g}' hit {self.counts[0]}/"
            f"{self.n_evaluation} runs on the dataset and {self.counts[1]}/"
            f"{self.n_evaluation} on the neighbour"
        )


def _clopper_pearson_lower(k, n, alpha):
    """One-sided lower confidence bound on a binomial proportion."""
    k = np.asarray(k, dtype=float)
    safe = np.maximum(k, 1.0)
    return np.where(k > 0, stats.beta.ppf(alpha, safe, n - safe + 1), 0.0)


def _clopper_pearson_upper(k, n, alpha):
    """One-sided upper confidence bound on a binomial proportion."""
    k = np.asarray(k, dtype=float)
    safe = np.minimum(k, n - 1.0)
    return np.where(k < n, stats.beta.ppf(1 - alpha, safe + 1, n - safe), 1.0)


def _epsilon_bound(k_more, k_less, n, delta, alpha):
    """``log((P_lower[E | more] - delta) / P_upper[E | less])``, floored at 0."""
    lower = _clopper_pearson_lower(k_more, n, alpha)
    upper = _clopper_pearson_upper(k_less, n, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(np.maximum(lower - delta, 0.0) / upper)
    return np.maximum(np.nan_to_num(eps, nan=0.0, neginf=0.0), 0.0), lower, upper


def _event_counts(sample, thresholds):
    """Counts of ``sample <= t`` (lower tail) and ``sample > t`` per threshold."""
    below = np.searchsorted(np.sort(sample), thresholds, side="right")
    return below, sample.size - below


def _check_scores(scores: ArrayLike, name: str) -> np.ndarray:
    scores = np.asarray(scores, dtype=float).ravel()
    if scores.size < 2:
        raise ValueError(f"{name} must hold at least 2 runs, got {scores.size}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError(
            f"{name} holds NaN or infinite values; the statistic must return a "
            "finite number for every run."
        )
    return scores


@validate_params(
    {
        "scores": ["array-like"],
        "neighbour_scores": ["array-like"],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def audit_scores(
    scores: ArrayLike,
    neighbour_scores: ArrayLike,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> AuditResult:
    r"""Lower-bound epsilon from a statistic's values on two neighbouring datasets.

    The statistical core of :func:`audit_epsilon`, for when the runs were
    made elsewhere. The runs must be independent; the first half of each
    sample chooses the test, the second half evaluates it.

    Parameters
    ----------
    scores : array-like of shape (n_runs,)
        The statistic of independent runs of the mechanism on the dataset.
    neighbour_scores : array-like of shape (n_runs,)
        The same on the neighbouring dataset (same number of runs).
    delta : float, default=0.0
        The delta of the guarantee being audited, in [0, 1).
    confidence : float, default=0.95
        Probability that the bound is valid, in (0, 1).

    Returns
    -------
    result : AuditResult

    Notes
    -----
    **Test selection.** Every threshold :math:`t` among the selection half's
    values defines two events, :math:`S \le t` and :math:`S > t`, and each
    can be more likely under either dataset: four candidate tests per
    threshold. The test with the largest bound on the selection half is
    kept, that bound computed at the stricter level
    :math:`\alpha / \sqrt{n_{\mathrm{candidates}}}` so
    that an extreme tail with a few lucky hits does not beat a
    well-supported event (the winner's curse). Because
    the evaluation half plays no part in the choice, the bound computed on it
    keeps its nominal confidence (Jagielski, Ullman & Oprea 2020, Section 3;
    Nasr, Song, Thakurta, Papernot & Carlini 2021, Section 4).

    **Bound.** For the chosen event :math:`E` with :math:`k_a` of :math:`m`
    evaluation runs in :math:`E` under the more likely dataset and
    :math:`k_b` of :math:`m` under the other, let :math:`p_a` be the
    one-sided Clopper-Pearson lower bound on :math:`P[E \mid a]` and
    :math:`p_b` the upper bound on :math:`P[E \mid b]`, each at level
    :math:`\alpha = (1 - \mathrm{confidence}) / 2`. If the mechanism is
    :math:`(\varepsilon, \delta)`-DP then
    :math:`P[E \mid a] \le e^{\varepsilon} P[E \mid b] + \delta` (the
    definition, applied to the neighbours in either order), so with
    probability at least ``confidence`` (union bound over the two
    intervals)

    .. math::

        \varepsilon \ge \log \frac{p_a - \delta}{p_b}.

    With :math:`E` the complement of a distinguisher's rejection region this
    is the bound :math:`\log((1 - \delta - \mathrm{FPR}) / \mathrm{FNR})` of
    Jagielski et al. (2020, Algorithm 2) and Nasr et al. (2021, Theorem 1);
    both directions of the test are covered by the four candidates. The
    bound is floored at 0.

    With :math:`m` evaluation runs the bound cannot exceed about
    :math:`\log(m / \log(1 / \alpha))` (:math:`k_b = 0`), so auditing a
    large epsilon needs many runs.

    References
    ----------
    Jagielski, M., Ullman, J. & Oprea, A. (2020). Auditing differentially
    private machine learning: how private is private SGD? NeurIPS.

    Nasr, M., Song, S., Thakurta, A., Papernot, N. & Carlini, N. (2021).
    Adversary instantiation: lower bounds for differentially private machine
    learning. IEEE S&P.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.audit import audit_scores
    >>> rng = np.random.default_rng(0)
    >>> result = audit_scores(rng.laplace(0, 1, 4000), rng.laplace(1, 1, 4000))
    >>> 0 < result.epsilon_lower_bound < 1  # Laplace with scale 1: epsilon 1
    True
    """
    scores = _check_scores(scores, "scores")
    neighbour_scores = _check_scores(neighbour_scores, "neighbour_scores")
    if scores.size != neighbour_scores.size:
        raise ValueError(
            "scores and neighbour_scores must hold the same number of runs, got "
            f"{scores.size} and {neighbour_scores.size}."
        )
    n_runs = scores.size
    half = n_runs // 2
    alpha = (1.0 - confidence) / 2.0
    delta = float(delta)

    # Selection half: all thresholds, both tails, both orders.
    select_0, select_1 = scores[:half], neighbour_scores[:half]
    thresholds = np.unique(np.concatenate([select_0, select_1]))
    below_0, above_0 = _event_counts(select_0, thresholds)
    below_1, above_1 = _event_counts(select_1, thresholds)
    candidates = [
        ("lower", "dataset", below_0, below_1),
        ("lower", "neighbour", below_1, below_0),
        ("upper", "dataset", above_0, above_1),
        ("upper", "neighbour", above_1, above_0),
    ]
    # Scored at a stricter level so that a lucky extreme tail (few hits)
    # does not beat a well-supported event: the winner's curse.
    alpha_select = alpha / math.sqrt(len(candidates) * thresholds.size)
    best = (-1.0, 0, 0)
    for c, (_, _, k_more, k_less) in enumerate(candidates):
        eps, _, _ = _epsilon_bound(k_more, k_less, half, delta, alpha_select)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), c, i)
    _, c, i = best
    tail, favoured = candidates[c][0], candidates[c][1]
    threshold = float(thresholds[i])

    # Evaluation half: one test, fixed before looking at it.
    eval_0, eval_1 = scores[half:], neighbour_scores[half:]
    m = eval_0.size
    if tail == "lower":
        k_0, k_1 = int(np.sum(eval_0 <= threshold)), int(np.sum(eval_1 <= threshold))
    else:
        k_0, k_1 = int(np.sum(eval_0 > threshold)), int(np.sum(eval_1 > threshold))
    k_more, k_less = (k_0, k_1) if favoured == "dataset" else (k_1, k_0)
    eps, lower, upper = _epsilon_bound(k_more, k_less, m, delta, alpha)
    return AuditResult(
        epsilon_lower_bound=float(eps),
        threshold=threshold,
        tail=tail,
        more_likely_under=favoured,
        counts=(k_0, k_1),
        n_evaluation=m,
        n_runs=n_runs,
        delta=delta,
        confidence=float(confidence),
        probability_bounds=(float(lower), float(upper)),
        scores=(scores, neighbour_scores),
    )


def _run_seeds(random_state, n):
    """``n`` independent seeds for the runs, or ``None`` for secure runs."""
    if random_state is None:
        return [None] * n
    if isinstance(random_state, np.random.Generator):
        return [int(s) for s in random_state.integers(0, 2**63, size=n)]
    return [int(s) for s in np.random.SeedSequence(random_state).generate_state(n)]


def _statistic_value(statistic, output) -> float:
    value = output if statistic is None else statistic(output)
    arr = np.asarray(value, dtype=float)
    if arr.size != 1:
        raise ValueError(
            f"The statistic must return one number per run, got shape {arr.shape}."
        )
    return float(arr.reshape(()))


_RANDOM_STATE = [None, Interval(Integral, 0, None, closed="left"), np.random.Generator]


@validate_params(
    {
        "run": [callable],
        "statistic": [callable, None],
        "n_runs": [Interval(Integral, 4, None, closed="left")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "random_state": _RANDOM_STATE,
    },
    prefer_skip_nested_validation=True,
)
def audit_epsilon(
    run: Callable[[Any, Any], Any],
    dataset: Any,
    neighbour: Any,
    *,
    statistic: Callable[[Any], float] | None = None,
    n_runs: int = 1000,
    delta: float = 0.0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> AuditResult:
    """Run a mechanism many times on two neighbouring datasets and bound epsilon.

    Parameters
    ----------
    run : callable
        ``run(dataset, random_state) -> output``: one execution of the
        mechanism. It must pass ``random_state`` on to the mechanism, so
        that every run draws fresh noise.
    dataset, neighbour : object
        Two neighbouring inputs (for example a dataset and the same dataset
        with one row replaced by a worst case), passed to ``run`` unchanged.
    statistic : callable, default=None
        ``statistic(output) -> float``, the scalar the test thresholds (a
        coefficient, a prediction at a point, a selected index). ``None``
        uses ``float(output)``.
    n_runs : int, default=1000
        Runs on each dataset, >= 4. Half choose the test, half evaluate it.
    delta : float, default=0.0
        The delta of the guarantee being audited, in [0, 1).
    confidence : float, default=0.95
        Probability that the bound is valid, in (0, 1).
    random_state : None, int or numpy Generator, default=None
        ``None`` runs the mechanism with ``random_state=None`` every time (its
        secure noise). An int makes the audit reproducible: each run gets its
        own seed derived from it. Use seeds only for tests.

    Returns
    -------
    result : AuditResult
        The lower bound, the event that gave it and the counts.

    See Also
    --------
    audit_estimator : The same for a scikit-learn estimator's fit.
    audit_scores : The statistics of :func:`audit_epsilon` for given runs.

    Notes
    -----
    The bound is that of :func:`audit_scores`: ``epsilon >= log((p_a -
    delta) / p_b)`` with Clopper-Pearson bounds ``p_a``, ``p_b`` on the
    probability of a threshold event under the two datasets, the event
    chosen on half the runs and evaluated on the other half (Jagielski,
    Ullman & Oprea 2020; Nasr, Song, Thakurta, Papernot & Carlini 2021).

    An audit is only as strong as its datasets and statistic: a lower bound
    close to the claimed epsilon needs neighbours that differ as much as the
    neighbouring relation allows and a statistic close to the likelihood
    ratio of the two output distributions. A bound above the claimed epsilon
    means the mechanism is not private as claimed (with probability at least
    ``confidence``); a bound below it is not a proof of privacy.

    Audit on made-up data: the runs release the mechanism's output on both
    datasets ``2 * n_runs`` times, and nothing is charged to any budget.

    References
    ----------
    Jagielski, M., Ullman, J. & Oprea, A. (2020). Auditing differentially
    private machine learning: how private is private SGD? NeurIPS.

    Nasr, M., Song, S., Thakurta, A., Papernot, N. & Carlini, N. (2021).
    Adversary instantiation: lower bounds for differentially private machine
    learning. IEEE S&P.

    Examples
    --------
    >>> from skdp.audit import audit_epsilon
    >>> from skdp.mechanisms import laplace_mechanism
    >>> def run(count, random_state):
    ...     noisy, _ = laplace_mechanism(count, sensitivity=1.0, epsilon=1.0,
    ...                                  random_state=random_state)
    ...     return noisy
    >>> result = audit_epsilon(run, 10.0, 11.0, n_runs=2000, random_state=0)
    >>> 0.5 < result.epsilon_lower_bound <= 1.0
    True
    """
    seeds = _run_seeds(random_state, 2 * n_runs)
    scores = np.array(
        [_statistic_value(statistic, run(dataset, s)) for s in seeds[:n_runs]]
    )
    neighbour_scores = np.array(
        [_statistic_value(statistic, run(neighbour, s)) for s in seeds[n_runs:]]
    )
    return audit_scores(scores, neighbour_scores, delta=delta, confidence=confidence)


def _as_xy(dataset, name):
    if not isinstance(dataset, tuple) or len(dataset) != 2:
        raise ValueError(
            f"{name} must be a tuple (X, y); use (X, None) for an unsupervised "
            f"estimator, got {type(dataset).__name__}."
        )
    return dataset


@validate_params(
    {
        "estimator": [object],
        "statistic": [callable],
        "n_runs": [Interval(Integral, 4, None, closed="left")],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "random_state": _RANDOM_STATE,
    },
    prefer_skip_nested_validation=True,
)
def audit_estimator(
    estimator: BaseEstimator,
    dataset: tuple[ArrayLike, ArrayLike | None],
    neighbour: tuple[ArrayLike, ArrayLike | None],
    *,
    statistic: Callable[[Any], float],
    n_runs: int = 500,
    delta: float | None = None,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> AuditResult:
    """Audit a private estimator's ``fit`` on two neighbouring datasets.

    Each run fits a clone of ``estimator`` with its own ``random_state`` and
    ``budget=None`` and applies ``statistic`` to the fitted estimator.

    Parameters
    ----------
    estimator : estimator instance
        A private skdp estimator (it must take ``random_state``), configured
        as it would be released.
    dataset, neighbour : tuple (X, y)
        Two neighbouring training sets; ``(X, None)`` for an unsupervised
        estimator.
    statistic : callable
        ``statistic(fitted_estimator) -> float``, e.g.
        ``lambda est: est.coef_[0, 0]`` or a prediction at a fixed point.
    n_runs : int, default=500
        Fits on each dataset, >= 4.
    delta : float, default=None
        The delta audited; ``None`` takes the ``delta_`` the first fit
        records (0 for pure-epsilon methods).
    confidence : float, default=0.95
        Probability that the bound is valid.
    random_state : None, int or numpy Generator, default=None
        ``None`` fits with secure noise; an int makes the audit reproducible.

    Returns
    -------
    result : AuditResult
        With ``claimed_epsilon`` set to the first fit's ``epsilon_``.

    Notes
    -----
    The clones are fitted with ``budget=None`` so that an audit does not
    spend the user's budget; audit on made-up data only (see
    :func:`audit_epsilon`). For the strongest audit the two datasets differ
    in one row chosen as a worst case for the neighbouring relation the
    estimator claims (for example a row at the norm bound with the opposite
    label), and the statistic is one the changed row moves most.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from skdp.audit import audit_estimator
    >>> from skdp.base import FitPlan, PrivateEstimatorMixin
    >>> from skdp.mechanisms import add_noise, plan_laplace
    >>> class NoisyMean(PrivateEstimatorMixin, BaseEstimator):
    ...     # Mean of values in [0, 1]; replacing a row moves it by 1/n.
    ...     def __init__(self, epsilon=1.0, random_state=None, budget=None):
    ...         self.epsilon = epsilon
    ...         self.random_state = random_state
    ...         self.budget = budget
    ...     def fit(self, X, y=None):
    ...         return self._fit_private(X, y)  # plan, charge, run
    ...     def _prepare_fit(self, X, y=None):
    ...         return np.clip(np.asarray(X, dtype=float).ravel(), 0, 1)
    ...     def _plan_fit(self, X):
    ...         noise = plan_laplace(1.0 / X.size, self.epsilon, size=1)
    ...         return FitPlan(noise.event, settings={"noise": noise})
    ...     def _run_fit(self, X, plan, source):
    ...         self.mean_ = add_noise(plan.settings["noise"], X.mean(), source)
    >>> X = np.zeros(10)
    >>> X_neighbour = X.copy()
    >>> X_neighbour[0] = 1.0
    >>> result = audit_estimator(NoisyMean(epsilon=1.0), (X, None),
    ...                          (X_neighbour, None),
    ...                          statistic=lambda est: est.mean_,
    ...                          n_runs=1000, random_state=0)
    >>> result.claimed_epsilon, result.violation
    (1.0, False)
    """
    X, y = _as_xy(dataset, "dataset")
    X_neighbour, y_neighbour = _as_xy(neighbour, "neighbour")
    params = estimator.get_params(deep=False)
    if "random_state" not in params:
        raise ValueError(
            f"{type(estimator).__name__} has no random_state parameter; an audit "
            "needs to give every fit fresh noise through it."
        )
    fixed = {"budget": None} if "budget" in params else {}
    first_fit: list = []

    def run(data, seed):
        X_run, y_run = data
        est = clone(estimator).set_params(random_state=seed, **fixed)
        est.fit(X_run) if y_run is None else est.fit(X_run, y_run)
        if not first_fit:
            first_fit.append(est)
        return est

    seeds = _run_seeds(random_state, 2 * n_runs)
    scores = np.array(
        [_statistic_value(statistic, run((X, y), s)) for s in seeds[:n_runs]]
    )
    neighbour_scores = np.array(
        [
            _statistic_value(statistic, run((X_neighbour, y_neighbour), s))
            for s in seeds[n_runs:]
        ]
    )
    fitted = first_fit[0]
    if delta is None:
        delta = float(getattr(fitted, "delta_", 0.0))
    result = audit_scores(scores, neighbour_scores, delta=delta, confidence=confidence)
    claimed = getattr(fitted, "epsilon_", None)
    return replace(result, claimed_epsilon=None if claimed is None else float(claimed))
