"""skdp.check_pipeline: every step listed as private, stateless or leaking."""

import math
import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    Normalizer,
    OneHotEncoder,
    StandardScaler,
)

from skdp import (
    DPLinearSVC,
    DPLogisticRegression,
    PrivacyBudget,
    PrivacyLeakWarning,
    check_pipeline,
    step_privacy,
)
from skdp.model_selection import PrivateSearchCV


def _kinds(report):
    return {s.path: s.kind for s in report.steps}


def test_private_pipeline_lists_every_step_with_its_epsilon():
    model = DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1])
    pipe = make_pipeline(Normalizer(), model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a private pipeline warns nothing
        report = check_pipeline(pipe)
    assert _kinds(report) == {
        "(root)": "private",
        "normalizer": "stateless",
        "dplogisticregression": "private",
    }
    assert report.is_private
    assert report.epsilon == 0.5
    assert [s.path for s in report.private] == ["dplogisticregression"]


def test_leaking_step_warns_once_and_names_the_step():
    model = DPLogisticRegression(data_norm=1.0, classes=[0, 1])
    pipe = make_pipeline(StandardScaler(), model)
    with pytest.warns(PrivacyLeakWarning, match=r"standardscaler \(StandardScaler\)"):
        report = check_pipeline(pipe)
    assert not report.is_private
    assert [s.path for s in report.leaking] == ["standardscaler"]
    assert "private: NO (1 leaking step(s))" in str(report)


def test_warn_false_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = check_pipeline(StandardScaler(), warn=False)
    assert report.leaking[0].path == "(root)"


def test_nested_column_transformer_and_feature_union():
    cats = [["a", "b"]]
    pre = ColumnTransformer(
        [
            ("onehot", OneHotEncoder(categories=cats), [0]),
            ("scale", StandardScaler(), [1]),
        ]
    )
    union = FeatureUnion([("norm", Normalizer()), ("f", FunctionTransformer())])
    clf = DPLinearSVC(epsilon=2.0, data_norm=1.0, classes=[0, 1])
    pipe = Pipeline([("pre", pre), ("union", union), ("clf", clf)])
    report = check_pipeline(pipe, warn=False)
    kinds = _kinds(report)
    assert kinds["pre"] == "leaking"
    assert kinds["pre__onehot"] == "stateless"
    assert kinds["pre__scale"] == "leaking"
    assert kinds["pre__remainder"] == "stateless"
    assert kinds["union"] == "stateless"
    assert kinds["clf"] == "private"
    # Paths are set_params names: each one can be set on the pipeline.
    pipe.set_params(pre__scale__with_mean=False)
    assert [s.path for s in report.leaking] == ["pre__scale"]
    # An encoder whose categories come from the data leaks them.
    assert step_privacy(OneHotEncoder()) == "leaking"


def test_two_private_steps_add_up_and_fitted_steps_report_what_they_spent():
    budget = PrivacyBudget(epsilon=10)
    first = DPLogisticRegression(epsilon=0.3, classes=[0, 1], data_norm=1.0)
    union = FeatureUnion(
        [("a", FunctionTransformer()), ("b", FunctionTransformer(np.abs))]
    )
    pipe = make_pipeline(union, DPLogisticRegression(epsilon=0.7, budget=budget))
    report = check_pipeline(make_pipeline(first, pipe), warn=False)
    assert math.isclose(report.epsilon, 1.0)
    X = np.random.default_rng(0).uniform(-1, 1, (40, 2))
    y = (X[:, 0] > 0).astype(int)
    first.fit(X, y)
    (entry,) = check_pipeline(first).private
    assert entry.epsilon == first.epsilon_  # what was spent, not the parameter
    # The noise multiplier is calibrated to a relative 1e-6, on the safe
    # side: the epsilon spent is at most 0.3 and within about as much of it.
    assert 0.3 * (1 - 1e-5) <= entry.epsilon <= 0.3
    assert entry.delta == first.delta_ > 0  # the default method is DP-SGD


def test_grid_search_is_leaking_and_its_inner_steps_are_not_counted():
    search = GridSearchCV(DPLogisticRegression(), {"C": [0.1, 1.0]})
    with pytest.warns(PrivacyLeakWarning, match="noiseless validation scores"):
        report = check_pipeline(search)
    kinds = _kinds(report)
    assert kinds == {"(root)": "leaking", "estimator": "private"}
    assert [s.path for s in report.leaking] == ["(root)"]
    assert report.private == ()  # covered by the (leaking) search
    assert step_privacy(GridSearchCV(Normalizer(), {"norm": ["l1"]})) == "stateless"


def test_private_search_covers_its_steps():
    search = PrivateSearchCV(
        make_pipeline(Normalizer(), DPLogisticRegression(data_norm=1, classes=[0, 1])),
        {"dplogisticregression__C": [0.1, 1.0]},
        epsilon=1.0,
    )
    report = check_pipeline(search)
    assert report.is_private
    assert [s.path for s in report.private] == ["(root)"]
    assert report.epsilon == 1.0
    inner = {s.path: s.covered for s in report.steps}
    assert inner["estimator__dplogisticregression"] is True


def test_private_search_refuses_a_leaking_step_with_the_same_classification():
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression())
    assert step_privacy(pipe.steps[0][1]) == "leaking"
    search = PrivateSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]})
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.arange(30) % 2
    with pytest.raises(ValueError, match="learns from the training data"):
        search.fit(X, y)


