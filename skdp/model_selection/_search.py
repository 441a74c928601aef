"""Private hyperparameter search by random stopping."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from copy import deepcopy
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import loguniform
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags, indexable

from .._pipeline_check import step_privacy
from ..accounting._budget import PrivacyBudget
from ..accounting._calibration import calibrate_parameter
from ..accounting._delta import resolve_delta
from ..accounting._events import (
    ParallelComposedEvent,
    PrivacyEvent,
    RepeatedRandomStoppingEvent,
)
from ..accounting._repetition import (
    truncated_negative_binomial_stopping_probability,
)
from ..base import FitPlan, PrivateEstimatorMixin
from ..mechanisms import add_noise, plan_laplace
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._dask import take_rows
from ..utils._privacy import user_stacklevel
from ..utils._random import check_random_source
from ..utils._sklearn_compat import (
    HasMethods,
    Interval,
    Real,
    StrOptions,
    available_if,
    check_is_fitted,
    fit_context,
    num_samples,
)
from ._stopping import sample_poisson, sample_truncated_negative_binomial

if TYPE_CHECKING:
    from .._typing import Self

__all__ = ["PrivateSearchCV"]

# A trial's privacy curve may exceed the reference curve by this much (relative)
# before the search refuses it: room for rounding in a re-derived event only.
_CURVE_RTOL = 1e-9
# How many candidates, drawn with a fixed public seed, stand for the parameter
# distributions when checking that every candidate costs the same privacy.
_N_REFERENCE_CANDIDATES = 64
# The calibrated search costs at least (1 - this) times its epsilon.
_CALIBRATION_RTOL = 1e-4


def _strip_label(event: PrivacyEvent) -> PrivacyEvent:
    return event.with_label("")


def _call_scoring(scoring, trial, X, y, n_rows):
    """The callable's per-row scores as floats, or None if it fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = np.asarray(scoring(trial, X, y), dtype=float)
    except Exception:
        return None
    return scores if scores.shape == (n_rows,) else None


def _row_score(scoring, trial, X, y, row) -> float:
    """The callable's score of one row on its own; 0 if it fails."""
    rows = [row]
    scores = _call_scoring(
        scoring,
        trial,
        take_rows(X, rows),
        None if y is None else take_rows(y, rows),
        1,
    )
    return 0.0 if scores is None else float(scores[0])


def _distinct(values) -> list:
    """The distinct values of a list, in first-seen order."""
    out = []
    for value in values:
        if not any(value is seen or _same(value, seen) for seen in out):
            out.append(value)
    return out


def _same(a, b) -> bool:
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:  # e.g. arrays, whose == is elementwise
        return False


def _delegate(attribute):
    """``available_if`` check: the (best) inner estimator has ``attribute``."""

    def check(self):
        if getattr(self, "best_estimator_", None) is not None:
            getattr(self.best_estimator_, attribute)
        else:
            getattr(self._inner_estimator(), attribute)
        return True

    return check


#: Largest ``mean_trials``: every trial is a whole fit of the estimator.
MAX_MEAN_TRIALS = 1000.0


