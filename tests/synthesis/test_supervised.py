"""Synthetic data in supervised learning: the refusal, the classifier, the helper."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import make_column_transformer
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from skdp import PrivacyBudget, PrivacyLeakWarning
from skdp.accounting import DEFAULT_DELTA, ComposedEvent
from skdp.accounting._accountant import PrivacyAccountant
from skdp.exceptions import BudgetExceededError
from skdp.synthesis import PMWSynthesizer, SyntheticDataClassifier, marginal_errors
from skdp.synthesis._plan import plan_privacy

CATEGORIES = [[0, 1, 2]] * 3


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, 3))
    y = (X[:, 0] + (X[:, 1] == 2) >= 2).astype(int)
    return X, y


def _classifier(**params):
    base = dict(
        estimator=DecisionTreeClassifier(max_depth=3, random_state=0),
        categories=CATEGORIES,
        classes=[0, 1],
        n_samples=2000,
        random_state=0,
    )
    return SyntheticDataClassifier(**{**base, **params})


# -- PMWSynthesizer as a step of a supervised pipeline ------------------------


def test_pipeline_with_a_target_is_refused_before_the_charge():
    X, y = _data()
    budget = PrivacyBudget(10.0, 1e-6)
    pipe = make_pipeline(
        PMWSynthesizer(categories=CATEGORIES, budget=budget), LogisticRegression()
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cross_val_score's FitFailedWarning
        with pytest.raises(ValueError, match="SyntheticDataClassifier"):
            cross_val_score(pipe, X, y, cv=3)
    assert budget.ledger == []
    with pytest.raises(ValueError, match="paired with the real y"):
        clone(pipe).fit(X, y)
    assert budget.ledger == []


def test_column_transformer_with_a_target_is_refused():
    X, y = _data()
    budget = PrivacyBudget(10.0, 1e-6)
    pipe = make_pipeline(
        make_column_transformer(
            (PMWSynthesizer(categories=CATEGORIES[:2], budget=budget), [0, 1])
        ),
        LogisticRegression(),
    )
    with pytest.raises(ValueError, match="nothing to do with the real rows"):
        pipe.fit(X, y)
    assert budget.ledger == []


def test_the_synthesizer_alone_still_fits_with_or_without_y():
    X, y = _data(200)
    budget = PrivacyBudget(10.0, 3 * DEFAULT_DELTA)  # three fits at the default
    synth = PMWSynthesizer(categories=CATEGORIES, n_rounds=2, budget=budget)
    synth.fit(X)
    synth.fit(X, None)
    synth.fit(X, y)  # a direct call: y is ignored, as scikit-learn's checks expect
    assert len(budget.ledger) == 3
    # A pipeline without a target, or ending with the synthesizer, is fine.
    make_pipeline(PMWSynthesizer(categories=CATEGORIES, n_rounds=2)).fit(X, y)
    out = make_pipeline(
        PMWSynthesizer(categories=CATEGORIES, n_rounds=2)
    ).fit_transform(X)
    assert out.shape == X.shape


# -- SyntheticDataClassifier ----------------------------------------------------


def test_charges_the_plan_once_and_records_it():
    X, y = _data()
    budget = PrivacyBudget(5.0, 2 * DEFAULT_DELTA)  # two fits at the default
    clf = _classifier(budget=budget)
    plan = clf.privacy_plan(X, y)
    assert budget.ledger == []
    clf.fit(X, y)
    assert len(budget.ledger) == 1
    assert clf.privacy_event_ == plan.event.with_label(clf.privacy_event_.label)
    assert clf.synthesizer_.privacy_event_ is clf.privacy_event_
    assert 0.9 < clf.epsilon_ <= 1.0  # the split uses (almost) all of epsilon
    # A clone shares the budget: a second fit is recorded in the same ledger.
    clone(clf).fit(X, y)
    assert len(budget.ledger) == 2


def test_the_plan_is_mwem_with_d_initial_measurements_and_d_rounds():
    """The synthesizer's calibrated split (tested in test_pmw) over 3 + 3 steps."""
    X, y = _data()
    plan = _classifier().privacy_plan(X, y)
    # The measurement events cover the largest table a round may measure
    # (a public count from the schema): at least a 2-way marginal here.
    max_cells = plan.settings["synthesizer"].settings["mwem"].max_cells
    assert max_cells >= 4
    reference = plan_privacy(
        1.0,
        DEFAULT_DELTA,
        "gaussian",
        3,
        3,
        PrivacyAccountant(),
        schedule="adaptive",
        max_cells=max_cells,
        n_samples=len(X),
    )
    assert plan.event == ComposedEvent(reference.events)
    assert plan.delta == DEFAULT_DELTA
    assert plan.settings["synthesizer"].settings["mwem"] == reference


