"""Row-block reductions over dask collections (skdp/utils/_dask.py)."""

import numpy as np
import pytest

from skdp.utils._dask import (
    as_row_blocks,
    is_dask_collection,
    sum_over_row_blocks,
    take_rows,
)

da = pytest.importorskip("dask.array")


def _gram(xb, yb):
    return xb.T @ xb, xb.T @ yb, np.float64(len(xb))


def test_sums_over_row_blocks_equal_the_in_memory_sums():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 7))
    y = rng.normal(size=1000)
    dX = da.from_array(X, chunks=(137, 3))  # column chunks are merged
    dy = da.from_array(y, chunks=250)  # y follows X's row chunks
    gram, xty, n = sum_over_row_blocks(_gram, dX, dy, split_every=3)
    np.testing.assert_allclose(gram, X.T @ X)
    np.testing.assert_allclose(xty, X.T @ y)
    assert n == 1000


def test_dask_collections_are_recognised_and_others_are_not():
    X = np.ones((4, 2))
    assert not is_dask_collection(X)
    assert is_dask_collection(da.from_array(X))
    blocks, _ = as_row_blocks(da.from_array(X, chunks=(2, 1)))
    assert blocks.chunks == ((2, 2), (2,))


def test_a_dask_dataframe_becomes_aligned_row_blocks():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) * 2})
    X, y = as_row_blocks(
        dd.from_pandas(frame, npartitions=3), dd.from_pandas(frame["a"], npartitions=2)
    )
    assert X.chunks[0] == y.chunks[0]
    np.testing.assert_allclose(X.compute(), frame.to_numpy())


def test_take_rows_of_every_container_gives_the_same_rows(dask_sync):
    # A dask DataFrame has no positional take (scikit-learn's _safe_indexing
    # failed on it): each partition keeps its own positions, dtypes intact.
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=500),
            "b": pd.Categorical(rng.choice(["x", "y"], size=500)),
        }
    )
    rows = np.sort(rng.choice(500, size=120, replace=False))
    rows[:2] = [0, 1]  # a partition's first rows, and the last row
    rows[-1] = 499
    expected = frame.iloc[rows]
    got = take_rows(dd.from_pandas(frame, npartitions=4), rows)
    assert is_dask_collection(got)
    pd.testing.assert_frame_equal(got.compute(), expected)
    series = take_rows(dd.from_pandas(frame["a"], npartitions=3), rows).compute()
    pd.testing.assert_series_equal(series, expected["a"])
    array = take_rows(da.from_array(frame["a"].to_numpy(), chunks=70), rows)
    np.testing.assert_array_equal(array.compute(), expected["a"].to_numpy())
    pd.testing.assert_frame_equal(take_rows(frame, rows), expected)
