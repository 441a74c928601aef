"""OnlinePMW against independent noisy answers: error against updates spent.

Two settings, every query asked once, in order, through
``OnlinePMW.answer`` (the mechanism does not know the queries in advance):

1. **Lecture** (``skdp.datasets.make_lecture_example``): universe {0,1}^3
   (8 cells), its 100 random linear queries (weights uniform in [0, 1]);
   the lecture's n = 100 rows and n = 10,000 rows drawn from the same
   distribution (seed 1).
2. **Adult**: the bundled discretized Adult (48,842 rows), the full joint
   domain of five columns, education-num (16) x marital-status (7) x
   occupation (15) x sex (2) x income>50K (2) = 6,720 cells, declared from
   the bundled domain sizes (``range(size)`` for each column: nothing read
   from the data). 10,000 random counting queries, each a conjunction of
   1 to 3 set-membership conditions: a width w uniform in {1, 2, 3}, w
   distinct columns, and for each a random non-empty subset of its values
   (each value kept with probability 1/2); the answer is the fraction of
   rows satisfying all w conditions (seeded by ``--query-seed``).

Mechanisms, all at epsilon = 1 (``--epsilon``), replace-one neighbouring,
n public:

* ``OnlinePMW`` with ``max_updates`` in a sweep (``updates`` = mean number
  spent), default threshold and the default projection update;
  ``OnlinePMW fixed`` adds Hardt & Rothblum's fixed step
  ``learning_rate = threshold / 2`` at one ``max_updates`` for comparison.
  Pure epsilon-DP.
* ``Laplace eps/k``: each of the k queries answered alone with
  ``epsilon / k`` (basic composition; sensitivity 1/n each), clipped to
  [0, 1]. Pure epsilon-DP.
* ``Gaussian (eps, 1e-6)``: the k answers released at once with the
  analytic Gaussian mechanism (Balle & Wang 2018) at (epsilon, delta=1e-6)
  for their L2 sensitivity sqrt(k)/n, which is the exact composition of k
  Gaussian answers; clipped to [0, 1]. Approximate DP, so not the same
  guarantee: shown as the strongest simple non-adaptive baseline.
* ``uniform``: the uniform distribution over the cells (no data).

Errors are absolute, in fractions of the rows: ``mean`` over all queries
and seeds, ``max`` the per-run maximum averaged over seeds.

Run::

    python benchmarks/online_pmw.py              # both settings, 3 seeds
    python benchmarks/online_pmw.py --quick      # fewer queries and seeds
    python benchmarks/online_pmw.py --plot       # also error vs updates (matplotlib)
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from skdp.datasets import load_adult, make_lecture_example
from skdp.mechanisms import gaussian_mechanism, laplace_mechanism
from skdp.synthesis import OnlinePMW

ADULT_COLUMNS = ("education-num", "marital-status", "occupation", "sex", "income>50K")
DELTA = 1e-6
BATCH = 250  # queries built and answered at a time (memory of the weights)


def adult_setting():
    adult = load_adult(discretized=True)
    names = list(adult.feature_names) + ["income>50K"]
    table = np.column_stack([adult.data, adult.target])
    index = [names.index(c) for c in ADULT_COLUMNS]
    sizes = [adult.domain[c] for c in ADULT_COLUMNS]
    return table[:, index].astype(np.int64), [list(range(s)) for s in sizes]


def conjunction_batches(sizes, n_queries, seed):
    """Weights over the cells of random conjunction queries, in batches."""
    rng = np.random.default_rng(seed)
    codes = np.indices(sizes).reshape(len(sizes), -1).T  # the public universe
    done = 0
    while done < n_queries:
        count = min(BATCH, n_queries - done)
        weights = np.empty((count, len(codes)))
        for i in range(count):
            width = rng.integers(1, 4)
            keep = np.ones(len(codes), dtype=bool)
            for column in rng.choice(len(sizes), size=width, replace=False):
                allowed = rng.random(sizes[column]) < 0.5
                if not allowed.any():
                    allowed[rng.integers(sizes[column])] = True
                keep &= allowed[codes[:, column]]
            weights[i] = keep
        done += count
        yield weights


def baselines(truth, n, epsilon, seed):
    k = len(truth)
    laplace, _ = laplace_mechanism(
        truth, sensitivity=1 / n, epsilon=epsilon / k, random_state=seed
    )
    gaussian, _ = gaussian_mechanism(
        truth,
        sensitivity=math.sqrt(k) / n,
        epsilon=epsilon,
        delta=DELTA,
        random_state=seed,
    )
    return {
        "Laplace eps/k": np.abs(np.clip(laplace, 0, 1) - truth),
        f"Gaussian (eps, {DELTA:g})": np.abs(np.clip(gaussian, 0, 1) - truth),
    }


def run_online(data, domain, batches, truth, epsilon, max_updates, seed, fixed=False):
    pmw = OnlinePMW(
        domain=domain,
        epsilon=epsilon,
        max_updates=max_updates,
        random_state=seed,  # reproducible: for the benchmark only
    )
    if fixed:
        threshold = pmw.privacy_plan(data).settings["threshold"]
        pmw.set_params(learning_rate=threshold / 2)
    pmw.fit(data)
    start = time.perf_counter()
    answers = np.concatenate([pmw.answer(weights) for weights in batches()])
    seconds = time.perf_counter() - start
    return np.abs(answers - truth), pmw.n_updates_, seconds


def setting_table(name, data, domain, make_batches, args, sweep, fixed_at):
    n = len(data)
    sizes = [len(values) for values in domain]
    cells = np.ravel_multi_index(tuple(data.T), sizes)
    histogram = np.bincount(cells, minlength=math.prod(sizes)) / n
    truth = np.concatenate([w @ histogram for w in make_batches()])
    k = len(truth)
    rows = []
    uniform = np.concatenate(
        [
            np.abs(w.mean(axis=1) - t)
            for w, t in zip(
                make_batches(), np.split(truth, range(BATCH, k, BATCH)), strict=True
            )
        ]
    )
    rows.append(("uniform (no data)", "-", uniform.mean(), uniform.max(), 0.0))
    base = {}
    for seed in range(args.seeds):
        for label, errors in baselines(truth, n, args.epsilon, seed).items():
            base.setdefault(label, []).append(errors)
    for label, errors in base.items():
        errors = np.array(errors)
        rows.append((label, "-", errors.mean(), errors.max(axis=1).mean(), 0.0))
    curve = []
    variants = [(c, False) for c in sweep] + [(fixed_at, True)]
    for c, fixed in variants:
        errors, updates, seconds = [], [], []
        for seed in range(args.seeds):
            e, u, s = run_online(
                data, domain, make_batches, truth, args.epsilon, c, seed, fixed
            )
            errors.append(e)
            updates.append(u)
            seconds.append(s)
        errors = np.array(errors)
        label = f"OnlinePMW{' fixed' if fixed else ''} max_updates={c}"
        row = (
            label,
            f"{np.mean(updates):.1f}",
            errors.mean(),
            errors.max(axis=1).mean(),
            np.mean(seconds),
        )
        rows.append(row)
        if not fixed:
            curve.append((np.mean(updates), row[2], row[3]))
    print(
        f"\n{name}: n = {n}, {math.prod(sizes)} cells, k = {k} queries, "
        f"epsilon = {args.epsilon}, {args.seeds} seeds"
    )
    print(
        f"{'mechanism':<36} {'updates':>8} {'mean err':>9} {'max err':>9} {'s/run':>7}"
    )
    for label, updates, mean, worst, seconds in rows:
        time_text = f"{seconds:7.1f}" if seconds else f"{'-':>7}"
        print(f"{label:<36} {updates:>8} {mean:9.4f} {worst:9.4f} {time_text}")
    return curve


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=10_000, help="Adult queries")
    parser.add_argument("--query-seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="1,000 queries, 2 seeds")
    parser.add_argument("--plot", action="store_true", help="plot error vs updates")
    parser.add_argument("--skip-adult", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.queries, args.seeds = 1000, 2

    example = make_lecture_example(random_state=0)
    rng = np.random.default_rng(1)
    larger = example.universe[rng.choice(8, size=10_000, p=example.true_distribution)]
    curves = {}
    for data in (example.data, larger):
        curves[f"lecture n={len(data)}"] = setting_table(
            f"Lecture example ({len(data)} rows)",
            data,
            [[0, 1]] * 3,
            lambda: iter([example.queries]),
            args,
            sweep=(1, 2, 5, 10, 20, 50),
            fixed_at=10,
        )
    if not args.skip_adult:
        data, domain = adult_setting()
        sizes = [len(values) for values in domain]
        curves["Adult"] = setting_table(
            "Discretized Adult, 5-column joint domain",
            data,
            domain,
            lambda: conjunction_batches(sizes, args.queries, args.query_seed),
            args,
            sweep=(10, 25, 50, 100, 200, 400),
            fixed_at=100,
        )
    if args.plot:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4))
        for ax, (name, curve) in zip(np.atleast_1d(axes), curves.items(), strict=True):
            updates, mean, worst = np.array(curve).T
            ax.plot(updates, mean, "o-", label="mean error")
            ax.plot(updates, worst, "s--", label="max error")
            ax.set(title=name, xlabel="updates spent", ylabel="absolute error")
            ax.legend()
        fig.tight_layout()
        plt.show()


if __name__ == "__main__":
    main()
