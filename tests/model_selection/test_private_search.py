"""PrivateSearchCV: one charge, private selection, nothing released but the best."""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import uniform
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.multiclass import check_classification_targets

from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PureDPEvent,
    RDPAccountant,
    RepeatedRandomStoppingEvent,
    gaussian_noise_multiplier,
)
from skdp.base import FitPlan, PrivateEstimatorMixin
from skdp.linear_model import DPLogisticRegression
from skdp.mechanisms import (
    add_noise,
    plan_gaussian,
    plan_laplace,
)
from skdp.model_selection import PrivateSearchCV
from skdp.synthesis import PMWSynthesizer
from skdp.utils._sklearn_compat import (
    Integral,
    Interval,
    Real,
    StrOptions,
    check_is_fitted,
    fit_context,
    validate_data,
)


class ThresholdClassifier(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Toy private classifier: is feature ``C`` above a noisy mean of it?

    The mean of the feature clipped to [-1, 1] has sensitivity 2/n under
    replacement of one row; it is released with Laplace noise (pure epsilon)
    or, with ``mechanism="gaussian"``, Gaussian noise calibrated to
    (epsilon, delta). ``cost_factor`` multiplies the epsilon charged, to make
    a privacy cost that depends on a parameter. ``noisy_fits`` counts the fits
    that got past their charge.
    """

    noisy_fits = 0
    tried = []

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "C": [Interval(Integral, 0, None, closed="left")],
        "cost_factor": [Interval(Real, 1, None, closed="left")],
        "mechanism": [StrOptions({"laplace", "gaussian"})],
        "random_state": ["random_state"],
        "budget": [PrivacyBudget, None],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        C=0,
        cost_factor=1.0,
        mechanism="laplace",
        random_state=None,
        budget=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.C = C
        self.cost_factor = cost_factor
        self.mechanism = mechanism
        self.random_state = random_state
        self.budget = budget

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        return self._fit_private(X, y)

    def _prepare_fit(self, X, y=None):
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        if self.C >= X.shape[1]:
            raise ValueError("C must index a feature.")
        return X, y

    def _plan_fit(self, prepared):
        X, _ = prepared
        epsilon = self.epsilon * self.cost_factor
        if self.mechanism == "laplace":
            noise = plan_laplace(2 / len(X), epsilon, 1)
        else:
            noise = plan_gaussian(
                2 / len(X),
                1,
                noise_multiplier=gaussian_noise_multiplier(epsilon, self.delta),
            )
        event = PureDPEvent(epsilon) if self.mechanism == "laplace" else noise.event
        return FitPlan(event, self.delta, {"noise": noise})

    def _run_fit(self, prepared, plan, source):
        X, y = prepared
        type(self).noisy_fits += 1
        type(self).tried.append(self.C)
        self.classes_ = np.unique(y)
        mean = float(np.clip(X[:, self.C], -1, 1).mean())
        self.offset_ = float(add_noise(plan.settings["noise"], [mean], source)[0])

    def predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.classes_[(X[:, self.C] > self.offset_).astype(int)]


def make_data(n=2000, n_features=5, informative=2, seed=0):
    """Labels are the sign of one feature: only C == informative predicts."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, n_features))
    y = (X[:, informative] > 0).astype(int)
    return X, y


GRID = {"C": [0, 1, 2, 3, 4]}


def test_charges_the_budget_once_with_the_repeated_event():
    X, y = make_data()
    budget = PrivacyBudget(3.0, 1e-5)
    search = PrivateSearchCV(
        ThresholdClassifier(), GRID, epsilon=1.0, budget=budget, random_state=0
    ).fit(X, y)
    assert len(budget.ledger) == 1
    event = budget.ledger[0].event
    assert isinstance(event, RepeatedRandomStoppingEvent)
    assert event == search.privacy_event_ and search.budget_entry_ == budget.ledger[0]
    # The default law: logarithmic (truncated negative binomial, shape 0).
    assert event.distribution == "truncated_negative_binomial" and event.shape == 0.0
    assert event.expected_runs == pytest.approx(10.0)
    # Training and score read disjoint rows: parallel composition.
    assert isinstance(event.base_event, ParallelComposedEvent)
    train, score = event.base_event.events
    assert train == PureDPEvent(search.trial_epsilon_)
    assert isinstance(score, DiscreteLaplaceEvent)
    assert score.epsilon <= search.score_epsilon_
    assert score.epsilon == pytest.approx(search.score_epsilon_, rel=1e-8)
    # The default fraction 1.0: the score as precise as the trial's epsilon.
    assert search.score_epsilon_ == search.trial_epsilon_
    # The trials did not charge the budget; the released model holds no budget.
    assert search.best_estimator_.budget is None
    assert search.best_estimator_.epsilon == search.trial_epsilon_
    # The cost meets the target: at most epsilon, and not wastefully below it.
    assert search.epsilon_ <= 1.0
    assert search.epsilon_ > 1.0 - 1e-3
    # Pure trials: the search is pure DP (two trials' epsilon, logarithmic law).
    assert search.delta_ == 0.0
    assert budget.spent() == (search.epsilon_, 0.0)


def test_trial_epsilon_is_the_largest_that_fits():
    X, y = make_data(n=500)
    search = PrivateSearchCV(
        ThresholdClassifier(), GRID, epsilon=2.0, delta=1e-5, random_state=0
    ).fit(X, y)
    accountant = RDPAccountant()
    event = search.privacy_event_

    def cost(scale):
        trial = search.trial_epsilon_ * scale
        score = plan_laplace(1.0 / search.n_validation_, trial, 1).event
        base = ParallelComposedEvent((PureDPEvent(trial), score))
        law = {
            "distribution": event.distribution,
            "shape": event.shape,
            "stopping_probability": event.stopping_probability,
        }
        repeated = RepeatedRandomStoppingEvent(base, **law)
        return accountant.epsilon_delta([repeated], 1e-5)[0]

    assert cost(1.0) == pytest.approx(search.epsilon_) and cost(1.0) <= 2.0
    assert cost(1.0 + 2e-4) > 2.0
    # Pure-DP trials: the search costs exactly two trials (logarithmic law),
    # far below ten composed trials, and a trial costs its training epsilon
    # alone (its score, on other rows, is free by parallel composition).
    assert 2 * search.trial_epsilon_ == pytest.approx(2.0, rel=1e-4)


def test_selects_the_informative_candidate_when_it_is_tried():
    X, y = make_data()
    n_tried = 0
    for seed in range(8):
        ThresholdClassifier.tried.clear()
        search = PrivateSearchCV(
            ThresholdClassifier(),
            GRID,
            epsilon=1.0,
            stopping="geometric",
            random_state=seed,
        ).fit(X, y)
        assert search.best_score_ == search.cv_results_["mean_test_score"][0]
        if 2 in ThresholdClassifier.tried:
            # Accuracy ~1 against ~0.5 for the others; the score noise has
            # scale 1 / (400 * 0.066) = 0.04, so a wrong pick needs a > 11-scale
            # deviation (probability < 1e-4 per comparison).
            n_tried += 1
            assert search.best_params_ == {"C": 2}
            assert search.score(X, y) > 0.95
            assert search.best_score_ == pytest.approx(0.99, abs=0.3)
    # The geometric law with mean 10 misses C=2 with probability
    # f(4/5) = 0.29 per search; the seeds are fixed, so the count is too.
    assert n_tried >= 4


def test_only_the_best_trial_is_released():
    X, y = make_data(n=300)
    search = PrivateSearchCV(ThresholdClassifier(), GRID, random_state=0).fit(X, y)
    assert list(search.cv_results_) == [
        "params",
        "param_C",
        "mean_test_score",
        "rank_test_score",
    ]
    assert search.cv_results_["params"] == [search.best_params_]
    assert list(search.cv_results_["rank_test_score"]) == [1]
    public = {name for name in vars(search) if name.endswith("_")}
    assert public == {
        "best_estimator_",
        "best_params_",
        "best_score_",
        "cv_results_",
        "trial_epsilon_",
        "score_epsilon_",
        "stopping_probability_",
        "n_validation_",
        "privacy_event_",
        "epsilon_",
        "delta_",
        "budget_entry_",
    }
    assert search.n_validation_ == 60
    assert search.classes_.tolist() == [0, 1]
    assert search.n_features_in_ == 5


@pytest.mark.slow
def test_number_of_trials_follows_the_law():
    """Count the fits that got past their charge: E[K] = mean_trials."""
    X, y = make_data(n=60)
    n_searches, mean = 150, 4.0
    counts = []
    for seed in range(n_searches):
        before = ThresholdClassifier.noisy_fits
        PrivateSearchCV(
            ThresholdClassifier(),
            GRID,
            stopping="geometric",
            mean_trials=mean,
            random_state=seed,
        ).fit(X, y)
        counts.append(ThresholdClassifier.noisy_fits - before)
    counts = np.array(counts)
    assert counts.min() >= 1
    # Geometric with mean 4: variance (1 - gamma) / gamma**2 = 12; 5 standard
    # errors of the mean of 150 draws is 1.41.
    assert abs(counts.mean() - mean) < 5 * math.sqrt(12 / n_searches)
    assert len(set(counts)) > 3


def test_refused_charge_leaves_no_model_and_no_noise():
    X, y = make_data(n=300)
    budget = PrivacyBudget(0.5, 1e-5)
    budget.spend(LaplaceEvent(0.3), label="earlier")
    before = ThresholdClassifier.noisy_fits
    search = PrivateSearchCV(ThresholdClassifier(), GRID, epsilon=0.5, budget=budget)
    with pytest.raises(BudgetExceededError, match="would exceed the privacy budget"):
        search.fit(X, y)
    assert ThresholdClassifier.noisy_fits == before
    assert not hasattr(search, "best_estimator_")
    assert not hasattr(search, "epsilon_")
    assert len(budget.ledger) == 1


def test_pure_trials_need_no_delta():
    X, y = make_data(n=300)
    budget = PrivacyBudget(1.0)  # delta = 0
    search = PrivateSearchCV(
        ThresholdClassifier(),
        GRID,
        delta=0.0,
        stopping="geometric",
        budget=budget,
        random_state=0,
    ).fit(X, y)
    # Geometric law over pure trials: exactly 3 trials' epsilon, pure DP.
    assert search.epsilon_ == pytest.approx(1.0, rel=1e-4) and search.epsilon_ <= 1.0
    assert search.delta_ == 0.0 and budget.spent()[1] == 0.0
    assert max(search.trial_epsilon_, search.score_epsilon_) == pytest.approx(
        1 / 3, 1e-4
    )
    # The default delta > 0 gives the same (the pure bound is the tighter).
    again = PrivateSearchCV(
        ThresholdClassifier(), GRID, stopping="geometric", random_state=0
    ).fit(X, y)
    assert again.trial_epsilon_ == pytest.approx(search.trial_epsilon_, rel=1e-3)


def test_without_delta_gaussian_trials_or_poisson_are_refused():
    X, y = make_data(n=100)
    budget = PrivacyBudget(5.0)
    gaussian = ThresholdClassifier(mechanism="gaussian", delta=1e-6)
    for estimator, stopping in (
        (gaussian, "geometric"),
        (ThresholdClassifier(), "poisson"),
    ):
        search = PrivateSearchCV(estimator, GRID, delta=0.0, stopping=stopping)
        with pytest.raises(ValueError, match="no finite epsilon at delta=0"):
            search.fit(X, y)
    # A search with delta > 0 does not fit a budget without delta.
    with pytest.raises(BudgetExceededError, match="delta=0"):
        PrivateSearchCV(gaussian, GRID, budget=budget).fit(X, y)
    assert budget.ledger == []


def test_cost_depending_on_a_tuned_parameter_is_refused_before_charging():
    X, y = make_data(n=100)
    budget = PrivacyBudget(5.0, 1e-5)
    before = ThresholdClassifier.noisy_fits
    for distributions in ({"cost_factor": [1.0, 2.0]}, {"cost_factor": uniform(1, 1)}):
        search = PrivateSearchCV(ThresholdClassifier(), distributions, budget=budget)
        with pytest.raises(ValueError, match="privacy cost of a trial depends"):
            search.fit(X, y)
    assert budget.ledger == [] and ThresholdClassifier.noisy_fits == before


def test_a_trial_costing_more_than_paid_releases_nothing():
    """A candidate the references missed is dropped after the charge, silently.

    Its plan costs more than the reference event the search paid for; the
    trial releases nothing (no error, no warning after the charge). The cost
    depends on the candidate only, so dropping it is part of the trial.
    """

    class Drift:
        """Draws 1.0 for the 64 public reference draws, then 2.0."""

        def __init__(self):
            self.calls = 0

        def rvs(self, random_state=None):
            self.calls += 1
            return 1.0 if self.calls <= 64 else 2.0

    X, y = make_data(n=200)
    budget = PrivacyBudget(5.0, 1e-5)
    before = ThresholdClassifier.noisy_fits
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        search = PrivateSearchCV(
            ThresholdClassifier(),
            {"cost_factor": Drift()},
            budget=budget,
            random_state=0,
        ).fit(X, y)
    # The one warning says that nothing was released (public), no trial's.
    assert [str(w.message)[:29] for w in record] == ["The search released no model:"]
    assert len(budget.ledger) == 1
    assert search.best_estimator_ is None  # every real trial drew 2.0
    assert ThresholdClassifier.noisy_fits == before


@pytest.mark.parametrize(
    "params, match",
    [
        (
            {"param_distributions": {"epsilon": [1.0, 2.0]}},
            r"cannot tune \['epsilon'\]",
        ),
        ({"param_distributions": {"random_state": [1]}}, "cannot tune"),
        ({"estimator": FunctionTransformer()}, "needs a private skdp estimator"),
        ({"stopping": "poisson", "mean_trials": 0.5}, "mean_trials must be >= 1"),
        ({"mean_trials": 1.0}, "mean_trials must be > 1"),
        (
            {
                "estimator": ThresholdClassifier(mechanism="gaussian", delta=1e-6),
                "epsilon": 0.01,
                "delta": 1e-12,
                "mean_trials": 1000.0,
            },
            "No per-trial epsilon",
        ),
    ],
)
def test_invalid_settings_fail_before_charging(params, match):
    X, y = make_data(n=100)
    budget = PrivacyBudget(5.0, 1e-5)
    settings = {"estimator": ThresholdClassifier(), "param_distributions": GRID}
    settings.update(params)
    with pytest.raises(ValueError, match=match):
        PrivateSearchCV(**settings, budget=budget).fit(X, y)
    assert budget.ledger == []


@pytest.mark.parametrize(
    "estimator, match",
    [
        (LogisticRegression(), "needs a private skdp estimator"),
        (
            Pipeline([("pmw", PMWSynthesizer()), ("lr", LogisticRegression())]),
            "private skdp estimator before the last step",
        ),
        (
            Pipeline([("scale", StandardScaler()), ("clf", ThresholdClassifier())]),
            "learns from the training data without privacy",
        ),
    ],
)
def test_non_private_steps_are_refused_before_charging(estimator, match):
    """Finding 4: the private estimator must be last, earlier steps stateless."""
    budget = PrivacyBudget(5.0, 1e-5)
    grid = {"clf__C": [0, 1]} if "clf" in str(estimator) else {}
    with pytest.raises(ValueError, match=match):
        PrivateSearchCV(estimator, grid or [{}], budget=budget).fit(*make_data(n=100))
    assert budget.ledger == []


def test_a_listed_invalid_value_is_refused_before_charging():
    """Finding 8: 99 valid values and one invalid one; all are checked first."""
    X, y = make_data(n=100)
    budget = PrivacyBudget(5.0, 1e-5)
    grid = {"C": [1.0] * 99 + [-1.0]}
    for seed in range(20):
        with pytest.raises(ValueError, match="'C' parameter"):
            PrivateSearchCV(
                DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1]),
                grid,
                budget=budget,
                random_state=seed,
            ).fit(X, y)
    assert budget.ledger == []


