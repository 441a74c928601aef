"""One data path: PMWSynthesizer reads a NumPy array, a pandas DataFrame and
a dask array or DataFrame through the same blocks, block functions and
schema, so with the same seed every container gives the same fit, and the
same refusals before the charge."""

import itertools

import numpy as np
import pytest

from skdp.accounting import PrivacyBudget
from skdp.synthesis import PMWSynthesizer

pd = pytest.importorskip("pandas")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

COLUMNS = ["colour", "score", "city", "level"]
COLOURS = ["red", "green", "blue"]
CITIES = ["a", "b", "c"]
LEVELS = [0, 1, 2, 3]
# 3000 rows: three canonical blocks of 1024 rows (the last one shorter).
N_ROWS = 3000


def _frame(n=N_ROWS, seed=0):
    rng = np.random.default_rng(seed)
    colour = rng.integers(0, 3, size=n)
    level = (colour + (rng.uniform(size=n) < 0.3)) % 4  # a dependence to find
    return pd.DataFrame(
        {
            "colour": pd.Categorical.from_codes(colour, categories=COLOURS),
            "score": rng.normal(size=n) + level,
            "city": pd.Series(rng.choice(CITIES, size=n), dtype=object),
            "level": pd.Series(level, dtype=object),
        }
    )


def _array(frame):
    """The same table as a NumPy object array (columns by position)."""
    return frame.astype(object).to_numpy()


def _params(array):
    """The same public schema, by position (arrays) or by name (frames)."""
    if array:
        return {
            "categories": [COLOURS, None, CITIES, LEVELS],
            "bounds": [None, (-3.0, 6.0), None, None],
        }
    return {
        "categories": {"city": CITIES, "level": LEVELS},
        "bounds": {"score": (-3.0, 6.0)},
    }


def _synth(array, **kwargs):
    params = dict(epsilon=3.0, n_rounds=6, n_bins=8, random_state=11)
    params.update(_params(array))
    params.update(kwargs)
    return PMWSynthesizer(**params)


def _dask_frame(frame, npartitions=4):
    # dask turns object columns into text by default; keep the values.
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_pandas(frame, npartitions=npartitions)


def _containers(frame):
    """(name, X, is_array) for every container of the same rows."""
    array = _array(frame)
    return [
        ("numpy", array, True),
        ("pandas", frame, False),
        ("dask array", da.from_array(array, chunks=(700, 2)), True),
        ("dask frame", _dask_frame(frame), False),
    ]


def _fit_all(frame):
    fits = {}
    with dask.config.set(scheduler="synchronous"):
        for name, X, array in _containers(frame):
            fits[name] = _synth(array).fit(X)
    return fits


def _rows(sample):
    """Sampled rows as lists of Python values, missing ones (None, or NaN,
    which pandas makes of None in a text column) as one marker."""
    rows = np.asarray(sample.astype(object) if hasattr(sample, "iloc") else sample)
    return [["missing" if v is None or v != v else v for v in r] for r in rows.tolist()]


def _assert_same_fit(reference, other):
    assert other.selected_ == reference.selected_
    assert other.privacy_event_ == reference.privacy_event_
    positions = range(len(COLUMNS))
    for r in (1, 2, 3):
        for clique in itertools.combinations(positions, r):
            np.testing.assert_array_equal(
                other.model_.marginal(clique), reference.model_.marginal(clique)
            )
    assert _rows(other.sample(200)) == _rows(reference.sample(200))


def test_every_container_gives_the_same_fit_and_samples():
    fits = _fit_all(_frame())
    reference = fits["numpy"]
    assert len(reference.selected_) > 0
    for name in ("pandas", "dask array", "dask frame"):
        _assert_same_fit(reference, fits[name])
    # The outputs keep each input's format.
    assert isinstance(fits["pandas"].sample(3), pd.DataFrame)
    assert isinstance(fits["dask frame"].sample(3), pd.DataFrame)
    assert list(fits["dask frame"].feature_names_in_) == COLUMNS
    assert fits["dask array"].sample(3).dtype == object


def test_declared_missing_values_take_the_same_path():
    frame = _frame(seed=1)
    frame["score"] = frame["score"].where(frame.index % 7 != 3)  # NaN
    frame.loc[frame.index % 11 == 5, "city"] = None
    fits = {}
    with dask.config.set(scheduler="synchronous"):
        for name, X, array in _containers(frame):
            fits[name] = _synth(array, missing_values="category").fit(X)
    for name in ("pandas", "dask array", "dask frame"):
        _assert_same_fit(fits["numpy"], fits[name])
    assert fits["numpy"].domains_[2].size == len(CITIES) + 1


def _break(frame, problem):
    frame = frame.copy()
    frame["score"] = frame["score"].astype(object)
    frame["city"] = frame["city"].astype(object)
    row = 2500  # in the third block
    if problem == "missing number":
        frame.at[row, "score"] = np.nan
    elif problem == "missing category":
        frame.at[row, "city"] = None
    elif problem == "infinity":
        frame.at[row, "score"] = np.inf
    elif problem == "text":
        frame.at[row, "score"] = "twelve"
    elif problem == "unhashable":
        frame.at[row, "city"] = ["a"]
    return frame


@pytest.mark.parametrize(
    "problem, error, match",
    [
        ("missing number", ValueError, "holds missing values"),
        ("missing category", ValueError, "holds missing values"),
        ("infinity", ValueError, "infinite values"),
        ("text", ValueError, "not numbers"),
        ("unhashable", TypeError, "cannot be looked up"),
        ("no rows", ValueError, "0 sample"),
    ],
)
def test_refusals_are_the_same_in_memory_and_on_dask(problem, error, match):
    frame = _frame().iloc[:0] if problem == "no rows" else _break(_frame(), problem)
    messages = {}
    with dask.config.set(scheduler="synchronous"):
        for name, X, array in _containers(frame):
            budget = PrivacyBudget(10.0, 1e-3)
            synth = _synth(array, budget=budget)
            with pytest.raises(error, match=match) as raised:
                synth.fit(X)
            assert budget.ledger == []  # refused before the charge
            assert not hasattr(synth, "model_")
            messages[name] = str(raised.value)
    # Columns are named by position in arrays, by name in frames.
    assert messages["dask array"] == messages["numpy"]
    assert messages["dask frame"] == messages["pandas"]


@pytest.mark.slow
def test_a_distributed_cluster_gives_the_same_fit_and_samples(dask_cluster):
    frame = _frame(seed=2)
    reference = _synth(True).fit(_array(frame))
    for X, array in [
        (da.from_array(_array(frame), chunks=(900, 4)), True),
        (_dask_frame(frame, npartitions=5), False),
    ]:
        _assert_same_fit(reference, _synth(array).fit(X))
