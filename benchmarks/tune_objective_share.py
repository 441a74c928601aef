"""How the objective method's NOISE_SHARE was chosen (validation data only).

Objective perturbation splits epsilon between the noise term
(``epsilon' = s epsilon``) and the Jacobian (curvature) term, which extra
regularisation pays for; see
:func:`skdp.linear_model._objective.objective_noise_scale`. This script
scores shares ``s`` on data that are *not* used to report results:

- UCI Adult, binary: the training part of the benchmark split
  (``_adult_split.load_data``), split again 80/20 (stratified,
  ``random_state=1``) into a fitting and a validation part. The benchmark's
  test split is never touched.
- Synthetic multiclass problems (``make_classification``, 3 and 5 classes,
  300 and 3,000 rows, standardised then scaled to unit row norm), scored on
  a fresh sample from the same distribution.

Mean validation accuracy over ``--seeds`` noise seeds is printed per
(problem, epsilon, share), then each share's regret: how far it falls
below the best share of its row, averaged and at worst over the rows.
Run from the repository root::

    python benchmarks/tune_objective_share.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import Normalizer, StandardScaler

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_data  # noqa: E402 (benchmarks/ is on sys.path)

import skdp.linear_model._objective as objective_module  # noqa: E402
from skdp import DPLogisticRegression  # noqa: E402

SHARES = (0.5, 0.75, 0.9, 0.95, 0.98)
EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0)


def adult_validation():
    X_train, _, y_train, _ = load_data()
    X_fit, X_val, y_fit, y_val = train_test_split(
        X_train, y_train, test_size=0.2, stratify=y_train, random_state=1
    )
    return "adult (binary)", X_fit, y_fit, X_val, y_val


def synthetic(n_samples, n_classes, seed):
    X, y = make_classification(
        n_samples=2 * n_samples,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        class_sep=1.5,
        random_state=seed,
    )
    X = Normalizer().fit_transform(StandardScaler().fit_transform(X))
    name = f"synthetic K={n_classes} n={n_samples}"
    return name, X[:n_samples], y[:n_samples], X[n_samples:], y[n_samples:]


def score(problem, epsilon, share, seeds):
    _, X_fit, y_fit, X_val, y_val = problem
    objective_module.NOISE_SHARE = share
    accuracies = [
        DPLogisticRegression(
            epsilon=epsilon,
            method="objective",
            data_norm=1.0,
            classes=np.unique(y_fit),
            random_state=seed,
        )
        .fit(X_fit, y_fit)
        .score(X_val, y_val)
        for seed in range(seeds)
    ]
    return float(np.mean(accuracies))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    problems = [
        adult_validation(),
        synthetic(300, 3, 0),
        synthetic(3000, 3, 1),
        synthetic(300, 5, 2),
        synthetic(3000, 5, 3),
    ]
    default = objective_module.NOISE_SHARE
    print(
        "problem                      eps   " + "  ".join(f"s={s:<5}" for s in SHARES)
    )
    regrets = []
    for problem in problems:
        for epsilon in EPSILONS:
            row = np.array([score(problem, epsilon, s, args.seeds) for s in SHARES])
            regrets.append(row.max() - row)
            cells = "  ".join(f"{a:.4f} " for a in row)
            print(f"{problem[0]:<27} {epsilon:<5} {cells}")
    objective_module.NOISE_SHARE = default
    regrets = np.array(regrets)
    print(f"{'mean regret':<33} " + "  ".join(f"{r:.4f} " for r in regrets.mean(0)))
    print(f"{'worst regret':<33} " + "  ".join(f"{r:.4f} " for r in regrets.max(0)))


if __name__ == "__main__":
    main()
