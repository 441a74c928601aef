"""Every private estimator and tool on dask releases the in-memory result, bitwise.

The table of issue 27 ("one data path"): each estimator skdp exports (each
mechanism of the linear models apart) and each tool of ``skdp.tools`` runs
on a NumPy array and on a dask array, and on a pandas DataFrame and on a
dask DataFrame, with the same seed and public bounds. The dask run must
release exactly what the in-memory run releases: every fitted attribute
and the estimator's other state (``assert_same_fit``), the tool's value, the
privacy event, the ledger's records and the warnings; and no task may
hold all the rows. The quick suite runs each case on one of the two dask
containers under the synchronous scheduler, the slow suite on the other on
a two-worker ``distributed.LocalCluster``; ``benchmarks/dask_identity.py``
prints the whole table (every case on both, on the cluster).

The cases are found from the public API (every class with ``fit`` in the
``__all__`` of ``skdp`` and its public subpackages, every function of
``skdp.tools.__all__``, every ``method`` of the linear models): a new
export fails :func:`test_every_export_has_a_case` until it has one. What
dask refuses on purpose is listed in ``REFUSED`` with its reason, and
tested to be refused before anything is charged.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import skdp
from skdp import PrivacyBudget, tools
from skdp.cluster import DPKMeans
from skdp.decomposition import DPPCA
from skdp.ensemble import (
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    DPRandomForestClassifier,
    DPRandomForestRegressor,
)
from skdp.linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from skdp.model_selection import PrivateSearchCV
from skdp.naive_bayes import DPGaussianNB
from skdp.preprocessing import BoundedMinMaxScaler, DPKBinsDiscretizer, DPStandardScaler
from skdp.synthesis import OnlinePMW, PMWSynthesizer, SyntheticDataClassifier

pd = pytest.importorskip("pandas")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
cloudpickle = pytest.importorskip("cloudpickle")
WorkerPlugin = pytest.importorskip("distributed").WorkerPlugin

# Three canonical blocks of 1024 rows (the last one short), read from
# chunks and partitions of 700 rows: the blocks are not the storage's.
N, D, CHUNK = 2100, 3, 700
BOUNDS, NORM, Y_BOUNDS = (-2.0, 2.0), 2.0, (-4.0, 4.0)
CLASSES = [0, 1, 2]
COLUMNS = [f"x{j}" for j in range(D)]


@functools.cache
def _numbers(n=N, seed=0):
    """``X`` and its three-class label and target, ``n`` rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * 0.6
    X[::97] *= 4.0  # rows the bounds and the norm clip
    score = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    return X, np.digitize(score, [-0.4, 0.4]), X @ [1.0, -0.5, 0.25] + score / 4


@functools.cache
def _table(n=N, seed=1):
    """Two categorical columns (3 and 4 values) and a number, as a frame."""
    rng = np.random.default_rng(seed)
    colour = rng.integers(0, 3, size=n)
    level = (colour + (rng.uniform(size=n) < 0.3)) % 4  # a dependence to find
    return pd.DataFrame(
        {"colour": colour, "level": level, "score": rng.normal(size=n) + level}
    )


COLOURS, LEVELS = [0, 1, 2], [0, 1, 2, 3]


def _schema(frame, **columns):
    """Per-column parameters by name (frames) or by position (arrays)."""
    if frame:
        return {k: v for k, v in columns.items() if v is not None}
    return [columns[name] for name in columns]


# ------------------------------------------------------------------ the cases
@dataclass(frozen=True)
class Case:
    """One release to compare: an estimator's fit or a tool's call.

    ``make(budget, frame)`` returns the estimator (or, for a tool, the
    function of the data), given the budget to charge and whether the
    input is a DataFrame (per-column parameters are then keyed by name).
    ``data`` names the input: ``"numbers"`` (X), ``"classes"``,
    ``"binary"`` and ``"target"`` (X and three classes, two, or a
    target), ``"table"``, ``"labelled"``
    (the table's level and score, labelled by colour) and ``"cells"`` (the
    table's two categorical columns).
    """

    export: str
    variant: str
    data: str
    make: Callable

    @property
    def id(self) -> str:
        return f"{self.export}[{self.variant}]" if self.variant else self.export