def test_too_few_rows_to_split():
    with pytest.raises(ValueError, match="got 1 sample"):
        PrivateSearchCV(ThresholdClassifier(), GRID).fit(np.ones((1, 5)), [1])


def test_invalid_data_fails_before_charging():
    X, y = make_data(n=100)
    X[3, 1] = np.nan
    budget = PrivacyBudget(5.0, 1e-5)
    with pytest.raises(ValueError, match="NaN"):
        PrivateSearchCV(ThresholdClassifier(), GRID, budget=budget).fit(X, y)
    assert budget.ledger == []


def test_seeded_search_is_reproducible_and_default_is_secure():
    X, y = make_data(n=400)
    first = PrivateSearchCV(ThresholdClassifier(), GRID, random_state=3).fit(X, y)
    second = PrivateSearchCV(ThresholdClassifier(), GRID, random_state=3).fit(X, y)
    assert first.best_params_ == second.best_params_
    assert first.best_score_ == second.best_score_
    assert first.best_estimator_.offset_ == second.best_estimator_.offset_
    # Unseeded: trials get random_state=None (the OS CSPRNG).
    secure = PrivateSearchCV(ThresholdClassifier(), GRID).fit(X, y)
    assert secure.best_estimator_.random_state is None


def test_pipeline_with_a_private_final_step():
    X, y = make_data(n=400)
    pipe = Pipeline([("scale", FunctionTransformer()), ("clf", ThresholdClassifier())])
    budget = PrivacyBudget(2.0, 1e-5)
    search = PrivateSearchCV(
        pipe, {"clf__C": [0, 2]}, budget=budget, random_state=0
    ).fit(X, y)
    assert len(budget.ledger) == 1
    assert search.best_estimator_.named_steps["clf"].budget is None
    assert search.predict(X).shape == (400,)
    with pytest.raises(ValueError, match="cannot tune"):
        PrivateSearchCV(pipe, {"clf__epsilon": [1.0]}).fit(X, y)


