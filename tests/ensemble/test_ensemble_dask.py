"""The tree ensembles on dask arrays and DataFrames: the in-memory model, bitwise.

The bins, counts and gradient sums are block sums over canonical row
blocks (skdp/utils/_row_source.py) and the noise is drawn in the client in
the same order, so a dask fit with the same seed releases exactly the
in-memory model. What the in-memory fit refuses before its charge (labels
outside the declared classes, non-finite targets, text in a numeric
column), the dask fit refuses before its charge too.
"""

import dataclasses

import numpy as np
import pytest

from skdp import PrivacyBudget
from skdp.ensemble import (
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    DPRandomForestClassifier,
    DPRandomForestRegressor,
)

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N = 3000
CATEGORIES = ["a", "b", "c"]


pytestmark = pytest.mark.usefixtures("dask_sync")


def _numeric(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N, 3))
    X[rng.uniform(size=N) < 0.05, 1] = np.nan
    score = X[:, 0] + 0.5 * X[:, 2]
    return X, np.digitize(score, [0.5, 1.0]), np.clip(3 * score, -1, 4)


X, Y3, YR = _numeric()
Y2 = (Y3 > 0).astype(int)

CASES = {
    "boosting-2": (DPHistGradientBoostingClassifier, Y2, {"classes": [0, 1]}),
    "boosting-3": (DPHistGradientBoostingClassifier, Y3, {"classes": [0, 1, 2]}),
    "boosting-regression": (DPHistGradientBoostingRegressor, YR, {"y_bounds": (-1, 4)}),
    "forest-2": (DPRandomForestClassifier, Y2, {"classes": [0, 1]}),
    "forest-3": (DPRandomForestClassifier, Y3, {"classes": [0, 1, 2]}),
    "forest-regression": (DPRandomForestRegressor, YR, {"y_bounds": (-1, 4)}),
}


def _estimator(name, **params):
    cls, _, target = CASES[name]
    extra = dict(max_iter=3) if name.startswith("boosting") else dict(n_estimators=20)
    return cls(**{"bounds": (0, 1), "random_state": 11, **target, **extra, **params})


def _assert_same(a, b, where="estimator"):
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        for field in dataclasses.fields(a):
            _assert_same(getattr(a, field.name), getattr(b, field.name), where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for u, v in zip(a, b, strict=True):
            _assert_same(u, v, where)
    else:
        assert a == b, where


def _assert_same_model(memory, dasked):
    state = {k: v for k, v in vars(memory).items() if k.endswith("_") or k == "_stages"}
    assert sorted(state) == sorted(
        k for k in vars(dasked) if k.endswith("_") or k == "_stages"
    )
    for key, value in state.items():
        if key == "budget_entry_":
            continue
        _assert_same(value, getattr(dasked, key), key)


@pytest.mark.parametrize("name", list(CASES))
def test_dask_array_fit_is_the_in_memory_fit_bit_for_bit(name):
    _, y, _ = CASES[name]
    memory = _estimator(name).fit(X, y)
    # Chunks that are not the canonical blocks, and differ between X and y.
    dasked = _estimator(name).fit(
        da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=1100)
    )
    _assert_same_model(memory, dasked)
    # Predicting on dask input gives the in-memory predictions.
    np.testing.assert_array_equal(
        dasked.predict(da.from_array(X[:500], chunks=200)), memory.predict(X[:500])
    )


def _with_text_column():
    table = np.empty((N, 4), dtype=object)
    table[:, :3] = X
    table[:, 3] = np.array(CATEGORIES + [None], dtype=object)[np.arange(N) % 4]
    return table


@pytest.mark.parametrize("name", ["boosting-3", "forest-regression"])
def test_object_dask_array_with_declared_categories_is_the_in_memory_fit(name):
    _, y, _ = CASES[name]
    table = _with_text_column()
    params = dict(categorical_features=[3], categories=[CATEGORIES])
    memory = _estimator(name, **params).fit(table, y)
    dasked = _estimator(name, **params).fit(
        da.from_array(table, chunks=(1000, 4)), da.from_array(y, chunks=1000)
    )
    _assert_same_model(memory, dasked)


@pytest.mark.parametrize("name", ["boosting-2", "forest-3", "boosting-regression"])
def test_dask_dataframe_fit_is_the_pandas_fit(name):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    _, y, _ = CASES[name]
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    memory = _estimator(name).fit(frame, y)
    dasked = _estimator(name).fit(
        dd.from_pandas(frame, npartitions=3),
        dd.from_pandas(pd.Series(y), npartitions=4),
    )
    _assert_same_model(memory, dasked)
    assert list(dasked.feature_names_in_) == ["x0", "x1", "x2"]
    np.testing.assert_array_equal(
        dasked.predict(dd.from_pandas(frame.iloc[:300], npartitions=2)),
        memory.predict(frame.iloc[:300]),
    )