def _linear(cls, y_param, **method):
    def make(budget, frame):
        return cls(data_norm=NORM, random_state=3, budget=budget, **y_param, **method)

    return make


CLASSIFIED = {"classes": CLASSES}
REGRESSED = {"y_bounds": Y_BOUNDS}

#: The mechanisms of the linear models: ``method``, and the gradient
#: method's two (DP-SGD on Poisson batches, full-batch gradient descent).
METHODS = {
    "objective": {"method": "objective"},
    "output": {"method": "output"},
    "gradient": {"method": "gradient", "batch_size": 700, "epochs": 2},
    "gradient-full-batch": {"method": "gradient", "batch_size": "full", "epochs": 5},
    "adassp": {"method": "adassp"},
}


def _linear_cases():
    for cls, data, y_param in (
        (DPLogisticRegression, "classes", CLASSIFIED),  # softmax
        (DPLinearSVC, "binary", {"classes": [0, 1]}),  # one problem, not three
        (DPLinearRegression, "target", REGRESSED),
    ):
        options = _method_options(cls)
        for variant, method in METHODS.items():
            if method["method"] in options:
                yield Case(cls.__name__, variant, data, _linear(cls, y_param, **method))


def _method_options(cls) -> set:
    (options,) = (
        c for c in cls._parameter_constraints["method"] if hasattr(c, "options")
    )
    return set(options.options)


def _trees(cls, y_param, **size):
    def make(budget, frame):
        return cls(bounds=BOUNDS, random_state=5, budget=budget, **y_param, **size)

    return make


def _pmw(budget, frame):
    return PMWSynthesizer(
        epsilon=3.0,
        n_rounds=4,
        n_bins=4,
        categories=_schema(frame, colour=COLOURS, level=LEVELS, score=None),
        bounds=_schema(frame, colour=None, level=None, score=(-3.0, 6.0)),
        random_state=11,
        budget=budget,
    )


def _synthetic_classifier(budget, frame):
    return SyntheticDataClassifier(
        epsilon=3.0,
        classes=COLOURS,
        categories=_schema(frame, level=LEVELS, score=None),
        bounds=_schema(frame, level=None, score=(-3.0, 6.0)),
        n_rounds=3,
        random_state=12,
        budget=budget,
    )


def _online_pmw(budget, frame):
    return OnlinePMW(
        [COLOURS, LEVELS], epsilon=2.0, max_updates=3, random_state=13, budget=budget
    )


#: Linear queries answered after OnlinePMW's fit (one weight per cell).
QUERIES = [np.arange(12) % k == 0 for k in (2, 3, 5, 7)] + [np.arange(12) < 4]


def _search(budget, frame):
    # Naive Bayes trials: two passes each (a Newton solver's trials would
    # make dozens, each a round trip to the cluster).
    return PrivateSearchCV(
        DPGaussianNB(bounds=BOUNDS, classes=CLASSES),
        {"var_smoothing": [0.01, 0.1]},
        mean_trials=2,
        random_state=14,
        budget=budget,
    )


def _estimator(cls, **params):
    def make(budget, frame):
        return cls(budget=budget, **params)

    return make


def _column(x):
    """The first column: ``x[:, 0]`` of an array, the first Series of a frame."""
    return x[x.columns[0]] if hasattr(x, "columns") else x[:, 0]


def _tool(call):
    def make(budget, frame):
        return lambda x: call(x, budget)

    return make


TOOL_CALLS = {
    "count": lambda x, b: tools.count(x > 0.5, axis=0, random_state=21, budget=b),
    "histogram": lambda x, b: tools.histogram(
        _column(x), 6, BOUNDS, random_state=22, budget=b
    ),
    "histogramdd": lambda x, b: tools.histogramdd(
        x, [3, 2, 4], [BOUNDS] * D, random_state=23, budget=b
    ),
    "mean": lambda x, b: tools.mean(x, 0, bounds=BOUNDS, random_state=24, budget=b),
    "median": lambda x, b: tools.median(x, 0, bounds=BOUNDS, random_state=25, budget=b),
    "quantile": lambda x, b: tools.quantile(
        x, 0.3, 0, bounds=BOUNDS, random_state=26, budget=b
    ),
    "std": lambda x, b: tools.std(x, 0, bounds=BOUNDS, random_state=27, budget=b),
    "sum": lambda x, b: tools.sum(x, bounds=BOUNDS, random_state=28, budget=b),
    "var": lambda x, b: tools.var(x, 0, bounds=BOUNDS, random_state=29, budget=b),
}