def test_the_synthesizer_is_planned_through_its_public_plan_fit():
    # It drove its synthesizer's private _prepare_fit / _plan_fit / _run_fit
    # and edited the prepared initial measurements (issue 27); now
    # plan_fit(initial_marginals=...) says the same thing in public.
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    plan = _classifier().privacy_plan(frame, y)
    joint = frame.assign(label=y)
    synthesizer = PMWSynthesizer(
        workload=[(c, "label") for c in "abc"]
        + [("a", "b", "label"), ("a", "c", "label"), ("b", "c", "label")],
        n_rounds=3,
        categories={**dict.fromkeys("abc", [0, 1, 2]), "label": [0, 1]},
        random_state=0,
    )
    planned = synthesizer.plan_fit(
        joint, initial_marginals=[(c, "label") for c in "abc"]
    )
    assert plan.event == planned.plan.event.with_label(plan.event.label)
    assert plan.settings["synthesizer"] == planned.plan
    reference = _classifier().fit(frame, y)
    model = planned.run().model_
    np.testing.assert_array_equal(
        reference.synthesizer_.model_.sample(50, np.random.default_rng(1)),
        model.sample(50, np.random.default_rng(1)),
    )


def test_initial_marginals_are_measured_first_and_set_the_split():
    X, _ = _data()
    synthesizer = PMWSynthesizer(categories=CATEGORIES, n_rounds=2, random_state=0)
    plain = synthesizer.privacy_plan(X)
    paired = synthesizer.plan_fit(X, initial_marginals=[(0, 1), (2, 1)]).plan
    # Two initial measurements instead of three one-way ones: another split.
    mwem = paired.settings["mwem"]
    assert (mwem.n_init, plain.settings["mwem"].n_init) == (2, 3)
    assert paired.event != plain.event
    # ... and the public default is the one-way marginals.
    one_way = synthesizer.plan_fit(X, initial_marginals=[(0,), (1,), (2,)]).plan
    assert one_way.event == plain.event


@pytest.mark.parametrize(
    "initial, match",
    [
        ([], "at least one marginal"),
        ([(0, 0)], "distinct columns"),
        ([(0, 7)], "Unknown column 7"),
        ([()], "distinct columns"),
    ],
)
def test_bad_initial_marginals_are_refused_before_the_charge(initial, match):
    X, _ = _data(100)
    budget = PrivacyBudget(10.0, 1e-6)
    synthesizer = PMWSynthesizer(categories=CATEGORIES, budget=budget)
    with pytest.raises(ValueError, match=match):
        synthesizer.plan_fit(X, initial_marginals=initial)
    queries = np.ones((2, 27)) / 2
    with pytest.raises(ValueError, match="marginal workload"):
        synthesizer.set_params(workload=queries).plan_fit(X, initial_marginals=[(0,)])
    assert budget.ledger == []


def test_refusal_leaves_nothing():
    X, y = _data()
    budget = PrivacyBudget(0.5, 1e-6)
    clf = _classifier(budget=budget)
    with pytest.raises(BudgetExceededError):
        clf.fit(X, y)
    assert budget.ledger == []
    assert not [k for k in vars(clf) if k.endswith("_") and not k.startswith("_")]


def test_leak_warnings_only_without_declarations():
    X, y = _data(300)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        _classifier(classes=None).fit(X, y)
    Xf = X.astype(float)
    with pytest.warns(PrivacyLeakWarning) as record:
        _classifier(categories=None).fit(Xf, y)
    read = {str(w.message).split(" was not given")[0] for w in record}
    assert {"bounds of column 0", "bounds of column 1", "bounds of column 2"} <= read
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        _classifier().fit(X, y)
        _classifier(categories=None, bounds=(0, 2)).fit(Xf, y)


