"""A fully private pipeline on UCI Adult: preprocessing included in epsilon.

The rows and the split are those of the logistic benchmark (the bundled
``adult_clean.csv``, stratified 80/20 with ``random_state=0``; the script
checks that its labels match ``_adult_split.load_raw_split``'s), and nothing
is read from the data without privacy. The pipeline is the demo's
(``skdp.cli._demo.private_pipeline``):

* a ``ColumnTransformer`` of a one-hot encoder over the *published*
  categories (``load_adult().categories``, the data set's schema) and
  ``DPStandardScaler`` with the public ranges of ``skdp.cli._demo.NUMERIC_RANGES``
  (ages 17-90, education 1-16, capital gain clipped at 20,000 and loss at
  5,000, hours 1-99; ``fnlwgt``, a sampling weight, is dropped), spending
  ``scaler_share`` of the total epsilon;
* ``Normalizer`` (stateless), so ``data_norm=1`` is a true bound;
* ``DPLogisticRegression`` spending the rest.

One ``PrivacyBudget(epsilon=total, delta=1e-5)`` is charged by both private
steps, and each fit must warn nothing. The table gives test accuracy (mean
+- std over ``--seeds`` noise seeds) for each total epsilon, scaler share
and method, beside the same pipeline without privacy (scikit-learn's
``StandardScaler`` and ``LogisticRegression``) and the majority class. Run
from the repository root::

    python benchmarks/private_pipeline.py            # 10 seeds
    python benchmarks/private_pipeline.py --seeds 3 --epsilons 1
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_raw_split  # noqa: E402 (benchmarks/ is on sys.path)

from skdp import PrivacyBudget, check_pipeline  # noqa: E402
from skdp.cli._demo import adult_split, private_pipeline  # noqa: E402

DELTA = 1e-5


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument(
        "--scaler-shares", type=float, nargs="+", default=[0.05, 0.1, 0.2]
    )
    parser.add_argument("--methods", nargs="+", default=["gradient", "objective"])
    args = parser.parse_args(argv)

    X_train, X_test, y_train, y_test = adult_split()
    _, _, benchmark_y_train, benchmark_y_test = load_raw_split()
    assert np.array_equal(y_train, benchmark_y_train)
    assert np.array_equal(y_test, benchmark_y_test)

    reference = private_pipeline(1.0)
    reference.set_params(
        columntransformer__scale=StandardScaler(),
        dplogisticregression=LogisticRegression(max_iter=1000),
    )
    reference.fit(X_train, y_train)
    majority = float(np.mean(y_test == np.bincount(y_train).argmax()))
    print(f"train {len(X_train):,} rows, test {len(X_test):,} rows")
    print(
        "the same pipeline without privacy: "
        f"{reference.score(X_test, y_test):.4f}; majority class {majority:.4f}"
    )
    print("\ncheck_pipeline of the private pipeline (total epsilon 1):")
    print(check_pipeline(private_pipeline(1.0, delta=DELTA)))

    print(
        f"\n{'epsilon':>7} {'scaler share':>12} {'method':>9} "
        f"{'accuracy':>17} {'fit s':>6} {'spent (eps)':>11}"
    )
    for epsilon in args.epsilons:
        for share in args.scaler_shares:
            for method in args.methods:
                scores, seconds, spent = [], [], []
                for seed in range(args.seeds):
                    budget = PrivacyBudget(epsilon=epsilon, delta=DELTA)
                    pipe = private_pipeline(
                        epsilon,
                        method=method,
                        delta=DELTA if method == "gradient" else None,
                        scaler_share=share,
                        budget=budget,
                        random_state=2 * seed,
                    )
                    started = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("error")  # no leak, no warning
                        pipe.fit(X_train, y_train)
                    seconds.append(time.perf_counter() - started)
                    scores.append(pipe.score(X_test, y_test))
                    spent.append(budget.spent()[0])
                print(
                    f"{epsilon:>7g} {share:>12g} {method:>9} "
                    f"{np.mean(scores):>8.4f} +- {np.std(scores):.4f} "
                    f"{np.mean(seconds):>6.2f} {max(spent):>11.4f}"
                )


if __name__ == "__main__":
    main()