def _all_cases():
    yield from _linear_cases()
    for cls, data, y_param, size in (
        (DPHistGradientBoostingClassifier, "classes", CLASSIFIED, {"max_iter": 2}),
        (DPHistGradientBoostingRegressor, "target", REGRESSED, {"max_iter": 2}),
        (DPRandomForestClassifier, "classes", CLASSIFIED, {"n_estimators": 10}),
        (DPRandomForestRegressor, "target", REGRESSED, {"n_estimators": 10}),
    ):
        yield Case(cls.__name__, "", data, _trees(cls, y_param, **size))
    yield Case(
        "DPGaussianNB",
        "",
        "classes",
        _estimator(DPGaussianNB, bounds=BOUNDS, classes=CLASSES, random_state=6),
    )
    yield Case(
        "DPPCA",
        "",
        "numbers",
        _estimator(DPPCA, n_components=2, data_norm=NORM, random_state=10),
    )
    yield Case(
        "DPKMeans",
        "",
        "numbers",
        _estimator(DPKMeans, n_clusters=3, bounds=BOUNDS, max_iter=3, random_state=7),
    )
    yield Case(
        "DPStandardScaler",
        "",
        "numbers",
        _estimator(DPStandardScaler, bounds=BOUNDS, random_state=8),
    )
    for strategy in sorted(_strategies()):
        yield Case(
            "DPKBinsDiscretizer",
            strategy,
            "numbers",
            _estimator(
                DPKBinsDiscretizer,
                n_bins=4,
                strategy=strategy,
                bounds=BOUNDS,
                random_state=9,
            ),
        )
    yield Case(
        "BoundedMinMaxScaler",
        "",
        "numbers",
        lambda budget, frame: BoundedMinMaxScaler(bounds=BOUNDS),
    )
    yield Case("PrivateSearchCV", "", "classes", _search)
    yield Case("PMWSynthesizer", "", "table", _pmw)
    yield Case("SyntheticDataClassifier", "", "labelled", _synthetic_classifier)
    yield Case("OnlinePMW", "", "cells", _online_pmw)
    for name, call in TOOL_CALLS.items():
        yield Case(f"tools.{name}", "", "numbers", _tool(call))


def _strategies() -> set:
    (options,) = (
        c
        for c in DPKBinsDiscretizer._parameter_constraints["strategy"]
        if hasattr(c, "options")
    )
    return set(options.options)


CASES = list(_all_cases())

#: What dask refuses on purpose, with the reason, the error and its words.
#: Each is refused before the charge (tested); moving one into the
#: identity table takes a mechanism that sums over row blocks.
REFUSED = {
    "DPKBinsDiscretizer[quantile]": (
        "the exponential mechanism over the gaps between the sorted values "
        "needs every value in one place",
        TypeError,
        "does not take dask collections",
    ),
    "tools.median": (
        "the same quantile mechanism as DPKBinsDiscretizer(strategy='quantile')",
        TypeError,
        "does not take dask collections",
    ),
    "tools.quantile": (
        "the same quantile mechanism as DPKBinsDiscretizer(strategy='quantile')",
        TypeError,
        "does not take dask collections",
    ),
}
IDENTICAL = [case for case in CASES if case.id not in REFUSED]


# ------------------------------------------------------- the public API's list
def _public_modules():
    yield skdp
    for info in pkgutil.iter_modules(skdp.__path__):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"skdp.{info.name}")


def exported_releases() -> set:
    """Every class with ``fit`` that skdp exports, and every tool."""
    found = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) and callable(getattr(obj, "fit", None)):
                found.add(name)
    return found | {f"tools.{name}" for name in tools.__all__}


