"""Time and peak memory of ``python -m skdp synthesize`` on a large CSV file.

Writes a CSV file of ``--rows`` rows (default 6,200,000, about 200 MB) and
8 columns similar in kind to UCI Adult -- three numeric columns (age,
education years, hours per week), one mostly-zero numeric column (capital
gain) and four categorical ones (workclass, marital status, sex, income),
mildly correlated -- into ``--workdir`` (default: a temporary directory,
removed afterwards), then runs ``python -m skdp synthesize`` on it in a
subprocess and reports its wall time and peak resident memory (the
child's ``ru_maxrss``, from ``os.wait4``: the per-child form of
``resource.getrusage(RUSAGE_CHILDREN)``).

``--declare all`` (the default) gives every column's public domain on the
command line; ``--declare none`` lets the command read them from the data
(with warnings), which costs it a first pass over the file. ``--before
REVISION`` also runs the command of a git revision (extracted with ``git
archive``) on the same file, for a before/after table; ``--source DIR`` runs
the ``skdp`` package found in another checkout instead of this one.

Wall-clock time depends on whatever else the machine is doing (noisy on a
shared machine); the child's CPU time (user + system) is reported beside it.

Run from the repository root::

    python benchmarks/synthesize_large.py                  # this checkout
    python benchmarks/synthesize_large.py --before main    # and main's code
    python benchmarks/synthesize_large.py --rows 100000 --declare none
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HEADER = [
    "age",
    "workclass",
    "education_num",
    "marital",
    "sex",
    "hours",
    "capital_gain",
    "income",
]
WORKCLASS = ["Private", "Self", "Gov", "None"]
MARITAL = ["Married", "Never", "Divorced", "Widowed"]
DECLARED = [
    "--bounds",
    "age=17:90",
    "--bounds",
    "education_num=1:16",
    "--bounds",
    "hours=1:99",
    "--bounds",
    "capital_gain=0:99999",
    "--categories",
    "workclass=" + ",".join(WORKCLASS),
    "--categories",
    "marital=" + ",".join(MARITAL),
    "--categories",
    "sex=F,M",
    "--categories",
    "income=<=50K,>50K",
]


def write_table(path: Path, n_rows: int, seed: int = 0, chunk: int = 200_000) -> None:
    """Write the synthetic Adult-like table, ``chunk`` rows at a time."""
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(HEADER) + "\n")
        for start in range(0, n_rows, chunk):
            m = min(chunk, n_rows - start)
            age = np.clip(rng.normal(38, 13, m), 17, 90).astype(int)
            education = np.clip(rng.normal(10, 2.5, m), 1, 16).astype(int)
            hours = np.clip(rng.normal(40, 12, m), 1, 99).astype(int)
            gain = np.where(rng.uniform(size=m) < 0.08, rng.integers(1, 99999, m), 0)
            workclass = rng.choice(4, m, p=[0.7, 0.12, 0.13, 0.05])
            married = (age > 25) & (rng.uniform(size=m) < 0.6)
            marital = np.where(married, 0, rng.choice([1, 2, 3], m, p=[0.6, 0.3, 0.1]))
            sex = rng.integers(0, 2, m)
            odds = -6 + 0.04 * age + 0.3 * education + 0.8 * married + 0.5 * sex
            income = rng.uniform(size=m) < 1 / (1 + np.exp(-odds))
            columns = [
                age.astype(str),
                np.array(WORKCLASS)[workclass],
                education.astype(str),
                np.array(MARITAL)[marital],
                np.array(["F", "M"])[sex],
                hours.astype(str),
                gain.astype(str),
                np.array(["<=50K", ">50K"])[income.astype(int)],
            ]
            handle.write("\n".join(map(",".join, zip(*columns))) + "\n")


def run_command(code_dir: Path, data: Path, out: Path, declare: str, log: Path):
    """Run the command once: (exit status, wall s, CPU s, peak RSS in MB)."""
    command = [sys.executable, "-m", "skdp", "synthesize", str(data)]
    command += ["--epsilon", "1", "--out", str(out), "--overwrite", "--seed", "0"]
    if declare == "all":
        command += DECLARED
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    start = time.perf_counter()
    with open(log, "w") as stderr:
        # cwd: not the repository, whose skdp would shadow PYTHONPATH under -m.
        child = subprocess.Popen(
            command, env=env, cwd=log.parent, stdout=stderr, stderr=stderr
        )
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return child.returncode, seconds, cpu, usage.ru_maxrss / 1024  # kB on Linux


def extract(revision: str, directory: Path) -> None:
    """The ``skdp`` package of a git revision, into ``directory``."""
    archive = directory / "skdp.tar"
    subprocess.run(
        ["git", "archive", "--format=tar", "-o", str(archive), revision, "skdp"],
        cwd=ROOT,
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6_200_000)
    parser.add_argument(
        "--workdir",
        default=None,
        help="where to write the CSV files (default: a temporary directory); "
        "an existing data.csv with the right number of rows is reused",
    )
    parser.add_argument("--declare", choices=["all", "none"], default="all")
    parser.add_argument("--before", default=None, help="git revision of 'before'")
    parser.add_argument(
        "--source", default=str(ROOT), help="checkout whose skdp is 'after'"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(args.workdir or scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        data = workdir / f"data-{args.rows}.csv"
        if not data.exists():
            print(f"writing {data.name} ({args.rows:,} rows) ...", file=sys.stderr)
            write_table(data, args.rows)
        size = data.stat().st_size / 1e6
        runs = []
        if args.before:
            code = Path(scratch) / "before"
            code.mkdir()
            extract(args.before, code)
            runs.append((f"before ({args.before})", code))
        runs.append(("after (this checkout)", Path(args.source)))
        rows = []
        for label, code in runs:
            print(f"running {label} ...", file=sys.stderr)
            log = workdir / "stderr.txt"
            status, seconds, cpu, peak = run_command(
                code, data, workdir / "synth.csv", args.declare, log
            )
            if status:
                sys.stderr.write(log.read_text()[-2000:])
            rows.append((label, status, seconds, cpu, peak))
    print(
        f"synthesize, {args.rows:,} rows x {len(HEADER)} columns ({size:.0f} MB), "
        f"--epsilon 1, domains declared: {args.declare}"
    )
    print("| code | exit | wall time | CPU time (user+sys) | peak RSS |")
    print("|---|---:|---:|---:|---:|")
    for label, status, seconds, cpu, peak in rows:
        print(
            f"| {label} | {status} | {seconds:.1f} s | {cpu:.1f} s | {peak:,.0f} MB |"
        )


if __name__ == "__main__":
    main()
