"""The row source: the same block sums, bitwise, in memory and on dask."""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp.utils._row_source import (
    MIN_BLOCK_ROWS,
    canonical_block_rows,
    row_source,
    tree_sum,
)


def _moments(X, y):
    return X.sum(axis=0), (X * X).sum(axis=0), np.int64(X.shape[0])


def _data(n=5000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * 10.0 ** rng.integers(
        -8, 8, size=(n, 1)
    ), rng.normal(size=n)


def test_blocks_are_canonical_and_the_tree_adds_them():
    X, y = _data()
    rows = row_source(X, y)
    assert rows.block_rows == canonical_block_rows(5000) == MIN_BLOCK_ROWS
    assert rows.n_blocks == 5
    blocks = [X[i : i + 1024] for i in range(0, 5000, 1024)]
    expected = tree_sum([_moments(b, None) for b in blocks])
    total = rows.block_sum(_moments)
    for got, want in zip(total, expected, strict=True):
        assert np.array_equal(got, want)
    assert total[2] == 5000 and total[2].dtype.kind == "i"  # counts stay exact
    # The exact sum (fsum), for the tolerance: a sum of 5000 terms.
    exact = (
        np.array([np.math.fsum(X[:, j]) for j in range(3)])
        if hasattr(np, "math")
        else None
    )
    if exact is not None:
        np.testing.assert_allclose(total[0], exact, rtol=1e-12, atol=1e-12)


def test_a_fortran_ordered_array_gives_the_same_sums():
    X, y = _data()
    a = row_source(X).block_sum(_moments)
    b = row_source(np.asfortranarray(X)).block_sum(_moments)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))


def test_sparse_rows_are_read_as_csr_blocks():
    X, _ = _data()
    X[np.abs(X) < 1] = 0.0
    seen = []

    def kind(block, _):
        seen.append(type(block).__name__)
        return np.asarray(block.sum(axis=0)).ravel()

    total = row_source(sp.csc_matrix(X)).block_sum(kind)
    assert set(seen) == {"csr_matrix"}
    np.testing.assert_allclose(total, X.sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("chunks", [700, 5000, 1024])
def test_dask_block_sums_equal_memory_bitwise(chunks):
    da = pytest.importorskip("dask.array")
    import dask

    X, y = _data()
    memory = row_source(X, y).block_sum(_moments)
    with dask.config.set(scheduler="synchronous"):
        rows = row_source(
            da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks)
        )
        assert rows.is_dask and rows.block_rows == 1024
        on_dask = rows.block_sum(_moments)
    for got, want in zip(on_dask, memory, strict=True):
        assert np.array_equal(got, want)


def test_dask_dataframes_are_read_as_row_blocks():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dask

    X, y = _data(n=3000)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=4)
    with dask.config.set(scheduler="synchronous"):
        on_dask = row_source(frame).block_sum(_moments)
    memory = row_source(X).block_sum(_moments)
    assert all(np.array_equal(u, v) for u, v in zip(on_dask, memory, strict=True))


def test_a_dask_source_never_hands_its_rows_to_the_client():
    da = pytest.importorskip("dask.array")
    rows = row_source(da.zeros((10, 2), chunks=5))
    with pytest.raises(TypeError, match="client"):
        rows.rows()


def test_the_stacked_tree_is_the_tree_bitwise():
    from skdp.utils._row_source import tree_sum_stacked

    rng = np.random.default_rng(3)
    for n_parts in (1, 2, 7, 8, 9, 64, 65, 1000):
        parts = rng.normal(size=(n_parts, 2, 3)) * 10.0 ** rng.integers(
            -8, 8, size=(n_parts, 1, 1)
        )
        assert np.array_equal(tree_sum_stacked(parts), tree_sum(list(parts)))


def _run_sums(X, y, starts, scale):
    # Row-wise: a row's term depends on that row; a run's terms are added
    # one row after another.
    terms = X * (scale * y)[:, None]
    lengths = np.diff(np.r_[starts, len(X)])
    out = terms[starts].copy()
    for j in range(1, int(lengths.max(initial=0))):
        longer = np.flatnonzero(lengths > j)
        out[longer] += terms[starts[longer] + j]
    return out


def _reference(X, y, chosen, block_rows, scale):
    """The subsample's sum by the definition: one run per block, the tree."""
    parts = []
    for start in range(0, len(X), block_rows):
        mine = chosen[(chosen >= start) & (chosen < start + block_rows)]
        if mine.size:
            parts.append(_run_sums(X[mine], y[mine], np.array([0]), scale)[0])
        else:
            parts.append(np.zeros(X.shape[1]))
    return tree_sum(parts)


@pytest.mark.parametrize("rate", [0.0, 0.001, 0.05, 0.9])
def test_subsample_sums_are_the_same_in_memory_and_on_dask(rate):
    X, y = _data(n=20000)
    chosen = np.flatnonzero(np.random.default_rng(1).random(20000) < rate)
    rows = row_source(X, y)
    memory = rows.subsample_sum(_run_sums, chosen, 0.5, shape=(3,))
    # 20000 rows in 20 blocks; every call takes whole runs, SUBSAMPLE_CALL_ROWS
    # rows at most, and the result is that of one run per block.
    assert np.array_equal(memory, _reference(X, y, chosen, rows.block_rows, 0.5))
    da = pytest.importorskip("dask.array")
    import dask

    with dask.config.set(scheduler="synchronous"):
        on_dask = row_source(
            da.from_array(X, chunks=(3000, 3)), da.from_array(y, chunks=3000)
        ).subsample_sum(_run_sums, chosen, 0.5, shape=(3,))
    assert np.array_equal(on_dask, memory)
    if rate == 0.0:
        assert np.array_equal(memory, np.zeros(3))


def test_subsample_sum_hands_blocks_their_own_rows():
    X = np.arange(5000.0)[:, None] * np.ones((1, 2))
    seen = []

    def record(X_rows, y_rows, starts):
        seen.append((X_rows[:, 0].tolist(), starts.tolist()))
        return np.zeros((len(starts), 1))

    chosen = np.array([3, 1023, 1024, 4999])
    row_source(X).subsample_sum(record, chosen, shape=(1,))
    # One call (few rows): blocks 0, 1 and 4 as three runs.
    assert seen == [([3.0, 1023.0, 1024.0, 4999.0], [0, 2, 3])]
