"""How PMWSynthesizer's estimation defaults were chosen: validation workloads only.

``benchmarks/pmw_adult.py`` reports :class:`skdp.synthesis.PMWSynthesizer`
on two test workloads of discretized Adult (A: the 56 3-way marginals of 8
columns; B: 64 random 3-way marginals of the 14 columns, drawn with
``default_rng(0)``). The public constants of the estimation -- whether
``coarsen="auto"`` is the default, and the tolerance of mirror descent's
stopping rule (``skdp.synthesis._pmw._TOL``) -- are chosen here, on other
workloads, never on A or B:

* **held-out**: discretized Adult, the 8 columns A leaves out or barely
  uses (age, fnlwgt, relationship, capital-gain, capital-loss,
  hours-per-week, native-country, income>50K; six of them have 42 to 100
  values), all 56 3-way marginals;
* **other-triples**: discretized Adult, 14 columns, 64 3-way marginals drawn
  with ``default_rng(1)`` among the 300 triples that B does not hold;
* **raw-binned**: the raw Adult rows (30,162, a different sample and
  encoding of the census), age, fnlwgt and hours per week cut into 48
  equal-width bins by public bounds, with marital status, occupation,
  relationship, sex and income, all 56 3-way marginals;

Every fit uses ``epsilon`` (default 1), ``delta=1e-9`` and the seeds 100,
101, 102 (not the benchmark's). Reported per workload and setting: the
mean L1 error over the workload of the model's marginals (``L1 model``) and
of the ``n`` released rows (``L1 rows``, ``sampling="rounded"``), the CPU
seconds of fit plus sample (``time.process_time``, the figure to read on a
shared machine), mirror-descent steps and model cells; then, per setting,
the mean over workloads and seeds of the rows error and of the CPU ratio
to ``coarsen=None`` at the same tolerance.

Run from the repository root (about 20 minutes of CPU for the default
grid)::

    python benchmarks/pmw_default_validation.py
    python benchmarks/pmw_default_validation.py --tols 0 1e-3 3e-3 1e-2
    python benchmarks/pmw_default_validation.py --workloads held-out --seeds 100
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings

import numpy as np

import skdp.synthesis._pmw as pmw
from skdp.datasets import load_adult
from skdp.synthesis import PMWSynthesizer

SEEDS = [100, 101, 102]
HELD_OUT = [
    "age",
    "fnlwgt",
    "relationship",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income>50K",
]


def _b_triples(columns):
    """The 64 triples of benchmarks/pmw_adult.py's workload B (to leave out)."""
    triples = list(itertools.combinations(columns, 3))
    picked = np.random.default_rng(0).choice(len(triples), 64, replace=False)
    return {triples[i] for i in picked}


def held_out():
    data = load_adult(discretized=True, as_frame=True)
    X = data.frame[HELD_OUT]
    categories = {c: list(range(data.domain[c])) for c in HELD_OUT}
    return X, list(itertools.combinations(HELD_OUT, 3)), {"categories": categories}


def other_triples():
    data = load_adult(discretized=True, as_frame=True)
    X = data.frame
    columns = list(X.columns)
    test = _b_triples(columns)
    free = [t for t in itertools.combinations(columns, 3) if t not in test]
    picked = np.random.default_rng(1).choice(len(free), 64, replace=False)
    categories = {c: list(range(data.domain[c])) for c in columns}
    return X, [free[i] for i in picked], {"categories": categories}


def raw_binned():
    frame = load_adult(as_frame=True).frame
    columns = ["age", "fnlwgt", "hr_per_week", "marital", "occupation"]
    columns += ["relationship", "sex", "income>50K"]
    X = frame[columns]
    bounds = {"age": (17, 91), "fnlwgt": (10_000, 500_000), "hr_per_week": (1, 100)}
    categories = {
        c: list(X[c].cat.categories) for c in ["marital", "occupation", "relationship"]
    }
    categories.update({"sex": list(X["sex"].cat.categories), "income>50K": [0, 1]})
    params = {"bounds": bounds, "categories": categories, "n_bins": 48}
    return X, list(itertools.combinations(columns, 3)), params


