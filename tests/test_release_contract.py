"""Release nothing but the noise: checks over every exported estimator.

* **Side channels.** On a worst-case pair of neighbouring datasets, every
  public fitted attribute and every warning is compared over noise seeds.
  An attribute that is the same for every seed is public by nature and
  must be the same on both datasets; one that varies with the noise must
  not let an audit (:func:`skdp.audit.audit_scores`) tell the datasets
  apart beyond the claimed epsilon; the warnings must be the same. A
  re-injected version of the old ``n_iter_`` leak is caught.
* **Hostile input.** Inputs with NaN, None, infinities, strings, huge and
  out-of-domain values in every kind of column either fail with the budget
  untouched, or give a model whose released numbers are finite; never an
  error after the charge.
"""

from __future__ import annotations

import itertools
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _data import sphere_rows

from skdp import DPLogisticRegression, PMWSynthesizer, PrivacyBudget
from skdp.audit import audit_scores
from skdp.cluster import DPKMeans
from skdp.decomposition import DPPCA
from skdp.ensemble import (
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    DPRandomForestClassifier,
    DPRandomForestRegressor,
)
from skdp.exceptions import ChargedFitError
from skdp.linear_model import DPLinearRegression, DPLinearSVC
from skdp.linear_model._newton import minimize_loss
from skdp.model_selection import PrivateSearchCV
from skdp.naive_bayes import DPGaussianNB
from skdp.preprocessing import (
    BoundedMinMaxScaler,
    DPKBinsDiscretizer,
    DPStandardScaler,
)
from skdp.synthesis import OnlinePMW, SyntheticDataClassifier
from skdp.utils.discovery import all_estimators

pytestmark = pytest.mark.slow  # many fits per estimator over noise seeds

# -- side channels ------------------------------------------------------------


def _logistic_pair():
    """Unit rows; row 0 replaced by [1, 0, 0] with the other label."""
    rng = np.random.default_rng(1)
    X = sphere_rows(rng, 200, 3)
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [1.0, 0.0, 0.0], 1 - y[0]
    return (X, y), (X2, y2)


def _table_pair():
    """Codes in {0, 1, 2}**3; row 0 moved to the rarest cell."""
    rng = np.random.default_rng(2)
    X = rng.choice(3, size=(300, 3), p=[0.6, 0.3, 0.1])
    X2 = X.copy()
    X2[0] = [2, 2, 2]
    return (X, None), (X2, None)


def _regression_pair():
    """Unit rows, targets in [-1, 1]; row 0 -> ([1, 0, 0], -1)."""
    (X, y), (X2, _) = _logistic_pair()
    t = np.clip(X[:, 0] + 0.1 * np.random.default_rng(3).normal(size=len(X)), -1, 1)
    t2 = t.copy()
    t2[0] = -1.0
    return (X, t), (X2, t2)


def _features_pair():
    """The logistic pair's rows alone (unsupervised steps)."""
    (X, _), (X2, _) = _logistic_pair()
    return (X, None), (X2, None)


