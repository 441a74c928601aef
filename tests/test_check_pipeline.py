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
    pipe = make_pipeline(Normalizer(), DPLogisticRegression(epsilon=0.5))
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
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression())
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
    pipe = Pipeline([("pre", pre), ("union", union), ("clf", DPLinearSVC(epsilon=2.0))])
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
    assert math.isclose(entry.epsilon, 0.3, rel_tol=1e-6)
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
        make_pipeline(Normalizer(), DPLogisticRegression()),
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
