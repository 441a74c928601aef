"""Fits on dask collections bigger than any worker may hold, next to in-memory fits.

A ``distributed.LocalCluster`` of ``--workers`` worker processes (one thread
each) with ``--memory-limit`` each fits, on lazily generated dask arrays
that no process ever holds whole:

* ``DPLogisticRegression`` (each of ``--methods`` among objective, output,
  gradient) on ``--rows`` x 50 float32 features (20M rows = 4 GB) drawn
  per chunk from a seed: features ``N(0, 1/50)`` (row norms about 1,
  ``data_norm=2`` declared), labels from a known logistic model;
* ``DPHistGradientBoostingClassifier`` and ``DPRandomForestClassifier``
  (methods ``boosting``, ``forest``) at their defaults on the same stream,
  the features' bounds declared as [-1, 1];
* ``PMWSynthesizer`` (method ``pmw``) on ``--rows`` x 14 columns with the
  domain sizes of the bundled discretized Adult data, each chunk a seeded
  resample of its rows (so the true distribution is Adult's empirical one),
  all domains declared, default workload.

Each is timed, and every worker's resident memory is sampled during the fit
(``client.run`` with psutil every ``--sample-every`` seconds): the table
shows the largest worker's peak. Beside it, the same estimator fits
``--memory-rows`` rows (the first rows of the same stream) in memory, in a
child process whose peak RSS (``ru_maxrss``) is reported. Accuracy at the
same epsilon: for the logistic models, accuracy on ``--test-rows`` held-out
rows (the Bayes rate of the known model beside them); for PMW, the mean L1
distance between the model's and the true 3-way marginals (64 random
triples; lower is better).

Wall-clock time is noisy on a shared machine. Run from the repository
root::

    python benchmarks/dask_scale.py                            # 20M rows
    python benchmarks/dask_scale.py --rows 2000000 --methods pmw
    python benchmarks/dask_scale.py --rows 1000000 --workers 2 \\
        --memory-limit 4GB --methods boosting,forest        # 1M x 50 trees
    python benchmarks/dask_scale.py --out results.md           # or .json
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import multiprocessing
import resource
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/sparse.py would shadow the sparse package dask imports.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

N_FEATURES = 50
DATA_NORM = 2.0
EPSILON = 1.0
DELTA = 1e-9
LINEAR_METHODS = ("objective", "output", "gradient")
#: The tree ensembles, on the logistic stream (features declared in [-1, 1]).
TREE_METHODS = ("boosting", "forest")


# --- data -----------------------------------------------------------------------


def true_weights(seed):
    rng = np.random.default_rng([seed, 10**6])
    w = rng.normal(size=N_FEATURES)
    return 6.0 * w / np.linalg.norm(w), 0.25  # coefficients, intercept


def logistic_block(seed, index, rows, model_seed=None):
    """Rows ``(X | y)`` of chunk ``index``: float32, label in the last column.

    Labels follow the logistic model of ``model_seed`` (default: ``seed``).
    """
    rng = np.random.default_rng([seed, index])
    X = rng.standard_normal((rows, N_FEATURES), dtype=np.float32)
    X *= np.float32(1.0 / np.sqrt(N_FEATURES))
    w, b = true_weights(seed if model_seed is None else model_seed)
    p = 1.0 / (1.0 + np.exp(-(X @ w.astype(np.float32) + b)))
    y = (rng.uniform(size=rows) < p).astype(np.float32)
    return np.column_stack([X, y])


def adult_codes():
    from skdp.datasets import load_adult

    bunch = load_adult(discretized=True, as_frame=False)
    codes = np.column_stack([bunch.data, bunch.target]).astype(np.uint8)
    sizes = list(bunch.domain.values())
    return codes, sizes


def adult_block(seed, index, rows, codes):
    rng = np.random.default_rng([seed, index])
    return codes[rng.integers(0, codes.shape[0], size=rows)]


def chunk_sizes(rows, chunk_rows):
    sizes = [chunk_rows] * (rows // chunk_rows)
    if rows % chunk_rows:
        sizes.append(rows % chunk_rows)
    return tuple(sizes)


def lazy(make, rows, chunk_rows, width, dtype, seed, *args):
    """A dask array whose chunk ``i`` is ``make(seed, i, rows_i, *args)``."""
    import dask
    import dask.array as da

    blocks = [
        da.from_delayed(
            dask.delayed(make, pure=True)(seed, i, size, *args),
            shape=(size, width),
            dtype=dtype,
        )
        for i, size in enumerate(chunk_sizes(rows, chunk_rows))
    ]
    return da.concatenate(blocks, axis=0)


def in_memory(make, rows, chunk_rows, seed, *args):
    """The first ``rows`` rows of the same stream, as one numpy array."""
    parts = [
        make(seed, i, size, *args)
        for i, size in enumerate(chunk_sizes(rows, chunk_rows))
    ]
    return np.concatenate(parts)


# --- estimators and scores ----------------------------------------------------------


def logistic(method, seed, steps=100):
    if method in TREE_METHODS:
        return trees(method, seed)
    from skdp.linear_model import DPLogisticRegression

    delta = None if method != "gradient" else DELTA
    # 'gradient' runs full-batch noisy gradient descent (batch_size='full'),
    # `steps` passes over the data, in memory and on dask alike.
    gradient = dict(batch_size="full", epochs=steps) if method == "gradient" else {}
    return DPLogisticRegression(
        **gradient,
        epsilon=EPSILON,
        delta=delta,
        method=method,
        data_norm=DATA_NORM,
        classes=[0.0, 1.0],
        random_state=seed,
    )


def trees(method, seed):
    from skdp.ensemble import DPHistGradientBoostingClassifier, DPRandomForestClassifier

    cls = (
        DPHistGradientBoostingClassifier
        if method == "boosting"
        else (DPRandomForestClassifier)
    )
    return cls(epsilon=EPSILON, delta=DELTA, bounds=(-1.0, 1.0), classes=[0.0, 1.0],
               random_state=seed)  # fmt: skip


def pmw(sizes, seed):
    from skdp.synthesis import PMWSynthesizer

    return PMWSynthesizer(
        epsilon=EPSILON,
        delta=DELTA,
        categories=[list(range(s)) for s in sizes],
        random_state=seed,
    )


def triples(sizes, seed, count=64):
    every = list(itertools.combinations(range(len(sizes)), 3))
    picked = np.random.default_rng(seed).choice(len(every), count, replace=False)
    return [every[i] for i in sorted(picked)]


def pmw_error(model, codes, sizes, seed):
    """Mean L1 distance of 3-way marginals to Adult's empirical distribution."""
    errors = []
    for clique in triples(sizes, seed):
        shape = [sizes[a] for a in clique]
        flat = np.ravel_multi_index(tuple(codes[:, a] for a in clique), shape)
        truth = np.bincount(flat, minlength=int(np.prod(shape))) / codes.shape[0]
        errors.append(np.abs(model.marginal(clique).ravel() - truth).sum())
    return float(np.mean(errors))