WORKLOADS = {
    "held-out": held_out,
    "other-triples": other_triples,
    "raw-binned": raw_binned,
}


def codes(synth, X):
    """Each column's codes in the fitted domains (for the error metric)."""
    return np.column_stack(
        [d.encode(X.iloc[:, j].to_numpy()) for j, d in enumerate(synth.domains_)]
    )


def table(codes_, clique, sizes):
    shape = [sizes[a] for a in clique]
    flat = np.ravel_multi_index(tuple(codes_[:, a] for a in clique), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape) / len(codes_)


def fit_one(X, workload, params, coarsen, tol, epsilon, seed):
    pmw._TOL = tol
    synth = PMWSynthesizer(
        epsilon=epsilon,
        delta=1e-9,
        workload=workload,
        coarsen=coarsen,
        random_state=seed,
        **params,
    )
    cpu = time.process_time()
    synth.fit(X)
    rows = synth.sample(len(X))
    cpu = time.process_time() - cpu
    names = list(X.columns)
    sizes = [d.size for d in synth.domains_]
    real, fake = codes(synth, X), codes(synth, rows)
    model_errors, row_errors = [], []
    for marginal in workload:
        clique = tuple(names.index(c) for c in marginal)
        truth = table(real, clique, sizes)
        model_errors.append(np.abs(truth - synth.marginal(list(marginal))).sum())
        row_errors.append(np.abs(truth - table(fake, clique, sizes)).sum())
    return {
        "l1_model": float(np.mean(model_errors)),
        "l1_rows": float(np.mean(row_errors)),
        "cpu": cpu,
        "steps": synth.n_iter_,
        "cells": synth.model_.size,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    parser.add_argument("--coarsen", nargs="+", default=["auto", "none"])
    parser.add_argument("--tols", nargs="+", type=float, default=[pmw._TOL])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # declared domains; nothing to warn about
    results = {}
    header = (
        f"{'workload':<14}{'coarsen':<8}{'tol':>8}{'L1 model':>10}{'L1 rows':>9}"
        f"{'cpu s':>8}{'steps':>7}{'cells':>9}"
    )
    print(f"epsilon={args.epsilon:g}, seeds {args.seeds}; means over the seeds")
    print(header)
    print("-" * len(header))
    for name in args.workloads:
        X, workload, params = WORKLOADS[name]()
        for coarsen, tol in itertools.product(args.coarsen, args.tols):
            runs = [
                fit_one(
                    X,
                    workload,
                    params,
                    None if coarsen == "none" else coarsen,
                    tol,
                    args.epsilon,
                    seed,
                )
                for seed in args.seeds
            ]
            results[name, coarsen, tol] = runs
            mean = {k: np.mean([r[k] for r in runs]) for k in runs[0]}
            print(
                f"{name:<14}{coarsen:<8}{tol:>8g}{mean['l1_model']:>10.4f}"
                f"{mean['l1_rows']:>9.4f}{mean['cpu']:>8.1f}{mean['steps']:>7.0f}"
                f"{mean['cells']:>9.0f}",
                flush=True,
            )
    print()
    print("per setting, over workloads and seeds:")
    print(f"{'coarsen':<8}{'tol':>8}{'L1 rows':>9}{'L1 model':>10}{'cpu / none':>12}")
    for coarsen, tol in itertools.product(args.coarsen, args.tols):
        runs = [r for n in args.workloads for r in results[n, coarsen, tol]]
        ratios = []
        if "none" in args.coarsen:
            for n in args.workloads:
                base = results[n, "none", tol]
                ratios += [
                    r["cpu"] / b["cpu"]
                    for r, b in zip(results[n, coarsen, tol], base, strict=True)
                ]
        ratio = f"{np.median(ratios):>12.2f}" if ratios else f"{'-':>12}"
        print(
            f"{coarsen:<8}{tol:>8g}{np.mean([r['l1_rows'] for r in runs]):>9.4f}"
            f"{np.mean([r['l1_model'] for r in runs]):>10.4f}{ratio}"
        )


if __name__ == "__main__":
    main()
