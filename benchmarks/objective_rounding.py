"""Objective perturbation at millions of rows: accuracy and the solver residual.

The certified solver's residual ``r`` pays for the rounding error of the
computed gradient; skdp sums the gradient in row blocks of about
``sqrt(n)`` rows, whose bound grows as ``n**1.5 u`` instead of ``n**2 u``
(``skdp.linear_model._newton.summation_terms``). This fits
``DPLogisticRegression(method='objective')`` and ``method='gradient'`` in
memory on ``--rows`` x ``--features`` float32 synthetic logistic data (rows
of norm about 1, 10% label noise, the distribution of ``dask_linear.py``)
and prints the accuracy on 100,000 noiseless held-out rows and the planned residual.

Run: ``python benchmarks/objective_rounding.py --rows 2000000``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def make_data(rows, features, seed, noise=0.1):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((rows, features)) / np.sqrt(features)).astype(np.float32)
    weights = np.linspace(-2.0, 2.0, features) * 3.0 / np.sqrt(features)
    score = X @ weights.astype(np.float32) + 0.3
    flip = rng.random(rows) < noise
    return X, ((score > 0) ^ flip).astype(np.int8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--methods", default="objective,gradient")
    args = parser.parse_args()

    from skdp.linear_model import DPLogisticRegression

    X, y = make_data(args.rows, args.features, seed=0)
    X_test, y_test = make_data(100_000, args.features, seed=1, noise=0.0)
    print(
        f"{'method':<10} {'rows':>9} {'accuracy':>9} {'residual r':>11} {'seconds':>8}"
    )
    for method in args.methods.split(","):
        clf = DPLogisticRegression(
            epsilon=args.epsilon,
            method=method,
            data_norm=1.5,
            classes=[0, 1],
            random_state=0,
        )
        solver = getattr(clf.privacy_plan(X, y).settings["method"], "solver", None)
        residual = float("nan") if solver is None else solver.residual
        start = time.perf_counter()
        clf.fit(X, y)
        seconds = time.perf_counter() - start
        accuracy = clf.score(X_test, y_test)
        print(
            f"{method:<10} {args.rows:>9} {accuracy:>9.4f} {residual:>11.3g} "
            f"{seconds:>8.1f}"
        )


if __name__ == "__main__":
    main()
