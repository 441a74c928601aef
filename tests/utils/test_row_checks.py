"""The checks before a charge: one pass, the same facts in memory and on dask."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from skdp.utils._row_checks import FactsRequest, check_finite, fit_rows, read_facts
from skdp.utils._row_source import row_source


def _data(n=5000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 4, size=n)
    X[17, 0], X[4000, 2], X[4001, 2] = np.nan, np.inf, -np.inf
    return X, y


def _norms(X):
    return np.sqrt(np.einsum("ij,ij->i", X, X))


REQUEST = FactsRequest(
    extremes=True, row_norm=_norms, classes=np.array([0, 1, 2]), labels=True
)


def test_one_pass_finds_the_facts_numpy_finds():
    X, y = _data()
    facts = read_facts(row_source(X, y), REQUEST)
    assert (facts.x_nan, facts.x_inf, facts.y_nan, facts.y_inf) == (1, 2, 0, 0)
    finite = np.where(np.isfinite(X), X, np.nan)
    np.testing.assert_array_equal(facts.low, np.nanmin(finite, axis=0))
    np.testing.assert_array_equal(facts.high, np.nanmax(finite, axis=0))
    np.testing.assert_array_equal(facts.labels, [0, 1, 2, 3])
    assert facts.outside == np.count_nonzero(y == 3)
    finite_rows = np.nan_to_num(X, nan=0.0, posinf=0.0, neginf=0.0)
    norm = read_facts(row_source(finite_rows), REQUEST).row_norm
    # The largest of the blocks' largest norms: one rounding per norm.
    np.testing.assert_allclose(norm, np.linalg.norm(finite_rows, axis=1).max(), 1e-15)


def test_dask_blocks_give_the_same_facts(dask_sync):
    da = pytest.importorskip("dask.array")
    X, y = _data()
    memory = read_facts(row_source(X, y), REQUEST)
    on_dask = read_facts(
        row_source(da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=900)),
        REQUEST,
    )
    for name in ("x_nan", "x_inf", "y_nan", "y_inf", "outside"):
        assert getattr(on_dask, name) == getattr(memory, name)
    for name in ("low", "high", "labels"):
        np.testing.assert_array_equal(getattr(on_dask, name), getattr(memory, name))


class _Model(BaseEstimator):
    pass


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_values_get_scikit_learns_own_message(value):
    X = np.zeros((5, 2))
    X[3, 1] = value
    with pytest.raises(ValueError) as expected:
        validate_data(_Model(), X)  # what scikit-learn says in memory
    facts = read_facts(row_source(X))
    with pytest.raises(ValueError) as got:
        check_finite(facts, "_Model")
    assert str(got.value) == str(expected.value)


def test_a_dask_dataframe_gives_its_columns_as_feature_names(dask_sync):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.zeros((3000, 2)), columns=["age", "hours"])
    in_memory, on_dask = _Model(), _Model()
    fit_rows(in_memory, frame)
    rows = fit_rows(on_dask, dd.from_pandas(frame, npartitions=3))
    assert rows.is_dask and rows.n_samples == 3000
    assert on_dask.n_features_in_ == in_memory.n_features_in_ == 2
    np.testing.assert_array_equal(on_dask.feature_names_in_, ["age", "hours"])


def _dated(n=3000):
    X = np.zeros((n, 2), dtype=object)
    X[2500, 1] = np.datetime64("2024-01-02")  # numpy reads it as 19724 days
    return X


@pytest.mark.parametrize(
    "make", [lambda: np.zeros((3000, 2)).astype("datetime64[s]"), _dated]
)
def test_dates_are_refused_in_memory_and_on_dask_alike(dask_sync, make):
    da = pytest.importorskip("dask.array")
    X = make()
    with pytest.raises(ValueError, match="dates or durations") as in_memory:
        read_facts(fit_rows(_Model(), X))
    with pytest.raises(ValueError, match="dates or durations") as on_dask:
        read_facts(fit_rows(_Model(), da.from_array(X, chunks=(1000, 2))))
    assert str(on_dask.value) == str(in_memory.value)


def test_a_dask_dataframe_column_of_dates_is_named(dask_sync):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.zeros(10), "when": pd.date_range("2024", periods=10)})
    with pytest.raises(ValueError, match="column 'when' holds dates"):
        fit_rows(_Model(), dd.from_pandas(frame, npartitions=2))


@pytest.mark.parametrize(
    "cell, found", [(np.datetime64("2024-01-02"), "dates"), (b"3", "bytes")]
)
def test_a_block_of_dates_or_bytes_is_a_fact_the_client_words(cell, found):
    # The block function used to raise in the worker task (a failed task on
    # a cluster, logged there); it returns what it found instead.
    from skdp.utils._row_checks import _block_facts

    X = np.zeros((1024, 2), dtype=object)
    X[700, 1] = cell
    facts = _block_facts(X, None, FactsRequest(extremes=True, row_norm=_norms))
    assert facts[-1] == found
    with pytest.raises(ValueError, match="X holds (dates|bytes)") as refused:
        read_facts(row_source(np.concatenate([np.zeros((2048, 2)), X])))
    with pytest.raises(ValueError) as direct:
        fit_rows(_Model(), X)  # scikit-learn's path in memory refuses alike
    assert str(refused.value) == str(direct.value)
