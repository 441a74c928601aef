"""Train on synthetic, test on real: SyntheticDataClassifier on discretized Adult.

Data: ``skdp.datasets.load_adult(discretized=True, as_frame=False)``, the 13
integer-coded feature columns and the label ``income>50K`` (48,842 rows).
Every column's categories are ``range(size)`` from the data set's published
domain (``adult.domain``), so no category is read from the rows, and the
classes are ``[0, 1]``. Split: stratified 80/20 with ``random_state=0``.

Rows of the table, per epsilon (mean and standard deviation of the test
accuracy over the seeds; each seed is a fresh fit with ``random_state=seed``,
a seed being for reproducibility only):

* ``synthetic, <workload>, <downstream>``: :class:`SyntheticDataClassifier`
  with ``workload=<workload>`` and the synthesizer's defaults otherwise
  (Gaussian noise, ``delta=1e-9``, ``n_rounds = max(16, 14)``), trained on
  as many synthetic rows as there are training rows. The classifier is
  fitted once per (epsilon, seed, workload) with the first downstream model;
  the other downstream models are trained on rows drawn from the same
  fitted synthesizer (``clf.synthesizer_.sample``), which is the same
  post-processing without spending the budget again. Downstream models:

  - ``logistic``: ``OneHotEncoder(categories=public)`` then
    ``LogisticRegression(max_iter=1000)``;
  - ``hgb``: ``HistGradientBoostingClassifier`` on the codes, every column
    declared categorical;
  - ``forest``: ``RandomForestClassifier(n_estimators=100,
    min_samples_leaf=5)`` on the codes.
* ``DPLogisticRegression``: the same 13 columns one-hot encoded with the
  public categories, each row divided by its L2 norm (so ``data_norm=1``
  holds), ``classes=[0, 1]``, default method (objective perturbation) and
  ``C``, same epsilon.
* ``majority class`` and non-private ``LogisticRegression`` (on the same
  normalised one-hot rows, and on the raw one-hot rows), as references.

Usage (from the repository root, with skdp installed or ``PYTHONPATH=.``)::

    python benchmarks/synthetic_supervised.py                  # the table
    python benchmarks/synthetic_supervised.py --epsilons 1 --seeds 1 \\
        --workloads label all --downstream logistic hgb forest
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skdp.datasets import load_adult
from skdp.linear_model import DPLogisticRegression
from skdp.synthesis import SyntheticDataClassifier


def load():
    adult = load_adult(discretized=True, as_frame=False)
    names = list(adult.feature_names)
    categories = [list(range(adult.domain[name])) for name in names]
    X, y = np.asarray(adult.data), np.asarray(adult.target)
    split = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    return (*split, categories)


def downstream_models(categories):
    return {
        "logistic": make_pipeline(
            OneHotEncoder(categories=categories, handle_unknown="ignore"),
            LogisticRegression(max_iter=1000),
        ),
        "hgb": HistGradientBoostingClassifier(
            categorical_features=[True] * len(categories), random_state=0
        ),
        "forest": RandomForestClassifier(
            n_estimators=100, min_samples_leaf=5, n_jobs=1, random_state=0
        ),
    }


def one_hot_rows(X_train, X_test, categories):
    encoder = OneHotEncoder(categories=categories, handle_unknown="ignore")
    Z_train = encoder.fit_transform(X_train).toarray()
    Z_test = encoder.transform(X_test).toarray()
    # Each row has exactly 13 ones; dividing by the norm is public.
    return Z_train / np.linalg.norm(Z_train, axis=1, keepdims=True), Z_test / (
        np.linalg.norm(Z_test, axis=1, keepdims=True)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1, 2, 5])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--workloads", nargs="+", default=["label", "all"], choices=["label", "all"]
    )
    parser.add_argument(
        "--downstream",
        nargs="+",
        default=["logistic", "hgb", "forest"],
        choices=["logistic", "hgb", "forest"],
    )
    args = parser.parse_args(argv)

    X_train, X_test, y_train, y_test, categories = load()
    Z_train, Z_test = one_hot_rows(X_train, X_test, categories)
    models = downstream_models(categories)
    rows = {}  # name -> {epsilon: [accuracies]}
    seconds = {}

    majority = float(np.mean(y_test == np.bincount(y_train).argmax()))
    raw = make_pipeline(
        OneHotEncoder(categories=categories, handle_unknown="ignore"),
        LogisticRegression(max_iter=1000),
    ).fit(X_train, y_train)
    normalised = LogisticRegression(max_iter=1000).fit(Z_train, y_train)
    references = {
        "majority class": majority,
        "LogisticRegression, one-hot (not private)": raw.score(X_test, y_test),
        "LogisticRegression, normalised one-hot (not private)": normalised.score(
            Z_test, y_test
        ),
    }

    for epsilon in args.epsilons:
        for seed in range(args.seeds):
            started = time.perf_counter()
            dp = DPLogisticRegression(
                epsilon=epsilon, data_norm=1.0, classes=[0, 1], random_state=seed
            ).fit(Z_train, y_train)
            name = "DPLogisticRegression (objective)"
            rows.setdefault(name, {}).setdefault(epsilon, []).append(
                dp.score(Z_test, y_test)
            )
            seconds.setdefault(name, []).append(time.perf_counter() - started)
            for workload in args.workloads:
                first = args.downstream[0]
                started = time.perf_counter()
                clf = SyntheticDataClassifier(
                    models[first],
                    epsilon=epsilon,
                    categories=categories,
                    classes=[0, 1],
                    workload=workload,
                    random_state=seed,
                ).fit(X_train, y_train)
                name = f"synthetic, {workload}, {first}"
                seconds.setdefault(name, []).append(time.perf_counter() - started)
                rows.setdefault(name, {}).setdefault(epsilon, []).append(
                    clf.score(X_test, y_test)
                )
                table = clf.synthesizer_.sample(len(X_train), random_state=seed + 1000)
                X_syn, y_syn = table[:, :-1], table[:, -1].astype(int)
                for other in args.downstream[1:]:
                    model = models[other]
                    started = time.perf_counter()
                    model.fit(X_syn, y_syn)
                    name = f"synthetic, {workload}, {other}"
                    seconds.setdefault(name, []).append(time.perf_counter() - started)
                    rows.setdefault(name, {}).setdefault(epsilon, []).append(
                        model.score(X_test, y_test)
                    )
            print(f"epsilon={epsilon:g} seed={seed} done", flush=True)

    print()
    print(
        f"Train on synthetic, test on real: discretized Adult, {len(X_train):,} "
        f"training and {len(X_test):,} test rows; test accuracy, mean +- sd over "
        f"{args.seeds} seeds"
    )
    width = max(len(n) for n in list(rows) + list(references)) + 2
    header = f"{'model':<{width}}" + "".join(
        f"{'eps=' + format(e, 'g'):>15}" for e in args.epsilons
    )
    print(header + f"{'mean s':>9}")
    for name, by_epsilon in rows.items():
        cells = "".join(
            f"{np.mean(by_epsilon[e]):>8.3f} +-{np.std(by_epsilon[e]):.3f}"
            for e in args.epsilons
        )
        print(f"{name:<{width}}{cells}{np.mean(seconds[name]):>8.1f}s")
    for name, accuracy in references.items():
        print(f"{name:<{width}}{accuracy:>8.3f}")


if __name__ == "__main__":
    main()
