"""skdp.tools on dask collections (skdp/tools/_dask_rows.py).

The exact statistic is a map-reduce of row-block sums and the noise is the
numpy path's, drawn in the client from the same plan: with the same seed a
dask input gives the numpy answer (the noise calibration itself is tested
on the numpy path, tests/tools/test_statistics.py).
"""

import warnings

import numpy as np
import pytest

from skdp import tools
from skdp.accounting import PrivacyBudget
from skdp.exceptions import PrivacyLeakWarning
from skdp.tools import _statistics

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _data():
    return np.random.default_rng(0).normal(size=(500, 3)) * 2


@pytest.mark.parametrize("name", ["mean", "sum", "var", "std"])
@pytest.mark.parametrize("axis", [None, 0])
def test_moments_of_a_chunked_array_equal_the_numpy_release(name, axis):
    x = _data()
    tool = getattr(tools, name)
    kwargs = dict(axis=axis, epsilon=50.0, bounds=(-3, [3, 4, 5]), random_state=1)
    expected = tool(x, **kwargs)
    got = tool(da.from_array(x, chunks=(90, 2)), **kwargs)
    # The exact value is summed in another order (and the variance about the
    # bounds' midpoint): equal to rounding, far below the noise (~1e-2).
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    assert np.shape(got) == np.shape(expected)


def test_one_dimensional_and_dataframe_input():
    x = _data()
    one = tools.mean(x[:, 0], epsilon=5.0, bounds=(-3, 3), random_state=2)
    got = tools.mean(da.from_array(x[:, 0], chunks=70), bounds=(-3, 3),
                     epsilon=5.0, random_state=2)  # fmt: skip
    assert isinstance(got, float)
    np.testing.assert_allclose(got, one, rtol=1e-12)
    frame = dd.from_pandas(pd.DataFrame(x, columns=list("abc")), npartitions=4)
    np.testing.assert_allclose(
        tools.var(frame, axis=0, bounds=(-3, 3), random_state=3),
        tools.var(x, axis=0, bounds=(-3, 3), random_state=3),
        rtol=1e-9,
    )


def test_counts_and_histograms_equal_the_numpy_release():
    x = _data()
    dx = da.from_array(x, chunks=(90, 3))
    for axis in (None, 0):
        assert np.array_equal(
            tools.count(dx > 0.5, axis=axis, random_state=4),
            tools.count(x > 0.5, axis=axis, random_state=4),
        )
    hist, edges = tools.histogram(dx[:, 0], bins=5, range=(-4, 4), random_state=5)
    expected, expected_edges = tools.histogram(
        x[:, 0], bins=5, range=(-4, 4), random_state=5
    )
    np.testing.assert_array_equal(hist, expected)
    np.testing.assert_array_equal(edges, expected_edges)
    bins = [np.array([-9, 0, 9]), 3, 4]
    ranges = [None, (-4, 4), (-2, 2)]  # edges need no range
    got, _ = tools.histogramdd(dx, bins=bins, range=ranges, random_state=6)
    want, _ = tools.histogramdd(x, bins=bins, range=ranges, random_state=6)
    np.testing.assert_array_equal(got, want)


def test_unknown_chunk_sizes_are_computed_before_the_charge():
    x = _data()
    dx = da.from_array(x, chunks=(90, 3))
    kept = dx[dx[:, 0] > -100]  # every row, chunk sizes unknown
    assert np.isnan(kept.shape[0])
    np.testing.assert_allclose(
        tools.sum(kept, bounds=(-3, 3), random_state=7),
        tools.sum(x, bounds=(-3, 3), random_state=7),
        rtol=1e-9,
    )


def test_one_charge_and_the_exact_pass_after_it(monkeypatch):
    budget = PrivacyBudget(10.0)
    seen = []
    exact = _statistics.exact_moments

    def spy(*args):
        seen.append(len(budget.ledger))
        return exact(*args)

    monkeypatch.setattr(_statistics, "exact_moments", spy)
    tools.mean(da.from_array(_data(), chunks=100), bounds=(-3, 3), budget=budget)
    assert seen == [1] and len(budget.ledger) == 1


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda x, b: tools.mean(x, bounds=(-3, 3), budget=b), ValueError, "finite"),
        (lambda x, b: tools.mean(x, budget=b), ValueError, "needs declared bounds"),
        (
            lambda x, b: tools.histogram(x[:, 0], bins=4, budget=b),
            ValueError,
            "declared ranges",
        ),
        (
            lambda x, b: tools.quantile(x, 0.5, bounds=(-3, 3), budget=b),
            TypeError,
            "dask",
        ),
        (
            lambda x, b: tools.median(x[:, 0], bounds=(-3, 3), budget=b),
            TypeError,
            "dask",
        ),
        (
            lambda x, b: tools.mean(x.astype(object), bounds=(0, 1), budget=b),
            ValueError,
            "numeric",
        ),
        (
            lambda x, b: tools.count(x, axis=1, budget=b),
            ValueError,
            "axis=None or axis=0",
        ),
    ],
)
def test_bad_input_is_refused_before_the_charge(call, error, match):
    budget = PrivacyBudget(10.0)
    x = _data()
    x[123, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing is read
        with pytest.raises(error, match=match):
            call(da.from_array(x, chunks=(90, 3)), budget)
    assert len(budget.ledger) == 0


def test_a_distributed_client_gives_the_same_release():
    distributed = pytest.importorskip("distributed")
    x = _data()
    with (
        distributed.LocalCluster(
            n_workers=2, processes=False, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster),
    ):
        got = tools.std(da.from_array(x, chunks=80), axis=0, bounds=(-4, 4),
                        random_state=8)  # fmt: skip
        hist, _ = tools.histogram(da.from_array(x[:, 1], chunks=80), bins=3,
                                  range=(-3, 3), random_state=9)  # fmt: skip
    np.testing.assert_allclose(
        got, tools.std(x, axis=0, bounds=(-4, 4), random_state=8), rtol=1e-9
    )
    np.testing.assert_array_equal(
        hist, tools.histogram(x[:, 1], bins=3, range=(-3, 3), random_state=9)[0]
    )
