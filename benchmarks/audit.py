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

import numpy as np

from skdp.audit import audit_epsilon
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


def mechanism_cases():
    """(name, claimed epsilon, delta, run, dataset, neighbour, statistic)."""
    # The exponential mechanism's pair below reaches privacy loss
    # log(P[0 | D] / P[0 | D']) < epsilon, approaching epsilon as k grows.
    cases = []
    for eps in (0.5, 1.0, 2.0):
        cases.append(
            (
                f"laplace eps={eps}",
                eps,
                0.0,
                lambda v, rs, eps=eps: laplace_mechanism(v, 1.0, eps, random_state=rs)[
                    0
                ],
                0.0,
                1.0,
                None,
            )
        )
    for eps, delta in ((1.0, 1e-5), (4.0, 1e-5), (1.0, 1e-2)):
        cases.append(
            (
                f"gaussian eps={eps} delta={delta:g}",
                eps,
                delta,
                lambda v, rs, eps=eps, delta=delta: gaussian_mechanism(
                    v, 1.0, eps, delta, random_state=rs
                )[0],
                0.0,
                1.0,
                None,
            )
        )
    for k in (2, 20, 100):
        scores = [1.0] + [0.0] * (k - 1)
        neighbour = [0.0] + [1.0] * (k - 1)
        cases.append(
            (
                f"exponential k={k}",
                1.0,
                0.0,
                lambda s, rs: exponential_mechanism(s, 1.0, 1.0, random_state=rs)[0],
                scores,
                neighbour,
                None,
            )
        )
    for d in (1, 3, 10):
        v0, v1 = np.zeros(d), np.eye(d)[0]

        def llr(out, v0=v0, v1=v1):
            return np.linalg.norm(out - v0) - np.linalg.norm(out - v1)

        cases.append(
            (
                f"l2 vector d={d}",
                1.0,
                0.0,
                lambda v, rs: l2_vector_mechanism(v, 1.0, 1.0, random_state=rs)[0],
                v0,
                v1,
                llr,
            )
        )
    return cases


def estimator_cases():
    """Estimator audits, when the estimators are available (see below)."""
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="per dataset")
    parser.add_argument("--estimator-runs", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    header = ["what", "claimed", "delta", "runs", "audited", "ratio", "ceiling"]
    header += ["time (s)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    rows = [(c, args.runs) for c in mechanism_cases()]
    rows += [(c, args.estimator_runs) for c in estimator_cases()]
    for (name, claimed, delta, run, dataset, neighbour, statistic), n_runs in rows:
        start = time.perf_counter()
        result = audit_epsilon(
            run,
            dataset,
            neighbour,
            statistic=statistic,
            n_runs=n_runs,
            delta=delta,
            confidence=CONFIDENCE,
            random_state=args.seed,
        )
        elapsed = time.perf_counter() - start
        lower = result.epsilon_lower_bound
        row = [name, f"{claimed:g}", f"{delta:g}", f"{n_runs}", f"{lower:.3f}"]
        row += [f"{lower / claimed:.2f}", f"{_ceiling(n_runs):.2f}", f"{elapsed:.1f}"]
        print("| " + " | ".join(row) + " |", flush=True)
        if lower > claimed:
            print(f"  VIOLATION: {result}", flush=True)


if __name__ == "__main__":
    main()