def test_set(seed, rows):
    data = logistic_block(seed + 1, 10**7, rows, seed)  # a stream no fit reads
    return data[:, :N_FEATURES], data[:, N_FEATURES]


def bayes_accuracy(seed, X, y):
    w, b = true_weights(seed)
    return float(np.mean(((X @ w + b) > 0) == (y > 0.5)))


# --- in-memory fits in a child process --------------------------------------------


def _memory_fit(method, rows, chunk_rows, seed, test_rows):
    warnings.simplefilter("ignore")
    if method == "pmw":
        codes, sizes = adult_codes()
        data = in_memory(adult_block, rows, chunk_rows, seed, codes)
        start = time.perf_counter()
        model = pmw(sizes, seed).fit(data)
        seconds = time.perf_counter() - start
        score = pmw_error(model, codes, sizes, seed)
    else:
        data = in_memory(logistic_block, rows, chunk_rows, seed)
        start = time.perf_counter()
        model = logistic(method, seed).fit(data[:, :N_FEATURES], data[:, N_FEATURES])
        seconds = time.perf_counter() - start
        X_test, y_test = test_set(seed, test_rows)
        score = float(model.score(X_test, y_test))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "peak_bytes": peak, "score": score}


def memory_fit(method, rows, chunk_rows, seed, test_rows):
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        future = pool.submit(_memory_fit, method, rows, chunk_rows, seed, test_rows)
        return future.result()


# --- dask fits ------------------------------------------------------------------


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


class PeakMemory:
    """Samples every worker's RSS in a background thread; keeps each one's peak."""

    def __init__(self, client, every):
        self.client, self.every = client, every
        self.peaks = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        try:
            for worker, rss in self.client.run(_rss).items():
                self.peaks[worker] = max(self.peaks.get(worker, 0), rss)
        except Exception:  # a worker restarting: sample again next time
            pass

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def dask_fit(client, method, args, codes, sizes):
    client.run(_trim)
    if method == "pmw":
        X = lazy(adult_block, args.rows, args.pmw_chunk_rows, len(sizes), np.uint8,
                 args.seed, codes)  # fmt: skip
        estimator = pmw(sizes, args.seed)
        fit_args = (X,)
    else:
        data = lazy(logistic_block, args.rows, args.chunk_rows, N_FEATURES + 1,
                    np.float32, args.seed)  # fmt: skip
        estimator = logistic(method, args.seed, args.gradient_steps)
        fit_args = (data[:, :N_FEATURES], data[:, N_FEATURES])
    with PeakMemory(client, args.sample_every) as peak:
        start = time.perf_counter()
        estimator.fit(*fit_args)
        seconds = time.perf_counter() - start
    if method == "pmw":
        score = pmw_error(estimator, codes, sizes, args.seed)
    else:
        X_test, y_test = test_set(args.seed, args.test_rows)
        score = float(estimator.score(X_test, y_test))
    return {
        "seconds": seconds,
        "peak_bytes": max(peak.peaks.values()),
        "worker_peaks": sorted(peak.peaks.values()),
        "score": score,
    }