class _FailsOnLargeFits(ClassifierMixin, BaseEstimator):
    """Fits the public probe table, fails on the synthetic rows."""

    def fit(self, X, y):
        if len(X) > 500:
            raise RuntimeError("boom")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.zeros(len(X), dtype=int)


class _FailsAlways(_FailsOnLargeFits):
    def fit(self, X, y):
        raise RuntimeError("cannot take these rows")


@pytest.mark.parametrize(
    "params, y_change, match",
    [
        ({"classes": [0, 1]}, 2, "not in classes"),
        ({"estimator": _FailsAlways()}, None, "cannot take these rows"),
        ({"categories": [[0, 1, 2]] * 2}, None, "one entry per column"),
        ({"epsilon": 1e-12}, None, "too small"),
    ],
)
def test_bad_input_fails_before_the_charge(params, y_change, match):
    X, y = _data()
    y = y.copy()
    if y_change is not None:
        y[0] = y_change
    budget = PrivacyBudget(10.0, 1e-6)
    with pytest.raises(ValueError, match=match):
        _classifier(budget=budget, **params).fit(X, y)
    assert budget.ledger == []
    with pytest.raises(ValueError, match="requires y"):
        _classifier(budget=budget).fit(X, None)
    assert budget.ledger == []


def test_a_failing_downstream_fit_falls_back_to_the_majority():
    X, y = _data()
    clf = _classifier(estimator=_FailsOnLargeFits()).fit(X, y)
    assert clf.fallback_ and isinstance(clf.estimator_, DummyClassifier)
    # The majority of the synthetic labels (n_samples=2000 draws from the
    # model's label marginal: sd <= 0.5/sqrt(2000) = 0.011, 0.05 is 4.5 sd).
    prior = clf.estimator_.class_prior_
    assert np.abs(prior - clf.synthesizer_.marginal([3])).max() < 0.05
    assert set(clf.predict(X)) == {clf.classes_[np.argmax(prior)]}
    assert not _classifier().fit(X, y).fallback_


def test_reproducible_with_a_seed():
    X, y = _data()
    a = _classifier(random_state=3).fit(X, y)
    b = _classifier(random_state=3).fit(X, y)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert SyntheticDataClassifier().__sklearn_tags__().non_deterministic


def test_accurate_at_large_epsilon():
    X, y = _data(2000)
    clf = _classifier(epsilon=200.0).fit(X, y)
    reference = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    assert clf.score(X, y) >= reference.score(X, y) - 0.02


def test_string_labels_and_probability_columns():
    X, y = _data()
    labels = np.array(["high", "low", "mid"])[y * 2]  # "low" never occurs
    clf = _classifier(classes=["low", "mid", "high"]).fit(X, labels)
    assert list(clf.classes_) == ["high", "low", "mid"]
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))


@pytest.mark.slow
def test_dataframes_with_missing_values():
    rng = np.random.default_rng(0)
    n = 800
    colour = rng.choice(["red", "blue", None], size=n)
    age = np.where(rng.random(n) < 0.1, np.nan, rng.uniform(20, 70, n))
    X = pd.DataFrame({"colour": colour, "age": age})
    y = np.where((colour == "red") | (age > 50), "yes", "no")
    clf = SyntheticDataClassifier(
        make_pipeline(
            make_column_transformer(
                (OneHotEncoder(handle_unknown="ignore"), ["colour"]),
                remainder="passthrough",
            ),
            HistGradientBoostingClassifier(max_iter=20),
        ),
        epsilon=50.0,
        categories={"colour": ["red", "blue"]},
        bounds={"age": (0, 100)},
        missing_values="category",
        classes=["no", "yes"],
        random_state=0,
    ).fit(X, y)
    rows = clf.synthesizer_.sample(2000)
    assert rows["colour"].isna().mean() > 0.2  # about a third are missing
    assert rows["age"].isna().mean() > 0.03
    assert clf.score(X, y) > 0.8
    with pytest.raises(ValueError, match="holds missing values"):
        SyntheticDataClassifier(
            categories={"colour": ["red", "blue"]},
            bounds={"age": (0, 100)},
            classes=["no", "yes"],
        ).fit(X, y)


# -- missing values in the synthesizer -----------------------------------------


