"""PMWSynthesizer finds every problem before its charge (release contract).

Regression tests for the review's findings 5 and 8 (synthesizer part): each
raised after the budget was charged, or failed later in ``sample``, on the
code before the plan-charge-run contract.
"""

import numpy as np
import pandas as pd
import pytest

from skdp import PMWSynthesizer, PrivacyBudget, PrivacyLeakWarning
from skdp.synthesis._views import base_clique


def _budget():
    return PrivacyBudget(100.0, 1e-3)


def test_nan_in_an_object_array_fails_before_the_charge():
    """Finding 5: declared categories + bounds, NaN in the numeric column."""
    X = np.empty((50, 2), dtype=object)
    X[:, 0] = ["a", "b"] * 25
    X[:, 1] = np.linspace(0, 1, 50)
    X[7, 1] = np.nan
    budget = _budget()
    synth = PMWSynthesizer(
        categories=[["a", "b"], None], bounds=[None, (0, 1)], budget=budget
    )
    with pytest.raises(ValueError, match="holds missing values"):
        synth.fit(X)
    assert budget.ledger == [] and not hasattr(synth, "model_")
    X[7, 1] = None
    with pytest.raises(ValueError, match="holds missing values"):
        synth.fit(X)
    X[7, 1] = "seven"
    with pytest.raises(ValueError, match="not numbers"):
        synth.fit(X)
    assert budget.ledger == []


@pytest.mark.parametrize(
    "params, match",
    [
        ({"noise": "laplace", "epsilon": 1e-300}, "noise scale"),
        ({"bounds": (-1e308, 1e308)}, "cannot cut"),
        ({"n_bins": 10**6, "max_model_size": 1000}, "max_model_size"),
    ],
)
def test_infeasible_parameters_fail_before_the_charge(params, match):
    """Finding 8: these charged, then overflowed or ran out of memory."""
    X = np.random.default_rng(0).uniform(size=(100, 2))
    budget = _budget()
    params = {"bounds": (0, 1), **params}
    with pytest.raises(ValueError, match=match):
        PMWSynthesizer(budget=budget, **params).fit(X)
    assert budget.ledger == []


@pytest.mark.slow
def test_many_declared_categories_plan_their_memory():
    """Finding 8: two columns of 10**5 categories needed 7 TiB (all 2-way
    marginals counted up front). Marginals beyond the model size are never
    candidates, so the fit runs in bounded memory."""
    rng = np.random.default_rng(0)
    k = 10**5
    X = rng.integers(0, k, size=(500, 2))
    synth = PMWSynthesizer(
        categories=[list(range(k))] * 2, n_rounds=2, random_state=0
    ).fit(X)
    assert synth.sample(3).shape == (3, 2)
    assert all(len(base_clique(view)) == 1 for view in synth.selected_)


@pytest.mark.slow
def test_fine_bins_fit():
    X = np.random.default_rng(0).uniform(size=(200, 2))
    synth = PMWSynthesizer(bounds=(0, 1), n_bins=10**6, n_rounds=1, random_state=0)
    assert np.all(np.isfinite(synth.fit(X).sample(5)))


def _nullable_frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "count": pd.array(rng.integers(0, 10, 80), dtype="Int64"),
            "share": pd.array(rng.uniform(size=80), dtype="Float64"),
            "flag": pd.array(rng.integers(0, 2, 80).astype(bool), dtype="boolean"),
        }
    )


def test_pandas_nullable_dtypes_work_end_to_end():
    """Finding 8: fit charged, then sample/transform always raised TypeError."""
    X = _nullable_frame()
    budget = _budget()
    synth = PMWSynthesizer(
        bounds={"count": (0, 9), "share": (0, 1)},
        categories={"flag": [False, True]},
        n_rounds=2,
        random_state=0,
        budget=budget,
    )
    out = synth.fit_transform(X)
    assert len(budget.ledger) == 1  # fit_transform charged once
    assert list(out.dtypes) == list(X.dtypes)
    assert out["count"].between(0, 9).all() and out["count"].dtype == "Int64"
    assert synth.sample(4).shape == (4, 3)


def test_missing_values_in_nullable_columns_fail_before_the_charge():
    X = _nullable_frame()
    X.loc[3, "count"] = pd.NA
    budget = _budget()
    with pytest.raises(ValueError, match="holds missing values"):
        PMWSynthesizer(
            bounds={"count": (0, 9), "share": (0, 1)},
            categories={"flag": [False, True]},
            budget=budget,
        ).fit(X)
    assert budget.ledger == []


def test_high_cardinality_columns_never_become_data_categories():
    """Data-derived categories of a column of distinct values would copy it."""
    X = pd.DataFrame({"id": [f"person-{i}" for i in range(300)], "v": [1.0] * 300})
    budget = _budget()
    with pytest.warns(PrivacyLeakWarning):
        with pytest.raises(ValueError, match="more than 100 distinct values"):
            PMWSynthesizer(bounds={"v": (0, 2)}, budget=budget).fit(X)
    assert budget.ledger == []


def test_output_format_follows_the_domains_not_the_draws():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(100, 2)).astype(object)
    synth = PMWSynthesizer(
        categories=[[0, 1, 2], [0, 1, "other"]], n_rounds=1, random_state=0
    ).fit(X)
    # Column 1 may hold a string category, so rows are objects, whatever
    # was drawn; with numbers only they are floats.
    assert synth.sample(5).dtype == object
    synth.set_params(categories=[[0, 1, 2], [0, 1, 2]]).fit(X)
    assert synth.sample(5).dtype == np.float64


@pytest.mark.slow
def test_memory_of_the_model_and_marginals_is_planned():
    """A raised max_model_size admitted a 2000**3-cell marginal, counted after
    the charge (60 GiB)."""
    X = np.random.default_rng(0).integers(0, 2000, size=(100, 3))
    budget = _budget()
    with pytest.raises(MemoryError, match="nothing was charged"):
        PMWSynthesizer(
            epsilon=1e3,
            categories=[list(range(2000))] * 3,
            max_model_size=10**10,
            n_rounds=3,
            budget=budget,
        ).fit(X)
    assert budget.ledger == []


def test_integer_dtypes_cannot_wrap():
    X = pd.DataFrame({"small": np.arange(50, dtype=np.uint8) % 7})
    budget = _budget()
    with pytest.raises(ValueError, match="exceed the range"):
        PMWSynthesizer(bounds={"small": (0, 1000)}, budget=budget).fit(X)
    with pytest.raises(ValueError, match="exceed the range"):
        PMWSynthesizer(bounds=(-1e300, 1e300), budget=budget).fit(X.astype("int64"))
    assert budget.ledger == []


def test_dates_are_refused_before_the_charge():
    X = pd.DataFrame({"day": pd.date_range("2020-01-01", periods=40)})
    budget = _budget()
    with pytest.raises(ValueError, match="dates or durations"):
        PMWSynthesizer(bounds={"day": (0, 1e18)}, budget=budget).fit(X)
    assert budget.ledger == []
