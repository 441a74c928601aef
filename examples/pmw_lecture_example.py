"""
The lecture's worked example of private multiplicative weights
==============================================================

Universe {0,1}^3 (8 cells), n = 100 rows drawn from
[0.10, 0.05, 0.15, 0.10, 0.20, 0.08, 0.12, 0.20], 100 random linear queries
with weights in [0, 1], T = 20 rounds, epsilon = 1 (lecture 8 of Kamath's
CS 860; ``skdp.datasets.make_lecture_example``).

Unlike the lecture's sample code, every round here is private: the
exponential mechanism uses the query's sensitivity 1/n, and the selected
query is *measured* with noise rather than read exactly. With epsilon = 1
split over 20 rounds, each pure-DP Laplace measurement has scale
1 / (n * 0.025) = 0.4 at n = 100, on answers in [0, 1] that differ from the
uniform distribution's by 0.02 on average: at n = 100 no private run can
reach the lecture's illustrative 0.01, and the noise makes the model worse
than the uniform start. The same universe, queries and budget with
n = 10,000 rows from the same distribution show the errors the lecture
describes.

Run: ``python examples/pmw_lecture_example.py``
"""

import numpy as np

from skdp import PMWSynthesizer
from skdp.datasets import make_lecture_example

N_ROUNDS = 20
EPSILON = 1.0
WEIGHTS = np.array([4, 2, 1])  # bits -> cell index, 000 ... 111


def query_errors(synth, data, queries):
    """|q(data) - q(model)| for every query."""
    histogram = np.bincount(data @ WEIGHTS, minlength=8) / len(data)
    return np.abs(queries @ histogram - synth.answer_queries(queries))


def main(seeds=range(5)):
    example = make_lecture_example(random_state=0)
    rng = np.random.default_rng(1)
    larger = example.universe[rng.choice(8, size=10_000, p=example.true_distribution)]
    print("Lecture example: X = {0,1}^3, |Q| = 100, T = 20, epsilon = 1")
    print(f"{'rows':>6}  {'model':<30} {'max error':>10} {'mean error':>11}")
    for data in (example.data, larger):
        histogram = np.bincount(data @ WEIGHTS, minlength=8) / len(data)
        uniform = np.abs(example.queries @ (histogram - 1 / 8))
        print(
            f"{len(data):>6}  {'uniform start (no data)':<30} "
            f"{uniform.max():>10.4f} {uniform.mean():>11.4f}"
        )
        for noise, delta in (("laplace", 0.0), ("gaussian", 1e-6)):
            worst, mean = [], []
            for seed in seeds:
                synth = PMWSynthesizer(
                    epsilon=EPSILON,
                    delta=delta,
                    noise=noise,
                    workload=example.queries,
                    n_rounds=N_ROUNDS,
                    categories=[[0, 1]] * 3,
                    random_state=seed,  # reproducible: for this example only
                ).fit(data)
                errors = query_errors(synth, data, example.queries)
                worst.append(errors.max())
                mean.append(errors.mean())
            label = f"MWEM, {noise} ({len(worst)} seeds)"
            print(
                f"{len(data):>6}  {label:<30} {np.mean(worst):>10.4f} "
                f"{np.mean(mean):>11.4f}"
            )
    print(f"\nPrivacy spent per fit: epsilon = {synth.epsilon_:.3f}")


if __name__ == "__main__":
    main()
