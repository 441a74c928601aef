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

The last rows audit the side channels the release-contract review found
(issue 18): an iteration count, the noisy output on a pair built to break
the exact-minimiser assumption, and the number of warnings of a search.
They use only the public API, so the same rows can be run on an older
checkout to show the leak (``PYTHONPATH=<old checkout> python
benchmarks/audit.py --only "finding"``).

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
from skdp.tools import count, histogram

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


def _count(epsilon):
    def run(rows, random_state):
        return float(count(rows, epsilon=epsilon, random_state=random_state))

    return run


def _histogram(epsilon):
    def run(values, random_state):
        hist, _ = histogram(
            values, bins=2, range=(0.0, 1.0), epsilon=epsilon, random_state=random_state
        )
        return float(hist[0])

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
    for eps in (0.5, 1.0, 2.0):
        # A count of non-zero rows: one row changes it by 1 (randomised
        # response on the integers; every event's loss is +-epsilon).
        zeros, one = np.zeros(20), np.zeros(20)
        one[0] = 1.0
        cases.append((f"tools.count eps={eps}", eps, 0.0, eps, _count(eps), zeros, one))
    for eps in (1.0, 2.0):
        # A histogram: the replaced row leaves bin 0 for bin 1.
        low, moved = np.full(20, 0.25), np.full(20, 0.25)
        moved[0] = 0.75
        name = f"tools.histogram eps={eps} (bin 0)"
        cases.append((name, eps, 0.0, eps, _histogram(eps), low, moved))
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


def _unit_pair():
    """Finding 1's pair: 200 unit rows in 3-d; row 0 -> [1, 0, 0], label 0."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [1.0, 0.0, 0.0], 0
    return (X, y), (X2, y2)


def _stopping_pair():
    """Finding 2's stopping-rule pair: 5,000 rows of norm 0.03 along e1."""
    X = np.zeros((5000, 2))
    X[:, 0] = 0.03
    y = np.zeros(5000, dtype=int)
    y[:2557] = 1
    y2 = y.copy()
    y2[0] = 0
    return (X, y), (X, y2)


def side_channel_cases():
    """(name, estimator, dataset, neighbour, statistic): the review's findings.

    Each statistic is something a fit released besides its noisy output (an
    iteration count, a warning count), or the noisy output on a pair built
    to break an assumption of the proof (the solver's residual). Written
    against the public API only, so the same cases run on older releases.
    """
    import skdp

    cases = []
    unit, unit_neighbour = _unit_pair()
    for method in ("output", "objective"):
        est = skdp.DPLogisticRegression(
            epsilon=1.0, method=method, C=100.0, data_norm=1.0, classes=[0, 1]
        )
        cases.append(
            (
                f"side channel: {method} n_iter_ (finding 1)",
                est,
                unit,
                unit_neighbour,
                lambda e: float(e.n_iter_[0]),
            )
        )
    stop, stop_neighbour = _stopping_pair()
    est = skdp.DPLogisticRegression(
        epsilon=1.0,
        method="output",
        C=1.0,
        data_norm=0.03,
        fit_intercept=False,
        classes=[0, 1],
        tol=0.0112,
    )
    cases.append(
        (
            "solver residual: output coef_ at tol=0.0112 (finding 2)",
            est,
            stop,
            stop_neighbour,
            lambda e: e.coef_[0, 0],
        )
    )
    return cases


class _WarningCount:
    """Statistic of a search: how many distinct warnings it emitted."""

    def __init__(self, estimator):
        self.estimator = estimator

    def run(self, data, random_state):
        from sklearn.base import clone

        X, y = data
        search = clone(self.estimator).set_params(random_state=random_state)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            search.fit(X, y)
        return float(len(record))


def search_warning_case():
    """Finding 6: a search re-emitted one warning per distinct trial message.

    On finding 1's pair, Newton needs about 13 steps on one dataset and 10 on the
    other (C = 100), so with ``max_iter=10`` the trials of a search warned
    (``ConvergenceWarning``) on one dataset only; the count of distinct
    warnings the search shows is the statistic.
    """
    from skdp import DPLogisticRegression
    from skdp.model_selection import PrivateSearchCV

    unit, unit_neighbour = _unit_pair()
    search = PrivateSearchCV(
        DPLogisticRegression(
            method="output", C=100.0, data_norm=1.0, classes=[0, 1], max_iter=10
        ),
        {"C": [100.0]},
        epsilon=1.0,
        mean_trials=3.0,
    )
    return _WarningCount(search), unit, unit_neighbour


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
    for name, estimator, dataset, neighbour, statistic in (
        estimator_cases() + side_channel_cases()
    ):
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
    name = "side channel: search's distinct warnings (finding 6)"
    if args.only in name:
        counter, dataset, neighbour = search_warning_case()
        start = time.perf_counter()
        runs = max(8, args.estimator_runs // 5)
        result = audit_epsilon(
            counter.run,
            dataset,
            neighbour,
            n_runs=runs,
            confidence=CONFIDENCE,
            random_state=args.seed,
        )
        _print_row(name, 1.0, 0.0, None, runs, result, time.perf_counter() - start)


if __name__ == "__main__":
    main()
