"""DPLinearSVC on UCI Adult, next to DPLogisticRegression, LinearSVC, majority.

The logistic benchmark's setup (``benchmarks/logreg_adult.py``): categorical
columns one-hot encoded, numeric columns min-max scaled, rows scaled to unit
L2 norm, a stratified 80/20 split with ``random_state=0``. For each epsilon
in {0.05, 0.1, 0.5, 1, 2, 5, 10} and each method, ``DPLinearSVC`` and
``DPLogisticRegression`` at their defaults (``data_norm=1``,
``classes=[0, 1]``) over ``--seeds`` noise seeds: test accuracy (mean and
standard deviation) and the median fit time; scikit-learn's ``LinearSVC``
(C=1) and the majority class for reference. Run from the repository root::

    python benchmarks/svm.py              # 10 seeds
    python benchmarks/svm.py --seeds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.svm import LinearSVC

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_data  # noqa: E402

from skdp.linear_model import DPLinearSVC, DPLogisticRegression  # noqa: E402

EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
METHODS = ("objective", "output", "gradient")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    X_train, X_test, y_train, y_test = load_data()
    print(
        f"UCI Adult: {X_train.shape[0]} training rows, {X_test.shape[0]} test "
        f"rows, {X_train.shape[1]} features"
    )
    majority = max(np.mean(y_test == 0), np.mean(y_test == 1))
    rows = []
    for epsilon in EPSILONS:
        for cls in (DPLinearSVC, DPLogisticRegression):
            for method in METHODS:
                for seed in range(args.seeds):
                    model = cls(
                        epsilon,
                        method=method,
                        data_norm=1.0,
                        classes=[0, 1],
                        random_state=seed,
                    )
                    start = time.perf_counter()
                    model.fit(X_train, y_train)
                    rows.append(
                        {
                            "model": f"{cls.__name__} {method}",
                            "epsilon": epsilon,
                            "accuracy": model.score(X_test, y_test),
                            "seconds": time.perf_counter() - start,
                        }
                    )
    results = pd.DataFrame(rows)
    summary = results.groupby(["model", "epsilon"]).agg(
        mean=("accuracy", "mean"), sd=("accuracy", "std")
    )
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(f"\nTest accuracy, mean ± sd over {args.seeds} seeds")
        print(
            summary.apply(lambda r: f"{r['mean']:.4f} ± {r['sd']:.4f}", axis=1)
            .unstack("epsilon")
            .to_string()
        )
    start = time.perf_counter()
    svc = LinearSVC(C=1.0).fit(X_train, y_train)
    seconds = time.perf_counter() - start
    print(
        f"\nnon-private LinearSVC(C=1): accuracy {svc.score(X_test, y_test):.4f} "
        f"({seconds:.2f}s); majority class: {majority:.4f}"
    )
    print("\nMedian fit time:")
    for model, times in results.groupby("model")["seconds"]:
        print(f"  {model:32s} {np.median(times):.3f}s")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