def test_gaussian_trials_and_other_laws():
    X, y = make_data(n=400)
    estimator = ThresholdClassifier(mechanism="gaussian", delta=1e-6)
    for stopping, shape in (("truncated_negative_binomial", 0.0), ("poisson", 0.0)):
        search = PrivateSearchCV(
            estimator, GRID, stopping=stopping, shape=shape, delta=1e-5, random_state=0
        ).fit(X, y)
        train = search.privacy_event_.base_event.events[0]
        assert isinstance(train, DiscreteGaussianEvent)
        assert search.epsilon_ <= 1.0
        assert search.privacy_event_.distribution == (
            "poisson" if stopping == "poisson" else "truncated_negative_binomial"
        )
    assert search.stopping_probability_ is None


def test_poisson_zero_trials_releases_nothing():
    X, y = make_data(n=100)
    # Mean 1: P[K = 0] = exp(-1). Seeded, so which seeds give zero trials is
    # fixed; take the first and check what is released.
    for seed in range(50):
        search = PrivateSearchCV(
            ThresholdClassifier(),
            GRID,
            stopping="poisson",
            mean_trials=1.0,
            random_state=seed,
        )
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            search.fit(X, y)
        if search.best_estimator_ is None:
            break
    assert search.best_estimator_ is None and search.best_params_ is None
    assert [str(w.message) for w in record if "no model" in str(w.message)]
    assert search.cv_results_["params"] == []
    assert math.isnan(search.best_score_)
    with pytest.raises(ValueError, match="zero trials"):
        search.predict(X)