def test_every_export_has_a_case():
    covered = {case.export for case in CASES}
    exported = exported_releases()
    assert exported - covered == set(), "exported without a dask-identity case"
    assert covered - exported == set(), "a case for a name skdp does not export"
    assert set(REFUSED) <= {case.id for case in CASES}
    # Each method of each linear model, and each binning strategy, has one.
    for cls in (DPLogisticRegression, DPLinearSVC, DPLinearRegression):
        variants = {c.variant.split("-")[0] for c in CASES if c.export == cls.__name__}
        assert variants == _method_options(cls), cls.__name__
    assert {c.variant for c in CASES if c.export == "DPKBinsDiscretizer"} == (
        _strategies()
    )


# ------------------------------------------------------------------ the inputs
def _inputs(data: str, frame: bool, n: int = N, chunk: int = CHUNK):
    """``(X, y)`` in memory and on dask for one kind of data and container:
    ``n`` rows, in dask chunks (or partitions) of ``chunk`` rows."""
    if data in ("numbers", "classes", "binary", "target"):
        numbers, classes, target = _numbers(n)
        X = pd.DataFrame(numbers, columns=COLUMNS) if frame else numbers
        y = {
            "numbers": None,
            "classes": classes,
            "binary": (classes > 0).astype(int),
            "target": target,
        }[data]
    else:
        columns = {
            "table": ["colour", "level", "score"],
            "labelled": ["level", "score"],
            "cells": ["colour", "level"],
        }[data]
        table = _table(n)
        X = table[columns] if frame else table[columns].to_numpy()
        y = table["colour"].to_numpy() if data == "labelled" else None
    if frame and y is not None:
        y = pd.Series(y, name="y")
    on_dask = (_on_dask(X, chunk), None if y is None else _on_dask(y, chunk))
    return (X, y), on_dask


