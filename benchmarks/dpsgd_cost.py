"""What DP-SGD costs: CPU seconds and peak memory, on UCI Adult and at 1M x 50.

Every measurement runs in a fresh Python process (so the calibration cache
starts cold) and is repeated ``--rounds`` times; medians are printed. With
``--against DIR`` (another checkout of skdp, e.g. the main branch) each round
runs the measurement on both checkouts, alternating which goes first, and
the table shows both and their ratio.

Measurements (``DPLogisticRegression(method="gradient", data_norm=1.0)``
with its defaults, batch_size=256 and epochs=10, and delta=1e-5, pinned at
the value these figures were first measured with; skdp's default is 1e-6):

* ``import skdp``: importing the package, once per process (timed on its
  own, before the fits, as scikit-learn is imported before its fits);
* ``adult fit, cold``: one fit at epsilon=1 on the logistic benchmark's
  Adult training split (``_adult_split.load_data``: 24,129 x 103, rows of
  unit norm), the first in its process: calibration included;
* ``traced peak``: the largest memory the cold fit allocates
  (``tracemalloc``, a separate run);
* ``adult fit, warm``: a second fit in the same process (another seed):
  the calibration is cached;
* ``sklearn lbfgs``: scikit-learn's ``LogisticRegression`` on the same
  rows, one BLAS thread (median of 3 fits), in the same process; the
  ratios to it are taken round by round and printed as their median and
  range;
* ``release: ...``: the same three in another process with
  ``random_state=None`` (the setting for releases: noise and subsamples
  from the operating system's CSPRNG, which seeded fits do not pay);
* ``calibration, cold``: ``plan_fit`` alone (validation and the noise
  calibration; nothing is charged or fitted);
* ``GridSearchCV``: 27 candidates (epsilon x C x max_grad_norm, 3 each),
  3-fold, on Adult, one process: the calibrations each (epsilon, n) needs
  once, the rest from the cache (their count is printed);
* ``1M x 50 fit``: synthetic float64 rows of unit norm, 1,000,000 x 50
  (381 MiB), epsilon=1: ``plan_fit`` (the calibration, cold), then the fit
  (calibration cached); the peak resident memory of the process (the
  interpreter and its libraries hold about 210 MiB of it), and its growth
  in plan and fit, against the size of X. ``full-batch`` is the same with
  ``batch_size="full"``.

Run from the repository root::

    python benchmarks/dpsgd_cost.py                      # ~5 minutes
    python benchmarks/dpsgd_cost.py --against ../main    # before/after
    python benchmarks/dpsgd_cost.py --skip large --rounds 5
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

MEASURES = (
    "adult",
    "adult_release",
    "adult_memory",
    "calibration",
    "grid",
    "large",
    "full_batch",
)
LARGE_SHAPE = (1_000_000, 50)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _model(**params):
    from skdp import DPLogisticRegression

    return DPLogisticRegression(
        method="gradient", data_norm=1.0, classes=[0, 1], delta=1e-5, **params
    )


def _adult():
    from _adult_split import load_data

    X, _, y, _ = load_data()
    return X, y


def _cpu(function) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def _measure_adult(prefix: str, cold_seed, warm_seed) -> dict:
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    X, y = _adult()
    imported = _cpu(lambda: importlib.import_module("skdp"))
    cold = _cpu(lambda: _model(epsilon=1.0, random_state=cold_seed).fit(X, y))
    warm = _cpu(lambda: _model(epsilon=1.0, random_state=warm_seed).fit(X, y))
    with threadpool_limits(limits=1, user_api="blas"):
        lbfgs = statistics.median(
            _cpu(lambda: LogisticRegression(max_iter=1000).fit(X, y)) for _ in range(3)
        )
    return {
        f"{prefix}import skdp": imported,
        f"{prefix}adult fit, cold": cold,
        f"{prefix}adult fit, warm": warm,
        f"{prefix}sklearn lbfgs": lbfgs,
    }


def measure_adult() -> dict:
    return _measure_adult("", 0, 1)


def measure_adult_release() -> dict:
    # random_state=None, the setting for releases: the noise and the
    # subsamples come from the operating system's CSPRNG.
    return _measure_adult("release: ", None, None)


def measure_adult_memory() -> dict:
    import tracemalloc

    X, y = _adult()
    tracemalloc.start()
    _model(epsilon=1.0, random_state=0).fit(X, y)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    return {f"adult fit, cold: traced peak MiB (X: {X.nbytes / 2**20:.0f})": peak}


def _plan(model, X, y) -> None:
    """``model.plan_fit(X, y)``; on a checkout without ``plan_fit``, the
    noise calibration alone, with the fit's (epsilon, delta, q, T) (that
    checkout's fit computes and caches the same)."""
    if hasattr(model, "plan_fit"):
        model.plan_fit(X, y)
        return
    import math

    from skdp.accounting import calibrate_gaussian_noise_multiplier

    rate = 1.0 if model.batch_size == "full" else min(1.0, model.batch_size / len(X))
    steps = math.ceil(model.epochs / rate)
    calibrate_gaussian_noise_multiplier(model.epsilon, model.delta, rate, steps)


def measure_calibration() -> dict:
    X, y = _adult()
    model = _model(epsilon=1.0, random_state=0)
    return {"calibration, cold": _cpu(lambda: _plan(model, X, y))}