def test_callable_scoring_is_clipped_per_row():
    X, y = make_data(n=400)

    def margin(estimator, X, y):
        # Unbounded per-row values; the search clips them to [0, 1].
        return 10.0 * (estimator.predict(X) == y) - 3.0

    ThresholdClassifier.tried.clear()
    search = PrivateSearchCV(
        ThresholdClassifier(),
        {"C": [2, 0]},
        epsilon=5.0,
        scoring=margin,
        random_state=0,
    ).fit(X, y)
    assert 2 in ThresholdClassifier.tried
    assert search.best_params_ == {"C": 2}
    # Clipped: the released score is a mean of values in [0, 1], plus noise
    # of scale 1 / (80 * 0.33) ~ 0.04.
    assert search.best_score_ == pytest.approx(1.0, abs=0.3)

    def wrong_shape(estimator, X, y):
        return np.ones(3)

    # A callable of the wrong shape is tried row by row; a row it cannot
    # score counts 0 (after the charge nothing may raise, and no trial is
    # dropped for its score): a model is released, its score is noise
    # around 0.
    search = PrivateSearchCV(
        ThresholdClassifier(), GRID, scoring=wrong_shape, random_state=0
    ).fit(X, y)
    assert search.best_estimator_ is not None
    assert search.best_score_ == pytest.approx(0.0, abs=0.3)


