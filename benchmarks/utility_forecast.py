"""The utility forecasts beside the scores they forecast.

Before the charge, objective perturbation, DP-SGD (and full-batch
descent), AdaSSP and DPKMeans forecast from public quantities whether
their noise will swamp the data's signal, and warn with
``skdp.UtilityWarning`` above a limit (``skdp.linear_model._forecast``,
``skdp.cluster._kmeans.centre_noise_ratio``). This prints, for each
configuration, the forecast ratio, its limit, whether the fit warns, and
the score the fit reached (mean over ``--seeds`` noise seeds) beside the
trivial model's and the non-private model's:

* UCI Adult (the logistic benchmarks' split, rows of unit norm), DP-SGD
  and objective;
* scikit-learn's diabetes data (331 training rows; ``data_norm`` 0.35,
  above every row's norm, and ``y_bounds`` (25, 346), the target's range),
  every method of ``DPLinearRegression``;
* synthetic regression and classification at several sizes (rows of norm
  about 1 in 10 or 100 dimensions, a linear signal);
* DPKMeans on scikit-learn's digits (``bounds=(0, 16)``, 10 clusters) and
  on Adult (k = 5, ``bounds=(0, 1)``, as ``benchmarks/models.py``).

Scores: accuracy (classification), R^2 (regression), adjusted Rand index
against the labels (digits) or inertia over scikit-learn's (Adult k-means).
Run from the repository root::

    python benchmarks/utility_forecast.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _fit(estimator, X, y=None):
    """Fit; return whether it warned with UtilityWarning."""
    from skdp import UtilityWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("always", UtilityWarning)
        estimator.fit(X) if y is None else estimator.fit(X, y)
    return any(w.category is UtilityWarning for w in caught)


def _forecast(estimator, X, y=None):
    """The forecast ratio and limit of the estimator's plan (public)."""
    from skdp.cluster import DPKMeans
    from skdp.cluster._kmeans import centre_noise_ratio
    from skdp.linear_model._forecast import (
        gradient_noise_ratio,
        moment_noise_ratio,
        noise_limit,
        objective_noise_ratio,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = estimator.plan_fit(X) if y is None else estimator.plan_fit(X, y)
    settings = planned.plan.settings
    n = X.shape[0]
    if isinstance(estimator, DPKMeans):
        prepared = planned._prepared
        last = settings["iterations"][-1][1]
        ratio = centre_noise_ratio(last, prepared.half_width, estimator.n_clusters, n)
        return ratio, 1.0
    plan = settings["method"]
    limit = noise_limit(estimator._loss())
    if hasattr(plan, "moment_noise"):
        return moment_noise_ratio(plan, n), limit
    if hasattr(plan, "solver"):
        return objective_noise_ratio(plan), limit
    return gradient_noise_ratio(plan, planned._prepared.n_coef), limit


def _scorer(X_test, y_test):
    """The fitted estimator's score on the test rows."""
    return lambda estimator: estimator.score(X_test, y_test)


def _row(name, estimator, fit_score, seeds, X, y, baseline, reference):
    from sklearn.base import clone

    ratio, limit = _forecast(clone(estimator), X, y)
    scores, warned = [], False
    for seed in range(seeds):
        est = clone(estimator).set_params(random_state=seed)
        warned |= _fit(est, X, y)
        scores.append(fit_score(est))
    print(
        f"| {name} | {ratio:.3g} | {limit:.3g} | {'yes' if warned else 'no'} | "
        f"{np.mean(scores):.3f} | {baseline:.3f} | {reference:.3f} |",
        flush=True,
    )


def adult_rows(seeds):
    from _adult_split import load_data
    from sklearn.linear_model import LogisticRegression

    from skdp.linear_model import DPLogisticRegression

    X, X_test, y, y_test = load_data()[:4]
    majority = max(np.mean(y_test), 1 - np.mean(y_test))
    exact = LogisticRegression(max_iter=1000).fit(X, y).score(X_test, y_test)
    for method in ("gradient", "objective"):
        for eps in (0.1, 1.0):
            est = DPLogisticRegression(epsilon=eps, method=method, data_norm=1.0)
            _row(
                f"Adult logistic {method} eps={eps}",
                est, _scorer(X_test, y_test), seeds, X, y, majority, exact,
            )  # fmt: skip


def diabetes_rows(seeds):
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import train_test_split

    from skdp.linear_model import DPLinearRegression

    X, y = load_diabetes(return_X_y=True)
    X, X_test, y, y_test = train_test_split(X, y, random_state=0)
    exact = Ridge(alpha=1e-3).fit(X, y).score(X_test, y_test)
    for method in ("gradient", "adassp", "objective"):
        for eps in (1.0, 5.0):
            est = DPLinearRegression(
                epsilon=eps, method=method, data_norm=0.35, y_bounds=(25, 346)
            )
            _row(
                f"diabetes {method} eps={eps}",
                est, _scorer(X_test, y_test), seeds, X, y, 0.0, exact,
            )  # fmt: skip


def _linear_data(n, d, seed, classify):
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(12345 + d).normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d)) / np.sqrt(d)  # rows of norm about 1
    if classify:  # logits of standard deviation 3
        return X, (3.0 * np.sqrt(d) * X @ w + rng.logistic(size=n) > 0).astype(int)
    return X, 2.0 * X @ w + 0.3 * rng.normal(size=n)


