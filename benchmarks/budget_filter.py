"""What the budget's proved filter costs, against the figure main reported.

For four ledgers, the epsilon the budget reports:

* **today**: main before issue 25 (``--before``, default c15a8ef), whose
  budget reported the tightest composition of the whole ledger (privacy
  loss distributions included) as if every spend had been fixed in
  advance, with continuous events for the discrete noise that ran;
* **adaptive, basic**: this checkout's default filter, each spend charged
  its own tight ``(epsilon_i, delta_i)`` (DP-SGD fits get an equal share of
  delta each), valid however the spends were chosen;
* **adaptive, renyi**: ``composition="renyi"``, the Renyi filter;
* **declared**: the same spends declared before the first ran
  (``PrivacyBudget.declare``), composed tightly.

Ledgers (delta 1e-5 unless said):

1. ``GridSearchCV`` of DP-SGD ``DPLogisticRegression`` over epsilon in
   {0.3, 1, 3} and C in {0.1, 1, 10}, 3 folds, plus the refit at epsilon 3
   (28 fits; 6,000 x 5 synthetic rows);
2. 200 mixed entries: DP-SGD runs with distinct sampling rates alternating
   with pure fits (``benchmarks/ledger_scaling.py``'s ledger);
3. 30 counts at epsilon 1 (``skdp.tools.count``; delta 1e-6, a negligible
   Gaussian release alongside so that delta matters);
4. a fully private pipeline (scaler at 0.1 + DP-SGD at 0.9, the README's)
   plus ``PMWSynthesizer`` at epsilon 1 on one budget.

Run from the repository root (a few minutes)::

    python benchmarks/budget_filter.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5


def _grid_data():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.3 * rng.normal(size=6000) > 0).astype(int)
    return X, y


def _fold_sizes(n, folds=3):
    return [n - n // folds - (1 if i < n % folds else 0) for i in range(folds)]


def ledgers(delta_share):
    """Each ledger as a list of (event, delta) in spending order.

    ``delta_share(k)`` is the delta each of ``k`` Gaussian spends gets.
    """
    import numpy as np

    from skdp import DPLogisticRegression, PMWSynthesizer
    from skdp.accounting import GaussianEvent, PoissonSubsampledGaussianEvent
    from skdp.preprocessing import DPStandardScaler

    out = {}
    X, y = _grid_data()
    spends = []
    share = delta_share(28)
    for epsilon in (0.3, 1.0, 3.0):
        for C in (0.1, 1.0, 10.0):
            for size in _fold_sizes(len(X)):
                model = DPLogisticRegression(
                    method="gradient",
                    epsilon=epsilon,
                    delta=share,
                    C=C,
                    data_norm=1.0,
                    classes=[0, 1],
                )
                spends.append((model.privacy_plan(X[:size], y[:size]).event, share))
    refit = DPLogisticRegression(
        method="gradient", epsilon=3.0, delta=share, data_norm=1.0, classes=[0, 1]
    )
    spends.append((refit.privacy_plan(X, y).event, share))
    out["GridSearchCV, 28 DP-SGD fits"] = spends

    spends = []
    share = delta_share(150)
    for i in range(200):
        if i % 4 == 3:
            from skdp.accounting import PureDPEvent

            spends.append((PureDPEvent(0.1 * (1 + i % 5)), 0.0))
            continue
        n_rows = 16000 + 7 * (i % 97)
        q = 256 / n_rows
        sigma = (7.26, 2.48, 1.05)[i % 3] * (1 + 1e-3 * (i % 89))
        event = PoissonSubsampledGaussianEvent(q, sigma, math.ceil(10 / q))
        spends.append((event, share))
    out["200 mixed entries"] = spends

    from skdp.tools import count

    class _Recorder:
        """A budget stand-in that keeps the events count charges."""

        def __init__(self):
            self.events = []

        def spend(self, event, label=None, **_):
            self.events.append(event)

    recorder = _Recorder()
    for _ in range(30):
        try:
            count(np.ones((50, 1)), epsilon=1.0, budget=recorder, random_state=0)
        except (TypeError, AttributeError):
            return out  # an older count that needs a real budget
    out["30 counts at epsilon 1 (delta 1e-6)"] = [(GaussianEvent(1000.0), 5e-7)] + [
        (event, 0.0) for event in recorder.events
    ]

    from skdp.datasets import load_adult

    adult = load_adult()
    rows = adult.data[:20000]
    numeric = [0, 4, 10, 11, 12]
    bounds = ([17, 1, 0, 0, 1], [90, 16, 20_000, 5_000, 99])
    scaler = DPStandardScaler(epsilon=0.1, bounds=bounds)
    spends = [(scaler.privacy_plan(rows[:, numeric]).event, 0.0)]
    share = delta_share(2)
    Z = np.ones((len(rows), 104)) / math.sqrt(104)  # one-hot + scaled, unit rows
    model = DPLogisticRegression(
        epsilon=0.9, delta=share, data_norm=1.0, classes=[0, 1]
    )
    spends.append((model.privacy_plan(Z, adult.target[:20000]).event, share))
    columns = [1, 3, 5, 7, 8, 9, 13]
    categories = [
        list(range(len(adult.categories[adult.feature_names[c]]))) for c in columns
    ]
    synth = PMWSynthesizer(epsilon=1.0, delta=share, categories=categories)
    codes = rows[:, columns].astype(int)
    spends.append((synth.privacy_plan(codes).event, share))
    out["pipeline (scaler + DP-SGD) + PMW"] = spends
    return out


def measure_after() -> dict:
    warnings.simplefilter("ignore")
    from skdp import PrivacyBudget

    figures = {}
    for name, spends in ledgers(lambda k: DELTA / k).items():
        delta = 1e-6 if "1e-6" in name else DELTA
        row = {}
        for composition in ("basic", "renyi"):
            budget = PrivacyBudget(math.inf, delta, composition=composition)
            for event, share in spends:
                budget.spend(event, delta=share or None)
            row[composition] = budget.spent()[0]
        declared = PrivacyBudget(math.inf, delta)
        declared.declare([event for event, _ in spends], delta=delta)
        row["declared"] = declared.spent()[0]
        figures[name] = row
    return figures


def measure_before() -> dict:
    """main's figures: every spend recorded, the whole ledger composed."""
    warnings.simplefilter("ignore")
    from skdp import PrivacyBudget

    figures = {}
    for name, spends in ledgers(lambda k: DELTA).items():
        delta = 1e-6 if "1e-6" in name else DELTA
        budget = PrivacyBudget(math.inf, delta)
        for event, _ in spends:
            budget.spend(event)
        figures[name] = {"today": budget.spent()[0]}
    return figures


