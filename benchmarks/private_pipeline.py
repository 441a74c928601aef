"""A fully private pipeline on UCI Adult: preprocessing included in epsilon.

The rows and the split are those of the logistic benchmark
(``_adult_split.load_raw_split``: ``adult_clean.csv``, stratified 80/20,
``random_state=0``), but nothing is read from the data without privacy:

* the categorical columns are one-hot encoded over their *published*
  categories (``skdp.datasets.load_adult().categories``, the data set's
  schema);
* the numeric columns are standardised by ``DPStandardScaler`` with public
  bounds (``skdp._demo.NUMERIC_RANGES``: ages 0-100, hours 0-100, ...;
  ``fnlwgt``, a sampling weight, is dropped), spending ``scaler_share`` of
  the total epsilon;
* every row is scaled to unit norm (``Normalizer``, stateless), so
  ``data_norm=1`` is a true bound for ``DPLogisticRegression``, which spends
  the rest.

One ``PrivacyBudget(epsilon=total, delta=1e-5)`` is charged by both private
steps; the table gives test accuracy (mean +- std over ``--seeds`` noise
seeds) for each total epsilon, scaler share and method, with the
non-private counterpart (scikit-learn's ``StandardScaler`` and
``LogisticRegression``) and the majority class. Run from the repository
root::

    python benchmarks/private_pipeline.py            # 10 seeds, ~2 minutes
    python benchmarks/private_pipeline.py --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_raw_split  # noqa: E402 (benchmarks/ is on sys.path)

from skdp import DPLogisticRegression, PrivacyBudget, check_pipeline  # noqa: E402
from skdp._demo import NUMERIC_RANGES  # noqa: E402
from skdp.datasets import load_adult  # noqa: E402
from skdp.preprocessing import DPStandardScaler  # noqa: E402

DELTA = 1e-5


def public_schema(frame):
    """Categorical columns with their published categories; numeric bounds."""
    categories = load_adult(as_frame=False).categories
    categorical = [c for c in frame.columns if c in categories]
    numeric = [c for c in frame.columns if c in NUMERIC_RANGES]
    lower = np.array([NUMERIC_RANGES[c][0] for c in numeric])
    upper = np.array([NUMERIC_RANGES[c][1] for c in numeric])
    return (
        categorical,
        [list(categories[c]) for c in categorical],
        numeric,
        (
            lower,
            upper,
        ),
    )


def private_pipeline(frame, *, epsilon, scaler_share, method, budget, seed):
    """The ColumnTransformer -> Normalizer -> DPLogisticRegression pipeline."""
    categorical, categories, numeric, bounds = public_schema(frame)
    scaler_epsilon = epsilon * scaler_share
    preprocess = ColumnTransformer(
        [
            (
                "onehot",
                OneHotEncoder(categories=categories, handle_unknown="ignore"),
                categorical,
            ),
            (
                "scale",
                DPStandardScaler(
                    epsilon=scaler_epsilon,
                    bounds=bounds,
                    budget=budget,
                    random_state=seed,
                ),
                numeric,
            ),
        ],
        sparse_threshold=0.0,
    )
    model = DPLogisticRegression(
        epsilon=epsilon - scaler_epsilon,
        delta=DELTA if method == "gradient" else None,
        method=method,
        data_norm=1.0,
        classes=[0, 1],
        budget=budget,
        random_state=None if seed is None else seed + 10_000,
    )
    return make_pipeline(preprocess, Normalizer(), model)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument(
        "--scaler-shares", type=float, nargs="+", default=[0.05, 0.1, 0.2]
    )
    parser.add_argument("--methods", nargs="+", default=["gradient", "objective"])
    args = parser.parse_args(argv)

    X_train, X_test, y_train, y_test = load_raw_split()
    categorical, categories, numeric, _ = public_schema(X_train)
    reference = make_pipeline(
        ColumnTransformer(
            [
                ("onehot", OneHotEncoder(categories=categories), categorical),
                ("scale", StandardScaler(), numeric),
            ]
        ),
        Normalizer(),
        LogisticRegression(max_iter=1000),
    ).fit(X_train, y_train)
    majority = float(np.mean(y_test == np.bincount(y_train).argmax()))
    print(f"train {len(X_train):,} rows, test {len(X_test):,} rows")
    print(
        f"non-private (StandardScaler + LogisticRegression): "
        f"{reference.score(X_test, y_test):.4f}; majority class {majority:.4f}"
    )

    shown = private_pipeline(
        X_train,
        epsilon=1.0,
        scaler_share=0.1,
        method="gradient",
        budget=None,
        seed=None,
    )
    print("\ncheck_pipeline of the private pipeline (total epsilon 1):")
    print(check_pipeline(shown))

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
                        X_train,
                        epsilon=epsilon,
                        scaler_share=share,
                        method=method,
                        budget=budget,
                        seed=seed,
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
