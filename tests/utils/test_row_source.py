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


def _clipped_sum(X, y, scale):
    # A BLAS product over the chunk: rounding that depends on the whole
    # array, which memory and dask must hand over alike.
    weights = np.minimum(1.0, scale / np.maximum(np.abs(y), 1e-300))
    return X.T @ (weights * y)


@pytest.mark.parametrize("rate", [0.0, 0.001, 0.05, 0.9])
def test_subsample_sums_are_the_same_in_memory_and_on_dask(rate, monkeypatch):
    import skdp.utils._row_source as module

    monkeypatch.setattr(module, "SUBSAMPLE_CALL_ROWS", 5000)  # several chunks
    X, y = _data(n=20000)
    chosen = np.flatnonzero(np.random.default_rng(1).random(20000) < rate)
    memory = row_source(X, y).subsample_sum(_clipped_sum, chosen, 0.5)
    # By the definition: chunks of 5000 selected rows, the canonical tree.
    chunks = [chosen[i : i + 5000] for i in range(0, max(chosen.size, 1), 5000)]
    expected = tree_sum([_clipped_sum(X[c], y[c], 0.5) for c in chunks])
    assert np.array_equal(memory, expected)
    da = pytest.importorskip("dask.array")
    import dask

    with dask.config.set(scheduler="synchronous"):
        on_dask = row_source(
            da.from_array(X, chunks=(3000, 3)), da.from_array(y, chunks=3000)
        ).subsample_sum(_clipped_sum, chosen, 0.5)
    assert np.array_equal(on_dask, memory)
    if rate == 0.0:
        assert np.array_equal(memory, np.zeros(3))


def test_subsample_sum_hands_the_chunk_its_rows_in_order():
    X = np.arange(5000.0)[:, None] * np.ones((1, 2))
    seen = []

    def record(X_rows, y_rows):
        seen.append(X_rows[:, 0].tolist())
        return np.zeros(1)

    chosen = np.array([3, 1023, 1024, 4999])
    row_source(X).subsample_sum(record, chosen)
    assert seen == [[3.0, 1023.0, 1024.0, 4999.0]]
