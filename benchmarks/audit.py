"""How tight is each guarantee in practice? Audited epsilon lower bounds.

For every mechanism (and every estimator method, when the estimators are
installed) this runs :func:`skdp.audit.audit_epsilon` on two worst-case
neighbouring inputs with more runs than the test suite uses, and prints the
audited lower bound next to the claimed epsilon. Run from the repository
root::

    python -m pip install -e .
    python benchmarks/audit.py                      # defaults below
    python benchmarks/audit.py --runs 50000 --estimator-runs 3000 --seed 1

(without installing, prefix with ``PYTHONPATH=.``). Columns:

* ``claimed``: the epsilon (at ``delta``) the mechanism or fit reports;
* ``limit``: the largest privacy loss any threshold event shows for the pair
  of inputs, i.e. what infinitely many runs would find (mechanisms only);
* ``audited``: the Clopper-Pearson lower bound at confidence 0.95;
* ``ratio``: audited / claimed, how much of the guarantee one threshold test
  on one scalar statistic can demonstrate; it must stay <= 1;
* ``ceiling``: the largest bound the evaluation half can give at all (zero
  hits under one dataset, all under the other), which caps every ratio.

A ratio well below 1 is not slack in the proof by itself: the exponential
mechanism's worst case needs infinitely many candidates, the L2 vector
noise's worst direction has probability 0, and the Gaussian's privacy loss
is large only on events too rare for the run count at small delta.
"""

import argparse
import math
import time
import warnings

import numpy as np

from skdp.audit import audit_epsilon, audit_estimator
from skdp.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    l2_vector_mechanism,
    laplace_mechanism,
)

CONFIDENCE = 0.95


def _ceiling(n_runs, confidence=CONFIDENCE):
    m = n_runs - n_runs // 2
    alpha = (1 - confidence) / 2
    p = alpha ** (1 / m)
    return math.log(p / (1 - p))


def _laplace(epsilon):
    def run(value, random_state):
        return laplace_mechanism(value, 1.0, epsilon, random_state=random_state)[0]

    return run


def _gaussian(epsilon, delta):
    def run(value, random_state):
        return gaussian_mechanism(
            value, 1.0, epsilon, delta, random_state=random_state
        )[0]

    return run


def _exponential(scores, random_state):
    return exponential_mechanism(scores, 1.0, 1.0, random_state=random_state)[0]


def _vector(value, random_state):
    return l2_vector_mechanism(value, 1.0, 1.0, random_state=random_state)[0]


def _exponential_limit(k, epsilon=1.0):
    """log(P[0 | D] / P[0 | D']) for the pair below (< epsilon for finite k)."""
    w = math.exp(epsilon / 2)
    return math.log(w / (w + k - 1) * (1 + (k - 1) * w))


def mechanism_cases():
    """(name, claimed, delta, limit, run, dataset, neighbour, statistic).

    ``limit`` is the largest privacy loss any event of the statistic shows
    for the pair (what infinitely many runs would find): epsilon for Laplace,
    for the Gaussian (the analytic calibration is tight on threshold events)
    and for the vector mechanism (approached on ever rarer events); below
    epsilon for the exponential mechanism with finitely many candidates.
    """
    cases = []
    for eps in (0.5, 1.0, 2.0):
        cases.append((f"laplace eps={eps}", eps, 0.0, eps, _laplace(eps), 0.0, 1.0))
    for eps, delta in ((1.0, 1e-5), (4.0, 1e-5), (1.0, 1e-2)):
        name = f"gaussian eps={eps} delta={delta:g}"
        cases.append((name, eps, delta, eps, _gaussian(eps, delta), 0.0, 1.0))
    for k in (2, 20, 100):
        # Candidate 0 gains a point, all others lose one (sensitivity 1).
        scores = [1.0] + [0.0] * (k - 1)
        neighbour = [0.0] + [1.0] * (k - 1)
        limit = _exponential_limit(k)
        cases.append(
            (f"exponential k={k}", 1.0, 0.0, limit, _exponential, scores, neighbour)
        )
    cases = [case + (None,) for case in cases]
    for d in (1, 3, 10):
        v0, v1 = np.zeros(d), np.eye(d)[0]

        def llr(out, v0=v0, v1=v1):
            return np.linalg.norm(out - v0) - np.linalg.norm(out - v1)

        cases.append((f"l2 vector d={d}", 1.0, 0.0, 1.0, _vector, v0, v1, llr))
    return cases


