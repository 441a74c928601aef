"""Issue 26's counts: hostile inputs tried, refused, fitted, defects; faults.

Part 1 replays the generated hostile-input matrix of
``tests/test_hostile_generated.py`` (every exported estimator x every input
family, then every prediction method of a fitted model x every bad query)
and tallies each outcome:

* ``refused``: a clear ``ValueError`` / ``TypeError`` / ``MemoryError``
  before the charge, the ledger untouched and no model left;
* ``fitted``: a finite model charged once (for queries: a finite answer,
  or an infinite one for inputs near float64's limit);
* ``defect``: anything else (a charge then an error, NaN or infinity
  released, a refusal that left a model, another exception type).

Part 2 runs the hostile and fault test modules with pytest and prints how
many passed, failed and skipped (the fault tests skip, saying why, where a
tmpfs cannot be mounted or no PostgreSQL server can be started).

Part 3 counts the faults of ``tests/parallel/test_random_kills.py``, which
reports each kill (through ``SKDP_FAULT_COUNTS``): faults injected,
survived (the ledger reopened with every reported spend, within its
limit), refused on opening with ``LedgerError``, spends lost and
overspends. Every other fault test injects its fault(s) and asserts the
same outcome; it counts as passed or failed in part 2.

Run from the repository root (``SKDP_TEST_POSTGRES_URL`` names a server for
the PostgreSQL faults; without it the tests start one if they can)::

    python benchmarks/hostile_counts.py            # a few minutes
    python benchmarks/hostile_counts.py --no-pytest
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULT_TESTS = [
    "tests/test_hostile_inputs.py",
    "tests/test_hostile_generated.py",
    "tests/parallel/test_full_disk.py",
    "tests/parallel/test_crash_durability.py",
    "tests/parallel/test_random_kills.py",
    "tests/accounting/ledgers/test_sqlite_ledger_existing_files.py",
    "tests/accounting/ledgers/test_postgres_ledger.py",
]


def _suite():
    # The suite imports the tests' shared helpers (tests/_data.py) as pytest
    # does, from the tests folder.
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    path = ROOT / "tests" / "test_hostile_generated.py"
    spec = importlib.util.spec_from_file_location("hostile_generated", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fit_outcome(suite, estimator, case):
    X, y = suite.estimator_data(estimator)
    est, budget = suite._with_budget(estimator)
    try:
        suite._fit(est, suite._inputs(X)[case], y)
    except suite.CLEAR:
        left = [k for k in suite._fitted(est) if k not in suite._INPUT_METADATA]
        return "refused" if budget.ledger == [] and not left else "defect"
    except Exception:
        return "defect"
    if len(budget.ledger) != 1 or suite._non_finite(est):
        return "defect"
    return "fitted"


def _query_outcomes(suite, estimator):
    X, y = suite.estimator_data(estimator)
    est, _ = suite._with_budget(estimator)
    suite._fit(est, X, y)
    for name, bad in suite._bad_queries(X).items():
        for method in suite.METHODS:
            if not hasattr(est, method):
                continue
            try:
                out = getattr(est, method)(bad)
            except suite.CLEAR:
                yield "refused"
                continue
            except Exception:
                yield "defect"
                continue
            try:
                suite._assert_finite_output(out, method, allow_inf=name == "huge")
            except AssertionError:
                yield "defect"
            else:
                yield "defect" if name in ("wider", "narrower", "no-rows") else "fitted"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-pytest", action="store_true")
    args = parser.parse_args(argv)
    suite = _suite()
    fits, queries = Counter(), Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for estimator in suite.ESTIMATORS:
            for case in suite.INPUT_NAMES:
                fits[_fit_outcome(suite, estimator, case)] += 1
            queries.update(_query_outcomes(suite, estimator))
    print(
        f"{len(suite.ESTIMATORS)} estimators, {len(suite.INPUT_NAMES)} input families"
    )
    print("| matrix | tried | refused before the charge | fitted finite | defects |")
    print("|---|---:|---:|---:|---:|")
    for name, counts in (("fits", fits), ("queries", queries)):
        print(
            f"| {name} | {sum(counts.values())} | {counts['refused']} | "
            f"{counts['fitted']} | {counts['defect']} |"
        )
    if args.no_pytest:
        return
    print()
    print("| test module | passed | failed | skipped |")
    print("|---|---:|---:|---:|")
    reports = Path(tempfile.mkdtemp()) / "faults.jsonl"
    env = dict(os.environ, SKDP_FAULT_COUNTS=str(reports))
    for module in FAULT_TESTS:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", module],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
        )
        tail = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
        found = {
            key: int(value)
            for value, key in re.findall(r"(\d+) (passed|failed|skipped|error)", tail)
        }
        print(
            f"| {module} | {found.get('passed', 0)} | "
            f"{found.get('failed', 0) + found.get('error', 0)} | "
            f"{found.get('skipped', 0)} |",
            flush=True,
        )
    _print_faults(reports)


def _print_faults(reports):
    """Part 3: the per-fault counts the fault tests reported."""
    rows = []
    if reports.exists():
        rows = [json.loads(line) for line in reports.read_text().splitlines()]
    print()
    print(
        "| fault | ledger | injected | survived | refused on opening | "
        "lost spends | overspends |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    keys = ("injected", "survived", "refused_on_opening", "lost_spends", "overspends")
    for row in rows:
        print(
            f"| {row['fault']} | {row['ledger']} | "
            + " | ".join(str(row[key]) for key in keys)
            + " |"
        )
    total = {key: sum(row[key] for row in rows) for key in keys}
    print("| total | | " + " | ".join(str(total[key]) for key in keys) + " |")


if __name__ == "__main__":
    main()