def measure_grid() -> dict:
    from sklearn.model_selection import GridSearchCV

    X, y = _adult()
    grid = {
        "epsilon": [0.5, 1.0, 2.0],
        "C": [0.1, 1.0, 10.0],
        "max_grad_norm": [0.25, 0.5, 1.0],
    }
    search = GridSearchCV(_model(random_state=0), grid, cv=3)
    cpu = _cpu(lambda: search.fit(X, y))
    result = {"GridSearchCV, 27 x 3 folds": cpu}
    try:
        from skdp.accounting._calibration import _calibrate_gaussian_noise_multiplier
    except ImportError:  # pragma: no cover - a checkout without the cache
        return result
    info = _calibrate_gaussian_noise_multiplier.cache_info()
    result["  calibrations (cold / cached)"] = f"{info.misses} / {info.hits}"
    return result


def _large_rows():
    import numpy as np

    n, d = LARGE_SHAPE
    X = np.empty((n, d))
    y = np.empty(n, dtype=np.int64)
    rng = np.random.default_rng(0)
    for start in range(0, n, 1 << 16):
        block = rng.standard_normal((min(1 << 16, n - start), d))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        X[start : start + len(block)] = block
        y[start : start + len(block)] = block[:, 0] > 0
    return X, y


def _measure_large(name: str, **params) -> dict:
    import skdp.linear_model  # noqa: F401 (imported before the baseline)

    X, y = _large_rows()
    before = _current_mib()
    model = _model(epsilon=1.0, random_state=0, **params)
    calibration = _cpu(lambda: _plan(model, X, y))
    fit = _cpu(lambda: model.fit(X, y))
    peak = _peak_mib()
    size = X.nbytes / 2**20
    return {
        f"{name}: calibration, cold": calibration,
        f"{name}: fit, calibration cached": fit,
        f"{name}: peak MiB (X: {size:.0f})": peak,
        f"{name}: growth MiB in plan and fit": peak - before,
    }


def measure_large() -> dict:
    return _measure_large("1M x 50 DP-SGD")


def measure_full_batch() -> dict:
    return _measure_large("1M x 50 full-batch", batch_size="full")


def _child(measure: str, tree: str) -> None:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, tree)
    warnings.simplefilter("ignore")
    result = globals()[f"measure_{measure}"]()
    print(json.dumps(result))


def _run(measure: str, tree: Path) -> dict:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        measure,
        "--tree",
        str(tree),
    ]
    output = subprocess.run(command, capture_output=True, text=True)
    if output.returncode:  # e.g. an older checkout without batch_size="full"
        last = (output.stderr.strip().splitlines() or ["(no error output)"])[-1]
        print(f"{measure} failed on {tree}: {last}", file=sys.stderr)
        return {}
    return json.loads(output.stdout.strip().splitlines()[-1])


def _median(values):
    if isinstance(values[0], str):
        return values[0]
    return statistics.median(values)


def _cell(value) -> str:
    return value if isinstance(value, str) else f"{value:.3f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--against", type=Path, help="another skdp checkout, measured alternately"
    )
    parser.add_argument("--skip", nargs="*", default=[], choices=MEASURES)
    parser.add_argument("--child", choices=MEASURES, help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.tree)
        return
    trees = {"this": ROOT}
    if args.against is not None:
        trees = {"against": args.against.resolve(), "this": ROOT}
    results = {name: {} for name in trees}
    for round_index in range(args.rounds):
        order = list(trees) if round_index % 2 == 0 else list(trees)[::-1]
        for measure in MEASURES:
            if measure in args.skip:
                continue
            for name in order:
                for key, value in _run(measure, trees[name]).items():
                    results[name].setdefault(key, []).append(value)
        print(
            f"round {round_index + 1} of {args.rounds} done",
            file=sys.stderr,
            flush=True,
        )
    rows = {name: {k: _median(v) for k, v in results[name].items()} for name in trees}
    for name in trees:
        # Each round's fits and lbfgs ran in one process: the ratio is taken
        # per round (paired), then its median and range over the rounds.
        for prefix in ("", "release: "):
            lbfgs = results[name].get(f"{prefix}sklearn lbfgs")
            for fit in ("adult fit, cold", "adult fit, warm") if lbfgs else ():
                key = prefix + fit
                ratios = [f / r for f, r in zip(results[name][key], lbfgs, strict=True)]
                rows[name][f"  {key} / lbfgs"] = (
                    f"{statistics.median(ratios):.2f}x "
                    f"({min(ratios):.2f}-{max(ratios):.2f})"
                )
    keys = list(dict.fromkeys(k for name in trees for k in rows[name]))
    header = f"{'CPU s (median of ' + str(args.rounds) + ')':<40}" + "".join(
        f"{name + ' (' + str(trees[name].name) + ')':>22}" for name in trees
    )
    if len(trees) == 2:
        header += f"{'this / against':>16}"
    print(header)
    for key in keys:
        cells = [rows[name].get(key, "") for name in trees]
        line = f"{key:<40}" + "".join(f"{_cell(c):>22}" for c in cells)
        if len(trees) == 2 and all(isinstance(c, float) and c for c in cells):
            line += f"{cells[1] / cells[0]:>16.2f}"
        print(line)


if __name__ == "__main__":
    main()
