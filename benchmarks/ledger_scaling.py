"""How accounting time grows with the ledger, before and after issue 12.

Measures, as a ledger of mixed entries grows (what ``GridSearchCV`` over
epsilon and C produces: DP-SGD runs whose folds each have their own sampling
rate, and pure objective-perturbation fits):

* one ``budget.spend(event)`` of a new, distinct DP-SGD event;
* ``budget.spent()``;
* ``repr(DPLogisticRegression(budget=budget))``, which scikit-learn calls in
  every notebook display, ``GridSearchCV`` repr and log line;

for an in-memory and a SQLite ledger, and the wall time of
``GridSearchCV(n_jobs=2)`` over 27 DP-SGD fits (3 epsilons x 3 C x 3
folds, plus the refit) spending into one budget.

"Before" is the code just before issue 12 (the parent of the commit that
added ``skdp/accounting/_pld.py``), extracted with ``git archive`` and run in
a subprocess; "after" is this checkout. Before issue 12 every call composed
the whole ledger again, so the old code is measured up to ``--before-max``
entries only (its time grows linearly; at 1,000 entries a spend takes
minutes).

The ledger at each size is written directly into the store (no
composition), then one ``spent()`` brings the budget's composed state up to
date (reported as "catch-up": what reopening a ledger costs once), then a
spend, ``spent()`` and the repr are timed (median of ``--repeats``). The
new event's privacy loss distribution and Renyi curve are computed
beforehand (``accountant.prepare``), as the fit's calibration does for the
event it charges; that one-off cost is reported separately.

Run from the repository root (about 15 minutes on two cores)::

    python benchmarks/ledger_scaling.py
    python benchmarks/ledger_scaling.py --sizes 10 50 100 200 --before-max 200
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (10, 50, 100, 200, 500, 1000)
# Noise multipliers calibrated (replace one row, delta 1e-5) for 10 epochs of
# batches of 256 out of 16,000 rows at epsilon 0.3, 1 and 3; each entry
# perturbs them slightly so that no two DP-SGD entries are equal.
SIGMAS = (7.26, 2.48, 1.05)


def mixed_event(i: int):
    """Entry ``i`` of the ledger: 3 DP-SGD runs for 1 pure fit."""
    from skdp.accounting import PoissonSubsampledGaussianEvent, PureDPEvent

    if i % 4 == 3:
        return PureDPEvent(0.1 * (1 + i % 5))
    n_rows = 16000 + 7 * (i % 97)  # folds of different sizes
    q = 256 / n_rows
    steps = math.ceil(10 / q)
    sigma = SIGMAS[i % 3] * (1 + 1e-3 * (i % 89))
    return PoissonSubsampledGaussianEvent(q, sigma, steps)


def _record(event):
    """What a spend of ``event`` stores: since issue 25 the event with the
    ``(epsilon, delta)`` the budget charged (here a Renyi bound at delta
    1e-8, cheap and valid), before it the bare event."""
    try:
        from skdp.accounting import RDPAccountant
        from skdp.accounting._composition import pure_epsilon
        from skdp.accounting._filters import CertifiedEvent
    except ImportError:
        return event
    pure = pure_epsilon([event])
    if pure is not None:
        return CertifiedEvent(event, pure, 0.0)
    return CertifiedEvent(event, RDPAccountant().epsilon_delta([event], 1e-8)[0], 1e-8)


def _fill(budget, n: int, first: int = 0) -> None:
    """Write ``n`` entries straight into the store: no accounting at all."""
    for i in range(first, first + n):
        record = _record(mixed_event(i))
        budget.store.append_if(record, f"fit {i}", lambda events: None)


def _spend(budget, event):
    """A spend; since issue 25 a DP-SGD run names its (tiny) share of delta."""
    try:
        return budget.spend(event, label="new fit", delta=1e-8)
    except TypeError:  # before issue 25: no delta argument
        return budget.spend(event, label="new fit")


def _timed(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_ledger(sizes, repeats: int, workdir: str) -> list[dict]:
    """Times at each ledger size, for memory and SQLite ledgers."""
    warnings.simplefilter("ignore")
    from skdp import DPLogisticRegression, PrivacyBudget

    rows = []
    for kind, first in (("memory", 0), ("sqlite", 50_000)):
        # Different entries for each ledger, so that no event is cached.
        for n in sizes:
            ledger = None
            if kind == "sqlite":
                ledger = os.path.join(workdir, f"ledger-{n}-{time.time_ns()}.db")
            budget = PrivacyBudget(math.inf, 1e-3, ledger=ledger)
            _fill(budget, n, first)
            start = time.perf_counter()
            budget.spent()
            catch_up = time.perf_counter() - start
            estimator = DPLogisticRegression(budget=budget)
            spend_times, prepare_times = [], []
            for k in range(repeats):
                event = mixed_event(first + 4 * (n + k))  # a new DP-SGD run
                start = time.perf_counter()
                if hasattr(budget.accountant, "prepare"):
                    budget.accountant.prepare(event)
                prepare_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                _spend(budget, event)
                spend_times.append(time.perf_counter() - start)
            spent = _timed(budget.spent, repeats)
            representation = _timed(functools.partial(repr, estimator), repeats)
            rows.append(
                {
                    "ledger": kind,
                    "entries": n,
                    "catch_up": catch_up,
                    "prepare": statistics.median(prepare_times),
                    "spend": statistics.median(spend_times),
                    "spent": spent,
                    "repr": representation,
                    "epsilon": budget.spent()[0],
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def measure_grid(n_jobs: int, workdir: str) -> dict:
    """Wall time of GridSearchCV(n_jobs) over 27 DP-SGD fits into one budget."""
    warnings.simplefilter("ignore")
    import numpy as np
    from sklearn.model_selection import GridSearchCV

    from skdp import DPLogisticRegression, PrivacyBudget

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.3 * rng.normal(size=6000) > 0).astype(int)
    ledger = os.path.join(workdir, f"grid-{time.time_ns()}.db")
    budget = PrivacyBudget(math.inf, 1e-3, ledger=ledger)
    estimator = DPLogisticRegression(
        method="gradient",
        delta=1e-5,
        data_norm=1.0,
        classes=[0, 1],
        budget=budget,
        random_state=0,
    )
    grid = GridSearchCV(
        estimator,
        {"epsilon": [0.3, 1.0, 3.0], "C": [0.1, 1.0, 10.0]},
        cv=3,
        n_jobs=n_jobs,
    )
    start = time.perf_counter()
    grid.fit(X, y)
    wall = time.perf_counter() - start
    return {"fits": len(budget.ledger), "wall": wall, "epsilon": budget.spent()[0]}


def _worker(args) -> None:
    workdir = tempfile.mkdtemp(prefix="skdp-ledger-scaling-")
    out = {"ledger": measure_ledger(args.sizes, args.repeats, workdir)}
    if not args.no_grid:
        out["grid"] = measure_grid(2, workdir)
    print(json.dumps(out))


def _before_revision() -> str:
    added = subprocess.run(
        [
            "git",
            "log",
            "--diff-filter=A",
            "--format=%H",
            "--",
            "skdp/accounting/_pld.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not added:
        raise SystemExit("No commit adds skdp/accounting/_pld.py: give --before.")
    return added[-1] + "^"


def _extract(revision: str, directory: str) -> None:
    archive = os.path.join(directory, "skdp.tar")
    subprocess.run(
        ["git", "archive", "--format=tar", "-o", archive, revision, "skdp"],
        cwd=ROOT,
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")


def _run(code_dir: str, args, sizes) -> dict:
    command = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats)]
    command += ["--sizes", *map(str, sizes)]
    if args.no_grid:
        command.append("--no-grid")
    env = {**os.environ, "PYTHONPATH": code_dir}
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.stderr.write(result.stderr)
        raise SystemExit(f"The measurement with {code_dir} failed.")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _table(before: dict, after: dict) -> str:
    old = {(r["ledger"], r["entries"]): r for r in before["ledger"]}
    lines = [
        "| ledger | entries | spend before | spend after | spent() before | "
        "spent() after | repr before | repr after | new event's PLD+curve | "
        "catch-up after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def ms(row, key):
        return "not run" if row is None else f"{1000 * row[key]:.0f} ms"

    for row in after["ledger"]:
        prior = old.get((row["ledger"], row["entries"]))
        lines.append(
            f"| {row['ledger']} | {row['entries']} | {ms(prior, 'spend')} | "
            f"{ms(row, 'spend')} | {ms(prior, 'spent')} | {ms(row, 'spent')} | "
            f"{ms(prior, 'repr')} | {ms(row, 'repr')} | {ms(row, 'prepare')} | "
            f"{row['catch_up']:.1f} s |"
        )
    if "grid" in after:
        lines += [
            "",
            "| GridSearchCV(n_jobs=2), 27 DP-SGD fits + refit | before | after |",
            "|---|---:|---:|",
            f"| wall time | {before['grid']['wall']:.1f} s | "
            f"{after['grid']['wall']:.1f} s |",
            f"| epsilon spent (budget's accountant) | "
            f"{before['grid']['epsilon']:.2f} | {after['grid']['epsilon']:.2f} |",
        ]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--before-max", type=int, default=200)
    parser.add_argument("--before", default=None, help="git revision of 'before'")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-grid", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args)
        return
    revision = args.before or _before_revision()
    with tempfile.TemporaryDirectory() as directory:
        _extract(revision, directory)
        before_sizes = [n for n in args.sizes if n <= args.before_max]
        print(f"before: {revision}, sizes {before_sizes}", file=sys.stderr)
        before = _run(directory, args, before_sizes)
    print("after: this checkout", file=sys.stderr)
    after = _run(str(ROOT), args, args.sizes)
    print(_table(before, after))


if __name__ == "__main__":
    main()
