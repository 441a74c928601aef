"""DPKBinsDiscretizer: private edges, budget, calibration, encodings."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _data import dask_rows
from scipy import sparse
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import KBinsDiscretizer

from skdp import BudgetExceededError, PrivacyBudget, PrivacyLeakWarning
from skdp.accounting import (
    ComposedEvent,
    ExponentialMechanismEvent,
    SelfComposedEvent,
)
from skdp.preprocessing import DPKBinsDiscretizer


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(0, 100, n), rng.exponential(10, n)])


BOUNDS = ([0, 0], [100, 100])


def test_edges_are_private_quantiles_close_to_sklearn_at_large_epsilon():
    X = _data()
    binner = DPKBinsDiscretizer(
        n_bins=4, encode="ordinal", epsilon=200.0, bounds=BOUNDS, random_state=0
    ).fit(X)
    # scikit-learn >= 1.7 asks for the quantile method; 1.6 has only "linear".
    method = (
        {"quantile_method": "linear"}
        if "quantile_method" in KBinsDiscretizer().get_params()
        else {}
    )
    exact = KBinsDiscretizer(
        n_bins=4, encode="ordinal", strategy="quantile", **method
    ).fit(X)
    for j in range(2):
        edges = binner.bin_edges_[j]
        assert edges[0] == 0 and edges[-1] == 100 and np.all(np.diff(edges) >= 0)
        # Interior edges within 1 % in rank of the exact quantiles.
        ranks = np.searchsorted(np.sort(X[:, j]), edges[1:-1]) / len(X)
        np.testing.assert_allclose(ranks, [0.25, 0.5, 0.75], atol=0.01)
        np.testing.assert_allclose(edges[1:-1], exact.bin_edges_[j][1:-1], rtol=0.05)
    agreement = (binner.transform(X) == exact.transform(X)).mean()
    assert agreement > 0.97


def test_calibration_of_one_edge():
    # One feature, two bins: the single edge is one exponential-mechanism
    # median at the full epsilon. Over seeded fits, the probability that
    # it falls in the interval between the two middle values matches the
    # exact EM probability (5 binomial standard errors, fixed seeds).
    x = np.array([0.05, 0.2, 0.3, 0.7, 0.8, 0.95])
    epsilon = 3.0
    edges = np.concatenate(([0.0], x, [1.0]))
    lengths = np.diff(edges)
    weights = lengths * np.exp(-epsilon * np.abs(np.arange(7) - 3) / 2)
    p = weights[3] / weights.sum()  # interval [0.3, 0.7], utility 0
    hits, n_fits = 0, 800
    for seed in range(n_fits):
        binner = DPKBinsDiscretizer(
            n_bins=2,
            encode="ordinal",
            epsilon=epsilon,
            bounds=(0, 1),
            random_state=seed,
        ).fit(x[:, None])
        hits += 0.3 <= binner.bin_edges_[0][1] <= 0.7
    assert abs(hits - n_fits * p) <= 5 * math.sqrt(n_fits * p * (1 - p))


def test_event_splits_epsilon_over_features():
    X = _data(200)
    binner = DPKBinsDiscretizer(n_bins=10, epsilon=1.4, bounds=BOUNDS).fit(X)
    # Per feature 0.7 over 9 selections (deciles, independent draws).
    assert binner.privacy_event_.label
    event = binner.privacy_event_
    assert isinstance(event, SelfComposedEvent) and event.count == 2
    assert isinstance(event.event, SelfComposedEvent) and event.event.count == 9
    assert isinstance(event.event.event, ExponentialMechanismEvent)
    assert event.event.event.epsilon == pytest.approx(0.7 / 9)
    assert binner.epsilon_ == pytest.approx(1.4) and binner.delta_ == 0
    mixed = DPKBinsDiscretizer(n_bins=[2, 4], epsilon=1.0, bounds=BOUNDS).fit(X)
    assert isinstance(mixed.privacy_event_, ComposedEvent)
    assert mixed.epsilon_ == pytest.approx(1.0)
    assert [len(e) for e in mixed.bin_edges_] == [3, 5]


def test_budget_charged_once_refusal_leaves_nothing_clone_shares():
    X = _data(300)
    budget = PrivacyBudget(epsilon=1.5)
    binner = DPKBinsDiscretizer(epsilon=1.0, bounds=BOUNDS, budget=budget)
    plan = binner.privacy_plan(X)
    assert len(budget.ledger) == 0  # planning charges nothing
    binner.fit(X)
    assert len(budget.ledger) == 1
    assert budget.ledger[0].event == plan.event.with_label(budget.ledger[0].label)
    twin = clone(binner)
    assert twin.budget is budget
    with pytest.raises(BudgetExceededError):
        twin.fit(X)  # 1.0 more does not fit in what is left
    assert not hasattr(twin, "bin_edges_") and not hasattr(twin, "epsilon_")
    assert len(budget.ledger) == 1


def test_uniform_strategy_reads_only_the_bounds_and_costs_nothing():
    budget = PrivacyBudget(epsilon=1.0)
    a = DPKBinsDiscretizer(n_bins=4, strategy="uniform", bounds=BOUNDS, budget=budget)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a.fit(_data(50, seed=1))
    b = DPKBinsDiscretizer(n_bins=4, strategy="uniform", bounds=BOUNDS).fit(
        _data(900, seed=2)
    )
    for j in range(2):
        np.testing.assert_array_equal(a.bin_edges_[j], [0, 25, 50, 75, 100])
        np.testing.assert_array_equal(a.bin_edges_[j], b.bin_edges_[j])
    assert a.epsilon_ == 0 and a.privacy_event_.with_label("") == ComposedEvent(())
    # The ledger lists the step, at no cost.
    assert len(budget.ledger) == 1 and budget.remaining()[0] == pytest.approx(1.0)


def test_leak_warning_without_bounds_and_none_with_them():
    X = _data(100)
    with pytest.warns(PrivacyLeakWarning, match="bounds was not given"):
        DPKBinsDiscretizer(random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPKBinsDiscretizer(bounds=BOUNDS, random_state=0).fit(X)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"bounds": (5, 1)}, "lower < upper"),
        ({"bounds": ([0, 0, 0], [1, 1, 1])}, "each of the 2 features"),
        ({"n_bins": [3, 1]}, ">= 2"),
        ({"n_bins": [3, 3, 3]}, "one per"),
        ({"epsilon": 1e-12}, "exceed"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"encode": "binary"}, "encode"),
    ],
)
def test_bad_input_raises_before_the_charge(params, match, monkeypatch):
    budget = PrivacyBudget(epsilon=10.0)

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn before validation")

    monkeypatch.setattr("skdp.utils._random.RandomSource.words", no_noise)
    base = {"bounds": BOUNDS, "budget": budget}
    with pytest.raises(ValueError, match=match):
        DPKBinsDiscretizer(**{**base, **params}).fit(_data(20))
    with pytest.raises(ValueError, match="NaN"):
        DPKBinsDiscretizer(**base).fit(np.array([[np.nan, 1.0], [2.0, 3.0]]))
    assert len(budget.ledger) == 0


def test_reproducible_with_a_seed():
    X = _data(500)
    a = DPKBinsDiscretizer(bounds=BOUNDS, random_state=3).fit(X)
    b = DPKBinsDiscretizer(bounds=BOUNDS, random_state=3).fit(X)
    c = DPKBinsDiscretizer(bounds=BOUNDS, random_state=4).fit(X)
    for j in range(2):
        np.testing.assert_array_equal(a.bin_edges_[j], b.bin_edges_[j])
    assert not np.array_equal(a.bin_edges_[0], c.bin_edges_[0])


def test_encodings_clipping_and_inverse():
    X = _data(400)
    binner = DPKBinsDiscretizer(n_bins=3, bounds=BOUNDS, random_state=0).fit(X)
    onehot = binner.transform(X)
    assert sparse.issparse(onehot) and onehot.shape == (400, 6)
    np.testing.assert_array_equal(onehot.sum(axis=1), 2)
    ordinal = clone(binner).set_params(encode="ordinal").fit(X)
    codes = ordinal.transform([[-50.0, 1e9]])  # outside the bounds: end bins
    np.testing.assert_array_equal(codes, [[0, 2]])
    dense = clone(binner).set_params(encode="onehot-dense", dtype=np.float32).fit(X)
    out = dense.transform(X[:5])
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    centres = ordinal.inverse_transform(ordinal.transform(X[:5]))
    for j in range(2):
        edges = ordinal.bin_edges_[j]
        assert np.all(np.isin(centres[:, j], (edges[1:] + edges[:-1]) / 2))


def test_feature_names_pandas_and_column_transformer():
    df = pd.DataFrame(_data(300), columns=["age", "hours"])
    binner = DPKBinsDiscretizer(
        n_bins=3, encode="onehot-dense", bounds=BOUNDS, random_state=0
    ).set_output(transform="pandas")
    out = binner.fit_transform(df)
    assert list(out.columns) == [
        "age_0.0", "age_1.0", "age_2.0", "hours_0.0", "hours_1.0", "hours_2.0"
    ]  # fmt: skip
    ordinal = DPKBinsDiscretizer(encode="ordinal", bounds=BOUNDS, random_state=0)
    assert list(ordinal.fit(df).get_feature_names_out()) == ["age", "hours"]
    ct = ColumnTransformer(
        [
            (
                "bins",
                DPKBinsDiscretizer(n_bins=2, bounds=(0, 100), random_state=0),
                ["age"],
            )
        ]
    )
    assert ct.fit_transform(df).shape == (300, 2)


# ------------------------------------------------- one data path: dask input
@pytest.mark.parametrize("encode", ["ordinal", "onehot"])
def test_a_uniform_dask_fit_releases_the_in_memory_binner(
    encode, dask_sync, assert_same_fit
):
    # "uniform" reads nothing but the validation pass: the edges come from
    # the bounds, the (empty) event is the same.
    X = _data(5000)
    params = dict(n_bins=[3, 7], strategy="uniform", encode=encode, bounds=BOUNDS)
    memory = DPKBinsDiscretizer(**params).fit(X)
    on_dask = DPKBinsDiscretizer(**params).fit(dask_rows(X, columns=1))
    assert_same_fit(memory, on_dask)
    got, want = on_dask.transform(X[:50]), memory.transform(X[:50])
    if encode == "onehot":
        got, want = got.toarray(), want.toarray()
    np.testing.assert_array_equal(got, want)


def test_a_dask_dataframe_fit_releases_the_pandas_binner(dask_sync, assert_same_fit):
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(_data(5000), columns=["age", "hours"])
    params = dict(n_bins=4, strategy="uniform", bounds=BOUNDS)
    memory = DPKBinsDiscretizer(**params).fit(frame)
    on_dask = DPKBinsDiscretizer(**params).fit(dd.from_pandas(frame, npartitions=3))
    assert_same_fit(memory, on_dask)


@pytest.mark.parametrize("case", ["NaN", "infinity", "text"])
def test_dask_input_is_refused_like_memory_input(case, dask_sync, assert_same_refusal):
    X = _data(5000).astype(object if case == "text" else float)
    X[4321, 1] = {"NaN": np.nan, "infinity": np.inf, "text": "x"}[case]

    def fit(data, budget):
        DPKBinsDiscretizer(strategy="uniform", bounds=BOUNDS, budget=budget).fit(data)

    assert_same_refusal(fit, X, dask_rows(X, columns=1))


def test_quantile_edges_refuse_dask_input_and_say_why(dask_sync):
    # The exponential mechanism draws among the gaps of each sorted column:
    # no sum over row blocks gives them, so dask input is refused before
    # anything is read or charged.
    budget = PrivacyBudget(10.0)
    with pytest.raises(TypeError, match="sorted values.*strategy='uniform'"):
        DPKBinsDiscretizer(bounds=BOUNDS, budget=budget).fit(
            dask_rows(_data(5000), columns=1)
        )
    assert budget.ledger == []


def test_a_dask_fit_never_gathers_the_rows(dask_sync, largest_task_rows):
    with largest_task_rows() as seen:
        DPKBinsDiscretizer(strategy="uniform", bounds=BOUNDS).fit(
            dask_rows(_data(5000), columns=1)
        )
    assert 0 < seen.rows <= 1024  # a fit that gathered X would show 5000
