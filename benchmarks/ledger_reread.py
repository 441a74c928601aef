"""What re-checking every verified entry on each read costs a SQLite ledger.

Fills a SQLite ledger with ``n`` DP-SGD and pure-DP entries (written in one
transaction by ``import_entries``), opens a handle on it, and times (median
of ``--repeats``):

* ``entries()``: a read of an up-to-date handle (nothing new to verify);
* ``entries()`` after another handle (another connection, as another
  process would be) appended one entry: this read compares every stored
  entry with the verified ones;
* ``append_if``: one spend (check-and-append, fsync'ed commit) by the same
  handle;
* opening the ledger (verifies the whole chain once).

Run from the repository root::

    python benchmarks/ledger_reread.py
    python benchmarks/ledger_reread.py --sizes 100 1000 50000 --repeats 20
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger_scaling import mixed_event  # noqa: E402


def _median(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(n: int, repeats: int, directory: str) -> dict:
    from skdp.accounting import LedgerEntry, SQLiteLedger

    path = os.path.join(directory, f"ledger-{n}.db")
    ledger = SQLiteLedger(path, math.inf, 1e-5)
    now = time.time()
    ledger.import_entries(
        LedgerEntry(i, f"fit {i}", mixed_event(i), now + i) for i in range(n)
    )
    ledger.close()
    start = time.perf_counter()
    ledger = SQLiteLedger(path)
    opening = time.perf_counter() - start
    ledger.entries()
    read = _median(ledger.entries, repeats)
    counter = iter(range(n, n + repeats))

    def spend():
        i = next(counter)
        ledger.append_if(mixed_event(i), f"fit {i}", lambda events: None)

    append = _median(spend, repeats)
    other = SQLiteLedger(path)
    shared = []
    for i in range(n + repeats, n + 2 * repeats):
        other.append_if(mixed_event(i), f"fit {i}", lambda events: None)
        start = time.perf_counter()
        ledger.entries()
        shared.append(time.perf_counter() - start)
    other.close()
    ledger.close()
    return {
        "entries": n,
        "open": opening,
        "read": read,
        "read_after_other": statistics.median(shared),
        "append": append,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 50000])
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args(argv)
    print(
        "| entries | open (full chain) | entries() | entries() after another "
        "writer | append_if |"
    )
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as directory:
        for n in args.sizes:
            row = measure(n, args.repeats, directory)
            print(
                f"| {n:,} | {1000 * row['open']:.1f} ms | "
                f"{1000 * row['read']:.2f} ms | "
                f"{1000 * row['read_after_other']:.2f} ms | "
                f"{1000 * row['append']:.2f} ms |",
                flush=True,
            )


if __name__ == "__main__":
    main()
