"""What a private fit costs: CPU seconds, peak memory, and BLAS threads.

Every fit runs in a fresh child process on synthetic data (``X`` uniform in
``[-1, 1]^d``, made block by block so that making it leaves no temporary
behind; labels from a random linear model, regression targets in
``[-1, 1]``) and reports

* ``cpu s`` and ``wall s``: of the fit alone (``time.process_time`` and
  ``time.perf_counter``), medians over ``--rounds``;
* ``peak MB``: the process's peak resident memory during the fit (Linux:
  ``VmHWM``, reset just before the fit; elsewhere ``ru_maxrss``, which
  also counts what came before), and ``over X``: that peak less the
  resident memory before the fit, in MB and in copies of ``X``;
* ``traced MB`` (with ``--tracemalloc``, in another child): the peak of
  the memory allocated during the fit, by :mod:`tracemalloc`;
* ``digest``: a hash of the fitted model (its array attributes and its
  outputs on 1,000 fixed rows). Fits are seeded, so two source trees whose
  digests agree released the same model.

Part ``threads``: ``DPLinearRegression(method='adassp')`` and ``DPPCA`` at
``n`` in ``--threads-n`` (x 50 features) while ``--busy`` other processes
spin on the CPU, as on a shared machine whose cores are taken.

Part ``memory``: every private estimator at ``--n`` x ``--d`` (default
1,000,000 x 50: ``X`` is 400 MB), with declared bounds and with bounds read
from the data, next to scikit-learn's ``LogisticRegression``.

``--tree NAME=PATH`` (repeatable) measures the ``skdp`` of each source tree
(a checkout's root), alternating between them round by round; the default
is this checkout. Run from the repository root::

    python benchmarks/fit_cost.py
    python benchmarks/fit_cost.py --tree before=../main --tree after=. --busy 1
    python benchmarks/fit_cost.py --part memory --only logreg --tracemalloc
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from _peers import measure_functions

ROOT = Path(__file__).resolve().parents[1]
PROBE_ROWS = 1000


# ------------------------------------------------------------------ the child
def _data(n: int, d: int):
    """``X`` (n x d), binary labels and bounded regression targets."""
    rng = np.random.default_rng(0)
    X = np.empty((n, d))
    score = np.empty(n)
    w = rng.standard_normal(d)
    for start in range(0, n, 65536):
        stop = min(start + 65536, n)
        X[start:stop] = rng.uniform(-1.0, 1.0, (stop - start, d))
        score[start:stop] = X[start:stop] @ w
    labels = (score > 0).astype(np.int64)
    targets = np.clip(score / np.sqrt(d), -1.0, 1.0)
    return X, labels, targets


def _make(name: str, *args, **params):
    """A factory of ``name`` (``module.Class``), imported when called (a
    source tree may lack some estimators)."""
    import importlib

    module, cls = name.rsplit(".", 1)
    return lambda: getattr(importlib.import_module(module), cls)(*args, **params)


def _estimators(d: int) -> dict:
    """Name -> (estimator factory, target kind): every fit is seeded."""
    norm = float(np.sqrt(d))
    box = (np.full(d, -1.0), np.full(d, 1.0))
    seeded = dict(random_state=0)
    logistic = dict(classes=[0, 1], **seeded)
    regression = dict(y_bounds=(-1, 1), **seeded)
    # The approximate-DP fits at delta=1e-5, pinned (skdp's default is
    # DEFAULT_DELTA = 1e-6): the figures and digests compare with trees
    # whose defaults were 1e-5.
    pinned = dict(delta=1e-5, **seeded)
    logistic_delta = dict(delta=1e-5, **logistic)
    regression_delta = dict(delta=1e-5, **regression)
    lm, ens = "skdp.linear_model.", "skdp.ensemble."
    logreg, linreg = lm + "DPLogisticRegression", lm + "DPLinearRegression"
    forest, boost = ens + "DPRandomForest", ens + "DPHistGradientBoosting"
    return {
        "logreg objective": (
            _make(logreg, method="objective", data_norm=norm, **logistic),
            "labels",
        ),
        "logreg objective, norm read": (
            _make(logreg, method="objective", **logistic),
            "labels",
        ),
        "logreg output": (
            _make(logreg, method="output", data_norm=norm, **logistic),
            "labels",
        ),
        "logreg gradient, 1 epoch": (
            _make(
                logreg, method="gradient", data_norm=norm, epochs=1, **logistic_delta
            ),
            "labels",
        ),
        "linreg adassp": (
            _make(linreg, method="adassp", data_norm=norm, **regression_delta),
            "targets",
        ),
        "linreg adassp, norm read": (
            _make(linreg, method="adassp", **regression_delta),
            "targets",
        ),
        "linreg objective": (
            _make(linreg, method="objective", data_norm=norm, **regression),
            "targets",
        ),
        "linear svc objective": (
            _make(lm + "DPLinearSVC", method="objective", data_norm=norm, **logistic),
            "labels",
        ),
        "pca": (_make("skdp.decomposition.DPPCA", 5, data_norm=norm, **pinned), None),
        "pca, norm read": (_make("skdp.decomposition.DPPCA", 5, **pinned), None),
        "kmeans": (_make("skdp.cluster.DPKMeans", 4, bounds=box, **seeded), None),
        "kmeans, bounds read": (_make("skdp.cluster.DPKMeans", 4, **seeded), None),
        "gaussian nb": (
            _make("skdp.naive_bayes.DPGaussianNB", bounds=box, **logistic),
            "labels",
        ),
        "standard scaler": (
            _make("skdp.preprocessing.DPStandardScaler", bounds=box, **seeded),
            None,
        ),
        "kbins discretizer": (
            _make("skdp.preprocessing.DPKBinsDiscretizer", 5, bounds=box, **seeded),
            None,
        ),
        "random forest clf": (
            _make(forest + "Classifier", n_estimators=10, bounds=box, **logistic_delta),
            "labels",
        ),
        "random forest reg": (
            _make(
                forest + "Regressor", n_estimators=10, bounds=box, **regression_delta
            ),
            "targets",
        ),
        "hist boosting clf": (
            _make(boost + "Classifier", bounds=box, **logistic_delta),
            "labels",
        ),
        "hist boosting reg": (
            _make(boost + "Regressor", bounds=box, **regression_delta),
            "targets",
        ),
        "sklearn LogisticRegression": (
            _make("sklearn.linear_model.LogisticRegression", max_iter=1000),
            "labels",
        ),
    }


def _digest(estimator, probe) -> str:
    """A hash of the model: array attributes and outputs on ``probe``."""
    parts = []
    for name in sorted(vars(estimator)):
        value = vars(estimator)[name]
        if name.endswith("_") and not name.startswith("_"):
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                parts.append((name, value.tobytes()))
            elif isinstance(value, int | float):
                parts.append((name, repr(value).encode()))
    for method in ("predict_proba", "predict", "transform", "decision_function"):
        if hasattr(estimator, method):
            output = getattr(estimator, method)(probe)
            output = output.toarray() if hasattr(output, "toarray") else output
            output = np.asarray(output)
            if output.dtype.kind not in "biuf":
                output = output.astype(str)
            parts.append((method, np.ascontiguousarray(output).tobytes()))
    hasher = hashlib.sha256()
    for name, data in parts:
        hasher.update(name.encode() + b"\0" + data)
    return hasher.hexdigest()[:12]


def child(case: str, n: int, d: int, traced: bool) -> dict:
    """Fit ``case`` once on n x d rows; the figures as a dict."""
    import gc

    X, labels, targets = _data(n, d)
    probe = _data(PROBE_ROWS, d)[0] * 1.5  # some rows beyond the bounds
    factory, kind = _estimators(d)[case]
    y = {"labels": labels, "targets": targets, None: None}[kind]
    estimator = factory()
    measure = measure_functions()
    gc.collect()
    resets = measure["reset_peak"]()
    before = measure["status_mb"]("VmRSS")
    if traced:
        tracemalloc.start()
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X) if y is None else estimator.fit(X, y)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20 if traced else None
    tracemalloc.stop()
    peak = measure["status_mb"]("VmHWM") if resets else None
    if peak is None:  # not Linux: the whole process's peak
        peak = measure["maxrss_mb"]()
    return {
        "cpu": cpu,
        "wall": wall,
        "peak": peak,
        "over": None if before is None else peak - before,
        "x_mb": X.nbytes / 2**20,
        "traced": traced_peak,
        "digest": _digest(estimator, probe),
    }


# ----------------------------------------------------------------- the parent
def _spinners(count: int) -> list:
    """``count`` processes that keep a core busy each, like other users' jobs."""
    code = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


