"""Accuracy of the exact methods on scikit-learn's ``check_classifiers_train`` data.

``check_classifiers_train`` asks a classifier for training accuracy above
0.83 on 300 rows of standardised 3-class blobs, and on the 2-class subset.
For a private classifier whether a fit clears the bar depends on its noise,
so this script reports, over ``--seeds`` noise seeds, the mean training
accuracy and the share of fits above 0.83 for ``method='objective'`` at its
defaults and ``method='output'`` at several ``C`` (its default is 1.0).
Run from the repository root::

    python benchmarks/check_problem_accuracy.py [--seeds 500]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler
from sklearn.utils import shuffle

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skdp import DPLogisticRegression  # noqa: E402

BAR = 0.83


def check_problems():
    """The data of ``check_classifiers_train`` (scikit-learn 1.6 to 1.9)."""
    X, y = make_blobs(n_samples=300, random_state=0)
    X, y = shuffle(X, y, random_state=7)
    X = StandardScaler().fit_transform(X)
    return {"3-class": (X, y), "binary": (X[y != 2], y[y != 2])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # data-derived norm and classes, as in the check
    settings = [("objective", {})] + [
        ("output", {"C": C}) for C in (1.0, 0.1, 0.03, 0.01)
    ]
    print(f"{'setting':<22} {'problem':<8} {'mean':>6} {'> 0.83':>7} {'seed 0':>7}")
    for method, params in settings:
        label = method + "".join(f" {k}={v}" for k, v in params.items())
        for name, (X, y) in check_problems().items():
            accuracy = np.array(
                [
                    DPLogisticRegression(method=method, random_state=seed, **params)
                    .fit(X, y)
                    .score(X, y)
                    for seed in range(args.seeds)
                ]
            )
            print(
                f"{label:<22} {name:<8} {accuracy.mean():6.3f} "
                f"{(accuracy > BAR).mean():7.1%} {accuracy[0]:7.3f}"
            )


if __name__ == "__main__":
    main()
