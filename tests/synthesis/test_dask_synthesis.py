"""PMWSynthesizer on dask arrays and DataFrames (skdp/synthesis/_counting.py).

The dask fit counts marginals on the workers with the in-memory fit's block
function and runs the same MWEM loop in the client, so with the same seed it
must give the in-memory model exactly.
"""

import warnings

import numpy as np
import pytest

from skdp.accounting import PrivacyBudget
from skdp.exceptions import PrivacyLeakWarning
from skdp.synthesis import PMWSynthesizer, _counting
from skdp.synthesis._counting import DataMarginals, maximal_cliques
from skdp.utils._row_source import row_source

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")

CATEGORIES = [[0, 1, 2], [0, 1, 2], [0, 1], [0, 1, 2, 3]]


def _codes(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.integers(0, size=n, high=len(c)) for c in CATEGORIES]
    ).astype(np.int64)
    X[:, 1] = (X[:, 0] + (rng.uniform(size=n) < 0.2)) % 3  # a dependence to find
    return X


def _frame(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = _codes(n, seed)
    return pd.DataFrame(
        {
            "a": pd.Categorical.from_codes(X[:, 0], categories=["x", "y", "z"]),
            "b": X[:, 1],
            "c": rng.normal(size=n),
        }
    )


def _synth(**kwargs):
    params = dict(epsilon=4.0, n_rounds=4, random_state=7, categories=CATEGORIES)
    params.update(kwargs)
    return PMWSynthesizer(**params)


def _assert_same_model(a, b, columns):
    assert a.selected_ == b.selected_
    for r in (1, 2):
        for clique in zip(*[columns[i:] for i in range(r)], strict=False):
            np.testing.assert_array_equal(
                a.marginal(list(clique)), b.marginal(list(clique))
            )
    assert a.privacy_event_ == b.privacy_event_
    assert a.epsilon_ == b.epsilon_


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, processes=False, threads_per_worker=1, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


def test_an_array_in_several_chunks_gives_the_in_memory_model_exactly():
    X = _codes()
    expected = _synth().fit(X)
    with dask.config.set(scheduler="synchronous"):
        got = _synth().fit(da.from_array(X, chunks=(50, 2)))
    _assert_same_model(expected, got, [0, 1, 2, 3])
    np.testing.assert_array_equal(expected.sample(30), got.sample(30))
    assert got.n_features_in_ == 4 and not hasattr(got, "feature_names_in_")


def test_a_dataframe_on_a_distributed_cluster_gives_the_in_memory_model(client):
    frame = _frame()
    params = dict(categories={"b": [0, 1, 2]}, bounds={"c": (-3.0, 3.0)}, n_bins=4)
    expected = _synth(**params).fit(frame)
    got = _synth(**params).fit(dd.from_pandas(frame, npartitions=3))
    _assert_same_model(expected, got, ["a", "b", "c"])
    pd.testing.assert_frame_equal(expected.sample(20), got.sample(20))
    assert list(got.feature_names_in_) == ["a", "b", "c"]


def test_a_query_matrix_workload_gives_the_in_memory_model(client):
    X = _codes()[:, :3]
    queries = np.random.default_rng(1).uniform(size=(6, 18))
    params = dict(categories=CATEGORIES[:3], workload=queries)
    expected = _synth(**params).fit(X)
    got = _synth(**params).fit(da.from_array(X, chunks=(70, 3)))
    assert expected.selected_ == got.selected_
    np.testing.assert_array_equal(
        expected.answer_queries(queries), got.answer_queries(queries)
    )


def test_declared_missing_values_are_counted_as_in_memory():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    X[rng.uniform(size=200) < 0.1, 0] = np.nan
    params = dict(categories=None, bounds=(-2, 2), missing_values="category")
    expected = _synth(**params).fit(X)
    with dask.config.set(scheduler="synchronous"):
        got = _synth(**params).fit(da.from_array(X, chunks=60))
    _assert_same_model(expected, got, [0, 1])


def test_the_counting_pass_runs_once_and_after_the_charge(monkeypatch):
    budget = PrivacyBudget(10.0, 1e-3)
    passes = []
    count = _counting.DataMarginals.count

    def spy(self, plan):
        passes.append(len(budget.ledger))  # entries when the data is counted
        return count(self, plan)

    monkeypatch.setattr(_counting.DataMarginals, "count", spy)
    with dask.config.set(scheduler="synchronous"):
        _synth(budget=budget).fit(da.from_array(_codes(), chunks=(50, 4)))
    assert passes == [1]  # one pass, the spend already recorded
    assert len(budget.ledger) == 1


@pytest.mark.parametrize(
    "value, match",
    [(np.nan, "missing values"), (np.inf, "infinite values")],
)
def test_bad_values_are_refused_by_a_pass_before_the_charge(value, match):
    budget = PrivacyBudget(10.0, 1e-3)
    X = np.random.default_rng(0).normal(size=(200, 2))
    X[137, 1] = value  # in the third chunk
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=match):
            _synth(categories=None, bounds=(-2, 2), budget=budget).fit(
                da.from_array(X, chunks=60)
            )
    assert len(budget.ledger) == 0