def synthetic_rows(seeds, classify_only=False):
    from sklearn.linear_model import LogisticRegression, Ridge

    from skdp.linear_model import DPLinearRegression, DPLogisticRegression

    for n in (331, 1000, 3000, 10000):
        if classify_only:
            break
        X, y = _linear_data(n, 10, 0, False)
        X_test, y_test = _linear_data(5000, 10, 1, False)
        exact = Ridge(alpha=1e-3).fit(X, y).score(X_test, y_test)
        for method in ("gradient", "adassp", "objective"):
            for eps in (1.0, 5.0):
                est = DPLinearRegression(
                    epsilon=eps, method=method, data_norm=2.0, y_bounds=(-3, 3)
                )
                _row(
                    f"regression n={n} d=10 {method} eps={eps}",
                    est, _scorer(X_test, y_test), seeds, X, y, 0.0, exact,
                )  # fmt: skip
    for d in (10, 100):
        for n in (300, 1000, 3000):
            X, y = _linear_data(n, d, 0, True)
            X_test, y_test = _linear_data(5000, d, 1, True)
            exact = LogisticRegression().fit(X, y).score(X_test, y_test)
            majority = max(np.mean(y_test), 1 - np.mean(y_test))
            for method in ("gradient", "objective"):
                est = DPLogisticRegression(epsilon=1.0, method=method, data_norm=2.0)
                _row(
                    f"classification n={n} d={d} {method} eps=1",
                    est, _scorer(X_test, y_test), seeds, X, y, majority,
                    exact,
                )  # fmt: skip


def kmeans_rows(seeds):
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_digits
    from sklearn.metrics import adjusted_rand_score

    from skdp.cluster import DPKMeans

    X, labels = load_digits(return_X_y=True)
    exact = KMeans(10, n_init=4, random_state=0).fit(X).labels_
    exact = adjusted_rand_score(labels, exact)
    for eps in (0.5, 1.0, 2.0, 5.0, 20.0):
        est = DPKMeans(10, epsilon=eps, bounds=(0, 16))
        _row(
            f"digits k-means eps={eps} (ARI)",
            est, lambda e: adjusted_rand_score(labels, e.labels_), seeds, X, None,
            0.0, exact,
        )  # fmt: skip
    from _adult_split import load_data

    A = load_data()[0]
    inertia = KMeans(5, n_init=4, random_state=0).fit(A).inertia_
    for eps in (0.1, 1.0):
        est = DPKMeans(5, epsilon=eps, bounds=(0, 1))
        _row(
            f"Adult k-means k=5 eps={eps} (inertia / sklearn's)",
            est, lambda e: -e.score(A) / inertia, seeds, A, None, float("nan"), 1.0,
        )  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--only",
        choices=["adult", "diabetes", "synthetic", "classification", "kmeans"],
        default=None,
    )
    args = parser.parse_args(argv)
    print("| fit | forecast | limit | warns | score | trivial | non-private |")
    print("|---|---:|---:|---|---:|---:|---:|")
    groups = {
        "adult": adult_rows,
        "diabetes": diabetes_rows,
        "synthetic": synthetic_rows,
        "kmeans": kmeans_rows,
    }
    if args.only == "classification":
        synthetic_rows(args.seeds, classify_only=True)
    for name, rows in groups.items():
        if args.only in (None, name):
            rows(args.seeds)


if __name__ == "__main__":
    main()
