"""GridSearchCV spends into one budget whether fits run here, in joblib
worker processes or on Dask workers (issue 5)."""

import math
import os
import pickle
import warnings
from itertools import product

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV

from skdp import PrivacyBudget
from skdp.accounting import DEFAULT_DELTA, LaplaceEvent
from skdp.base import FitPlan, PrivateEstimatorMixin
from skdp.utils._sklearn_compat import validate_data

# Expected, not shown: these tests check the accounting of grid searches over
# estimators at their defaults, whose fits read data_norm and classes from
# the data and say so (the leak warning itself is tested elsewhere).
pytestmark = [
    pytest.mark.slow,  # grids in worker processes
    pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning"),
]


EPSILONS = [0.1, 0.2, 0.3]
CS = [0.1, 1.0, 10.0]
CV = 3


class ToyPrivateClassifier(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Charges LaplaceEvent(epsilon) per fit; the label names the process.

    The score improves with epsilon and C so that the refit is predictable
    (epsilon=0.3, C=10).
    """

    def __init__(self, epsilon=1.0, C=1.0, budget=None):
        self.epsilon = epsilon
        self.C = C
        self.budget = budget

    def fit(self, X, y):
        return self._fit_private(X, y)

    def _prepare_fit(self, X, y=None):
        return validate_data(self, X, y)

    def _plan_fit(self, prepared):
        label = f"toy epsilon={self.epsilon} C={self.C} pid={os.getpid()}"
        return FitPlan(LaplaceEvent(self.epsilon, label=label))

    def _run_fit(self, prepared, plan, source):
        self.classes_ = np.unique(prepared[1])

    def predict(self, X):
        X = validate_data(self, X, reset=False)
        return np.full(X.shape[0], self.classes_[0])

    def score(self, X, y):
        return self.epsilon + self.C


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _estimators():
    out = [pytest.param(ToyPrivateClassifier, id="toy")]
    try:
        from skdp import DPLogisticRegression
    except ImportError:
        pass
    else:
        out.append(pytest.param(DPLogisticRegression, id="DPLogisticRegression"))
    return out


def _expected_events(cls, X, y, best_params):
    """What the 27 fits and the refit charge, found by fitting without a budget."""
    events = []
    for epsilon, C in product(EPSILONS, CS):
        est = cls(epsilon=epsilon, C=C)
        if "random_state" in est.get_params():
            est.set_params(random_state=0)
        events += [est.fit(X, y).privacy_event_] * CV
    events.append(cls(**best_params).fit(X, y).privacy_event_)
    return events


def _run_grid(cls, budget, n_jobs, backend=None):
    X, y = _data()
    est = cls(budget=budget)
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    grid = GridSearchCV(
        est, {"epsilon": EPSILONS, "C": CS}, cv=CV, n_jobs=n_jobs, error_score="raise"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=FitFailedWarning)
        if backend is None:
            grid.fit(X, y)
        else:
            with joblib.parallel_backend(backend):
                grid.fit(X, y)
    return grid, X, y


def _assert_all_recorded(budget, grid, cls, X, y):
    ledger = budget.ledger
    assert len(ledger) == 28  # 3 x 3 grid x 3 folds, plus the refit
    assert [e.index for e in ledger] == list(range(28))
    expected = _expected_events(cls, X, y, grid.best_params_)
    # Basic composition of the fits' own certificates: each its epsilon at
    # its own delta (DP-SGD's default, DEFAULT_DELTA; 0 for the toy's pure fits).
    fit_delta = 0.0 if cls is ToyPrivateClassifier else DEFAULT_DELTA
    certificates = [
        budget.accountant.epsilon_delta([event], fit_delta)[0] for event in expected
    ]
    eps, delta = budget.spent()
    # (The expected events come from fits on all rows, the recorded ones from
    # the folds: the grids of their discrete noise differ with the data_norm
    # each reads, which moves epsilon by about 1e-10.)
    assert eps == pytest.approx(math.fsum(certificates), rel=1e-9)
    assert delta == pytest.approx(28 * fit_delta, rel=1e-12)
    if cls is ToyPrivateClassifier:
        # 3 folds x 3 C values x (0.1 + 0.2 + 0.3), plus the refit at 0.3.
        assert grid.best_params_ == {"C": 10.0, "epsilon": 0.3}
        assert eps == pytest.approx(3 * 3 * 0.6 + 0.3, rel=1e-12)
        assert delta == 0.0
        assert ledger[-1].label.endswith(f"pid={os.getpid()}")  # refit here


def _pids(budget):
    return {int(e.label.rsplit("pid=", 1)[1]) for e in budget.ledger}


@pytest.fixture(params=["memory", "sqlite"])
def budget(request, tmp_path):
    ledger = None if request.param == "memory" else tmp_path / "ledger.db"
    # Room for 28 DP-SGD fits at their default delta (DEFAULT_DELTA) each.
    return PrivacyBudget(100.0, 1e-3, ledger=ledger)


@pytest.mark.parametrize("cls", _estimators())
def test_grid_search_sequential_records_every_fit(cls, budget):
    grid, X, y = _run_grid(cls, budget, n_jobs=1)
    _assert_all_recorded(budget, grid, cls, X, y)


@pytest.mark.parametrize("cls", _estimators())
def test_grid_search_in_worker_processes_records_every_fit(cls, budget):
    grid, X, y = _run_grid(cls, budget, n_jobs=2)
    _assert_all_recorded(budget, grid, cls, X, y)
    if cls is ToyPrivateClassifier:
        assert _pids(budget) - {os.getpid()}, "no fit ran in a worker process"


@pytest.mark.parametrize("cls", _estimators())
def test_grid_search_on_dask_workers_records_every_fit(cls, budget, dask_cluster):
    grid, X, y = _run_grid(cls, budget, n_jobs=None, backend="dask")
    _assert_all_recorded(budget, grid, cls, X, y)
    if cls is ToyPrivateClassifier:
        workers = dask_cluster.run(os.getpid)  # {address: pid}
        assert _pids(budget) & set(workers.values()), "no fit ran on a Dask worker"


def test_a_worker_without_the_ledger_fails_the_search(tmp_path):
    # What a worker on a machine without the ledger file sees: the spend is
    # refused (nothing released) and, with every fit failing, scikit-learn
    # raises instead of returning nan scores.
    path = tmp_path / "ledger.db"
    far_away = pickle.loads(pickle.dumps(PrivacyBudget(100.0, ledger=path)))
    path.rename(tmp_path / "elsewhere.db")
    X, y = _data()
    grid = GridSearchCV(ToyPrivateClassifier(budget=far_away), {"C": CS}, cv=CV)
    with pytest.raises(ValueError, match=r"(?s)fits failed.*LedgerError.*same path"):
        grid.fit(X, y)
    assert not path.exists()