LOGISTIC = dict(data_norm=1.0, classes=[0, 1], C=100.0)
REGRESSION = dict(data_norm=1.0, y_bounds=(-1, 1))
CASES = {
    "objective": (DPLogisticRegression(method="objective", **LOGISTIC), _logistic_pair),
    "output": (DPLogisticRegression(method="output", **LOGISTIC), _logistic_pair),
    "gradient": (
        DPLogisticRegression(method="gradient", epochs=2, **LOGISTIC),
        _logistic_pair,
    ),
    "svc objective": (DPLinearSVC(method="objective", **LOGISTIC), _logistic_pair),
    "svc gradient": (
        DPLinearSVC(method="gradient", epochs=2, **LOGISTIC),
        _logistic_pair,
    ),
    "linear adassp": (DPLinearRegression(**REGRESSION), _regression_pair),
    "linear output": (
        DPLinearRegression(method="output", alpha=0.01, **REGRESSION),
        _regression_pair,
    ),
    "pmw": (
        PMWSynthesizer(categories=[[0, 1, 2]] * 3, n_rounds=3),
        _table_pair,
    ),
    # The fit's release (its answers are calibrated in synthesis/test_online).
    "online pmw": (OnlinePMW(domain=[[0, 1, 2]] * 3), _table_pair),
    "synthetic classifier": (
        SyntheticDataClassifier(
            bounds=(-1, 1), classes=[0, 1], n_rounds=2, n_samples=500
        ),
        _logistic_pair,
    ),
    "gaussian nb": (DPGaussianNB(bounds=(-1, 1), classes=[0, 1]), _logistic_pair),
    "kmeans": (DPKMeans(n_clusters=3, bounds=(-1, 1)), _features_pair),
    "pca": (DPPCA(n_components=2, data_norm=1.0), _features_pair),
    "standard scaler": (DPStandardScaler(bounds=(-1, 1)), _features_pair),
    "kbins": (DPKBinsDiscretizer(n_bins=3, bounds=(-1, 1)), _features_pair),
    "bounded min-max": (BoundedMinMaxScaler(bounds=(-1, 1)), _features_pair),
    "boosting": (
        DPHistGradientBoostingClassifier(bounds=(-1, 1), classes=[0, 1], max_iter=2),
        _logistic_pair,
    ),
    "boosting regressor": (
        DPHistGradientBoostingRegressor(bounds=(-1, 1), y_bounds=(-1, 1), max_iter=2),
        _regression_pair,
    ),
    "forest": (
        DPRandomForestClassifier(bounds=(-1, 1), classes=[0, 1], n_estimators=10),
        _logistic_pair,
    ),
    "forest regressor": (
        DPRandomForestRegressor(bounds=(-1, 1), y_bounds=(-1, 1), n_estimators=10),
        _regression_pair,
    ),
    "search": (
        PrivateSearchCV(
            DPLogisticRegression(method="objective", data_norm=1.0, classes=[0, 1]),
            {"C": [0.1, 1.0, 10.0]},
            mean_trials=3.0,
        ),
        _logistic_pair,
    ),
}


def test_every_exported_estimator_is_covered():
    covered = {type(est).__name__ for est, _ in CASES.values()}
    assert covered == {name for name, _ in all_estimators()}


def _released(est) -> dict:
    """The fitted attributes a saved model carries (what is published):
    the state pickle would save."""
    return {
        k: v
        for k, v in est.__getstate__().items()
        if k.endswith("_") and not k.startswith("_")
    }


def _fingerprint(value) -> bytes:
    if isinstance(value, np.ndarray):
        return pickle.dumps((value.dtype.str, value.shape, value.tobytes()))
    return pickle.dumps(value)


def _scalar(value) -> float | None:
    """A number that summarises a numeric attribute (for the audit)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return float(arr.ravel()[0]) if arr.size else None


def side_channels(estimator, pair, n_seeds) -> list[str]:
    """Names of released attributes or warnings that separate the pair."""
    runs = {0: [], 1: []}
    for which, (X, y) in enumerate(pair):
        for seed in range(n_seeds):
            est = estimator.__class__(**estimator.get_params(deep=False))
            if "random_state" in est.get_params():
                est.set_params(random_state=seed)
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                est.fit(X) if y is None else est.fit(X, y)
            shown = frozenset((w.category.__name__, str(w.message)) for w in record)
            runs[which].append((_released(est), shown))
    leaks = []
    names = set(runs[0][0][0]) | set(runs[1][0][0])
    for name in sorted(names):
        values = [
            [attrs.get(name, "<missing>") for attrs, _ in runs[which]]
            for which in (0, 1)
        ]
        prints = [{_fingerprint(v) for v in vs} for vs in values]
        if len(prints[0]) == 1 and len(prints[1]) == 1:
            if prints[0] != prints[1]:
                leaks.append(name)  # deterministic, and differs: a leak
            continue
        if prints[0].isdisjoint(prints[1]) and (
            len(prints[0]) == 1 or len(prints[1]) == 1
        ):
            leaks.append(name)  # constant on one side only
            continue
        scalars = [[_scalar(v) for v in vs] for vs in values]
        if any(s is None or not math.isfinite(s) for side in scalars for s in side):
            continue
        claimed = runs[0][0][0].get("epsilon_")
        result = audit_scores(scalars[0], scalars[1], confidence=0.95)
        if claimed is not None and result.epsilon_lower_bound > claimed:
            leaks.append(name)
    warned = [{w for _, w in runs[which]} for which in (0, 1)]
    if warned[0] != warned[1]:
        leaks.append("warnings")
    return leaks


@pytest.mark.parametrize("case", sorted(CASES))
def test_nothing_released_separates_neighbours(case):
    estimator, make_pair = CASES[case]
    n_seeds = 6 if case == "search" else 20
    assert side_channels(estimator, make_pair(), n_seeds) == []


class _LeakyIterations(DPLogisticRegression):
    """The old bug, re-injected: n_iter_ counts the data's Newton steps."""

    def _run_fit(self, prepared, plan, source):
        super()._run_fit(prepared, plan, source)
        solve = minimize_loss(prepared.Z, prepared.Y, alpha=1.0, C=self.C, tol=1e-12)
        self.n_iter_ = np.array([solve.n_iter], dtype=np.int32)


