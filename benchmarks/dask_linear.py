"""The private linear models on a dask array against the in-memory fit.

A lazily generated float32 dask array (``--rows`` x ``--features``, chunks
of ``--chunk`` rows; rows of norm about 1, a logistic model with 10% label
noise) is fitted on a ``distributed.LocalCluster`` of ``--workers`` worker
processes with ``--memory`` each, by every method, and the same rows,
computed into memory, are fitted in this process. Accuracy is measured on
100,000 held-out rows of the same distribution.

Every method releases bitwise the same model on both (same seed, same
noise, the same block sums); ``'gradient'`` runs full-batch noisy gradient
descent (``batch_size='full'``, ``epochs=100`` passes over the data) on
both.

Run: ``python benchmarks/dask_linear.py --persist`` (2M x 50), or
``--rows 200000`` for a quick look. Without ``--persist`` every solver pass
regenerates the random blocks, which dominates the time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# This folder holds a ``sparse.py`` that would shadow the ``sparse`` package
# dask imports (as ``python benchmarks/x.py`` puts the folder first on the path).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


#: 'gradient' as full-batch gradient descent: one pass over the rows a step.
GRADIENT = {"batch_size": "full", "epochs": 100}


def make_data(rows, features, chunk, seed=0):
    import dask.array as da

    state = da.random.RandomState(seed)
    X = state.standard_normal((rows, features), chunks=(chunk, features))
    X = (X / np.sqrt(features)).astype(np.float32)
    weights = np.linspace(-2.0, 2.0, features) * 3.0 / np.sqrt(features)
    score = X @ weights.astype(np.float32) + 0.3
    flip = state.random_sample(rows, chunks=chunk) < 0.1
    y = ((score > 0) ^ flip).astype(np.int8)
    return X, y


def held_out(features, seed=1, rows=100_000):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((rows, features)) / np.sqrt(features)).astype(np.float32)
    weights = np.linspace(-2.0, 2.0, features) * 3.0 / np.sqrt(features)
    y = (X @ weights + 0.3 > 0).astype(np.int8)
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory", default="2GB")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument(
        "--persist",
        action="store_true",
        help="hold the generated blocks in the workers' memory (X.persist()); "
        "otherwise every pass of a solver regenerates them",
    )
    args = parser.parse_args()

    import dask
    from distributed import Client, LocalCluster, wait

    from skdp.linear_model import DPLogisticRegression

    X_test, y_test = held_out(args.features)
    common = dict(epsilon=args.epsilon, data_norm=1.5, classes=[0, 1], random_state=0)
    methods = ["objective", "output", "gradient"]
    rows = []
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=args.memory,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster),
    ):
        X, y = make_data(args.rows, args.features, args.chunk)
        if args.persist:
            start = time.perf_counter()
            X, y = dask.persist(X, y)
            wait([X, y])
            print(f"persisted in {time.perf_counter() - start:.1f} s", flush=True)
        for method in methods:
            clf = DPLogisticRegression(method=method, **common, **GRADIENT)
            start = time.perf_counter()
            clf.fit(X, y)
            elapsed = time.perf_counter() - start
            variant = getattr(clf, "gradient_variant_", "")
            rows.append(
                ("dask", method, variant, elapsed, clf.score(X_test, y_test), clf.coef_)
            )
            print(rows[-1][:5], flush=True)
        if not args.skip_memory:
            start = time.perf_counter()
            X_mem, y_mem = X.compute(), y.compute()
            materialise = time.perf_counter() - start
            print(f"materialised in memory in {materialise:.1f} s", flush=True)
    if not args.skip_memory:
        for method in methods:
            clf = DPLogisticRegression(method=method, **common, **GRADIENT)
            start = time.perf_counter()
            clf.fit(X_mem, y_mem)
            elapsed = time.perf_counter() - start
            variant = getattr(clf, "gradient_variant_", "")
            rows.append(
                (
                    "memory",
                    method,
                    variant,
                    elapsed,
                    clf.score(X_test, y_test),
                    clf.coef_,
                )
            )
            print(rows[-1][:5], flush=True)

    print()
    print(
        f"DPLogisticRegression, epsilon={args.epsilon}, {args.rows:,} x "
        f"{args.features} float32, chunks of {args.chunk:,} rows, "
        f"{args.workers} workers x {args.memory}"
        + (", persisted" if args.persist else ", generated lazily at every pass")
    )
    print(f"{'input':<8}{'method':<11}{'variant':<15}{'time (s)':>10}{'accuracy':>10}")
    for where, method, variant, elapsed, accuracy, _ in rows:
        print(f"{where:<8}{method:<11}{variant:<15}{elapsed:>10.1f}{accuracy:>10.4f}")
    by_method = {}
    for where, method, _, _, _, coef in rows:
        by_method.setdefault(method, {})[where] = coef
    for method, coefs in by_method.items():
        if len(coefs) == 2:
            gap = float(np.abs(coefs["dask"] - coefs["memory"]).max())
            print(f"max |coef_dask - coef_memory| ({method}): {gap:.2e}")


if __name__ == "__main__":
    main()