def estimator_cases():
    """(name, estimator, dataset, neighbour, statistic) for every method.

    The worst case of the test suite (``tests/audit/test_audit_estimators.py``):
    rows at ``x = 0`` carry no gradient, and the one row at the norm bound
    flips its label between the two datasets.
    """
    import skdp

    cases = []
    X = np.zeros((10, 1))
    X[0, 0] = 1.0
    y = np.arange(10) % 2
    y[0] = 1
    y_neighbour = y.copy()
    y_neighbour[0] = 0
    if hasattr(skdp, "DPLogisticRegression"):
        for method, extra in (
            ("objective", {"C": 0.3}),
            ("output", {"C": 0.3}),
            ("output", {"C": 0.3, "delta": 1e-5}),
            ("gradient", {"C": 1.0, "epochs": 1}),
            ("gradient", {"C": 1.0}),
        ):
            est = skdp.DPLogisticRegression(
                epsilon=1.0,
                method=method,
                data_norm=1.0,
                fit_intercept=False,
                classes=[0, 1],
                **extra,
            )
            label = ", ".join(f"{k}={v}" for k, v in extra.items())
            cases.append(
                (
                    f"DPLogisticRegression {method} ({label})",
                    est,
                    (X, y),
                    (X, y_neighbour),
                    lambda e: e.coef_[0, 0],
                )
            )
    if hasattr(skdp, "PMWSynthesizer"):
        X_pmw = np.zeros((10, 2), dtype=int)
        X_pmw_neighbour = X_pmw.copy()
        X_pmw_neighbour[0] = [1, 1]
        for noise in ("laplace", "gaussian"):
            est = skdp.PMWSynthesizer(
                epsilon=1.0, noise=noise, categories=[[0, 1], [0, 1]], n_rounds=2
            )
            cases.append(
                (
                    f"PMWSynthesizer noise={noise} (universe 2x2)",
                    est,
                    (X_pmw, None),
                    (X_pmw_neighbour, None),
                    lambda e: e.marginal([0, 1])[1, 1],
                )
            )
    return cases


def _print_row(name, claimed, delta, limit, n_runs, result, elapsed):
    lower = result.epsilon_lower_bound
    limit = "-" if limit is None else f"{limit:.3f}"
    row = [name, f"{claimed:.3g}", f"{delta:g}", limit, f"{n_runs}", f"{lower:.3f}"]
    row += [f"{lower / claimed:.2f}", f"{_ceiling(n_runs):.2f}", f"{elapsed:.1f}"]
    print("| " + " | ".join(row) + " |", flush=True)
    if lower > claimed:
        print(f"  VIOLATION: {result}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="per dataset")
    parser.add_argument("--estimator-runs", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="substring of the names to run")
    args = parser.parse_args()

    header = ["what", "claimed", "delta", "limit", "runs", "audited", "ratio"]
    header += ["ceiling"]
    header += ["time (s)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for case in mechanism_cases():
        name, claimed, delta, limit, run, dataset, neighbour, statistic = case
        if args.only not in name:
            continue
        start = time.perf_counter()
        result = audit_epsilon(
            run,
            dataset,
            neighbour,
            statistic=statistic,
            n_runs=args.runs,
            delta=delta,
            confidence=CONFIDENCE,
            random_state=args.seed,
        )
        elapsed = time.perf_counter() - start
        _print_row(name, claimed, delta, limit, args.runs, result, elapsed)
    for name, estimator, dataset, neighbour, statistic in estimator_cases():
        if args.only not in name:
            continue
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = audit_estimator(
                estimator,
                dataset,
                neighbour,
                statistic=statistic,
                n_runs=args.estimator_runs,
                confidence=CONFIDENCE,
                random_state=args.seed,
            )
        _print_row(
            name,
            result.claimed_epsilon,
            result.delta,
            None,
            args.estimator_runs,
            result,
            time.perf_counter() - start,
        )


if __name__ == "__main__":
    main()
