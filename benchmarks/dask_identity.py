"""Issue 27's table: every private estimator and tool, in memory and on dask.

Replays the cases of ``tests/test_dask_identity.py`` (found there from the
public API: every class with ``fit`` that skdp exports, each mechanism of
the linear models, every tool) on a ``distributed.LocalCluster``: each case
runs in memory (a NumPy array, or a pandas DataFrame) and on dask (a dask
array, or a dask DataFrame) with the same seed, and the table says whether
the dask run released bitwise the in-memory result (every fitted attribute
and the estimator's other state, the tool's value, the privacy event, the
ledger and the warnings: the test's own comparison), the largest absolute
difference if not, the median wall-clock seconds of each run, and the most
rows any worker task computed (canonical blocks hold
``max(1024, sqrt(n))`` rows; ``n`` would mean the rows were gathered).
What dask refuses on purpose (``REFUSED`` in the test) is listed as such.

DP-SGD's batch is a third of the rows, as in the test (700 of 2100).

Run from the repository root::

    python benchmarks/dask_identity.py                      # 2100 rows, 2 workers
    python benchmarks/dask_identity.py --rows 100000 --workers 2 --repeats 3
    python benchmarks/dask_identity.py --only Logistic --chunk 5000
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/sparse.py would shadow the sparse package dask imports.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def _load(name: str):
    """A module of ``tests/`` (its cases and comparison), importable by the
    workers' unpickler under its own name."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _arrays_in(value, seen=None):
    """Every numeric array (or number) inside ``value``, in a fixed order."""
    if isinstance(value, type) or value is None or isinstance(value, str):
        return
    if isinstance(value, dict):
        for key in sorted(value, key=repr):
            yield from _arrays_in(value[key])
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _arrays_in(item)
    elif hasattr(value, "__array__") or isinstance(value, int | float):
        array = np.asarray(value)
        if array.dtype.kind in "biuf":
            yield array.astype(float)
        elif array.dtype == object:
            for item in array.ravel():
                yield from _arrays_in(item)
    elif hasattr(value, "__dict__"):
        yield from _arrays_in(
            {k: v for k, v in vars(value).items() if k != "budget_entry_"}
        )


def _largest_difference(memory, on_dask) -> str:
    """The largest absolute difference between the two releases' numbers."""
    a = list(_arrays_in([memory.estimator, memory.value]))
    b = list(_arrays_in([on_dask.estimator, on_dask.value]))
    if len(a) != len(b) or any(u.shape != v.shape for u, v in zip(a, b)):
        return "different structure"
    with np.errstate(invalid="ignore"):
        gaps = [np.nanmax(np.abs(u - v), initial=0.0) for u, v in zip(a, b)]
    return f"{max(gaps, default=0.0):.3g}"


def _verdict(suite, conftest, memory, on_dask) -> str:
    """ "yes" when the test's comparison passes, else "no" and the gap."""

    def same_fit(x, y, *, everything=False):
        expected = conftest._fitted(x, everything)
        got = conftest._fitted(y, everything)
        assert sorted(expected) == sorted(got)
        assert all(conftest._identical(expected[k], got[k]) for k in expected)

    try:
        suite._assert_same_release(memory, on_dask, same_fit)
    except AssertionError:
        return f"no ({_largest_difference(memory, on_dask)})"
    return "yes"


def _release(suite, case, data, n):
    """One run of ``case``, with DP-SGD's batch a third of the rows."""
    make = case.make

    def sized(budget, frame):
        made = make(budget, frame)
        params = getattr(made, "get_params", dict)()
        if isinstance(params.get("batch_size"), int):
            made.set_params(batch_size=max(1, n // 3))
        return made

    return suite.release(type(case)(case.export, case.variant, case.data, sized), data)


def _timed(run, repeats):
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - start)
    return result, statistics.median(seconds)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2100)
    parser.add_argument("--chunk", type=int, default=None, help="rows per chunk")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", default="", help="cases whose name holds this")
    args = parser.parse_args(argv)
    import distributed

    suite, conftest = _load("test_dask_identity"), _load("conftest")
    n = args.rows
    chunk = args.chunk or max(1, -(-n // 3))
    cases = [case for case in suite.CASES if args.only in case.id]
    print(
        f"# {n} rows in chunks of {chunk}; LocalCluster of {args.workers} worker "
        f"processes (1 thread each); median wall seconds of {args.repeats} run(s)"
    )
    header = (
        "| estimator / tool | variant | input | n x d | identical? "
        "| memory s | dask s | largest task rows |"
    )
    print(header)
    print("|---|---|---|---|---|---:|---:|---:|")
    with (
        distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        measure = suite.cluster_task_rows(client)
        client.run(suite._import_skdp)  # not timed: each worker imports skdp
        for case in cases:
            for frame in (False, True):
                memory_data, dask_data = suite._inputs(case.data, frame, n, chunk)
                shape = f"{n} x {np.shape(memory_data[0])[1]}"
                kind = "dask DataFrame" if frame else "dask array"
                row = f"| {case.export} | {case.variant or '-'} | {kind} | {shape} "
                if case.id in suite.REFUSED:
                    error = suite.REFUSED[case.id][1].__name__
                    print(row + f"| refused ({error}, before the charge) | | | |")
                    continue
                in_memory = functools.partial(_release, suite, case, memory_data, n)
                on_cluster = functools.partial(_release, suite, case, dask_data, n)
                memory, memory_s = _timed(in_memory, args.repeats)
                (on_dask, rows), dask_s = _timed(
                    functools.partial(measure, on_cluster), args.repeats
                )
                verdict = _verdict(suite, conftest, memory, on_dask)
                print(row + f"| {verdict} | {memory_s:.3f} | {dask_s:.3f} | {rows} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
