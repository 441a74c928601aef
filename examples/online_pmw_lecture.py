"""
The lecture's worked example, answered online
=============================================

Universe {0,1}^3 (8 cells), rows drawn from
[0.10, 0.05, 0.15, 0.10, 0.20, 0.08, 0.12, 0.20], and the 100 random linear
queries of ``skdp.datasets.make_lecture_example``, now arriving one at a
time. :class:`skdp.synthesis.OnlinePMW` answers each from its synthetic
distribution unless the sparse vector test says the distribution's error on
it looks large; only then does it spend one of its ``max_updates`` noisy
measurements and update the distribution by multiplicative weights. The
budget, epsilon = 1, is charged once, when the mechanism is bound to the
data.

Beside it: the uniform distribution (no data at all) and independent
Laplace answers, each of the 100 queries with epsilon / 100 (basic
composition).

With the lecture's n = 100 rows, the sparse vector test's noise (its scale
is about 4 max_updates / (n epsilon)) is far above the largest error of the
uniform start: almost no query is measured (fewer than one of the 10
updates on average, each a false positive of the noise), and the answers
stay near the uniform distribution's, which is still far better than 100
independent Laplace answers (scale 1 / (n epsilon / 100) = 1, clipped to
[0, 1]). With n = 10,000 rows from the same distribution the mechanism
spends its updates and its error falls below both.

Run: ``python examples/online_pmw_lecture.py``
"""

import os

import numpy as np

from skdp.datasets import make_lecture_example
from skdp.mechanisms import laplace_mechanism
from skdp.synthesis import OnlinePMW

FAST = bool(os.environ.get("SKDP_EXAMPLES_FAST"))  # set by the test suite
EPSILON = 1.0
MAX_UPDATES = 10
WEIGHTS = np.array([4, 2, 1])  # bits -> cell index, 000 ... 111
SEEDS = range(2 if FAST else 10)


def laplace_answers(queries, data, seed):
    """Each query answered alone with epsilon / len(queries) (basic composition)."""
    histogram = np.bincount(data @ WEIGHTS, minlength=8) / len(data)
    answers, _ = laplace_mechanism(
        queries @ histogram,
        sensitivity=1 / len(data),  # per query; replace-one, n public
        epsilon=EPSILON / len(queries),
        random_state=seed,  # reproducible: for this example only
    )
    return np.clip(answers, 0, 1)  # post-processing


def main():
    example = make_lecture_example(random_state=0)
    queries = example.queries
    rng = np.random.default_rng(1)
    larger = example.universe[rng.choice(8, size=10_000, p=example.true_distribution)]
    print(
        f"Lecture example online: X = {{0,1}}^3, {len(queries)} queries, "
        f"epsilon = {EPSILON}, max_updates = {MAX_UPDATES}, {len(SEEDS)} seeds"
    )
    header = f"{'answers':<34} {'updates':>8} {'max error':>10} {'mean error':>11}"
    print(f"{'rows':>6}  {header}")
    for data in (example.data, larger):
        truth = queries @ (np.bincount(data @ WEIGHTS, minlength=8) / len(data))
        uniform = np.abs(queries @ np.full(8, 1 / 8) - truth)
        print(
            f"{len(data):>6}  {'uniform distribution (no data)':<34} {'-':>8} "
            f"{uniform.max():>10.4f} {uniform.mean():>11.4f}"
        )
        rows = {"OnlinePMW": [], "independent Laplace, eps/100 each": []}
        updates = []
        for seed in SEEDS:
            pmw = OnlinePMW(
                domain=[[0, 1]] * 3,
                epsilon=EPSILON,
                max_updates=MAX_UPDATES,
                random_state=seed,  # reproducible: for this example only
            ).fit(data)
            answers = np.array([pmw.answer(q) for q in queries])  # one at a time
            updates.append(pmw.n_updates_)
            rows["OnlinePMW"].append(np.abs(answers - truth))
            rows["independent Laplace, eps/100 each"].append(
                np.abs(laplace_answers(queries, data, seed) - truth)
            )
        for label, errors in rows.items():
            errors = np.array(errors)
            spent = f"{np.mean(updates):.1f}" if label == "OnlinePMW" else "-"
            print(
                f"{len(data):>6}  {label:<34} {spent:>8} "
                f"{errors.max(axis=1).mean():>10.4f} {errors.mean():>11.4f}"
            )
    print(f"\nPrivacy spent per run: epsilon = {pmw.epsilon_:.3f}; {pmw.report()}")


if __name__ == "__main__":
    main()
