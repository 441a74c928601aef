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
the synthetic normalised marginal. For skdp it is reported on the model's
exact marginals (``PMWSynthesizer.marginal``; column ``L1 model``), on the
``n`` synthetic rows it releases (``sample(n)`` at the default
``sampling="rounded"``; ``L1 rows``) and on ``n`` rows drawn i.i.d. from the
same model (``sampling="iid"``; ``L1 iid``, the rows before the rounded
sampling existed). Peers are measured on their synthetic rows, and AIM also
on its model's marginals. Each run is a fresh subprocess; ``peak MB`` is
its maximum resident set size (``ru_maxrss``, including the interpreter,
pandas and, for private-pgm, jax), ``s`` the wall-clock time of the fit
plus the generation of the ``n`` rows and ``cpu s`` the processor time of
the same (user + system, all threads: the figure to trust when the machine
is shared), ``fit cpu`` that of the fit alone (skdp only). Means over the
seeds are shown, with the largest time and memory of any seed (``max s``,
``max MB``) for the issue's targets (A <= 0.12 and B <= 0.22 on the rows
at epsilon=1, each fit within 60 s and 2 GB).

Settings: ``epsilon`` in {0.3, 1, 3}, ``delta = 1e-9``, seeds 0, 1, 2
(``random_state=seed``, for reproducibility only), everything else at its
default (Gaussian noise, ``schedule="adaptive"``, ``sampling="rounded"``,
``coarsen="auto"``), the workload's marginals passed as ``workload=``.
Method ``skdp-plain`` is the same fit with ``coarsen=None`` (plain
marginals only; not run unless named in ``--methods``).

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

Peers: private-pgm's AIM and MST (McKenna et al.; ``mechanisms/aim.py`` and
``mechanisms/mst.py`` of https://github.com/ryan112358/private-pgm, which
are not a package), in their own virtualenv, from a checkout of the
repository that is not part of skdp::

    git clone https://github.com/ryan112358/private-pgm ../venvs/pgm-src
    python -m venv ../venvs/pgm
    ../venvs/pgm/bin/pip install attrs numpy scipy networkx optax \
        matplotlib "jax==0.7.0" "jaxlib==0.7.0" "chex<0.1.91" "pandas==2.2.3"

(the checkout of August 2025 fails with jax 0.10, whose tracers its
``Factor`` arithmetic does not recognise, and with pandas 3, whose
``groupby().apply`` drops the grouping columns that ``synthetic_data``
needs; its ``cdp2adp.py`` imports matplotlib).

The interpreter is ``--pgm-python`` (environment ``SKDP_PGM_PYTHON``,
default ``../venvs/pgm/bin/python``) and the checkout ``--pgm-src``
(``SKDP_PGM_SRC``, default ``../venvs/pgm-src``). Both run on the same
columns and data with ``delta = 1e-9`` and ``np.random.seed(seed)``; AIM
with its defaults (``max_model_size=80`` MB, ``max_iters=1000``, 16 rounds
per column) and the workload's marginals, weight 1, MST with its defaults
(it selects its own 2-way tree and ignores the workload). Rows are
``synthetic_data`` of their models (``n`` rows). AIM is slow, so it runs
for the first seed only unless ``--aim-all-seeds``; every peer run has a
timeout (``--peer-timeout``, default 1200 s). ``--methods`` picks the
methods (default: skdp aim mst smartnoise; also skdp-plain),
``--data-dir`` the folder of ``adult.csv`` (environment
``SKDP_ADULT_DIR``).

Usage::

    python benchmarks/pmw_adult.py                      # everything
    python benchmarks/pmw_adult.py --workloads A --epsilons 1 --seeds 0
    python benchmarks/pmw_adult.py --no-smartnoise
    python benchmarks/pmw_adult.py --methods aim mst --epsilons 1

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
PGM_PYTHON = peer_python("pgm")
PGM_SRC = os.environ.get("SKDP_PGM_SRC", str(ROOT.parent / "venvs" / "pgm-src"))
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


