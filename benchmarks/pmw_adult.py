"""PMWSynthesizer on discretized Adult: mean L1 marginal error, fit time, memory.

Data: ``../shared/data/adult/adult.csv`` (48,842 rows, 14 integer-coded
columns) with ``adult-domain.json`` (the declared domain sizes; every
column's categories are ``range(size)``, so no domain is read from the data).

Workloads (as defined in issue 4):

* **A**: all 56 3-way marginals over [age, workclass, education-num,
  marital-status, occupation, race, sex, income>50K]; the synthesizer is fit
  on those 8 columns.
* **B**: 64 3-way marginals of all 14 columns: the triples
  ``itertools.combinations(columns, 3)`` in CSV column order at indices
  ``np.random.default_rng(0).choice(364, 64, replace=False)``.

Metric: the mean over the workload of the L1 distance between the real and
the synthetic normalised marginal. For skdp it is reported twice: on the
model's exact marginals (``PMWSynthesizer.marginal``; column ``L1 model``)
and on ``n`` synthetic rows drawn from it (``L1 rows``). Peers are measured
on their synthetic rows. Each run is a fresh subprocess; ``peak MB`` is its
maximum resident set size (``ru_maxrss``, including the interpreter and
pandas), ``fit s`` the wall-clock time of ``fit``.

Settings: ``epsilon`` in {0.3, 1, 3}, ``delta = 1e-9``, seeds 0, 1, 2
(``random_state=seed``, for reproducibility only), everything else at its
default (Gaussian noise, ``n_rounds = max(16, n_columns)``), the workload's
marginals passed as ``workload=``.

Peer: SmartNoise's MWEM (``smartnoise-synth``), in its own virtualenv::

    python -m venv ../venvs/smartnoise
    ../venvs/smartnoise/bin/pip install smartnoise-synth

It is run with its defaults except ``split_factor`` (``s``, default 3: its
default, one histogram over all columns, is a dense table of 2.6e7 cells on
A and did not finish in 10 minutes) and ``iterations`` (``i``, default 10:
its default, 10 * ceil(log10 n) = 50 here, did not finish in 600 s on A
with ``split_factor=3``; ``--smartnoise-iterations 0`` restores it), with a
timeout per run (``--timeout``, default 600 s); runs that time out or fail
are reported as such. Because it is slow, it runs only at ``--smartnoise-epsilons``
(default 1) and for the first seed (``--smartnoise-all-seeds`` for all).
Skip it with ``--no-smartnoise``.

Usage::

    python benchmarks/pmw_adult.py                      # everything
    python benchmarks/pmw_adult.py --workloads A --epsilons 1 --seeds 0
    python benchmarks/pmw_adult.py --no-smartnoise

(from the repository root, with skdp installed or ``PYTHONPATH=.``).
"""

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _peers import adult_dir, peer_python  # noqa: E402 (benchmarks/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
DATA = adult_dir()
SMARTNOISE_PYTHON = Path(peer_python("smartnoise"))
# skdp.datasets.ADULT_SYNTHESIS_COLUMNS, spelled out: the SmartNoise worker
# runs this file in its own virtualenv, without skdp.
A_COLUMNS = [
    "age",
    "workclass",
    "education-num",
    "marital-status",
    "occupation",
    "race",
    "sex",
    "income>50K",
]


def load():
    import pandas as pd

    frame = pd.read_csv(DATA / "adult.csv")
    domain = json.loads((DATA / "adult-domain.json").read_text())
    return frame, domain


def workload(name, columns):
    """(columns to fit on, list of marginals as column-name triples)."""
    if name == "A":
        return A_COLUMNS, list(itertools.combinations(A_COLUMNS, 3))
    triples = list(itertools.combinations(columns, 3))
    picked = np.random.default_rng(0).choice(len(triples), 64, replace=False)
    return list(columns), [triples[i] for i in picked]


def marginal(codes, sizes):
    flat = np.ravel_multi_index(tuple(codes.T), sizes)
    return np.bincount(flat, minlength=int(np.prod(sizes))).reshape(sizes) / len(codes)


def mean_l1(real, synthetic_marginals, marginals, domain):
    errors = []
    for triple in marginals:
        sizes = [domain[c] for c in triple]
        truth = marginal(real[list(triple)].to_numpy(), sizes)
        errors.append(np.abs(truth - synthetic_marginals(triple, sizes)).sum())
    return float(np.mean(errors))