def _extract(revision: str, directory: str) -> None:
    archive = os.path.join(directory, "skdp.tar")
    subprocess.run(
        ["git", "archive", "--format=tar", "-o", archive, revision, "skdp"],
        cwd=ROOT,
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="c15a8ef")
    parser.add_argument("--worker", choices=["before", "after"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        result = measure_before() if args.worker == "before" else measure_after()
        print(json.dumps(result))
        return
    results = {}
    with tempfile.TemporaryDirectory() as old:
        _extract(args.before, old)
        for worker, code in (("before", old), ("after", str(ROOT))):
            env = {**os.environ, "PYTHONPATH": code}
            run = subprocess.run(
                [sys.executable, __file__, "--worker", worker],
                env=env,
                capture_output=True,
                text=True,
            )
            if run.returncode:
                sys.stderr.write(run.stderr)
                raise SystemExit(f"The {worker} measurement failed.")
            results[worker] = json.loads(run.stdout.strip().splitlines()[-1])
    print(
        "| ledger | today (main, not valid adaptively) | adaptive, basic (default) "
        "| adaptive, renyi | declared in advance |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, row in results["after"].items():
        today = results["before"].get(name, {}).get("today", math.nan)
        print(
            f"| {name} | {today:.3f} | {row['basic']:.3f} | {row['renyi']:.3f} | "
            f"{row['declared']:.3f} |"
        )


if __name__ == "__main__":
    main()