def test_the_check_catches_a_reinjected_n_iter_leak():
    leaky = _LeakyIterations(method="output", **LOGISTIC)
    assert side_channels(leaky, _logistic_pair(), 4) == ["n_iter_"]


def test_the_check_catches_a_data_dependent_warning():
    class Warns(DPLogisticRegression):
        def _plan_fit(self, prepared):
            if prepared.Y[0, 0] > 0:
                warnings.warn("first label is positive", UserWarning, stacklevel=2)
            return super()._plan_fit(prepared)

    leaky = Warns(method="objective", **LOGISTIC)
    assert side_channels(leaky, _logistic_pair(), 2) == ["warnings"]


# -- hostile input ------------------------------------------------------------

HOSTILE = [math.nan, None, math.inf, -math.inf, "x", 1e308, -1e308, 1e154, 7]


def _frames(rng, n=60):
    """A table of each column kind, and the declarations that go with it."""
    frame = pd.DataFrame(
        {
            "num": rng.uniform(0, 10, n),
            "int": rng.integers(0, 5, n),
            "cat": pd.Categorical(rng.choice(["a", "b"], n), categories=["a", "b"]),
            "text": rng.choice(["u", "v", "w"], n).astype(object),
            "nullable": pd.array(rng.integers(0, 3, n), dtype="Int64"),
        }
    )
    declared = {
        "bounds": {"num": (0, 10), "int": (0, 4), "nullable": (0, 2)},
        "categories": {"text": ["u", "v", "w"]},
    }
    return frame, declared


def _hostile_tables():
    rng = np.random.default_rng(0)
    for column, value, declare, as_array in itertools.product(
        ["num", "int", "cat", "text", "nullable"], HOSTILE, [True, False], [True, False]
    ):
        frame, declared = _frames(rng)
        frame = frame.astype({c: object for c in frame.columns if c != "cat"})
        try:
            frame.loc[5, column] = value
        except (TypeError, ValueError):
            continue  # pandas refuses this value in a categorical column
        X = frame.to_numpy(dtype=object) if as_array else frame
        params = {}
        if declare and not as_array:
            params = declared
        elif declare:
            names = list(frame.columns)
            params = {
                "bounds": [declared["bounds"].get(c) for c in names],
                "categories": [
                    declared["categories"].get(c, ["a", "b"] if c == "cat" else None)
                    for c in names
                ],
            }
        yield pytest.param(X, params, id=f"{column}-{value!r}-{declare}-{as_array}")


def _check_outcome(estimator, X, y):
    """An error with the budget untouched, or a finite model."""
    budget = PrivacyBudget(1e6, 0.5)
    estimator.set_params(budget=budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X) if y is None else estimator.fit(X, y)
    except ChargedFitError:
        pytest.fail("an error after the charge")
    except Exception:
        assert budget.ledger == [], "the budget was charged for a fit that failed"
        return "refused"
    assert len(budget.ledger) == 1
    for name, value in _released(estimator).items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.all(np.isfinite(value)), f"{name} is not finite"
    return "fitted"


@pytest.mark.parametrize("X, params", list(_hostile_tables()))
def test_hostile_tables(X, params):
    synth = PMWSynthesizer(n_rounds=2, random_state=0, **params)
    if _check_outcome(synth, X, None) == "fitted":
        out = synth.sample(7)
        assert len(out) == 7
        assert len(synth.transform(X)) == len(X)