def test_text_in_a_binned_column_is_refused_before_the_charge():
    budget = PrivacyBudget(10.0, 1e-3)
    frame = pd.DataFrame({"a": ["1.5", "x", "2"] * 20, "b": [0, 1, 2] * 20})
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises(ValueError, match="not numbers"),
    ):
        _synth(categories={"b": [0, 1, 2]}, bounds={"a": (0, 3)}, budget=budget).fit(
            dd.from_pandas(frame, npartitions=2)
        )
    assert len(budget.ledger) == 0


def test_undeclared_domains_are_refused_without_reading_the_data():
    budget = PrivacyBudget(10.0, 1e-3)
    X = da.from_array(np.zeros((100, 3)), chunks=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=r"Columns \[1, 2\] have no declared"):
            PMWSynthesizer(bounds={0: (0, 1)}, budget=budget).fit(X)
    frame = dd.from_pandas(pd.DataFrame({"a": ["u", "v"] * 20}), npartitions=2)
    with pytest.raises(ValueError, match=r"Columns \['a'\] have no declared"):
        PMWSynthesizer(budget=budget).fit(frame)
    assert len(budget.ledger) == 0


def test_too_many_cells_to_count_are_refused_before_the_charge(monkeypatch):
    monkeypatch.setattr(_counting, "MAX_COUNTED_CELLS", 10)
    budget = PrivacyBudget(10.0, 1e-3)
    with pytest.raises(ValueError, match="counts in one pass"):
        _synth(budget=budget).fit(da.from_array(_codes(), chunks=(50, 4)))
    assert len(budget.ledger) == 0


def test_sub_marginals_are_derived_exactly_in_any_axis_order():
    assert maximal_cliques([(0,), (2, 0), (0, 1, 2), (3,)]) == [(0, 1, 2), (3,)]
    X = _codes()
    domains = _synth()._prepare_fit(X)["domains"]
    with dask.config.set(scheduler="synchronous"):
        codes = DataMarginals(row_source(da.from_array(X, chunks=70)), domains)
        codes.count(codes.plan([(0, 1, 3), (2,)]))
    for clique in [(3, 0), (1,), (0, 1, 3), (3, 1, 0), (2,)]:
        shape = [len(CATEGORIES[a]) for a in clique]
        flat = np.ravel_multi_index(tuple(X[:, a] for a in clique), shape)
        expected = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
        np.testing.assert_array_equal(codes.counts(clique), expected)


@pytest.mark.parametrize("container", ["array", "dataframe"])
def test_an_unhashable_value_in_a_declared_column_is_refused_before_the_charge(
    container,
):
    # One list among the cells of a column with declared categories: the
    # in-memory fit refuses it when it encodes (before the charge); the dask
    # fit's validation pass must refuse it too, with the same error, instead
    # of meeting it in the counting pass after the charge.
    frame = pd.DataFrame(
        {"a": pd.Series(["u", "v"] * 30, dtype=object), "b": [0, 1, 2] * 20}
    )
    frame.at[47, "a"] = ["u"]  # in the last of three blocks
    if container == "array":
        categories = [["u", "v"], [0, 1, 2]]
        in_memory = frame.to_numpy()  # object dtype
        collection = da.from_array(in_memory, chunks=(20, 2))
    else:
        categories = {"a": ["u", "v"], "b": [0, 1, 2]}
        in_memory = frame
        # Without this dask stores object columns as strings: the list
        # would arrive as the text "['u']", a mere unknown category.
        with dask.config.set({"dataframe.convert-string": False}):
            collection = dd.from_pandas(frame, npartitions=3)
        assert collection.dtypes["a"].kind == "O"
    with pytest.raises(TypeError, match="Column .* cannot be looked up") as expected:
        _synth(categories=categories).fit(in_memory)
    budget = PrivacyBudget(10.0, 1e-3)
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises(TypeError) as got,
    ):
        _synth(categories=categories, budget=budget).fit(collection)
    assert str(got.value) == str(expected.value)
    assert len(budget.ledger) == 0
