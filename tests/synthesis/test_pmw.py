"""PMWSynthesizer as a scikit-learn transformer and a model of the data."""

import runpy
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import (
    check_pipeline_consistency,
    check_transformer_data_not_an_array,
    check_transformer_general,
)

from skdp import PMWSynthesizer, PrivacyLeakWarning
from skdp.datasets import load_adult
from skdp.synthesis._estimation import _Estimator
from skdp.synthesis._models import DenseModel, JunctionTreeModel

ROOT = Path(__file__).resolve().parents[2]


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    colour = pd.Categorical(
        rng.choice(["red", "green"], size=n), categories=["red", "green", "blue"]
    )
    return pd.DataFrame(
        {
            "colour": colour,
            "age": rng.integers(18, 90, size=n),
            "score": rng.normal(size=n),
            "city": rng.choice(["a", "b"], size=n).astype(object),
        }
    )


PUBLIC = {
    "bounds": {"age": (0, 100), "score": (-3.0, 3.0)},
    "categories": {"city": ["a", "b", "c"]},
}


def test_pandas_in_pandas_out_with_dtypes_and_categories():
    X = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        synth = PMWSynthesizer(n_rounds=3, random_state=0, **PUBLIC).fit(X)
    out = synth.sample(50)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(X.columns)
    assert out["colour"].dtype == X["colour"].dtype  # categories preserved
    assert list(out.dtypes[1:]) == list(X.dtypes[1:])
    assert out["age"].between(0, 100).all()
    assert out["score"].between(-3, 3).all()
    assert set(out["city"]) <= {"a", "b", "c"}
    assert synth.marginal(["colour"]).shape == (3,)
    assert synth.marginal(["city", "colour"]).shape == (3, 3)


def test_values_outside_the_domain_never_fail():
    X = _frame()
    X.loc[0, "age"] = 1000
    X.loc[1, "score"] = -1e9
    X.loc[2, "city"] = "unknown"
    synth = PMWSynthesizer(n_rounds=2, random_state=0, **PUBLIC).fit(X)
    assert synth.sample(10).shape == (10, 4)


def test_missing_domains_warn():
    X = _frame()
    with pytest.warns(PrivacyLeakWarning) as record:
        PMWSynthesizer(n_rounds=1, random_state=0).fit(X)
    # One warning per column whose domain was read from the data.
    messages = [str(w.message) for w in record]
    assert any("bounds of column 'age'" in m for m in messages)
    assert any("bounds of column 'score'" in m for m in messages)
    assert any("categories of column 'city'" in m for m in messages)


def test_numpy_object_columns_with_declared_categories():
    rng = np.random.default_rng(0)
    X = np.empty((100, 2), dtype=object)
    X[:, 0] = rng.choice(["x", "y"], size=100)
    X[:, 1] = rng.uniform(size=100)
    synth = PMWSynthesizer(
        n_rounds=2, categories=[["x", "y"], None], bounds=(0, 1), random_state=0
    ).fit(X)
    out = synth.sample(5)
    assert out.dtype == object and set(out[:, 0]) <= {"x", "y"}


def test_transform_uses_only_the_number_of_rows():
    X = np.random.default_rng(0).uniform(size=(60, 3))
    synth = PMWSynthesizer(n_rounds=2, bounds=(0, 1), random_state=0).fit(X)
    other = np.random.default_rng(1).uniform(size=(60, 3))
    np.testing.assert_array_equal(synth.transform(X), synth.transform(other))
    assert synth.transform(X[:7]).shape == (7, 3)


def test_fit_transform_pipeline_and_set_output():
    X = np.random.default_rng(0).uniform(size=(80, 3))
    synth = PMWSynthesizer(n_rounds=2, bounds=(0, 1), random_state=0)
    np.testing.assert_array_equal(
        clone(synth).fit_transform(X), clone(synth).fit(X).transform(X)
    )
    pipe = make_pipeline(clone(synth), StandardScaler()).fit(X)
    assert pipe.transform(X).shape == (80, 3)
    frame = clone(synth).set_output(transform="pandas").fit_transform(X)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["x0", "x1", "x2"]