def _normalised_classification(n=600, seed=0):
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import normalize

    X, y = make_classification(n_samples=n, n_features=5, random_state=seed)
    return normalize(X), y


def test_tunes_dp_logistic_regression():
    X, y = _normalised_classification()
    budget = PrivacyBudget(2.0, 1e-5)
    estimator = DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1])
    search = PrivateSearchCV(
        estimator, {"C": [0.01, 0.1, 1.0, 10.0]}, budget=budget, random_state=0
    ).fit(X, y)
    assert len(budget.ledger) == 1
    best = search.best_estimator_
    assert isinstance(best, DPLogisticRegression)
    assert best.epsilon == search.trial_epsilon_ and best.budget is None
    assert best.budget_entry_ is None
    trained = search.privacy_event_.base_event.events[0]
    assert best.privacy_event_.with_label("") == trained
    assert search.best_params_["C"] in (0.01, 0.1, 1.0, 10.0)
    assert search.predict_proba(X).shape == (600, 2)
    assert search.decision_function(X).shape == (600,)
    assert 0.5 < search.score(X, y) <= 1.0


def test_default_search_tunes_c_of_dp_logistic_regression():
    X, y = _normalised_classification(n=300)
    with warnings.catch_warnings():
        # The defaults read data_norm and classes from the data (and warn).
        warnings.simplefilter("ignore")
        search = PrivateSearchCV(mean_trials=3, random_state=0).fit(X, y)
    assert list(search.best_params_) == ["C"]
    assert 1e-3 <= search.best_params_["C"] <= 1e2
    assert search.epsilon_ <= 1.0