def _refused(name, X_bad, y_bad, match, **params):
    budget = PrivacyBudget(epsilon=10.0, delta=1e-3)
    estimator = _estimator(name, budget=budget, **params)
    with pytest.raises(ValueError, match=match):
        estimator.fit(X_bad, y_bad)
    assert len(budget.ledger) == 0 and budget.spent() == (0.0, 0.0)
    assert not hasattr(estimator, "privacy_event_")


@pytest.mark.parametrize("name", ["boosting-2", "boosting-3", "forest-2", "forest-3"])
@pytest.mark.parametrize("bad", [7, -1, np.nan])
def test_labels_outside_the_declared_classes_are_refused_before_the_charge(name, bad):
    # Before: searchsorted gave such a row the index n_classes, so the
    # binary fit released a positive count moved by 2 (sensitivity 1) and
    # the forest put it in another leaf's cell; with three classes the
    # boosting failed after the charge.
    _, y, _ = CASES[name]
    y_bad = y.astype(float)
    y_bad[[5, 2000]] = bad
    _refused(
        name,
        da.from_array(X, chunks=1000),
        da.from_array(y_bad, chunks=1000),
        "not in classes",
    )


@pytest.mark.parametrize("name", ["boosting-regression", "forest-regression"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_targets_are_refused_before_the_charge(name, bad):
    # Before: a NaN target made the sums it entered NaN, which the noise
    # treats as 0: one row could move the intercept's release by n w.
    y_bad = YR.copy()
    y_bad[2999] = bad
    _refused(
        name, da.from_array(X, chunks=1000), da.from_array(y_bad, chunks=1000), "finite"
    )


@pytest.mark.parametrize("name", ["boosting-2", "forest-regression"])
def test_text_in_an_undeclared_column_is_refused_before_the_charge(name):
    # In memory a column of strings is categorical (with a warning when its
    # categories are read); on dask its values are not read in the client,
    # and encoding it as a number failed after the charge.
    _, y, _ = CASES[name]
    _refused(
        name,
        da.from_array(_with_text_column(), chunks=(1000, 4)),
        da.from_array(y, chunks=1000),
        "numeric",
    )


@pytest.mark.parametrize("name", list(CASES))
def test_dask_fits_need_the_whole_public_schema(name):
    _, y, _ = CASES[name]
    target = "y_bounds" if "regression" in name else "classes"
    for omitted in ("bounds", target):
        _refused(
            name,
            da.from_array(X, chunks=1000),
            da.from_array(y, chunks=1000),
            "must be declared",
            **{omitted: None},
        )


@pytest.mark.parametrize("name", ["boosting-2", "forest-3"])
@pytest.mark.parametrize("classes", [[0], [0, np.nan], [[0, 1], [1, 2]]])
def test_declared_classes_are_checked_on_dask_as_in_memory(
    name, classes, assert_same_refusal
):
    # The dask path read classes with np.unique alone: one declared class
    # was fitted and charged on dask while memory refused it.
    _, y, _ = CASES[name]
    y_one = np.zeros_like(y)

    def fit(data, budget):
        _estimator(name, classes=classes, budget=budget).fit(*data)

    kind, message = assert_same_refusal(
        fit,
        (X, y_one),
        (da.from_array(X, chunks=1000), da.from_array(y_one, chunks=1000)),
    )
    assert kind is ValueError and "classes must" in message


def _dated_table():
    table = _with_text_column()
    table[2500, 1] = np.datetime64("2024-01-02")  # numpy reads it as days
    return table


def test_dates_in_a_numeric_feature_are_a_code_the_client_words(assert_same_refusal):
    # The block check raised in the worker task; it returns a code now, as
    # for text, and the client words the refusal memory gives.
    from skdp.ensemble._binning import _readable_block

    code = _readable_block(_dated_table()[2048:], Y2[2048:], [0, 1, 2], None)
    assert code[0] == 4
    table = _dated_table()
    params = dict(categorical_features=[3], categories=[CATEGORIES])

    def fit(data, budget):
        _estimator("boosting-2", budget=budget, **params).fit(*data)

    kind, message = assert_same_refusal(
        fit,
        (table, Y2),
        (da.from_array(table, chunks=(1000, 4)), da.from_array(Y2, chunks=1000)),
    )
    assert kind is ValueError and "holds dates or durations" in message


def _failed_tasks(client):
    """How many "Compute Failed" lines the workers have logged so far."""
    logs = client.get_worker_logs()
    return sum("Compute Failed" in line for log in logs.values() for _, line in log)


@pytest.mark.slow
def test_no_worker_task_fails_on_a_refused_block(dask_cluster):
    params = dict(categorical_features=[3], categories=[CATEGORIES])
    # The workers serve the whole session: count only this test's failures.
    failed_before = _failed_tasks(dask_cluster)
    with dask.config.set(scheduler=dask_cluster.get):
        with pytest.raises(ValueError, match="holds dates or durations"):
            _estimator("forest-2", **params).fit(
                da.from_array(_dated_table(), chunks=(1000, 4)),
                da.from_array(Y2, chunks=1000),
            )
    assert _failed_tasks(dask_cluster) == failed_before