class PrivateSearchCV(PrivateEstimatorMixin, BaseEstimator):
    """Differentially private hyperparameter search by random stopping.

    Runs a random number ``K`` of trials, drawn secretly from a truncated
    negative binomial (logarithmic by default, or geometric) or a Poisson
    distribution. Each
    trial draws a candidate from ``param_distributions``, trains the private
    ``estimator`` with it on a training part of the data, and scores it on
    a held-out validation part with Laplace noise. Only the best trial is
    released: its model (``best_estimator_``), its parameters and its noisy
    score. The whole search is charged once, before any training, with a
    :class:`~skdp.accounting.RepeatedRandomStoppingEvent` whose cost is
    ``(epsilon, delta)``: the per-trial privacy is calibrated so that the
    bound of Papernot & Steinke (2022) meets the target exactly.

    Read more in ``doc/model_selection.rst``.

    Parameters
    ----------
    estimator : estimator object, default=None
        A private skdp estimator (or a :class:`~sklearn.pipeline.Pipeline`
        of stateless steps ending in one) with ``epsilon`` and ``budget``
        parameters. ``None`` means
        :class:`skdp.linear_model.DPLogisticRegression` with its defaults.
        The search sets its ``epsilon`` (and ``random_state``) for every
        trial; its other parameters, including ``delta``, are kept.
    param_distributions : dict or list of dicts, default=None
        Candidates, as for :class:`~sklearn.model_selection.RandomizedSearchCV`:
        lists are sampled uniformly, objects with ``rvs`` are sampled with
        it; a list of dicts picks a dict uniformly first. Every trial draws
        independently (with replacement). ``None`` means
        ``{"C": scipy.stats.loguniform(1e-3, 1e2)}``. The ``epsilon``,
        ``budget`` and ``random_state`` of the estimator cannot be tuned.
        The distributions are public: choose them before looking at the
        data.
    epsilon : float, default=1.0
        Total epsilon of the whole search (every trial and the selection).
    delta : float or None, default=None
        Total delta of the whole search, in [0, 1). ``delta=0`` needs
        pure-DP trials (such as ``method="objective"``) and a truncated
        negative binomial law: the search is then ``(2 + shape)`` trials'
        epsilon, pure DP. Otherwise the bound is in Renyi DP and needs
        ``delta > 0``. ``None`` follows skdp's default-delta rule
        (:ref:`default_delta`): the Renyi-DP bound at
        :data:`~skdp.accounting.DEFAULT_DELTA`.
    stopping : {"truncated_negative_binomial", "geometric", "poisson"}, \
            default="truncated_negative_binomial"
        Law of the number of trials. ``"geometric"`` is the truncated
        negative binomial with ``shape=1``. The default, with ``shape=0``
        (the logarithmic law), costs two trials' epsilon for pure-DP
        trials against three for the geometric law, and gave the better
        accuracy on UCI Adult (``benchmarks/tuning_adult.py``).
    mean_trials : float, default=10.0
        Expected number of trials, > 1 (>= 1 for ``"poisson"``), at most
        1000 (each trial is a whole fit; beyond, a search would not
        finish). The number actually run is random and is not released.
    shape : float, default=0.0
        ``eta > -1`` of the truncated negative binomial, used only with
        ``stopping="truncated_negative_binomial"`` (0: logarithmic law).
        Smaller values cost less privacy for the same mean but make a single
        trial more likely.
    validation_fraction : float, default=0.2
        Share of the rows held out to score the trials, in (0, 1). The split
        is a uniformly random permutation, independent of the data (not
        stratified: stratifying would read the labels).
    score_epsilon_fraction : float, default=1.0
        Epsilon of each trial's noisy validation score, as a fraction of
        the ``epsilon`` the estimator trains with. Training reads only the
        training rows and the score only the validation rows, so a trial
        costs the larger of the two (parallel composition), not their sum:
        at 1.0 the score is as precise as the trial's budget allows, for
        free.
    scoring : "accuracy" or callable, default="accuracy"
        ``"accuracy"``: the share of validation rows predicted exactly. A
        callable ``scoring(estimator, X, y)`` must return one score per
        validation row, computed from that row alone; each is clipped to
        [0, 1] (NaN and infinities count 0) and their mean is released, so
        the sensitivity stays ``1 / n_validation``. If it raises or returns
        the wrong shape, each row is scored on its own and a row it fails on
        counts 0 (after the charge nothing may raise).
    random_state : None, int or numpy Generator, default=None
        ``None`` draws the number of trials, the candidates, the split and
        all noise from the operating system's CSPRNG (the only choice for a
        release). A seed makes the search reproducible, for testing only.
    budget : PrivacyBudget, default=None
        Budget charged once, with the whole search, before any training.
        The trials themselves never charge a budget: their cost is inside
        the search's event.

    Attributes
    ----------
    best_estimator_ : estimator
        The released model: the estimator of the best trial, trained on the
        training part only. There is no refit on all the data, which would
        cost privacy that the search does not account for. ``None`` only if
        a Poisson draw gave zero trials.
    best_params_ : dict
        The candidate of the best trial.
    best_score_ : float
        Its noisy validation score (accuracy with Laplace noise), which is
        part of the release.
    cv_results_ : dict of lists
        The released trial in the layout of scikit-learn's searches
        (``params``, ``param_<name>``, ``mean_test_score``,
        ``rank_test_score``), with one entry. The other trials, and how many
        ran, are deliberately not recorded: the guarantee covers the best
        trial only, and releasing the others would cost as much as
        composing them all.
    trial_epsilon_ : float
        ``epsilon`` each trial trains with.
    score_epsilon_ : float
        Epsilon of each trial's noisy score.
    stopping_probability_ : float or None
        ``gamma`` of the truncated negative binomial (``None`` for Poisson).
    n_validation_ : int
        Number of validation rows (the score's sensitivity is its inverse).
    privacy_event_ : RepeatedRandomStoppingEvent
        The event charged.
    epsilon_, delta_ : float
        What the search spent (``epsilon_ <= epsilon``).
    budget_entry_ : LedgerEntry or None
        The ledger entry in ``budget``.
    classes_, n_features_in_, feature_names_in_
        Those of ``best_estimator_``.

    See Also
    --------
    sklearn.model_selection.RandomizedSearchCV : The non-private search; its
        choice of the best candidate is not covered by any privacy
        accounting.

    Notes
    -----
    **Guarantee.** :math:`(\\varepsilon, \\delta)`-DP for neighbouring
    datasets that differ by replacing one row (features and label), under
    these assumptions: each trial is ``estimator`` trained with DP at
    ``trial_epsilon_`` on the training part (its own theorem) followed by
    the validation score with Laplace noise of scale
    :math:`1 / (n_{\\mathrm{val}}\\,\\varepsilon_{\\mathrm{score}})`, with
    :math:`n_{\\mathrm{val}}` the validation rows and
    :math:`\\varepsilon_{\\mathrm{score}}` = ``score_epsilon_`` (a row
    changes the mean of per-row scores in [0, 1] by at most
    :math:`1 / n_{\\mathrm{val}}`); trials are
    independent (fresh noise, candidates drawn independently from the
    public distributions, a split that is the same for all trials and
    independent of the data); the number of trials is secret; only the
    best trial is released.

    One trial :math:`Q` is its training event on the training rows and its
    Laplace event on the validation rows: a replaced row is in one of the
    two parts, so :math:`Q`'s Renyi-DP curve
    :math:`\\varepsilon(\\lambda)` is the larger of theirs at each order
    (parallel composition, :class:`~skdp.accounting.ParallelComposedEvent`). With
    :math:`K` truncated negative binomial of shape :math:`\\eta` and
    parameter :math:`\\gamma`, releasing the best of :math:`K` runs of
    :math:`Q` is :math:`(\\lambda, \\varepsilon')`-RDP with

    .. math::

        \\varepsilon' = \\varepsilon(\\lambda)
        + (1 + \\eta)\\Big(\\big(1 - \\tfrac{1}{\\hat\\lambda}\\big)
        \\varepsilon(\\hat\\lambda) + \\frac{\\log(1/\\gamma)}{\\hat\\lambda}\\Big)
        + \\frac{\\log \\mathbb{E}[K]}{\\lambda - 1}

    for any :math:`\\hat\\lambda \\ge 1` (Papernot & Steinke 2022,
    Theorem 2); with :math:`K` Poisson of mean :math:`\\mu`,
    :math:`\\varepsilon' = \\varepsilon(\\lambda) + \\mu\\hat\\delta
    + \\log(\\mu) / (\\lambda - 1)` where :math:`Q` is
    :math:`(\\hat\\varepsilon, \\hat\\delta)`-DP with
    :math:`e^{\\hat\\varepsilon} \\le 1 + 1/(\\lambda - 1)` (Theorem 6). The
    curve is converted to :math:`(\\varepsilon, \\delta)` with the improved
    conversion of Canonne, Kamath & Steinke (2020), Proposition 12. When the
    trials are pure :math:`\\varepsilon_t`-DP and the law truncated negative
    binomial, the search is also :math:`(2 + \\eta)\\,\\varepsilon_t`-DP (the
    limit of Theorem 2 as both orders grow; Liu & Talwar's
    :math:`3\\varepsilon_t` for the geometric law), and the accountant uses
    whichever is smaller. ``trial_epsilon_`` is set so that the result is
    at most, and within a relative 1e-4 of, ``epsilon``. For pure-DP trials
    the search thus costs :math:`2 + \\eta` trials, whatever
    ``mean_trials``.

    **What is and is not released.** The best trial's model, parameters and
    noisy score. The number of trials, the other trials' parameters and
    scores, and progress messages are not (there is no ``verbose``, the
    trials run with ``verbose=0``, and each distinct warning of the trials
    is shown once): any of them would void the bound. The running time
    grows with the number of trials; the guarantee does not cover timing
    side channels.

    **Event of a trial.** Before charging, the search asks the estimator's
    plan (:meth:`~skdp.base.PrivateEstimatorMixin.privacy_plan`) what a
    trial would charge: once on all rows, so that input the estimator
    rejects fails before the charge, then for every candidate of a finite
    grid (up to 64 distinct candidates; otherwise 64 drawn with a fixed
    public seed), and every listed value of every parameter is validated.
    All of them must be covered by one trial event; otherwise the search
    raises ``ValueError`` and spends nothing. After the charge nothing
    raises: a trial whose candidate cannot be planned or costs more than the
    event paid for (a continuous distribution the public draws missed)
    releases nothing. Whether that happens depends on the candidate and
    public quantities only, so it is part of the trial mechanism the event
    covers. A scoring callable's failures never drop a trial: a row it
    cannot score (an exception, NaN or infinity) counts 0, see
    ``scoring``.

    **Pipelines.** The private estimator must be the last step. Every
    earlier step must learn nothing from the values of the data
    (scikit-learn's stateless transformers such as ``Normalizer`` and
    ``FunctionTransformer``, ``OneHotEncoder`` with declared categories; see
    :func:`~skdp.step_privacy`): they are fitted
    once, before the charge, and only the last step's parameters can be
    tuned. A step that learns from the data without privacy (for example
    ``StandardScaler``) or a second private step is refused before the
    charge, since its fitted state would be released uncovered.

    **Refit.** None: the released model is one of the private trials,
    trained on ``1 - validation_fraction`` of the rows. To train on all
    rows, spend a separate budget on a fresh fit with ``best_params_``.

    References
    ----------
    .. [1] J. Liu, K. Talwar, "Private Selection from Private Candidates",
       STOC 2019. arXiv:1811.07971.
    .. [2] N. Papernot, T. Steinke, "Hyperparameter Tuning with Renyi
       Differential Privacy", ICLR 2022. arXiv:2110.03620.
    .. [3] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020. arXiv:2004.00010.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.preprocessing import normalize
    >>> from skdp import PrivacyBudget
    >>> from skdp.linear_model import DPLogisticRegression
    >>> from skdp.model_selection import PrivateSearchCV
    >>> X, y = make_classification(n_samples=4000, random_state=0)
    >>> X = normalize(X)  # rows of norm 1, so data_norm=1 is a true bound
    >>> budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    >>> search = PrivateSearchCV(
    ...     DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1]),
    ...     {"C": loguniform(1e-2, 1e2)},
    ...     epsilon=1.0, delta=1e-6, budget=budget,
    ...     random_state=0,  # testing only: never seed a release
    ... ).fit(X, y)
    >>> sorted(search.best_params_)
    ['C']
    >>> search.epsilon_ <= 1.0
    True
    >>> len(budget.ledger)  # one charge for the whole search
    1
    >>> search.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "get_params", "set_params"]), None],
        "param_distributions": [dict, list, None],
        "epsilon": [EPSILON_CONSTRAINT],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "stopping": [
            StrOptions({"geometric", "truncated_negative_binomial", "poisson"})
        ],
        "mean_trials": [Interval(Real, 0, MAX_MEAN_TRIALS, closed="right")],
        "shape": [Interval(Real, -1, None, closed="neither")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "score_epsilon_fraction": [Interval(Real, 0, 1, closed="right")],
        "scoring": [StrOptions({"accuracy"}), callable],
        "random_state": ["random_state"],
        "budget": [PrivacyBudget, None],
    }

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        param_distributions: dict[str, Any] | list[dict[str, Any]] | None = None,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        stopping: Literal[
            "truncated_negative_binomial", "geometric", "poisson"
        ] = "truncated_negative_binomial",
        mean_trials: float = 10.0,
        shape: float = 0.0,
        validation_fraction: float = 0.2,
        score_epsilon_fraction: float = 1.0,
        scoring: Literal["accuracy"] | Callable[..., ArrayLike] = "accuracy",
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.epsilon = epsilon
        self.delta = delta
        self.stopping = stopping
        self.mean_trials = mean_trials
        self.shape = shape
        self.validation_fraction = validation_fraction
        self.score_epsilon_fraction = score_epsilon_fraction
        self.scoring = scoring
        self.random_state = random_state
        self.budget = budget

    # -- configuration ----------------------------------------------------
    def _inner_estimator(self):
        if self.estimator is not None:
            return self.estimator
        from ..linear_model import DPLogisticRegression

        return DPLogisticRegression()

    def _data_derived_params(self) -> tuple[str, ...]:
        """What the trials read from the training data, as ``set_params`` names.

        The private estimator's parameters that a trial leaves at ``None``:
        those that are ``None`` and not tuned, or tuned with ``None`` among
        the listed values (read by :func:`skdp.check_pipeline`).
        """
        from .._pipeline_check import data_derived_params

        estimator = self._inner_estimator()
        if isinstance(estimator, Pipeline):
            name, final = estimator.steps[-1]
            prefix = name + "__"
        else:
            final, prefix = estimator, ""
        untuned = data_derived_params(final)
        bound = getattr(final, "_data_bound_params", ())
        distributions = self._distributions()
        grids = distributions if isinstance(distributions, list) else [distributions]
        read: list[str] = []
        for grid in grids:
            tuned = {
                key[len(prefix) :]: values
                for key, values in grid.items()
                if key.startswith(prefix)
            }
            for param in untuned:
                if param not in tuned and param not in read:
                    read.append(param)
            for param, values in tuned.items():
                listed = not hasattr(values, "rvs")
                if param in bound and listed and param not in read:
                    if any(value is None for value in values):
                        read.append(param)
        return tuple(f"estimator__{prefix}{param}" for param in read)

    def _delta(self) -> float:
        """The search's delta (its Renyi-DP bound needs delta > 0)."""
        return resolve_delta(self.delta, needs_delta=True)

    def _distributions(self):
        if self.param_distributions is None:
            return {"C": loguniform(1e-3, 1e2)}
        return self.param_distributions

    def _stopping_law(self) -> dict:
        """Keyword arguments of the event's distribution."""
        if self.stopping == "poisson":
            if not self.mean_trials >= 1:
                raise ValueError(
                    "mean_trials must be >= 1 for stopping='poisson' (the bound of "
                    f"Papernot & Steinke holds there), got {self.mean_trials!r}."
                )
            return {"distribution": "poisson", "mean": float(self.mean_trials)}
        shape = 1.0 if self.stopping == "geometric" else float(self.shape)
        if not self.mean_trials > 1:
            raise ValueError(
                f"mean_trials must be > 1 for stopping={self.stopping!r}, got "
                f"{self.mean_trials!r} (the number of trials is at least 1)."
            )
        gamma = truncated_negative_binomial_stopping_probability(
            shape, self.mean_trials
        )
        return {
            "distribution": "truncated_negative_binomial",
            "shape": shape,
            "stopping_probability": gamma,
        }

    def _split(self, estimator, tuned):
        """``(stateless prefix or None, private final estimator, param prefix)``.

        Refuses, before anything is charged, any estimator whose released
        model could carry information the search's event does not cover: the
        private estimator must be the last step, and every earlier step must
        learn nothing from the data (see
        :func:`~skdp.step_privacy`).
        """
        if isinstance(estimator, Pipeline):
            name, final = estimator.steps[-1]
            for step_name, step in estimator.steps[:-1]:
                kind = step_privacy(step)
                if isinstance(step, PrivateEstimatorMixin):
                    raise ValueError(
                        f"Step {step_name!r} of the pipeline is a private skdp "
                        "estimator before the last step; PrivateSearchCV plans "
                        "one private fit per trial, the last step's, and does not "
                        "support more. Fit that step separately on its own budget."
                    )
                if kind == "leaking":
                    raise ValueError(
                        f"Step {step_name!r} ({type(step).__name__}) learns from "
                        "the training data without privacy, and its fitted state "
                        "would be released with the best trial uncovered by the "
                        "search's privacy event. Every step before the private "
                        "estimator must be stateless (e.g. Normalizer, "
                        "FunctionTransformer, OneHotEncoder with declared "
                        "categories) or removed."
                    )
            prefix = (
                Pipeline(estimator.steps[:-1]) if len(estimator.steps) > 1 else None
            )
            param_prefix = name + "__"
        else:
            final, prefix, param_prefix = estimator, None, ""
        # A private estimator that reads a bound from the data is accepted
        # here (each distinct warning of its planning fits is shown once, see
        # _plan_fit) and reported as leaking by check_pipeline.
        if not isinstance(final, PrivateEstimatorMixin):
            where = " as the last step of the pipeline" if prefix is not None else ""
            raise ValueError(
                f"PrivateSearchCV needs a private skdp estimator{where}, got "
                f"{type(final).__name__}: a non-private final step would train on "
                "the real data while the search charges only the private step's "
                "event."
            )
        params = final.get_params(deep=False)
        if "epsilon" not in params or "budget" not in params:
            raise ValueError(
                f"{type(final).__name__} has no 'epsilon' and 'budget' parameters; "
                "PrivateSearchCV tunes private skdp estimators only."
            )
        outside = sorted(k for k in tuned if not k.startswith(param_prefix))
        if outside:
            raise ValueError(
                f"param_distributions tunes {outside}, which are not parameters of "
                "the private last step; only its parameters can be tuned (the "
                "steps before it are fitted once, before the search charges)."
            )
        owned = {param_prefix + name for name in ("epsilon", "budget", "random_state")}
        if tuned & owned:
            raise ValueError(
                f"param_distributions cannot tune {sorted(tuned & owned)}: the "
                "search sets the trials' epsilon from its own budget, charges the "
                "budget itself and draws the trials' randomness."
            )
        return prefix, final, param_prefix

    @staticmethod
    def _trial(final, param_prefix, candidate, trial_epsilon, seed):
        """A clone of the private estimator with a candidate's parameters."""
        trial = clone(final)
        params = {key[len(param_prefix) :]: value for key, value in candidate.items()}
        params["epsilon"] = trial_epsilon
        params["budget"] = None
        inner = trial.get_params(deep=False)
        if "random_state" in inner:
            params["random_state"] = seed
        if "verbose" in inner:
            # Messages per trial would reveal how many trials ran.
            params["verbose"] = 0
        return trial.set_params(**params)

    def _plan_trial(self, final, param_prefix, candidate, trial_epsilon, X, y):
        """The planned fit of one trial (may raise)."""
        trial = self._trial(final, param_prefix, candidate, trial_epsilon, None)
        return trial.plan_fit(X, y)

    def _reference_candidates(self, distributions) -> list[dict]:
        """Candidates checked before the charge, drawn with a public seed.

        Every candidate of a finite grid (lists only) up to
        ``_N_REFERENCE_CANDIDATES``; otherwise that many draws.
        """
        grids = distributions if isinstance(distributions, list) else [distributions]
        finite = all(
            all(not hasattr(values, "rvs") for values in grid.values())
            for grid in grids
        )
        if finite:
            distinct = [
                {key: _distinct(values) for key, values in grid.items()}
                for grid in grids
            ]
            grid = ParameterGrid(distinct)
            if len(grid) <= _N_REFERENCE_CANDIDATES:
                return list(grid)
        # A fixed public seed: the references must not depend on anything secret.
        return list(
            ParameterSampler(
                distributions, n_iter=_N_REFERENCE_CANDIDATES, random_state=0
            )
        )

    def _check_listed_values(self, final, param_prefix, distributions):
        """Every listed value of every parameter passes the estimator's validation."""
        grids = distributions if isinstance(distributions, list) else [distributions]
        for grid in grids:
            for key, values in grid.items():
                if hasattr(values, "rvs"):
                    continue
                for value in _distinct(values):
                    trial = clone(final).set_params(**{key[len(param_prefix) :]: value})
                    trial._validate_params()

    def _calibrate(
        self, final, param_prefix, reference, X, y, accountant, law, n_validation
    ):
        """Largest per-trial epsilon whose search costs at most ``epsilon``.

        :func:`~skdp.accounting.calibrate_parameter` with the budget's
        accountant, over the trial's total epsilon (training and score);
        each evaluation plans a trial (nothing is charged or fitted), and
        the events it planned are cached. The result costs at most
        ``epsilon``, within a relative ``_CALIBRATION_RTOL`` of the
        crossing.
        """
        score_share = float(self.score_epsilon_fraction)
        target = float(self.epsilon)
        delta = self._delta()
        planned: dict[float, tuple] = {}

        def event(trial_total):
            if trial_total not in planned:
                plan = self._plan_trial(
                    final,
                    param_prefix,
                    reference,
                    trial_total,
                    X,
                    y,
                ).plan
                train = _strip_label(plan.event)
                score = plan_laplace(1.0 / n_validation, score_share * trial_total, 1)
                # Training and score read disjoint rows (a public split).
                base = ParallelComposedEvent((train, score.event))
                planned[trial_total] = (
                    train,
                    RepeatedRandomStoppingEvent(base, **law),
                )
            return planned[trial_total][1]

        probe = event(target)
        if math.isinf(accountant.epsilon_delta([probe], delta)[0]):
            raise ValueError(
                f"A search whose trials charge {planned[target][0]!r} has no "
                f"finite epsilon at delta={delta!r}: delta=0 needs pure-DP "
                "trials and a truncated negative binomial (or geometric) law; "
                "pass delta > 0."
            )
        try:
            trial_total = calibrate_parameter(
                event,
                target,
                delta,
                accountant,
                increasing=True,
                bracket=(target / 4.0, target),
                tolerance=_CALIBRATION_RTOL,
            )
        except ValueError:
            raise ValueError(
                f"No per-trial epsilon makes the search cost at most epsilon="
                f"{target!r} at delta={delta!r} with mean_trials="
                f"{self.mean_trials!r}: raise epsilon or delta, or lower "
                "mean_trials."
            ) from None
        if trial_total < target * 1e-6:
            raise ValueError(
                f"No per-trial epsilon makes the search cost at most epsilon="
                f"{target!r} at delta={delta!r} with mean_trials="
                f"{self.mean_trials!r}: raise epsilon or delta, or lower "
                "mean_trials."
            )
        train, repeated = planned[trial_total]
        return trial_total, train, repeated

    def _plan_search(self, X, y):
        """Everything decided before the charge; every refusal happens here."""
        estimator = self._inner_estimator()
        distributions = self._distributions()
        grids = distributions if isinstance(distributions, list) else [distributions]
        tuned = {key for grid in grids for key in grid}
        prefix, final, param_prefix = self._split(estimator, tuned)
        self._check_listed_values(final, param_prefix, distributions)
        law = self._stopping_law()
        accountant = self._accountant()

        X, y = indexable(X, y)
        if prefix is not None:
            # Stateless steps: fitting them reads nothing but the shape; done
            # once, on all rows, so that their errors come before the charge.
            prefix = clone(prefix)
            X = prefix.fit_transform(X, y)
        references = self._reference_candidates(distributions)
        # Validate all rows the way the estimator would, so that bad input
        # fails here, before the budget is charged.
        self._plan_trial(final, param_prefix, references[0], float(self.epsilon), X, y)
        n_samples = num_samples(X)
        n_validation = int(math.floor(self.validation_fraction * n_samples))
        if n_validation < 1 or n_samples - n_validation < 1:
            raise ValueError(
                "PrivateSearchCV splits the data into a training and a validation "
                f"part and needs at least one row in each; got {n_samples} "
                f"sample(s) with validation_fraction={self.validation_fraction}."
            )
        source = check_random_source(self.random_state)
        generator = source.numpy_generator()
        order = generator.permutation(n_samples)
        # Each part in the rows' order: a dask DataFrame is split by
        # partitions, keeping that order (the model does not depend on it).
        train_rows = np.sort(order[n_validation:])
        validation_rows = np.sort(order[:n_validation])
        data = {
            "X_train": take_rows(X, train_rows),
            "X_validation": take_rows(X, validation_rows),
            "y_train": None if y is None else take_rows(y, train_rows),
            "y_validation": None if y is None else take_rows(y, validation_rows),
        }

        # What one trial costs, found before charging anything.
        trial_total, train_event, event = self._calibrate(
            final,
            param_prefix,
            references[0],
            data["X_train"],
            data["y_train"],
            accountant,
            law,
            n_validation,
        )
        trial_epsilon = trial_total
        reference_curve = accountant.rdp_curve(train_event)
        for candidate in references[1:]:
            plan = self._plan_trial(
                final,
                param_prefix,
                candidate,
                trial_epsilon,
                data["X_train"],
                data["y_train"],
            ).plan
            if np.any(
                accountant.rdp_curve(_strip_label(plan.event))
                > reference_curve * (1 + _CURVE_RTOL)
            ):
                raise ValueError(
                    f"The privacy cost of a trial depends on the tuned parameters: "
                    f"{candidate} charges {plan.event!r} but {references[0]} "
                    f"charges {train_event!r}. Tune only parameters that leave the "
                    "cost unchanged (for DP-SGD: not the batch size or number of "
                    "steps), or run one search per setting."
                )
        score_epsilon = self.score_epsilon_fraction * trial_total
        score_plan = plan_laplace(1.0 / n_validation, score_epsilon, 1)
        return FitPlan(
            event,
            self._delta(),
            {
                "prefix": prefix,
                "final": final,
                "param_prefix": param_prefix,
                "distributions": distributions,
                "law": law,
                "trial_epsilon": trial_epsilon,
                "score_epsilon": score_epsilon,
                "score_plan": score_plan,
                "reference_curve": reference_curve,
                "n_validation": n_validation,
                "source": source,
                "generator": generator,
                "data": data,
            },
        )

    # -- fitting ----------------------------------------------------------
    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> Self:
        """Run the private search and keep the best trial.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, as the estimator accepts it.
        y : array-like of shape (n_samples,), default=None
            Targets.

        Returns
        -------
        self : PrivateSearchCV
            Fitted searcher.
        """
        self._fit_private(X, y)
        if self.best_estimator_ is None:
            # Public: the number of trials is the search's own randomness.
            warnings.warn(
                "The search released no model: no trial ran (a Poisson draw of "
                "zero) or none could (see Notes); its budget is spent. Fit again "
                "with a new budget, or use a larger mean_trials.",
                UserWarning,
                stacklevel=2,
            )
        return self

    def _prepare_fit(self, X, y=None):
        return (X, y)

    def _plan_fit(self, prepared) -> FitPlan:
        # The planning fits of the trials may warn (e.g. a bound read from
        # the data); each such public warning is shown once, here.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = self._plan_search(*prepared)
        seen = set()
        for record in caught:
            key = (record.category, str(record.message))
            if key not in seen:
                seen.add(key)
                warnings.warn(
                    record.message, record.category, stacklevel=user_stacklevel()
                )
        return plan

    def _run_fit(self, prepared, plan, source) -> None:
        """The trials, after the charge: nothing here raises or warns."""
        settings = plan.settings
        source, generator = settings["source"], settings["generator"]
        law, data = settings["law"], settings["data"]
        accountant = self._accountant()
        if law["distribution"] == "poisson":
            n_trials = sample_poisson(law["mean"], source)
        else:
            n_trials = sample_truncated_negative_binomial(
                law["shape"], law["stopping_probability"], source
            )
        seeded = not source.is_secure
        best_trial, best_params, best_score = None, None, -math.inf
        for _ in range(n_trials):
            seed = int(generator.integers(2**31 - 1))
            candidate = next(
                iter(
                    ParameterSampler(
                        settings["distributions"], n_iter=1, random_state=seed
                    )
                )
            )
            trial_seed = int(generator.integers(2**31 - 1)) if seeded else None
            trial = self._run_trial(settings, candidate, trial_seed, accountant)
            if trial is None:
                continue  # this candidate's trial releases nothing
            exact = self._validation_score(
                trial, data["X_validation"], data["y_validation"]
            )
            noisy = float(add_noise(settings["score_plan"], [exact], source)[0])
            if noisy > best_score:
                best_trial, best_params, best_score = trial, candidate, noisy

        self.trial_epsilon_ = settings["trial_epsilon"]
        self.score_epsilon_ = settings["score_epsilon"]
        self.stopping_probability_ = law.get("stopping_probability")
        self.n_validation_ = settings["n_validation"]
        if best_trial is None:
            # Zero trials (Poisson) or none that could run: nothing released.
            self.best_estimator_ = None
            self.best_params_, self.best_score_ = None, math.nan
            self.cv_results_ = {
                "params": [],
                "mean_test_score": [],
                "rank_test_score": [],
            }
            return
        prefix = settings["prefix"]
        if prefix is None:
            self.best_estimator_ = best_trial
        else:
            name = self._inner_estimator().steps[-1][0]
            self.best_estimator_ = Pipeline([*prefix.steps, (name, best_trial)])
        self.best_params_ = best_params
        self.best_score_ = float(best_score)
        self.cv_results_ = self._results(best_params, float(best_score))

    def _run_trial(self, settings, candidate, seed, accountant):
        """Plan, check and fit one trial; ``None`` if it releases nothing.

        A candidate whose plan fails, or costs more than the reference event
        the search paid for, releases nothing (the trial's output is empty).
        Both depend only on the candidate and on public quantities, so this
        is part of the trial mechanism the search's event covers.
        """
        data = settings["data"]
        try:
            planned = self._plan_trial(
                settings["final"],
                settings["param_prefix"],
                candidate,
                settings["trial_epsilon"],
                data["X_train"],
                data["y_train"],
            )
            curve = accountant.rdp_curve(_strip_label(planned.plan.event))
            if np.any(~(curve <= settings["reference_curve"] * (1 + _CURVE_RTOL))):
                return None
            # The trial's budget is None: its event is recorded on the trial
            # only, the search having charged its own budget for all trials.
            return planned.run(check_random_source(seed))
        except Exception:
            return None

    def _validation_score(self, trial, X, y) -> float:
        """Mean of per-row scores in [0, 1] on the validation part; never raises.

        A callable's score of a row that is not a finite number counts 0.
        If the callable fails on the whole part (raises, or returns the
        wrong shape), every row is scored on its own, and a row it fails on
        counts 0: for a callable that scores each row on its own (which the
        sensitivity ``1 / n_validation`` assumes) this gives the same
        per-row values, so which way they were computed does not depend on
        the data; one row still moves the mean by at most
        ``1 / n_validation``.
        """
        n_validation = num_samples(X)
        if self.scoring == "accuracy":
            predicted = np.asarray(trial.predict(X)).reshape(n_validation, -1)
            truth = np.asarray(y).reshape(n_validation, -1)
            per_row = np.all(predicted == truth, axis=1).astype(float)
            return float(per_row.mean())
        per_row = _call_scoring(self.scoring, trial, X, y, n_validation)
        if per_row is None:
            per_row = np.array(
                [
                    _row_score(self.scoring, trial, X, y, row)
                    for row in range(n_validation)
                ]
            )
        per_row = np.where(np.isfinite(per_row), per_row, 0.0)
        return float(np.clip(per_row, 0.0, 1.0).mean())

    @staticmethod
    def _results(params: dict, score: float) -> dict:
        results: dict = {"params": [params]}
        for name, value in params.items():
            results[f"param_{name}"] = np.ma.MaskedArray([value], dtype=object)
        results["mean_test_score"] = np.array([score])
        results["rank_test_score"] = np.array([1], dtype=np.int32)
        return results

    # -- the released model -------------------------------------------------
    def _released(self):
        check_is_fitted(self)
        if self.best_estimator_ is None:
            raise ValueError(
                "This search ran zero trials (Poisson draw), or none that could "
                "run, and has no model."
            )
        return self.best_estimator_

    def __sklearn_is_fitted__(self):
        return hasattr(self, "best_estimator_")

    @property
    def classes_(self) -> NDArray[Any]:
        """Class labels of the best estimator."""
        return self._released().classes_

    @property
    def n_features_in_(self) -> int:
        """Number of features seen by the best estimator."""
        return self._released().n_features_in_

    @property
    def feature_names_in_(self) -> NDArray[np.object_]:
        """Feature names seen by the best estimator."""
        return self._released().feature_names_in_

    @available_if(_delegate("predict"))
    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict with the best estimator."""
        return self._released().predict(X)

    @available_if(_delegate("predict_proba"))
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities from the best estimator."""
        return self._released().predict_proba(X)

    @available_if(_delegate("predict_log_proba"))
    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Log class probabilities from the best estimator."""
        return self._released().predict_log_proba(X)

    @available_if(_delegate("decision_function"))
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Decision function of the best estimator."""
        return self._released().decision_function(X)

    @available_if(_delegate("transform"))
    def transform(self, X: ArrayLike) -> Any:
        """Transform with the best estimator."""
        return self._released().transform(X)

    @available_if(_delegate("score"))
    def score(self, X: ArrayLike, y: ArrayLike | None = None) -> float:
        """Score of the best estimator on ``(X, y)`` (its own ``score``).

        This reads ``X`` and ``y`` without noise: use it on data that is not
        private, such as a public test set.
        """
        return self._released().score(X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self._inner_estimator())
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = deepcopy(inner.classifier_tags)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        tags.input_tags = deepcopy(inner.input_tags)
        tags.target_tags = deepcopy(inner.target_tags)
        # A seeded search seeds its trials; otherwise everything is random.
        tags.non_deterministic = self.random_state is None
        return tags
