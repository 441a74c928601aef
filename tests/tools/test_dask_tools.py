"""skdp.tools on dask collections: the one data path (issue 27).

Every tool reads its rows through a row source (skdp/utils/_row_source.py):
the same block functions over the same canonical blocks, added by the same
tree, in memory and on dask, and the noise drawn in the client from the
same plan. With the same seed a dask input therefore gives *bitwise* the
numpy answer (the noise calibration itself is tested on the numpy path,
tests/tools/test_statistics.py).
"""

import warnings

import numpy as np
import pytest
from _data import dask_rows

from skdp import tools
from skdp.accounting import PrivacyBudget
from skdp.exceptions import PrivacyLeakWarning
from skdp.tools import _moments

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")

N = 5000  # five canonical blocks of 1024 rows: the tree adds several


pytestmark = pytest.mark.usefixtures("dask_sync")


def _data(n=N):
    return np.random.default_rng(0).normal(size=(n, 3)) * 2


@pytest.mark.parametrize("name", ["mean", "sum", "var", "std"])
@pytest.mark.parametrize("axis", [None, 0])
def test_moments_of_a_chunked_array_equal_the_numpy_release(name, axis):
    x = _data()
    tool = getattr(tools, name)
    kwargs = dict(axis=axis, epsilon=50.0, bounds=(-3, [3, 4, 5]), random_state=1)
    expected = tool(x, **kwargs)
    got = tool(da.from_array(x, chunks=(700, 2)), **kwargs)
    assert type(got) is type(expected)
    assert np.array_equal(got, expected)


def test_one_dimensional_three_dimensional_and_dataframe_input():
    x = _data()
    one = tools.mean(x[:, 0], epsilon=5.0, bounds=(-3, 3), random_state=2)
    got = tools.mean(dask_rows(x[:, 0]), bounds=(-3, 3), epsilon=5.0, random_state=2)
    assert isinstance(got, float) and got == one
    cube = x.reshape(N, 3, 1) * [1.0, 0.5]
    kwargs = dict(axis=0, bounds=(-3, 3), random_state=4)
    got = tools.var(da.from_array(cube, chunks=(600, 1, 1)), **kwargs)
    assert got.shape == (3, 2) and np.array_equal(got, tools.var(cube, **kwargs))
    frame = dd.from_pandas(pd.DataFrame(x, columns=list("abc")), npartitions=4)
    assert np.array_equal(
        tools.var(frame, axis=0, bounds=(-3, 3), random_state=3),
        tools.var(x, axis=0, bounds=(-3, 3), random_state=3),
    )


def test_counts_and_histograms_equal_the_numpy_release():
    x = _data()
    dx = dask_rows(x)
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
    dx = dask_rows(x)
    kept = dx[dx[:, 0] > -100]  # every row, chunk sizes unknown
    assert np.isnan(kept.shape[0])
    assert tools.sum(kept, bounds=(-3, 3), random_state=7) == tools.sum(
        x, bounds=(-3, 3), random_state=7
    )


def test_one_charge_and_the_exact_pass_after_it(monkeypatch):
    budget = PrivacyBudget(10.0)
    seen = []
    exact = _moments.exact_moments

    def spy(*args):
        seen.append(len(budget.ledger))
        return exact(*args)

    monkeypatch.setattr(_moments, "exact_moments", spy)
    tools.mean(dask_rows(_data()), bounds=(-3, 3), budget=budget)
    assert seen == [1] and len(budget.ledger) == 1


CALLS = {
    "mean": lambda x, b: tools.mean(x, axis=0, bounds=(-3, 3), budget=b),
    "var": lambda x, b: tools.var(x, bounds=(-3, 3), budget=b),
    "count": lambda x, b: tools.count(x, axis=1, budget=b),  # axis refused
    "histogram": lambda x, b: tools.histogram(x[:, 0], 4, (-3, 3), budget=b),
    "histogramdd": lambda x, b: tools.histogramdd(x, 2, [(-3, 3)] * 3, budget=b),
}


def _with_nan(x):
    x = x.copy()
    x[4000, 0] = np.nan
    return x


def _with_text(x):
    x = x.astype(object)
    x[4000, 0] = "forty-two"
    return x


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("bad", [_with_nan, _with_text])
def test_dask_input_is_refused_as_numpy_input_with_the_same_message(
    name, bad, assert_same_refusal
):
    x = bad(_data())
    kind, message = assert_same_refusal(CALLS[name], x, dask_rows(x))
    assert kind is ValueError and message


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda x, b: tools.mean(x, budget=b), ValueError, "needs declared bounds"),
        (
            lambda x, b: tools.histogram(x[:, 0], bins=4, budget=b),
            ValueError,
            "declared ranges",
        ),
        (
            lambda x, b: tools.quantile(x, 0.5, bounds=(-3, 3), budget=b),
            TypeError,
            "sorted values",
        ),
        (
            lambda x, b: tools.median(x[:, 0], bounds=(-3, 3), budget=b),
            TypeError,
            "sorted values",
        ),
    ],
)
def test_what_dask_input_never_does_is_refused_before_the_charge(call, error, match):
    budget = PrivacyBudget(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing is read
        with pytest.raises(error, match=match):
            call(dask_rows(_data()), budget)
    assert len(budget.ledger) == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda x: tools.std(x, axis=0, bounds=(-4, 4), random_state=8),
        lambda x: tools.count(x > 1, axis=0, random_state=8),
        lambda x: tools.histogramdd(x[:, :2], 3, [(-3, 3)] * 2, random_state=8),
    ],
)
def test_no_task_ever_holds_all_the_rows(call, largest_task_rows):
    x = _data()
    with largest_task_rows() as seen:
        call(dask_rows(x))
    # The blocks: the input's 700-row chunks and the canonical 1024-row blocks.
    assert 0 < seen.rows <= 1024 < N


@pytest.mark.parametrize(
    "release",
    [
        lambda a: tools.var(a, axis=0, bounds=(0, 1)),
        lambda a: tools.mean(a, bounds=(0, 1)),
        lambda a: tools.count(a, axis=0),
        lambda a: tools.histogramdd(a[:, :3], 4, [(0, 1)] * 3),
    ],
)
def test_numpy_input_is_never_copied(release, copies_of_x):
    # Clipping and counting happen block by block (np.clip of the whole
    # array made one copy, the finiteness check another).
    x = np.random.default_rng(3).uniform(size=(100_000, 10))
    assert copies_of_x(release, x) < 0.5