def worker_skdp(name, epsilon, seed):
    sys.path.insert(0, str(ROOT))
    from skdp import PMWSynthesizer

    frame, domain = load()
    columns, marginals = workload(name, list(frame.columns))
    X = frame[columns]
    synth = PMWSynthesizer(
        epsilon=epsilon,
        delta=1e-9,
        workload=marginals,
        categories={c: list(range(domain[c])) for c in columns},
        random_state=seed,
    )
    start = time.perf_counter()
    synth.fit(X)
    fit_seconds = time.perf_counter() - start
    rows = synth.sample(len(X))
    return {
        "l1_model": mean_l1(X, lambda t, s: synth.marginal(list(t)), marginals, domain),
        "l1_rows": mean_l1(
            X, lambda t, s: marginal(rows[list(t)].to_numpy(), s), marginals, domain
        ),
        "fit_seconds": fit_seconds,
        "epsilon_spent": synth.epsilon_,
        "rounds": len(synth.selected_),
        "model_cells": synth.model_.size,
    }


def worker_smartnoise(name, epsilon, seed, split_factor, iterations):
    from snsynth.mwem import MWEMSynthesizer

    frame, domain = load()
    columns, marginals = workload(name, list(frame.columns))
    X = frame[columns]
    np.random.seed(seed)  # noqa: NPY002 (SmartNoise draws from the global state)
    synth = MWEMSynthesizer(
        epsilon=epsilon, split_factor=split_factor, iterations=iterations or None
    )
    start = time.perf_counter()
    synth.fit(X.copy(), categorical_columns=columns, preprocessor_eps=0.0)
    fit_seconds = time.perf_counter() - start
    rows = synth.sample(len(X))
    rows = rows[columns].astype(int)
    for c in columns:
        rows[c] = rows[c].clip(0, domain[c] - 1)
    return {
        "l1_rows": mean_l1(
            X, lambda t, s: marginal(rows[list(t)].to_numpy(), s), marginals, domain
        ),
        "fit_seconds": fit_seconds,
    }


def run(method, name, epsilon, seed, timeout, split_factor, iterations):
    if method == "skdp":
        command = [sys.executable, __file__, "--worker", "skdp"]
    else:
        command = [str(SMARTNOISE_PYTHON), __file__, "--worker", "smartnoise"]
    command += [name, str(epsilon), str(seed), str(split_factor), str(iterations)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": last[:60]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["A", "B"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--split-factor", type=int, default=3)
    parser.add_argument("--no-smartnoise", action="store_true")
    parser.add_argument(
        "--smartnoise-epsilons",
        nargs="+",
        type=float,
        default=[1.0],
        help="epsilons at which SmartNoise runs (first seed only, unless "
        "--smartnoise-all-seeds)",
    )
    parser.add_argument("--smartnoise-all-seeds", action="store_true")
    parser.add_argument("--smartnoise-iterations", type=int, default=10)
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        method, name, epsilon, seed, split_factor, iterations = args.worker
        if method == "skdp":
            result = worker_skdp(name, float(epsilon), int(seed))
        else:
            result = worker_smartnoise(
                name, float(epsilon), int(seed), int(split_factor), int(iterations)
            )
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    methods = ["skdp"]
    if not args.no_smartnoise:
        if SMARTNOISE_PYTHON.exists():
            methods.append("smartnoise")
        else:
            print(f"SmartNoise skipped: no virtualenv at {SMARTNOISE_PYTHON}\n")
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    header = (
        f"{'wl':<3}{'eps':>5}  {'method':<22}{'L1 model':>10}{'L1 rows':>10}"
        f"{'fit s':>9}{'peak MB':>9}  runs"
    )
    print(header)
    print("-" * len(header))
    for name in args.workloads:
        for epsilon in args.epsilons:
            for method in methods:
                seeds = args.seeds
                if method == "smartnoise":
                    if epsilon not in args.smartnoise_epsilons:
                        continue
                    seeds = seeds if args.smartnoise_all_seeds else seeds[:1]
                results = [
                    run(
                        method,
                        name,
                        epsilon,
                        seed,
                        args.timeout,
                        args.split_factor,
                        args.smartnoise_iterations,
                    )
                    for seed in seeds
                ]
                good = [r for r in results if "error" not in r]
                label = (
                    "skdp PMWSynthesizer"
                    if method == "skdp"
                    else f"SmartNoise MWEM s{args.split_factor}"
                    f" i{args.smartnoise_iterations}"
                )

                def stat(key, fmt, good=good):
                    values = [r[key] for r in good if key in r]
                    return format(np.mean(values), fmt) if values else "-"

                errors = sorted({r["error"] for r in results if "error" in r})
                print(
                    f"{name:<3}{epsilon:>5g}  {label:<22}"
                    f"{stat('l1_model', '.3f'):>10}{stat('l1_rows', '.3f'):>10}"
                    f"{stat('fit_seconds', '.1f'):>9}{stat('peak_mb', '.0f'):>9}  "
                    f"{len(good)}/{len(results)} {'; '.join(errors)}",
                    flush=True,
                )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