class _SeededPMW(PMWSynthesizer):
    """With a fixed seed the output is reproducible: the checks skipped for the
    non-deterministic tag hold."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


@pytest.mark.parametrize(
    "check",
    [
        check_transformer_general,
        check_pipeline_consistency,
        check_transformer_data_not_an_array,
    ],
)
def test_checks_skipped_as_non_deterministic_pass_with_a_seed(check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check("PMWSynthesizer", _SeededPMW(random_state=0))


def test_sample_needs_a_fit_and_a_valid_size():
    with pytest.raises(NotFittedError):
        PMWSynthesizer().sample(3)
    synth = PMWSynthesizer(n_rounds=1, bounds=(0, 1), random_state=0)
    synth.fit(np.random.default_rng(0).uniform(size=(20, 2)))
    with pytest.raises(ValueError, match="n_samples"):
        synth.sample(-1)
    assert synth.sample(0).shape == (0, 2)


def test_model_recovers_a_strong_dependence():
    # 20,000 rows, column 1 copies column 0 90% of the time. With epsilon = 5
    # the 2-way measurement's noise is about 1e-4 per cell, so the model's
    # joint should be close; the independent model's L1 error is 0.8 x 0.5.
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, size=20_000)
    b = np.where(rng.uniform(size=a.size) < 0.9, a, 1 - a)
    X = np.column_stack([a, b, rng.integers(0, 2, size=a.size)])
    synth = PMWSynthesizer(epsilon=5.0, categories=[[0, 1]] * 3, random_state=0).fit(X)
    truth = np.histogram2d(a, b, bins=2)[0] / a.size
    assert np.abs(synth.marginal([0, 1]) - truth).sum() < 0.02
    assert isinstance(synth.model_, DenseModel)
    np.testing.assert_allclose(
        synth.answer_queries(np.eye(8)[:2]), synth.model_.probabilities.ravel()[:2]
    )


def test_estimator_recovers_from_a_flat_start():
    # Regression: the noisy 1-way marginals of a fit (values recorded from
    # one) leave a flat optimum at which Armijo backtracking shrank the step
    # to ~1e-24, and the informative 2-way measurement that followed could
    # no longer move the model: about one fit in 60 of the test above (e.g.
    # random_state=49 before the exact samplers) synthesised independent
    # columns. A new measurement now restarts the step.
    estimator = _Estimator(DenseModel((2, 2, 2)))
    sigma = 0.0004082316910295756
    for clique, value in [
        ((0,), [0.49889008235242216, 0.5013037051346153]),
        ((1,), [0.4962503635972738, 0.503373382475879]),
        ((2,), [0.4979633951104246, 0.5022683109076693]),
    ]:
        estimator.add_marginal(clique, np.array(value), sigma)
    estimator.run(30)
    joint = np.array(
        [
            [0.4497930269535631, 0.05042678615255281],
            [0.04753049557805061, 0.45384250940997156],
        ]
    )
    estimator.add_marginal((0, 1), joint, sigma)
    estimator.run(30)
    # The independent model is 0.8 away in L1; the noise is ~4e-4 per cell.
    assert np.abs(estimator.model.marginal((0, 1)) - joint).sum() < 0.01


def test_adult_14_columns_use_a_small_junction_tree():
    data = load_adult(discretized=True, as_frame=True)
    X = data.frame
    categories = {c: list(range(k)) for c, k in data.domain.items()}
    synth = PMWSynthesizer(
        n_rounds=3,
        categories=categories,
        workload=[("age", "sex", "income>50K"), ("race", "occupation")],
        random_state=0,
    ).fit(X)
    assert isinstance(synth.model_, JunctionTreeModel)
    assert synth.model_.n_cells > 10**17
    assert synth.model_.size <= synth.max_model_size
    assert synth.marginal(["age", "race", "sex"]).sum() == pytest.approx(1.0)
    out = synth.sample(100)
    assert out.shape == (100, 14) and list(out.columns) == list(X.columns)
    with pytest.raises(ValueError, match="dense"):
        synth.answer_queries(np.ones((1, 3)))


def test_verbose_prints_the_selected_marginals(capsys):
    X = np.random.default_rng(0).integers(0, 2, size=(50, 3))
    PMWSynthesizer(n_rounds=2, categories=[[0, 1]] * 3, verbose=1, random_state=0).fit(
        X
    )
    assert "round 2/2: measured" in capsys.readouterr().out


def test_lecture_example_runs(capsys):
    module = runpy.run_path(str(ROOT / "examples" / "pmw_lecture_example.py"))
    module["main"](seeds=[0])
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.strip().startswith("10000  MWEM")]
    # At n = 10,000 the private errors are below the lecture's 0.01 (max).
    assert len(rows) == 2
    assert all(float(row[-2]) < 0.02 for row in rows)


@pytest.mark.parametrize("workload", [[], (), np.zeros((0, 8))], ids=repr)
def test_an_empty_workload_is_refused_before_the_charge(workload):
    # It was charged, then failed after the spend (issue 26).
    from skdp import PrivacyBudget

    budget = PrivacyBudget(10.0, 1e-6)
    X = np.random.default_rng(0).integers(0, 2, size=(50, 3))
    pmw = PMWSynthesizer(
        workload=workload, categories=[[0, 1]] * 3, budget=budget, random_state=0
    )
    with pytest.raises(ValueError, match="workload is empty"):
        pmw.fit(X)
    assert budget.ledger == []