def _hostile_matrices():
    rng = np.random.default_rng(1)
    for value, method in itertools.product(
        HOSTILE + [1e200, -1e-320], ["objective", "output", "gradient"]
    ):
        X = rng.normal(size=(80, 3)).astype(object)
        X[4, 1] = value
        y = rng.integers(0, 2, 80)
        yield pytest.param(X, y, method, id=f"{value!r}-{method}")
    for label, method in itertools.product(
        [math.nan, None, "x", 2], ["objective", "gradient"]
    ):
        X = rng.normal(size=(80, 3))
        y = rng.integers(0, 2, 80).astype(object)
        y[3] = label
        yield pytest.param(X, y, method, id=f"label-{label!r}-{method}")


@pytest.mark.parametrize("X, y, method", list(_hostile_matrices()))
@pytest.mark.parametrize("declared", [True, False])
def test_hostile_matrices(X, y, method, declared):
    params = {"data_norm": 1.0, "classes": [0, 1]} if declared else {}
    clf = DPLogisticRegression(method=method, random_state=0, epochs=2, **params)
    if _check_outcome(clf, X, y) == "fitted":
        assert clf.predict(np.zeros((2, 3))).shape == (2,)


@pytest.mark.parametrize("X, y, method", list(_hostile_matrices())[::4])
def test_hostile_matrices_in_a_search(X, y, method):
    search = PrivateSearchCV(
        DPLogisticRegression(method=method, data_norm=1.0, classes=[0, 1], epochs=1),
        {"C": [0.1, 1.0]},
        mean_trials=2.0,
        random_state=0,
    )
    _check_outcome(search, X, y)


@pytest.mark.parametrize("X, y, method", list(_hostile_matrices())[::3])
@pytest.mark.parametrize("declared", [True, False])
def test_hostile_matrices_svc_and_regression(X, y, method, declared):
    params = {"data_norm": 1.0} if declared else {}
    svc = DPLinearSVC(
        method=method,
        random_state=0,
        epochs=2,
        **params,
        **({"classes": [0, 1]} if declared else {}),
    )
    if _check_outcome(svc, X, y) == "fitted":
        assert svc.predict(np.zeros((2, 3))).shape == (2,)
    reg = DPLinearRegression(
        method="adassp" if method == "gradient" else method,
        random_state=0,
        **params,
        **({"y_bounds": (0, 1)} if declared else {}),
    )
    if _check_outcome(reg, X, y) == "fitted":
        assert np.all(np.isfinite(reg.predict(np.zeros((2, 3)))))


_NEW_ESTIMATORS = {
    "gaussian nb": lambda declared: DPGaussianNB(
        **({"bounds": (-3, 3), "classes": [0, 1]} if declared else {})
    ),
    "kmeans": lambda declared: DPKMeans(
        n_clusters=2, **({"bounds": (-3, 3)} if declared else {})
    ),
    "pca": lambda declared: DPPCA(
        n_components=2, **({"data_norm": 3.0} if declared else {})
    ),
    "standard scaler": lambda declared: DPStandardScaler(
        **({"bounds": (-3, 3)} if declared else {})
    ),
    "kbins": lambda declared: DPKBinsDiscretizer(
        n_bins=3, **({"bounds": (-3, 3)} if declared else {})
    ),
}


@pytest.mark.parametrize("X, y, method", list(_hostile_matrices())[::3])
@pytest.mark.parametrize("declared", [True, False])
@pytest.mark.parametrize("name", sorted(_NEW_ESTIMATORS))
def test_hostile_matrices_preprocessing_and_models(X, y, method, declared, name):
    estimator = _NEW_ESTIMATORS[name](declared).set_params(random_state=0)
    supervised = name == "gaussian nb"
    if _check_outcome(estimator, X, y if supervised else None) == "fitted":
        if hasattr(estimator, "transform"):
            out = estimator.transform(np.zeros((2, 3)))
            out = out.toarray() if hasattr(out, "toarray") else out
            assert np.all(np.isfinite(out))
        else:
            assert estimator.predict(np.zeros((2, 3))).shape == (2,)