def test_plain_sklearn_model_is_leaking():
    report = check_pipeline(LogisticRegression(), warn=False)
    assert not report.is_private
    assert math.isclose(report.epsilon, 0.0)


def test_a_scaler_from_declared_bounds_is_stateless():
    from skdp.preprocessing import BoundedMinMaxScaler, DPStandardScaler

    assert step_privacy(BoundedMinMaxScaler(bounds=(0, 1))) == "stateless"
    assert step_privacy(BoundedMinMaxScaler()) == "leaking"  # reads min and max
    assert step_privacy(DPStandardScaler(bounds=(0, 1))) == "private"


# -- a private step that reads a bound from the data ---------------------------
def test_a_private_step_whose_bound_is_read_from_data_is_leaking():
    pipe = make_pipeline(Normalizer(), DPLogisticRegression(classes=[0, 1]))
    with pytest.warns(
        PrivacyLeakWarning, match=r"data_norm was not given.*pass data_norm"
    ):
        report = check_pipeline(pipe)
    assert not report.is_private
    (entry,) = report.leaking
    assert entry.path == "dplogisticregression"
    assert entry.data_derived == ("data_norm",)
    assert "the largest L2 norm of a row" in entry.reason
    assert "private: NO (1 leaking step(s))" in str(report)
    # The report says before the fit what the fit then warns about. (400
    # rows: DP-SGD on 40 is forecast to be swamped by its noise, a
    # UtilityWarning.)
    X = np.random.default_rng(0).uniform(-1, 1, (400, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(PrivacyLeakWarning, match="data_norm was not given"):
        pipe.fit(X, y)

    pipe.set_params(dplogisticregression__data_norm=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = check_pipeline(pipe)
        pipe.fit(X, y)  # and the fit warns nothing either
    assert report.is_private
    assert _kinds(report)["dplogisticregression"] == "private"
    assert report.private[0].data_derived == ()


def test_every_parameter_read_from_data_is_named():
    # classes and data_norm both default to None.
    (entry,) = check_pipeline(DPLogisticRegression(), warn=False).leaking
    assert entry.data_derived == ("data_norm", "classes")
    assert "pass classes=[...]" in entry.reason
    assert step_privacy(DPLogisticRegression()) == "leaking"
    # A leaking private step still charges its budget: it counts in the total.
    assert check_pipeline(DPLogisticRegression(epsilon=0.4), warn=False).epsilon == 0.4


def _public_values(estimator):
    """Public values for every parameter its fit could read from the rows of
    ``_contract_data`` (the columns lie in [0, 1], the labels are 0 and 1)."""
    values = {
        "data_norm": 2.0,
        "classes": [0, 1],
        "bounds": (0.0, 1.0),
        "y_bounds": (0.0, 1.0),
        # OnlinePMW's universe: each column's values, declared (in public
        # use, the values a column may take, known before the data).
        "domain": [sorted(set(column)) for column in _contract_data()[0].T.tolist()],
    }
    params = estimator.get_params(deep=False)
    return {name: value for name, value in values.items() if name in params}


def _contract_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (60, 2))
    return X, (X[:, 0] > 0.5).astype(int)


def _read_from_data(estimator, X, y):
    """The parameters named by the PrivacyLeakWarnings of a fit (the first
    word of "<parameter> [of column c] was not given")."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return {
        str(w.message).split(" was not given")[0].split()[0]
        for w in caught
        if issubclass(w.category, PrivacyLeakWarning)
    }


def _contract_estimators():
    from skdp.utils.discovery import all_estimators

    # PrivateSearchCV declares no parameter of its own: it reports those of
    # its estimator (test_private_search_reports_what_its_trials_read).
    return [cls for name, cls in all_estimators() if name != "PrivateSearchCV"]


@pytest.mark.parametrize("cls", _contract_estimators(), ids=lambda c: c.__name__)
def test_each_estimator_declares_exactly_what_its_fit_reads_from_data(cls):
    from skdp._pipeline_check import data_derived_params

    X, y = _contract_data()
    estimator = cls(random_state=0) if "random_state" in cls().get_params() else cls()
    declared = set(data_derived_params(estimator))
    # At the defaults: what check_pipeline names is what the fit warns about.
    # (A synthesizer's bounds and categories are one choice per column: for
    # numeric columns the fit names only the bounds it read.)
    read = _read_from_data(estimator, X, y)
    assert read <= declared
    assert declared - read <= {"categories"}
    # With public values for all of them: nothing declared, nothing read.
    estimator.set_params(**_public_values(estimator))
    assert data_derived_params(estimator) == ()
    assert _read_from_data(estimator, X, y) == set()


def test_private_search_reports_what_its_trials_read():
    search = PrivateSearchCV(
        make_pipeline(Normalizer(), DPLogisticRegression()),
        {"dplogisticregression__C": [0.1, 1.0]},
        epsilon=1.0,
    )
    with pytest.warns(PrivacyLeakWarning, match="data_norm was not given"):
        report = check_pipeline(search)
    assert [s.path for s in report.leaking] == ["(root)"]
    assert report.leaking[0].data_derived == (
        "estimator__dplogisticregression__data_norm",
        "estimator__dplogisticregression__classes",
    )
    # The default estimator (DPLogisticRegression()) reads both too.
    (entry,) = check_pipeline(PrivateSearchCV(), warn=False).leaking
    assert entry.data_derived == ("estimator__data_norm", "estimator__classes")
    search.set_params(
        estimator__dplogisticregression__data_norm=1.0,
        estimator__dplogisticregression__classes=[0, 1],
    )
    assert check_pipeline(search, warn=False).is_private


def test_private_search_still_refuses_a_private_step_before_the_last():
    from skdp.preprocessing import DPStandardScaler

    # DPStandardScaler() reads its bounds from the data (it is leaking for
    # check_pipeline) and is refused as the private step it is.
    pipe = make_pipeline(DPStandardScaler(), DPLogisticRegression())
    search = PrivateSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]})
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.arange(30) % 2
    with pytest.raises(ValueError, match="private skdp estimator before the last"):
        search.fit(X, y)


# -- SimpleImputer --------------------------------------------------------------
def test_a_constant_imputer_that_keeps_every_column_is_stateless():
    from sklearn.impute import SimpleImputer

    keep = SimpleImputer(strategy="constant", fill_value=0, keep_empty_features=True)
    assert step_privacy(keep) == "stateless"
    assert step_privacy(SimpleImputer(strategy="mean")) == "leaking"
    # By default a constant imputer drops the columns that are all missing,
    # which one row decides: two neighbouring data sets, two output widths.
    drop = SimpleImputer(strategy="constant", fill_value=0)
    X = np.array([[np.nan, 1.0], [np.nan, 2.0]])
    neighbour = np.array([[3.0, 1.0], [np.nan, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Skipping features"
        widths = {drop.fit_transform(Z).shape[1] for Z in (X, neighbour)}
    # (scikit-learn before 1.8 keeps all-missing columns for the constant
    # strategy; the rule asks for keep_empty_features=True in any version.)
    assert widths in ({1, 2}, {2})
    assert [keep.fit_transform(Z).shape[1] for Z in (X, neighbour)] == [2, 2]
    (entry,) = check_pipeline(drop, warn=False).leaking
    assert "keep_empty_features=True" in entry.reason
    # The missing-value indicator learns which columns have missing values.
    indicator = SimpleImputer(
        strategy="constant", keep_empty_features=True, add_indicator=True
    )
    (entry,) = check_pipeline(indicator, warn=False).leaking
    assert "add_indicator" in entry.reason


# -- steps declared public --------------------------------------------------------
def test_a_step_declared_public_is_accepted():
    model = DPLogisticRegression(epsilon=0.5, data_norm=5.0, classes=[0, 1])
    scaler = StandardScaler()
    pipe = make_pipeline(scaler, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_name = check_pipeline(pipe, public=["standardscaler"])
        by_object = check_pipeline(pipe, public=[scaler])
    for report in (by_name, by_object):
        assert report.is_private
        assert _kinds(report)["standardscaler"] == "public"
        assert report.epsilon == 0.5
    assert "private: yes, given 1 public step(s)" in str(by_name)
    # Nothing else is excused, and a name that is no step is refused.
    assert not check_pipeline(pipe, public=[model], warn=False).is_private
    with pytest.raises(ValueError, match="'scaler', which is not a step"):
        check_pipeline(pipe, public=["scaler"])


def test_a_container_declared_public_covers_its_steps():
    pre = ColumnTransformer(
        [("scale", StandardScaler(), [0]), ("keep", "passthrough", [1])]
    )
    pipe = Pipeline([("pre", pre), ("clf", DPLinearSVC(classes=[0, 1]))])
    report = check_pipeline(pipe, public=["pre", "clf"], warn=False)
    kinds = _kinds(report)
    assert kinds["pre"] == kinds["pre__scale"] == "public"
    assert kinds["clf"] == "private"  # data_norm declared public by the caller
    assert report.is_private
    assert not check_pipeline(pipe, public=["pre"], warn=False).is_private


@pytest.mark.parametrize(
    "bounds, categories, reads",
    [
        ((0.0, 1.0), None, False),  # one pair covers every column
        ([(0.0, 1.0), None], None, True),  # column 1 declares nothing
        ([(0.0, 1.0), None], [None, [0.0, 1.0]], False),
        (None, [[0.0, 1.0], None], True),
    ],
)
def test_a_synthesizer_reads_the_columns_it_declares_nothing_for(
    bounds, categories, reads
):
    from skdp import PMWSynthesizer

    X = np.random.default_rng(0).integers(0, 2, (40, 2)).astype(float)
    synth = PMWSynthesizer(bounds=bounds, categories=categories, random_state=0)
    expected = ("bounds", "categories") if reads else ()
    assert check_pipeline(synth, warn=False).steps[0].data_derived == expected
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synth.fit(X)
    warned = any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
    assert warned == reads


def test_private_search_names_a_tuned_bound_that_a_candidate_leaves_to_the_data():
    model = DPLogisticRegression(classes=[0, 1])  # data_norm=None
    tuned = PrivateSearchCV(model, {"data_norm": [1.0, 2.0]})
    assert check_pipeline(tuned, warn=False).is_private  # every trial declares it
    untuned = PrivateSearchCV(model, {"C": [1.0, 2.0]})
    assert check_pipeline(untuned, warn=False).leaking[0].data_derived == (
        "estimator__data_norm",
    )
    declared = model.set_params(data_norm=1.0)
    some_none = PrivateSearchCV(declared, [{"C": [1.0]}, {"data_norm": [None, 1.0]}])
    (entry,) = check_pipeline(some_none, warn=False).leaking
    assert entry.data_derived == ("estimator__data_norm",)
