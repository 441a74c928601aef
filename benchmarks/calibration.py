"""How well calibrated DPLogisticRegression's predict_proba is, per method.

On the logistic benchmark's Adult split (``_adult_split.load_data``: rows of
unit norm, ``data_norm=1``), for each method at each epsilon over
``--seeds`` noise seeds: test accuracy, log loss, Brier score and the
expected calibration error (ECE: 10 equal-width bins of the predicted
probability of the positive class, the mean |observed rate - mean
prediction| weighted by the bin's share of rows). Reference: scikit-learn's
``LogisticRegression`` (C=1). Output perturbation runs at C=0.01 (at C=1
its noise swamps the weights, see the user guide). Run from the repository
root::

    python benchmarks/calibration.py --seeds 5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_data  # noqa: E402 (benchmarks/ is on sys.path)

from skdp import DPLogisticRegression  # noqa: E402

METHODS = ("objective", "output", "gradient")


def expected_calibration_error(y, p, bins=10):
    """Mean |observed rate - mean predicted probability| over equal bins."""
    index = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        mask = index == b
        if mask.any():
            total += mask.mean() * abs(y[mask].mean() - p[mask].mean())
    return total


def scores(y, p):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return (
        float(np.mean((p > 0.5) == y)),
        float(log_loss(y, p, labels=[0, 1])),
        float(brier_score_loss(y, p)),
        expected_calibration_error(y, p),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 5.0]
    )
    args = parser.parse_args(argv)
    X_train, X_test, y_train, y_test = load_data()
    reference = LogisticRegression(max_iter=1000).fit(X_train, y_train)
    ref = scores(y_test, reference.predict_proba(X_test)[:, 1])
    header = (
        f"{'model':<34} {'epsilon':>7} {'accuracy':>8} {'log loss':>8} "
        f"{'Brier':>7} {'ECE':>6}"
    )
    print(header)
    print(
        f"{'LogisticRegression (non-private)':<34} {'-':>7} {ref[0]:>8.4f} "
        f"{ref[1]:>8.4f} {ref[2]:>7.4f} {ref[3]:>6.4f}"
    )
    for epsilon in args.epsilons:
        for method in METHODS:
            rows = []
            for seed in range(args.seeds):
                model = DPLogisticRegression(
                    epsilon=epsilon,
                    method=method,
                    data_norm=1.0,
                    classes=[0, 1],
                    C=0.01 if method == "output" else 1.0,
                    random_state=seed,
                ).fit(X_train, y_train)
                rows.append(scores(y_test, model.predict_proba(X_test)[:, 1]))
            name = method + (" (C=0.01)" if method == "output" else "")
            m = np.mean(rows, axis=0)
            print(
                f"{name:<34} {epsilon:>7g} {m[0]:>8.4f} {m[1]:>8.4f} "
                f"{m[2]:>7.4f} {m[3]:>6.4f}"
            )


if __name__ == "__main__":
    main()
