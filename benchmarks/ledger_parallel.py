"""How many of a grid search's fits reach the shared budget, and what a spend costs.

A 3 x 3 grid over ``epsilon`` and ``C`` with ``cv=3`` makes 27 fits plus the
refit: 28 spends. The first table runs it sequentially, in two joblib worker
processes and on a two-worker ``distributed.LocalCluster`` (processes), with an
in-memory budget and with a SQLite ledger file, and counts what the budget
recorded. The second table times one ``spend`` (median over many) for each
store. The third row set (optional) runs diffprivlib's ``LogisticRegression``
with a ``BudgetAccountant`` through the same grid, for comparison.

Run from the repository root (skdp's test extras installed)::

    python benchmarks/ledger_parallel.py

(or ``PYTHONPATH=. python benchmarks/ledger_parallel.py`` without installing).
diffprivlib runs in its own virtualenv, which this script calls if it exists
(``--peer`` is the entry point it uses there)::

    python -m venv ../venvs/diffprivlib
    ../venvs/diffprivlib/bin/pip install diffprivlib==0.6.6
    ../venvs/diffprivlib/bin/python benchmarks/ledger_parallel.py --peer

The estimator in the skdp rows is a stand-in private classifier that charges
``LaplaceEvent(epsilon)`` per fit (``skdp.DPLogisticRegression`` is used
instead when it is available). Times depend on machine load; the recorded
counts do not.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np
from _peers import peer_python  # benchmarks/ is on sys.path
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

GRID = {"epsilon": [0.1, 0.2, 0.3], "C": [0.1, 1.0, 10.0]}
CV = 3
PEER_VENV = Path(peer_python("diffprivlib"))


def _data():
    X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    return X, y


def _run_grid(estimator, n_jobs, backend=None):
    X, y = _data()
    grid = GridSearchCV(estimator, GRID, cv=CV, n_jobs=n_jobs)
    start = time.perf_counter()
    if backend is None:
        grid.fit(X, y)
    else:
        with joblib.parallel_backend(backend):
            grid.fit(X, y)
    return grid, time.perf_counter() - start


def peer_rows():
    """diffprivlib through the same grid (runs inside its own virtualenv)."""
    import warnings

    from diffprivlib import BudgetAccountant
    from diffprivlib.models import LogisticRegression

    warnings.simplefilter("ignore")
    rows = []
    for n_jobs in (1, 2):
        accountant = BudgetAccountant()
        est = LogisticRegression(data_norm=1.0, accountant=accountant)
        grid, seconds = _run_grid(est, n_jobs)
        eps = accountant.total()[0]
        best = grid.best_params_["epsilon"]
        expected = CV * len(GRID["C"]) * sum(GRID["epsilon"]) + best
        rows.append(
            (
                "diffprivlib 0.6.6",
                f"n_jobs={n_jobs}",
                "BudgetAccountant",
                len(accountant),
                eps,
                expected,
                seconds,
            )
        )
    return rows


def skdp_rows():
    from skdp import PrivacyBudget
    from skdp.accounting import LaplaceEvent
    from skdp.base import FitPlan, PrivateEstimatorMixin
    from skdp.utils._sklearn_compat import validate_data

    class StandInClassifier(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
        def __init__(self, epsilon=1.0, C=1.0, budget=None):
            self.epsilon, self.C, self.budget = epsilon, C, budget

        def fit(self, X, y):
            return self._fit_private(X, y)

        def _prepare_fit(self, X, y=None):
            return validate_data(self, X, y)

        def _plan_fit(self, prepared):
            return FitPlan(LaplaceEvent(self.epsilon))

        def _run_fit(self, prepared, plan, source):
            self.classes_ = np.unique(prepared[1])

        def predict(self, X):
            return np.full(len(X), self.classes_[0])

        def score(self, X, y):
            return self.epsilon + self.C

    try:
        from skdp import DPLogisticRegression as cls
    except ImportError:
        cls = StandInClassifier

    import distributed

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=40,
        )
        client = distributed.Client(cluster)
        try:
            for name, n_jobs, backend in [
                ("n_jobs=1", 1, None),
                ("n_jobs=2 (loky)", 2, None),
                ("Dask LocalCluster x2", None, "dask"),
            ]:
                for store in ("memory", "sqlite"):
                    ledger = None
                    if store == "sqlite":
                        ledger = os.path.join(tmp, f"{len(rows)}.db")
                    budget = PrivacyBudget(100.0, 1e-5, ledger=ledger)
                    est = cls(budget=budget)
                    grid, seconds = _run_grid(est, n_jobs, backend)
                    expected = budget.accountant.compose(
                        [
                            cls(**p).fit(*_data()).privacy_event_
                            for p in grid.cv_results_["params"]
                            for _ in range(CV)
                        ]
                        + [cls(**grid.best_params_).fit(*_data()).privacy_event_],
                        budget.delta,
                    ).epsilon
                    rows.append(
                        (
                            f"skdp ({cls.__name__})",
                            name,
                            store,
                            len(budget.ledger),
                            budget.spent()[0],
                            expected,
                            seconds,
                        )
                    )
        finally:
            client.close()
            cluster.close()
    return rows


def spend_latency():
    from skdp import PrivacyBudget
    from skdp.accounting import LaplaceEvent

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for store in ("memory", "sqlite", "sqlite, synchronous=NORMAL (not used)"):
            ledger = None if store == "memory" else os.path.join(tmp, f"{store}.db")
            budget = PrivacyBudget(1e9, ledger=ledger)
            if "NORMAL" in store:  # what the fsync at every commit costs
                budget.store.entries()
                budget.store._conn.execute("PRAGMA synchronous=NORMAL")
            times = []
            for _ in range(300):
                start = time.perf_counter()
                budget.spend(LaplaceEvent(1.0))
                times.append(time.perf_counter() - start)
            out.append(
                (store, 1e3 * np.median(times[:50]), 1e3 * np.median(times[-50:]))
            )
    return out


def _print(rows):
    header = [
        "library",
        "backend",
        "ledger",
        "spends recorded (target 28)",
        "epsilon recorded",
        "epsilon of 28 fits",
        "seconds",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for lib, backend, store, n, eps, expected, seconds in rows:
        print(
            f"| {lib} | {backend} | {store} | {n} | {eps:.4g} | {expected:.4g} "
            f"| {seconds:.2f} |"
        )


def main():
    if "--peer" in sys.argv:
        _print(peer_rows())
        return
    print(f"load average before: {os.getloadavg()}")
    rows = skdp_rows()
    _print(rows)
    if PEER_VENV.exists():
        print()
        result = subprocess.run(
            [str(PEER_VENV), __file__, "--peer"], capture_output=True, text=True
        )
        print(result.stdout or result.stderr[-2000:])
    print("\n| store | ms per spend (entries 0-50) | ms per spend (entries 250-300) |")
    print("|---|---|---|")
    for store, first, last in spend_latency():
        print(f"| {store} | {first:.3f} | {last:.3f} |")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