def test_missing_values_are_a_declared_category():
    rng = np.random.default_rng(1)
    X = np.column_stack(
        [rng.normal(size=2000), np.where(rng.random(2000) < 0.4, np.nan, 1.0)]
    )
    budget = PrivacyBudget(10.0, 1e-6)
    with pytest.raises(ValueError, match="NaN"):
        PMWSynthesizer(bounds=(-3, 3), budget=budget).fit(X)
    assert budget.ledger == []
    synth = PMWSynthesizer(
        epsilon=50.0, bounds=(-3, 3), missing_values={1: "category"}, random_state=0
    ).fit(X)
    assert [d.missing for d in synth.domains_] == [False, True]
    assert synth.marginal([1]).shape == (11,)  # 10 bins, then "missing"
    # 0.4 of the rows are missing; at epsilon=50 the model's share is within
    # a few noise standard deviations (about 0.002 here).
    assert abs(synth.marginal([1])[-1] - np.isnan(X[:, 1]).mean()) < 0.02
    out = synth.sample(4000)
    assert abs(np.isnan(out[:, 1]).mean() - 0.4) < 0.04  # binomial sd 0.008
    assert not np.isnan(out[:, 0]).any()


def test_the_missing_code_is_public_not_read_from_the_data():
    """Declared missing: the domain has the code whether or not NaN occurs."""
    X = np.random.default_rng(2).integers(0, 3, size=(300, 2))
    synth = PMWSynthesizer(
        categories=[[0, 1, 2]] * 2, missing_values="category", n_rounds=2
    ).fit(X)
    assert [d.size for d in synth.domains_] == [4, 4]
    frame = pd.DataFrame({"a": pd.Categorical(["x", None] * 50, categories=["x"])})
    with pytest.raises(ValueError, match="holds missing values"):
        PMWSynthesizer(n_rounds=1).fit(frame)
    with pytest.raises(ValueError, match="include a missing value"):
        PMWSynthesizer(categories=[[0, None]]).fit(np.zeros((5, 1)))


# -- marginal_errors -----------------------------------------------------------


def test_marginal_errors():
    real = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
    assert marginal_errors(real, real) == {(0, 1): 0.0}
    errors = marginal_errors(real, np.array([[1, 0]]), workload=[(0,), (1,), (0, 1)])
    assert errors == {(0,): 1.0, (1,): 1.5, (0, 1): 2.0}
    frame = pd.DataFrame({"x": [0.5, np.nan], "c": ["a", None]})
    errors = marginal_errors(frame, frame.iloc[[0, 0]], bounds={"x": (0, 1)})
    assert errors == {("x", "c"): 1.0}
    with pytest.raises(ValueError, match="different columns"):
        marginal_errors(frame, frame[["c", "x"]])


def test_dask_input_is_the_in_memory_fit_and_stays_on_the_workers(
    dask_sync, largest_task_rows, assert_same_fit
):
    # A dask array was gathered into the client (validate_data, check_array)
    # and a dask DataFrame failed on its lazy shape. The joint table is now
    # built beside X's row blocks and read by the synthesizer's row source.
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    X, y = _data(n=3000)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    for memory_input, dask_input in [
        ((X, y), (da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=900))),
        (
            (frame, pd.Series(y)),
            (
                dd.from_pandas(frame, npartitions=3),
                dd.from_pandas(pd.Series(y), npartitions=2),
            ),
        ),
    ]:
        memory = _classifier(random_state=3).fit(*memory_input)
        with largest_task_rows() as seen:
            on_dask = _classifier(random_state=3).fit(*dask_input)
        assert 0 < seen.rows < 3000  # input chunks or canonical blocks
        assert_same_fit(memory, on_dask)
        rows = memory_input[0]
        np.testing.assert_array_equal(on_dask.predict(rows), memory.predict(rows))


@pytest.mark.parametrize("bad", ["outside", "nan"])
def test_dask_labels_are_refused_as_in_memory(bad, dask_sync, assert_same_refusal):
    da = pytest.importorskip("dask.array")
    X, y = _data(n=3000)
    y = y.astype(float)
    y[2500] = 7 if bad == "outside" else np.nan

    def fit(data, budget):
        _classifier(budget=budget).fit(*data)

    kind, message = assert_same_refusal(
        fit, (X, y), (da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
    )
    assert kind is ValueError and ("not in classes" in message or "NaN" in message)
    with pytest.raises(ValueError, match="classes must be declared for dask"):
        _classifier(classes=None).fit(da.from_array(X), da.from_array(y))