def test_list_of_grids():
    X, y = make_data(n=400)
    grids = [{"C": [2]}, {"C": [0, 1], "mechanism": ["laplace"]}]
    search = PrivateSearchCV(ThresholdClassifier(), grids, random_state=0).fit(X, y)
    assert search.best_params_ in (
        {"C": 2},
        {"C": 0, "mechanism": "laplace"},
        {"C": 1, "mechanism": "laplace"},
    )
    with pytest.raises(ValueError, match="cannot tune"):
        PrivateSearchCV(ThresholdClassifier(), [{"C": [1]}, {"budget": [None]}]).fit(
            X, y
        )


def test_trials_do_not_reveal_their_number(capsys):
    """Finding 6: no warning and no output from any trial, whatever K is."""

    class Chatty(ThresholdClassifier):
        def __init__(self, epsilon=1.0, C=0, budget=None, random_state=None, verbose=1):
            super().__init__(
                epsilon=epsilon, C=C, budget=budget, random_state=random_state
            )
            self.verbose = verbose

        def _run_fit(self, prepared, plan, source):
            super()._run_fit(prepared, plan, source)
            warnings.warn(f"trial with C={self.C} finished", UserWarning, stacklevel=2)
            if self.verbose:
                print("trial done")

    X, y = make_data(n=200)
    counts = set()
    for seed in range(6):
        before = Chatty.noisy_fits
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            search = PrivateSearchCV(Chatty(), GRID, random_state=seed).fit(X, y)
        counts.add(Chatty.noisy_fits - before)
        assert [str(w.message) for w in record] == []
        assert search.best_estimator_.verbose == 0
    assert len(counts) > 1  # the number of trials did vary
    assert capsys.readouterr().out == ""


def test_a_scoring_callable_that_fails_on_one_row_drops_no_trial():
    """A log-likelihood score is -inf on one confidently wrong row; that row
    made every trial release nothing on one neighbour only. Non-finite or
    failing rows now count 0 and the trial stays."""
    X, y = make_data(n=200)

    def fragile(estimator, X, y):
        scores = (estimator.predict(X) == y).astype(float)
        scores[X[:, 0] > 0.999] = -np.inf  # one row of the neighbour
        if (X[:, 1] > 0.999).any():
            raise RuntimeError("cannot score this part")
        return scores

    X2 = X.copy()
    X2[0, :2] = [1.0, 1.0]
    for data in ((X, y), (X2, y)):
        search = PrivateSearchCV(
            ThresholdClassifier(),
            GRID,
            scoring=fragile,
            validation_fraction=0.9,
            random_state=0,
        ).fit(*data)
        assert search.best_estimator_ is not None
        assert 0.0 <= search.best_score_ or math.isfinite(search.best_score_)


def test_a_dask_dataframe_search_is_the_pandas_search(dask_sync):
    # The split took rows with scikit-learn's _safe_indexing, which a dask
    # DataFrame has no positional take for (AttributeError). Each part now
    # keeps its rows in order, so a dask DataFrame is split by partitions.
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _normalised_classification(n=2100)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    estimator = DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1])

    def search(X, y):
        return PrivateSearchCV(
            estimator, {"C": [0.1, 1.0, 10.0]}, mean_trials=3, random_state=2
        ).fit(X, y)

    memory = search(frame, pd.Series(y))
    on_dask = search(
        dd.from_pandas(frame, npartitions=3),
        dd.from_pandas(pd.Series(y), npartitions=2),
    )
    assert on_dask.best_params_ == memory.best_params_
    assert on_dask.best_score_ == memory.best_score_
    np.testing.assert_array_equal(
        on_dask.best_estimator_.coef_, memory.best_estimator_.coef_
    )
    assert list(on_dask.best_estimator_.feature_names_in_) == list(frame.columns)