def worker_skdp(name, epsilon, seed, coarsen="auto"):
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
        coarsen=coarsen,
        random_state=seed,
    )
    start, cpu = time.perf_counter(), time.process_time()
    synth.fit(X)
    fit_cpu = time.process_time() - cpu
    rows = synth.sample(len(X))  # the released rows: sampling="rounded"
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    iid = synth.set_params(sampling="iid").sample(len(X))
    return {
        "l1_model": mean_l1(X, lambda t, s: synth.marginal(list(t)), marginals, domain),
        "l1_rows": rows_l1(X, rows, marginals, domain),
        "l1_iid": rows_l1(X, iid, marginals, domain),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "fit_cpu_seconds": fit_cpu,
        "epsilon_spent": synth.epsilon_,
        "rounds": len(synth.selected_),
        "model_cells": synth.model_.size,
    }


def rows_l1(X, rows, marginals, domain):
    return mean_l1(
        X, lambda t, s: marginal(rows[list(t)].to_numpy(), s), marginals, domain
    )


def worker_pgm(mechanism, name, epsilon, seed):
    import contextlib

    sys.path[:0] = [str(Path(PGM_SRC) / "src"), str(Path(PGM_SRC) / "mechanisms")]
    from mbi import Dataset, Domain

    frame, domain = load()
    columns, marginals = workload(name, list(frame.columns))
    X = frame[columns]
    data = Dataset(X.copy(), Domain(columns, [domain[c] for c in columns]))
    np.random.seed(seed)  # noqa: NPY002 (private-pgm draws from the global state)
    model = None
    start, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(sys.stderr):  # its progress messages
        if mechanism == "aim":
            from aim import AIM

            model, synth = AIM(epsilon, 1e-9).run(
                data, [(t, 1.0) for t in marginals], num_synth_rows=len(X)
            )
        else:
            from mst import MST

            synth = MST(data, epsilon, 1e-9)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    rows = synth.df[columns].astype(int)
    result = {
        "l1_rows": rows_l1(X, rows, marginals, domain),
        "seconds": seconds,
        "cpu_seconds": cpu,
    }
    if model is not None:

        def model_marginal(triple, sizes):
            table = np.asarray(model.project(list(triple)).datavector(flatten=False))
            return table / table.sum()

        result["l1_model"] = mean_l1(X, model_marginal, marginals, domain)
    return result


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
    rows = synth.sample(len(X))
    seconds = time.perf_counter() - start
    rows = rows[columns].astype(int)
    for c in columns:
        rows[c] = rows[c].clip(0, domain[c] - 1)
    return {"l1_rows": rows_l1(X, rows, marginals, domain), "seconds": seconds}


PYTHONS = {"skdp": sys.executable, "skdp-plain": sys.executable}
LABELS = {
    "skdp": "skdp PMWSynthesizer",
    "skdp-plain": "skdp coarsen=None",
    "aim": "private-pgm AIM",
    "mst": "private-pgm MST",
}