def _run_child(tree: Path, case: str, n: int, d: int, traced: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, __file__, "--child", case, str(n), str(d)]
    if traced:
        command.append("--tracemalloc")
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _measure(trees, cases, rounds, traced) -> dict:
    """``{(case, n, tree): [runs]}``, the trees alternating round by round."""
    runs: dict = {}
    for _ in range(rounds):
        for case, n, d in cases:
            for name, path in trees:
                result = _run_child(path, case, n, d, traced=False)
                runs.setdefault((case, n, name), []).append(result)
    if traced:
        for case, n, d in cases:
            for name, path in trees:
                result = _run_child(path, case, n, d, traced=True)
                runs[(case, n, name)][0]["traced"] = result["traced"]
    return runs


def _median(runs, key):
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else float("nan")


def _table(runs, cases, trees, *, show_n: bool) -> None:
    names = [name for name, _ in trees]
    head = f"{'fit':30s} " + (f"{'n':>9s} " if show_n else "")
    head += (
        f"{'tree':>8s} {'cpu s':>7s} {'wall s':>7s} {'peak MB':>8s} "
        f"{'over X MB':>9s} {'copies':>6s} {'traced MB':>9s} {'digest':>12s}"
    )
    print(head)
    print("-" * len(head))
    for case, n, _ in cases:
        for name in names:
            group = runs[(case, n, name)]
            over = _median(group, "over")
            traced = group[0]["traced"]
            row = f"{case:30s} " + (f"{n:9d} " if show_n else "")
            cpu, wall = _median(group, "cpu"), _median(group, "wall")
            row += (
                f"{name:>8s} {cpu:7.2f} {wall:7.2f} "
                f"{_median(group, 'peak'):8.0f} {over:9.0f} "
                f"{over / group[0]['x_mb']:6.2f} "
                f"{'' if traced is None else f'{traced:.0f}':>9s} "
                f"{group[0]['digest']:>12s}"
            )
            print(row)
        first = runs[(case, n, names[0])]
        for name in names[1:]:
            group = runs[(case, n, name)]
            pairs = zip(first, group, strict=True)
            ratio = statistics.median(b["cpu"] / a["cpu"] for a, b in pairs)
            same = group[0]["digest"] == first[0]["digest"]
            model = "the same model" if same else "another model"
            print(f"{'':30s} {name} / {names[0]}: cpu x{ratio:.2f}, {model}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["threads", "memory", "all"], default="all")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a source tree whose skdp to measure (repeatable); default: this one",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=float, default=1e6, help="rows, memory part")
    parser.add_argument("--d", type=int, default=50, help="features")
    parser.add_argument("--threads-n", type=float, nargs="+", default=[1e5, 1e6])
    parser.add_argument(
        "--busy", type=int, default=1, help="spinning processes, threads part"
    )
    parser.add_argument("--only", default="", help="substring of the fits to run")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "N", "D"))
    args = parser.parse_args()

    if args.child:
        case, n, d = args.child[0], int(args.child[1]), int(args.child[2])
        print(json.dumps(child(case, n, d, args.tracemalloc)))
        return

    trees = [tuple(t.split("=", 1)) for t in args.tree] or [("this", str(ROOT))]
    trees = [(name, Path(path).resolve()) for name, path in trees]
    shown = ", ".join(f"{name}={path.name}" for name, path in trees)
    print(f"trees: {shown}; rounds={args.rounds}")
    if args.part in ("threads", "all"):
        cases = [
            (case, int(n), args.d)
            for n in args.threads_n
            for case in ("linreg adassp", "pca")
            if args.only in case
        ]
        print(f"\nBLAS threads: {args.busy} other process(es) spinning")
        spinners = _spinners(args.busy)
        try:
            runs = _measure(trees, cases, args.rounds, traced=False)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
        _table(runs, cases, trees, show_n=True)
    if args.part in ("memory", "all"):
        names = [c for c in _estimators(args.d) if args.only in c]
        cases = [(case, int(args.n), args.d) for case in names]
        print(f"\nMemory: {int(args.n)} x {args.d} float64 (X in memory)")
        runs = _measure(trees, cases, args.rounds, traced=args.tracemalloc)
        _table(runs, cases, trees, show_n=False)


if __name__ == "__main__":
    main()