def _trim():
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


# --- main -------------------------------------------------------------------------


def gib(nbytes):
    return f"{nbytes / 2**30:.2f}"


def table(results, args):
    lines = [
        f"| method | dask: {args.rows:,} rows (s) | worker peak (GiB) | "
        f"dask score | in memory: {args.memory_rows:,} rows (s) | peak (GiB) | "
        "in-memory score |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for method, row in results.items():
        d, m = row.get("dask", {}), row.get("memory", {})

        def cell(entry, key, fmt):
            if "error" in entry:
                return entry["error"][:60] if key == "seconds" else ""
            return fmt(entry[key]) if key in entry else ""

        lines.append(
            f"| {method} | {cell(d, 'seconds', '{:.1f}'.format)} | "
            f"{cell(d, 'peak_bytes', gib)} | {cell(d, 'score', '{:.4f}'.format)} | "
            f"{cell(m, 'seconds', '{:.1f}'.format)} | {cell(m, 'peak_bytes', gib)} | "
            f"{cell(m, 'score', '{:.4f}'.format)} |"
        )
    return "\n".join(lines)


def run_dask(args, methods, results):
    from distributed import Client, LocalCluster

    codes, sizes = adult_codes()
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=args.memory_limit,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        for method in methods:
            entry = results[method]
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    entry["dask"] = dask_fit(client, method, args, codes, sizes)
            except Exception as error:  # report and go on with the next method
                entry["dask"] = {"error": f"{type(error).__name__}: {error}"}
            print(f"{method} dask: {entry['dask']} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--pmw-chunk-rows", type=int, default=1_000_000,
                        help="chunks of the PMW table (larger: fewer partial "
                        "count tables, each the size of all marginals)")  # fmt: skip
    parser.add_argument("--memory-rows", type=int, default=1_000_000)
    parser.add_argument("--test-rows", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--methods", default="objective,output,gradient,pmw")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gradient-steps", type=int, default=100,
                        help="full-batch steps of 'gradient' on dask")  # fmt: skip
    parser.add_argument("--sample-every", type=float, default=0.5)
    parser.add_argument("--skip-dask", action="store_true",
                        help="skip the dask fits")  # fmt: skip
    parser.add_argument("--skip-memory", action="store_true",
                        help="skip the in-memory fits")  # fmt: skip
    parser.add_argument("--out", help="write the results (.json or .md)")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(LINEAR_METHODS) - set(TREE_METHODS) - {"pmw"}
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}")

    results = {method: {} for method in methods}
    if not args.skip_dask:
        run_dask(args, methods, results)
    if not args.skip_memory:
        for method in methods:
            entry = results[method]
            chunk_rows = args.pmw_chunk_rows if method == "pmw" else args.chunk_rows
            try:
                entry["memory"] = memory_fit(method, args.memory_rows, chunk_rows,
                                             args.seed, args.test_rows)  # fmt: skip
            except Exception as error:
                entry["memory"] = {"error": f"{type(error).__name__}: {error}"}
            print(f"{method} in memory: {entry['memory']}", flush=True)
    X_test, y_test = test_set(args.seed, args.test_rows)
    note = (
        f"epsilon={EPSILON}; logistic score: held-out accuracy (Bayes rate "
        f"{bayes_accuracy(args.seed, X_test, y_test):.4f}); pmw score: mean L1 "
        "error of 64 3-way marginals (lower is better). "
        f"{args.workers} workers x {args.memory_limit}, chunks of "
        f"{args.chunk_rows:,} rows ({args.pmw_chunk_rows:,} for pmw)."
    )
    text = table(results, args) + "\n\n" + note
    print(text)
    if args.out:
        out = Path(args.out)
        if out.suffix == ".json":
            out.write_text(json.dumps({"args": vars(args), "results": results},
                                      indent=2))  # fmt: skip
        else:
            out.write_text(text + "\n")


if __name__ == "__main__":
    main()