def run(method, name, epsilon, seed, timeout, split_factor, iterations):
    python = {"smartnoise": str(SMARTNOISE_PYTHON)}.get(method, PYTHONS[method])
    command = [python, __file__, "--worker", method]
    command += [name, str(epsilon), str(seed), str(split_factor), str(iterations)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), SKDP_PGM_SRC=PGM_SRC)
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f} s"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["failed"]
        errors = [line for line in lines if "Error" in line or "Exception" in line]
        return {"error": (errors or lines)[-1][:60]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    global PGM_SRC
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["A", "B"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["skdp", "aim", "mst", "smartnoise"],
        choices=["skdp", "skdp-plain", "aim", "mst", "smartnoise"],
    )
    parser.add_argument("--data-dir", default=str(DATA), help="folder of adult.csv")
    parser.add_argument("--timeout", type=float, default=600.0, help="skdp, s")
    parser.add_argument("--peer-timeout", type=float, default=1200.0)
    parser.add_argument("--pgm-python", default=PGM_PYTHON)
    parser.add_argument("--pgm-src", default=PGM_SRC)
    parser.add_argument("--aim-all-seeds", action="store_true")
    parser.add_argument(
        "--json-out", help="append every run's result here (JSON lines)"
    )
    parser.add_argument(
        "--table-from",
        nargs="+",
        help="print the table of runs saved with --json-out; run nothing",
    )
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
        if method in ("skdp", "skdp-plain"):
            coarsen = None if method == "skdp-plain" else "auto"
            result = worker_skdp(name, float(epsilon), int(seed), coarsen)
        elif method in ("aim", "mst"):
            result = worker_pgm(method, name, float(epsilon), int(seed))
        else:
            result = worker_smartnoise(
                name, float(epsilon), int(seed), int(split_factor), int(iterations)
            )
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    if args.table_from:
        print_saved(args.table_from, args)
        return
    os.environ["SKDP_ADULT_DIR"] = args.data_dir
    PGM_SRC = args.pgm_src
    PYTHONS["aim"] = PYTHONS["mst"] = args.pgm_python
    methods = [m for m in args.methods if m != "smartnoise" or not args.no_smartnoise]
    for method, python in [("smartnoise", SMARTNOISE_PYTHON), ("aim", args.pgm_python)]:
        if method in methods and not Path(python).exists():
            print(f"{method} skipped: no virtualenv at {python}\n")
            methods = [m for m in methods if m != method]
            if method == "aim":
                methods = [m for m in methods if m != "mst"]
    if ("aim" in methods or "mst" in methods) and not Path(PGM_SRC).is_dir():
        print(f"private-pgm skipped: no checkout at {PGM_SRC}\n")
        methods = [m for m in methods if m not in ("aim", "mst")]
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    print_header()
    for name in args.workloads:
        for epsilon in args.epsilons:
            for method in methods:
                seeds = args.seeds
                timeout = args.timeout if method == "skdp" else args.peer_timeout
                if method == "smartnoise":
                    if epsilon not in args.smartnoise_epsilons:
                        continue
                    seeds = seeds if args.smartnoise_all_seeds else seeds[:1]
                if method == "aim" and not args.aim_all_seeds:
                    seeds = seeds[:1]
                records = []
                for seed in seeds:
                    result = run(
                        method,
                        name,
                        epsilon,
                        seed,
                        timeout,
                        args.split_factor,
                        args.smartnoise_iterations,
                    )
                    record = {"method": method, "workload": name, "epsilon": epsilon}
                    records.append(dict(result, seed=seed, **record))
                    if args.json_out:  # one JSON line per run, as it ends
                        with open(args.json_out, "a") as out:
                            out.write(json.dumps(records[-1]) + "\n")
                print_row(records, args)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def print_header():
    header = (
        f"{'wl':<3}{'eps':>5}  {'method':<22}{'L1 model':>10}{'L1 rows':>9}"
        f"{'L1 iid':>8}{'s':>7}{'max s':>7}{'cpu s':>7}{'fit cpu':>8}{'MB':>6}"
        f"{'max MB':>7}  runs"
    )
    print(header)
    print("-" * len(header))


def print_row(records, args):
    """One line: the means over the seeds of one (workload, epsilon, method)."""
    first = records[0]
    good = [r for r in records if "error" not in r]
    label = LABELS.get(
        first["method"],
        f"SmartNoise MWEM s{args.split_factor} i{args.smartnoise_iterations}",
    )

    def stat(key, fmt, reduce=np.mean):
        values = [r[key] for r in good if key in r]
        return format(reduce(values), fmt) if values else "-"

    errors = sorted({r["error"] for r in records if "error" in r})
    print(
        f"{first['workload']:<3}{first['epsilon']:>5g}  {label:<22}"
        f"{stat('l1_model', '.3f'):>10}{stat('l1_rows', '.3f'):>9}"
        f"{stat('l1_iid', '.3f'):>8}{stat('seconds', '.1f'):>7}"
        f"{stat('seconds', '.1f', max):>7}{stat('cpu_seconds', '.1f'):>7}"
        f"{stat('fit_cpu_seconds', '.1f'):>8}"
        f"{stat('peak_mb', '.0f'):>6}"
        f"{stat('peak_mb', '.0f', max):>7}  "
        f"{len(good)}/{len(records)} {'; '.join(errors)}",
        flush=True,
    )


def print_saved(paths, args):
    """The table of runs saved with --json-out (the last run of each seed)."""
    latest = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            key = (record["workload"], record["epsilon"], record["method"])
            latest[key + (record["seed"],)] = record
    methods = ["skdp", "skdp-plain", "aim", "mst", "smartnoise"]
    order = {m: i for i, m in enumerate(methods)}
    groups = {}
    for (name, epsilon, method, _), record in sorted(
        latest.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]], kv[0][3])
    ):
        groups.setdefault((name, epsilon, method), []).append(record)
    print_header()
    for records in groups.values():
        print_row(records, args)


if __name__ == "__main__":
    main()
