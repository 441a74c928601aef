"""The row source: the same block sums, bitwise, in memory and on dask."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from skdp.utils._row_source import (
    MIN_BLOCK_ROWS,
    canonical_block_rows,
    row_source,
    tree_sum,
)
from skdp.utils._threads import one_blas_thread


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


def _extremes(X, y):
    return X.min(axis=0), X.max(axis=0)


def _widest(*parts):
    return (
        np.minimum.reduce([p[0] for p in parts]),
        np.maximum.reduce([p[1] for p in parts]),
    )


def test_block_reduce_combines_by_the_same_tree_in_memory_and_on_dask():
    da = pytest.importorskip("dask.array")
    import dask

    X, _ = _data()
    low, high = row_source(X).block_reduce(_extremes, _widest)
    assert np.array_equal(low, X.min(axis=0)) and np.array_equal(high, X.max(axis=0))
    with dask.config.set(scheduler="synchronous"):
        on_dask = row_source(da.from_array(X, chunks=(700, 3))).block_reduce(
            _extremes, _widest
        )
    assert all(np.array_equal(u, v) for u, v in zip(on_dask, (low, high), strict=True))


def _row_sums(X, y):
    return X.sum(axis=1)


def test_map_rows_is_an_array_in_memory_and_a_lazy_dask_array_on_dask():
    da = pytest.importorskip("dask.array")
    import dask

    X, _ = _data()
    memory = row_source(X).map_rows(_row_sums)
    assert isinstance(memory, np.ndarray) and memory.shape == (5000,)
    np.testing.assert_array_equal(memory, X.sum(axis=1))
    with dask.config.set(scheduler="synchronous"):
        lazy = row_source(da.from_array(X, chunks=(700, 3))).map_rows(_row_sums)
        assert isinstance(lazy, da.Array) and lazy.chunks == ((1024,) * 4 + (904,),)
        assert np.array_equal(lazy.compute(), memory)


def _blas_threads(X, y):
    from threadpoolctl import threadpool_info

    threads = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return max(threads, default=0)


def _largest(*parts):
    return max(parts)


def test_block_functions_run_with_one_blas_thread_in_both_backends():
    # A product's rounding may depend on the BLAS thread count; the blocks
    # all see one thread, so a fit's sums cannot differ between backends.
    da = pytest.importorskip("dask.array")
    import dask

    X, _ = _data()
    assert row_source(X).block_reduce(_blas_threads, _largest) == 1
    with dask.config.set(scheduler="threads"):
        rows = row_source(da.from_array(X, chunks=1024))
        assert rows.block_reduce(_blas_threads, _largest) == 1


def test_a_dask_task_runs_its_blocks_with_one_blas_thread_whatever_its_worker():
    # A worker process started without dask's nanny setting (or a user's
    # own) may run BLAS on many threads: the task that computes a group of
    # blocks takes one thread itself, and gives the setting back after.
    from threadpoolctl import ThreadpoolController

    from skdp.utils._row_source import _call_on_pieces, _group_map, _group_reduce

    X, _ = _data()
    with ThreadpoolController().limit(limits=2, user_api="blas"):
        if _blas_threads(X, None) != 2:
            pytest.skip("this BLAS cannot be set to two threads")
        assert _group_reduce(_blas_threads, _largest, X, None, (), 1024, 8, 1) == [1]
        assert set(_group_map(_blas_threads, X, None, (), 1024)) == {1}
        assert _call_on_pieces(_blas_threads, [(X, None)], ()) == 1
        assert _blas_threads(X, None) == 2


@pytest.mark.slow
def test_fits_and_tools_on_a_local_cluster_equal_memory_bitwise(
    dask_cluster, assert_same_fit
):
    """Two worker processes: block functions, facts and trees are pickled
    to the workers, run there with one BLAS thread each, and only sums come
    back; every estimator and tool releases bitwise the in-memory result."""
    da = pytest.importorskip("dask.array")
    from skdp import tools
    from skdp.cluster import DPKMeans
    from skdp.decomposition import DPPCA
    from skdp.naive_bayes import DPGaussianNB
    from skdp.preprocessing import DPKBinsDiscretizer, DPStandardScaler

    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, size=5000)
    X = rng.normal(loc=y[:, None], size=(5000, 4)) / 3
    dX, dy = da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=700)
    estimators = [
        DPGaussianNB(bounds=(-2, 2), classes=[0, 1, 2], random_state=1),
        DPPCA(2, data_norm=2.0, random_state=2),
        DPKMeans(3, bounds=(-2, 2), max_iter=3, random_state=3),
        DPStandardScaler(bounds=(-2, 2), random_state=4),
        DPKBinsDiscretizer(4, strategy="uniform", bounds=(-2, 2)),
    ]
    for estimator in estimators:
        memory = clone(estimator).fit(X, y)
        on_cluster = clone(estimator).fit(dX, dy)
        assert_same_fit(memory, on_cluster)
    releases = [
        lambda a: tools.mean(a, axis=0, bounds=(-2, 2), random_state=5),
        lambda a: tools.std(a, bounds=(-2, 2), random_state=6),
        lambda a: tools.count(a > 0, axis=0, random_state=7),
        lambda a: tools.histogram(a[:, 0], 6, (-2, 2), random_state=8)[0],
        lambda a: tools.histogramdd(a[:, :2], 3, [(-2, 2)] * 2, random_state=9)[0],
    ]
    for release in releases:
        assert np.array_equal(release(dX), release(X))
    # The workers' BLAS runs one thread (dask's nanny sets it at start), as
    # the one_blas_thread context makes it in this process.
    threads = dask_cluster.run(
        lambda: max(
            pool["num_threads"]
            for pool in __import__("threadpoolctl").threadpool_info()
            if pool["user_api"] == "blas"
        )
    )
    assert set(threads.values()) == {1}


def _tree_by_levels(parts, fan_in):
    # The tree as the module docstring states it: groups of fan_in
    # consecutive values, level by level, each added left to right.
    while len(parts) > 1:
        groups = [parts[i : i + fan_in] for i in range(0, len(parts), fan_in)]
        parts = [np.array(sum(g[1:], np.array(g[0], dtype=np.float64))) for g in groups]
    return parts[0]


@pytest.mark.parametrize("k", [1, 2, 7, 8, 9, 64, 65, 100])
@pytest.mark.parametrize("fan_in", [2, 3, 8])
def test_the_streamed_tree_is_the_tree_of_the_levels(k, fan_in):
    rng = np.random.default_rng(k)
    parts = list(rng.normal(size=(k, 3)) * 10.0 ** rng.integers(-8, 8, size=(k, 1)))
    expected = _tree_by_levels(parts, fan_in)
    got = tree_sum(iter(parts), fan_in)
    assert np.array_equal(got, expected)
    with pytest.raises(ValueError, match="at least 2"):
        tree_sum(parts, 1)


def test_memory_blocks_are_computed_and_added_one_at_a_time():
    X, _ = _data(n=20 * 1024)
    held = []

    def counting(block, _):
        held.append(block.shape[0])
        return np.ones(2, dtype=np.int64)

    total = row_source(X).block_sum(counting, fan_in=2)
    assert total.tolist() == [20, 20] and total.dtype == np.int64
    assert held == [1024] * 20


def test_a_smaller_fan_in_gives_the_same_integer_sums_on_dask():
    da = pytest.importorskip("dask.array")
    import dask

    X = np.random.default_rng(0).integers(0, 5, size=(9000, 3))

    def counts(block, _):
        return np.bincount(block[:, 0] * 5 + block[:, 1], minlength=25)

    memory = row_source(X).block_sum(counts)
    with dask.config.set(scheduler="synchronous"):
        for fan_in in (2, 3):
            got = row_source(da.from_array(X, chunks=(1000, 3))).block_sum(
                counts, fan_in=fan_in
            )
            assert np.array_equal(got, memory) and got.dtype == np.int64


def test_pandas_frames_are_read_as_the_blocks_dask_reads():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dask

    rng = np.random.default_rng(0)
    n = 2500
    frame = pd.DataFrame(
        {
            "a": pd.Categorical(rng.choice(["x", "y"], size=n)),
            "b": rng.integers(0, 9, size=n),
            "c": rng.normal(size=n),
        }
    )

    def blocks(block, _):
        return [block]

    memory = row_source(frame).block_map(blocks)
    assert row_source(frame).dtype == object
    with dask.config.set(scheduler="synchronous"):
        on_dask = row_source(dd.from_pandas(frame, npartitions=3)).block_map(blocks)
    assert len(memory) == len(on_dask) == 3
    for (got,), (want,) in zip(on_dask, memory, strict=True):
        assert got.dtype == want.dtype == object
        assert got.tolist() == want.tolist()
    assert np.concatenate([b for (b,) in memory]).tolist() == frame.to_numpy().tolist()


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
    # BLAS rounds by its thread count: the source runs its blocks on one.
    with one_blas_thread():
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


def _prepare(X, y, scale):
    # Row by row: each row's entries depend on that row alone.
    return X * scale, np.abs(y) + 1.0


def _prepared_sum(X, w, weight):
    return X.T @ (w * weight)


@pytest.mark.parametrize("sparse", [False, True])
def test_prepared_subsamples_are_bitwise_the_subsample_sums(sparse, monkeypatch):
    # Batches of every size: empty, small (many prepared together), and
    # larger than a chunk (several chunks, several preparation groups).
    import skdp.utils._row_source as module

    monkeypatch.setattr(module, "SUBSAMPLE_CALL_ROWS", 700)
    monkeypatch.setattr(module, "PREPARE_ENTRIES", 900)  # groups of 300 rows
    X, y = _data(n=5000)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    rng = np.random.default_rng(3)
    batches = [
        np.flatnonzero(rng.random(5000) < rate)
        for rate in (0.0, 0.01, 0.02, 0.3, 0.0, 0.05, 0.01, 0.2, 0.001)
    ]
    source = row_source(X, y)
    prepared = list(source.prepared_subsamples(_prepare, batches, 0.5))
    assert len(prepared) == len(batches)
    for batch, subsample in zip(batches, prepared, strict=True):
        got = subsample.sum(_prepared_sum, 2.0)
        expected = source.subsample_sum(
            lambda X, y: _prepared_sum(*_prepare(X, y, 0.5), 2.0), batch
        )
        assert np.array_equal(got, expected)
    da = pytest.importorskip("dask.array")
    import dask

    if sparse:
        return
    with dask.config.set(scheduler="synchronous"):
        on_dask = row_source(
            da.from_array(X, chunks=(3000, 3)), da.from_array(y, chunks=3000)
        )
        for batch, subsample in zip(
            batches, on_dask.prepared_subsamples(_prepare, batches, 0.5), strict=True
        ):
            memory = source.subsample_sum(
                lambda X, y: _prepared_sum(*_prepare(X, y, 0.5), 2.0), batch
            )
            assert np.array_equal(subsample.sum(_prepared_sum, 2.0), memory)


def test_prepared_subsamples_prepare_each_group_once_and_hold_one(monkeypatch):
    import skdp.utils._row_source as module

    monkeypatch.setattr(module, "PREPARE_ENTRIES", 300)  # 100 rows of 3 a group
    monkeypatch.setattr(module, "MIN_PREPARE_ROWS", 1)
    X, y = _data(n=1000)
    calls = []

    def prepare(X, y):
        calls.append(X.shape[0])
        return (X,)

    batches = [np.arange(i, 1000, 25) for i in range(10)]  # 40 rows each
    source = row_source(X, y)
    for subsample in source.prepared_subsamples(prepare, batches):
        subsample.sum(lambda X: X.sum(axis=0))
    # Two whole batches per group of at most 100 rows: 5 preparations.
    assert calls == [80] * 5


def test_subsample_sum_hands_the_chunk_its_rows_in_order():
    X = np.arange(5000.0)[:, None] * np.ones((1, 2))
    seen = []

    def record(X_rows, y_rows):
        seen.append(X_rows[:, 0].tolist())
        return np.zeros(1)

    chosen = np.array([3, 1023, 1024, 4999])
    row_source(X).subsample_sum(record, chosen)
    assert seen == [[3.0, 1023.0, 1024.0, 4999.0]]


def test_the_tree_leaves_no_reference_cycle_holding_its_values():
    # A cycle would keep each pass's partial sums alive until the garbage
    # collector runs (a recursive closure did: +23 MB on a 100,000-column fit).
    import gc

    gc.collect()
    gc.disable()
    try:
        for count in (1, 7, 20):
            tree_sum(iter([np.ones(3) for _ in range(count)]), fan_in=3)
        assert gc.collect() == 0
    finally:
        gc.enable()


def _first_row_id(X, y):
    return int(X[0, 0]) if X.shape[0] else -1


def _nest(*parts):
    return tuple(parts)


@pytest.mark.parametrize("fan_in", [2, 3, 8])
@pytest.mark.parametrize("n, chunks", [(5000, 5000), (70_000, 30_000), (9000, 9000)])
def test_dask_groups_of_blocks_make_exactly_the_canonical_tree(n, chunks, fan_in):
    # Each block returns its first row's index and every node nests its
    # inputs, so the result *is* the tree's shape: tasks that hold many
    # blocks (groups) must build the same tree as the in-memory loop.
    da = pytest.importorskip("dask.array")
    import dask

    X = np.arange(n, dtype=float).reshape(-1, 1)
    memory = row_source(X).block_reduce(_first_row_id, _nest, fan_in=fan_in)
    with dask.config.set(scheduler="synchronous"):
        rows = row_source(da.from_array(X, chunks=chunks))
        lazy = rows.block_reduce(_first_row_id, _nest, fan_in=fan_in)
        mapped = rows.block_map(_first_row_id)
        per_row = rows.map_rows(_row_sums).compute()
    assert lazy == memory
    assert mapped == row_source(X).block_map(_first_row_id)
    np.testing.assert_array_equal(per_row, X[:, 0])
    if chunks >= 8 * rows.block_rows:
        assert rows.group_blocks > 1 and len(rows.X.chunks[0]) < rows.n_blocks