def _on_dask(a, chunk):
    if isinstance(a, pd.DataFrame):  # partitions of chunk rows
        return dd.from_pandas(a, npartitions=-(-len(a) // chunk))
    if isinstance(a, pd.Series):  # partitions of another size than X's
        return dd.from_pandas(a, npartitions=max(1, -(-len(a) // chunk) - 1))
    return da.from_array(a, chunks=(chunk,) + a.shape[1:])


# ----------------------------------------------------------------- the release
@dataclass
class Release:
    """What one run released: the estimator or the tool's value, and the
    warnings and ledger records of the run."""

    estimator: object
    value: object
    warnings: list
    ledger: list


def _warnings(caught) -> list:
    # skdp's and scikit-learn's warnings; dask's own (a large graph) are not
    # part of a release.
    return [
        (w.category, str(w.message))
        for w in caught
        if w.category.__module__.split(".")[0] in ("skdp", "sklearn")
    ]


def release(case: Case, data) -> Release:
    """Fit (or call) ``case`` on ``(X, y)`` with a fresh budget."""
    X, y = data
    frame = hasattr(X, "columns")
    budget = PrivacyBudget(100.0, 0.5)
    made = case.make(budget, frame)
    estimator = value = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if case.export.startswith("tools."):
            value = made(X)
        else:
            estimator = made.fit(X, y)
            if isinstance(estimator, OnlinePMW):
                value = [estimator.answer(q) for q in QUERIES]
                value += [estimator.distribution_, estimator.universe_]
    ledger = [(entry.label, entry.record) for entry in budget.ledger]
    return Release(estimator, value, _warnings(caught), ledger)


def _assert_same_release(memory: Release, on_dask: Release, assert_same_fit):
    if memory.estimator is not None:
        assert_same_fit(memory.estimator, on_dask.estimator)
        assert_same_fit(memory.estimator, on_dask.estimator, everything=True)
        event = getattr(memory.estimator, "privacy_event_", None)
        assert getattr(on_dask.estimator, "privacy_event_", None) == event
    # The value (a tool's, or OnlinePMW's answers), bitwise, through
    # containers: as the fitted attribute of a holder.
    assert_same_fit(_Holder(memory.value), _Holder(on_dask.value))
    assert on_dask.ledger == memory.ledger
    assert on_dask.warnings == memory.warnings


class _Holder:
    """A value as a fitted attribute, for ``assert_same_fit``."""

    def __init__(self, value):
        self.value_ = value


def _charges(run: Release) -> int:
    """One charge; none for an estimator without a budget (public bounds)."""
    estimator = run.estimator
    return int(estimator is None or "budget" in estimator.get_params())


# ------------------------------------------------- the rows a task may hold
class LargestTaskRows(WorkerPlugin):
    """The most rows of any result a worker's task computed (since a reset)."""

    name = "skdp-largest-task-rows"

    def setup(self, worker):
        self.worker, self.rows = worker, 0

    def transition(self, key, start, finish, **kwargs):
        if finish == "memory" and key in self.worker.data:
            shape = getattr(self.worker.data[key], "shape", ())
            if len(shape):
                self.rows = max(self.rows, int(shape[0]))


def _reset_rows(dask_worker):
    dask_worker.plugins[LargestTaskRows.name].rows = 0


def _read_rows(dask_worker):
    return dask_worker.plugins[LargestTaskRows.name].rows


def cluster_task_rows(client):
    """``measure(run)``: ``run()``'s result and the most rows a task held."""
    # The workers cannot import this test module: send its code by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client.register_plugin(LargestTaskRows())

    def measure(run):
        client.run(_reset_rows)
        result = run()
        return result, max(client.run(_read_rows).values())

    return measure


# ------------------------------------------------------------------ the tests
#: Each case on both containers: the quick suite runs one of them under the
#: synchronous scheduler (in turn a dask array and a dask DataFrame), the
#: slow suite the other on the cluster (every pass there is a round trip to
#: the workers: ~0.2 s on a loaded 2-core machine). The benchmark
#: (benchmarks/dask_identity.py) runs every case on both on the cluster.
QUICK = [(case, i % 2 == 1) for i, case in enumerate(IDENTICAL)]
ON_CLUSTER = [(case, not frame) for case, frame in QUICK]


def _ids(pairs):
    return [f"{case.id}-{'frame' if frame else 'array'}" for case, frame in pairs]


@pytest.mark.parametrize("case, frame", QUICK, ids=_ids(QUICK))
def test_dask_releases_the_in_memory_result(
    case, frame, dask_sync, assert_same_fit, largest_task_rows
):
    memory_data, dask_data = _inputs(case.data, frame)
    memory = release(case, memory_data)
    with largest_task_rows() as seen:
        on_dask = release(case, dask_data)
    _assert_same_release(memory, on_dask, assert_same_fit)
    assert len(memory.ledger) == _charges(memory)
    # No task held all the rows (input chunks of 700, canonical blocks of 1024).
    assert 0 < seen.rows < N


@pytest.fixture(scope="module")
def measure_on_cluster(dask_cluster):
    dask_cluster.run(_import_skdp)  # once, outside the tests' timings
    return cluster_task_rows(dask_cluster)


def _import_skdp():
    import skdp  # noqa: F401 (the modules of every block function)


@pytest.mark.slow
@pytest.mark.parametrize("case, frame", ON_CLUSTER, ids=_ids(ON_CLUSTER))
def test_a_local_cluster_releases_the_in_memory_result(
    case, frame, measure_on_cluster, assert_same_fit
):
    # Two worker processes: block functions are pickled to them and only
    # their sums come back; the plan, the charge and the noise stay here.
    memory_data, dask_data = _inputs(case.data, frame)
    memory = release(case, memory_data)
    on_dask, rows = measure_on_cluster(lambda: release(case, dask_data))
    _assert_same_release(memory, on_dask, assert_same_fit)
    assert len(memory.ledger) == _charges(memory)
    assert 0 < rows < N


@pytest.mark.parametrize("frame", [False, True], ids=["array", "frame"])
@pytest.mark.parametrize("case_id", sorted(REFUSED))
def test_what_dask_refuses_is_refused_before_the_charge(case_id, frame, dask_sync):
    (case,) = (case for case in CASES if case.id == case_id)
    _, error, match = REFUSED[case_id]
    memory_data, dask_data = _inputs(case.data, frame)
    assert len(release(case, memory_data).ledger) == 1  # memory takes it
    budget = PrivacyBudget(100.0, 0.5)
    made = case.make(budget, frame)
    with pytest.raises(error, match=match):
        if case.export.startswith("tools."):
            made(dask_data[0])
        else:
            made.fit(*dask_data)
    assert budget.ledger == []
