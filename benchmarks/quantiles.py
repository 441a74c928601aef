"""Private quartiles and deciles of Adult's numeric columns: skdp vs diffprivlib.

skdp releases all the quantiles of a column at once with
:func:`skdp.mechanisms.quantile_mechanism` (Kaplan, Schnapp & Stemmer's
recursive ApproximateQuantiles over Smith's exponential mechanism);
diffprivlib 0.6.6's ``tools.quantile`` runs the same exponential mechanism
once per quantile at ``epsilon / m`` each. Both get the same public bounds
per column and the same total epsilon.

Errors, averaged over the six numeric columns, the quantiles and the seeds:

* rank error: the fraction of the data strictly between the released
  value ``v`` and the exact quantile ``numpy.quantile(x, q)`` (the
  "missed points" of Gillenwater, Joseph & Kulesza 2021, Section 6), so
  that any ``v`` between two tied data values and the next distinct one
  counts as exact — a continuous mechanism never outputs a data value;
* value error: ``|v - numpy.quantile(x, q)|`` over the width of the bounds.

Run from the repository root (diffprivlib's interpreter is found as
described in ``benchmarks/_peers.py``)::

    python benchmarks/quantiles.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _adult_split import _frame  # noqa: E402
from _peers import peer_python, run_peer_script  # noqa: E402

from skdp.mechanisms import quantile_mechanism  # noqa: E402

#: Public bounds of Adult's numeric columns (from the data dictionary, not
#: read from the data).
BOUNDS = {
    "age": (0.0, 100.0),
    "fnlwgt": (0.0, 1.5e6),
    "education_num": (1.0, 16.0),
    "capital_gain": (0.0, 1e5),
    "capital_loss": (0.0, 5000.0),
    "hr_per_week": (0.0, 100.0),
}
QUANTILE_SETS = {
    "quartiles": [0.25, 0.5, 0.75],
    "deciles": [round(0.1 * k, 1) for k in range(1, 10)],
}
EPSILONS = [0.1, 1.0, 10.0]

PEER_SCRIPT = r"""
import json, sys, warnings
import numpy as np
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.tools import quantile
warnings.simplefilter("ignore")
data = np.load(sys.argv[1])
columns, bounds, sets, epsilons, seeds = (json.loads(a) for a in sys.argv[2:])
out = {}
for name in columns:
    x = data[name]
    for set_name, qs in sets.items():
        for eps in epsilons:
            runs = []
            for seed in range(seeds):
                acc = BudgetAccountant()
                try:
                    v = quantile(x, qs, epsilon=eps, bounds=tuple(bounds[name]),
                                 random_state=seed, accountant=acc)
                    runs.append([float(t) for t in np.ravel(v)])
                except RuntimeError:  # NaN probabilities in its sampler
                    runs.append(None)
            out[f"{name}|{set_name}|{eps}"] = runs
print(json.dumps(out))
"""


def _errors(x_sorted, released, quantiles, width):
    """Mean rank error and mean value error / width of ``released`` values."""
    released = np.asarray(released, dtype=float)
    exact = np.quantile(x_sorted, quantiles)
    low, high = np.minimum(released, exact), np.maximum(released, exact)
    between = np.searchsorted(x_sorted, high, "left") - np.searchsorted(
        x_sorted, low, "right"
    )
    rank = np.maximum(between, 0) / x_sorted.size
    value = np.abs(released - exact) / width
    return rank.mean(), value.mean()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    frame = _frame()
    columns = {name: frame[name].to_numpy(dtype=float) for name in BOUNDS}

    peer = run_peer_script(
        peer_python("diffprivlib"),
        PEER_SCRIPT,
        columns,
        list(BOUNDS),
        {k: list(v) for k, v in BOUNDS.items()},
        QUANTILE_SETS,
        EPSILONS,
        args.seeds,
    )

    rows = []
    for set_name, qs in QUANTILE_SETS.items():
        for eps in EPSILONS:
            ours, theirs = [], []
            wins = failures = 0
            for name, x in columns.items():
                x_sorted = np.sort(x)
                width = BOUNDS[name][1] - BOUNDS[name][0]
                mine = [
                    _errors(
                        x_sorted,
                        quantile_mechanism(x, qs, BOUNDS[name], eps, random_state=s)[0],
                        qs,
                        width,
                    )
                    for s in range(args.seeds)
                ]
                ours.append(np.mean(mine, axis=0))
                if peer is not None:
                    runs = peer[f"{name}|{set_name}|{eps}"]
                    failures += sum(r is None for r in runs)
                    other = [_errors(x_sorted, r, qs, width) for r in runs if r]
                    theirs.append(np.mean(other, axis=0) if other else (np.nan,) * 2)
                    wins += ours[-1][0] <= theirs[-1][0]
            ours = np.mean(ours, axis=0)
            theirs = np.nanmean(theirs, axis=0) if theirs else (np.nan, np.nan)
            rows.append((set_name, eps, *ours, *theirs, wins, failures))

    print(
        f"Adult numeric columns ({len(columns)}), {args.seeds} seeds; mean over "
        "columns, quantiles and seeds."
    )
    header = (
        f"{'quantiles':<10}{'epsilon':>8} | {'rank err skdp':>14}{'diffprivlib':>12}"
        f" | {'value err skdp':>15}{'diffprivlib':>12} | skdp <= dpl | dpl failed"
    )
    print(header)
    print("-" * len(header))
    for set_name, eps, r1, v1, r2, v2, wins, failures in rows:
        print(
            f"{set_name:<10}{eps:>8g} | {r1:>14.4f}{r2:>12.4f} | {v1:>15.5f}"
            f"{v2:>12.5f} | {wins:>5}/{len(columns)} cols | {failures:>4} runs"
        )
    print(
        "rank err: fraction of rows strictly between the released and the exact "
        "quantile; value err: |released - exact| / (upper - lower); 'skdp <= dpl': "
        "columns where skdp's mean rank error is at most diffprivlib's; 'dpl "
        "failed': diffprivlib runs that raised (NaN probabilities), left out of "
        "its means."
    )


if __name__ == "__main__":
    main()
