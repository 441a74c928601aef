"""skdp's private models beside diffprivlib's and scikit-learn's, on UCI Adult.

The data are the logistic benchmark's split (``_adult_split.load_data``:
one-hot and min-max encoded, rows of unit norm, stratified 80/20 with
``random_state=0``), so every entry lies in [0, 1] and every row has norm 1:
the public bounds each model is given. For each epsilon in
{0.1, 0.5, 1, 2, 5} and ``--seeds`` noise seeds:

* ``DPGaussianNB`` vs diffprivlib's ``GaussianNB``: test accuracy;
* ``DPPCA`` vs diffprivlib's ``PCA``: fraction of the variance captured
  by the top 5 components;
* ``DPKMeans`` vs diffprivlib's ``KMeans`` (k=5): inertia on the test rows
  relative to scikit-learn's ``KMeans``.

Each model's part lives in ``_models_<name>.py`` (runnable on its own, with
the details of its metric); this script runs them all and prints one
table. diffprivlib 0.6.6 runs in its own virtualenv (``SKDP_DIFFPRIVLIB_PYTHON``,
default ``../venvs/diffprivlib/bin/python``; see ``_peers.py``) and is
skipped with a message when absent. Run from the repository root::

    python benchmarks/models.py              # 10 seeds
    python benchmarks/models.py --seeds 3 --models gnb pca
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
MODELS = ("gnb", "pca", "kmeans")
# Whether a higher metric is better, by model part.
HIGHER_IS_BETTER = {"gnb": True, "pca": True, "kmeans": False}


def _verdict(rows, higher):
    """Per epsilon: skdp's best row against diffprivlib's."""
    out = {}
    for row in rows:
        if row["epsilon"] is None:
            continue
        out.setdefault(row["epsilon"], {}).setdefault(row["library"], []).append(row)
    verdicts = {}
    for epsilon, by_library in out.items():
        ours = by_library.get("skdp")
        theirs = next(
            (v for k, v in by_library.items() if k.startswith("diffprivlib")), None
        )
        if not ours or not theirs:
            continue
        ours = [r for r in ours if r["mean"] is not None]
        theirs = [r for r in theirs if r["mean"] is not None]
        if not ours or not theirs:
            continue  # a peer that did not finish: no comparison
        pick = max if higher else min
        best = pick(r["mean"] for r in ours)
        peer = pick(r["mean"] for r in theirs)
        verdicts[epsilon] = best >= peer if higher else best <= peer
    return verdicts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument(
        "--peer-timeout",
        type=float,
        default=300.0,
        help="seconds diffprivlib's PCA may take per epsilon (it rarely finishes)",
    )
    args = parser.parse_args(argv)
    for name in args.models:
        part = importlib.import_module(f"_models_{name}")
        if name == "pca":
            rows = part.run(args.seeds, args.epsilons, peer_timeout=args.peer_timeout)
        else:
            rows = part.run(args.seeds, args.epsilons)
        verdicts = _verdict(rows, HIGHER_IS_BETTER[name])
        print(f"\n{rows[0]['model']}: {rows[0]['metric']} ({args.seeds} seeds)")
        print(
            f"{'library':<28} {'epsilon':>7} {'mean':>8} {'std':>7} "
            f"{'fit s':>7} {'skdp >= peer':>12}"
        )
        for row in rows:
            epsilon = "-" if row["epsilon"] is None else f"{row['epsilon']:g}"
            ok = ""
            if row["library"] == "skdp" and row["epsilon"] in verdicts:
                ok = "yes" if verdicts[row["epsilon"]] else "NO"
            library = row["library"] + (
                f" ({row['variant']})" if row.get("variant") else ""
            )
            if row.get("delta") is not None:
                library += f" (delta={row['delta']:g})"
            if row["mean"] is None:
                print(f"{library:<28} {epsilon:>7} {'did not finish':>24}")
                continue
            print(
                f"{library:<28} {epsilon:>7} {row['mean']:>8.4f} "
                f"{row['std']:>7.4f} {row['fit_seconds']:>7.3f} {ok:>12}"
            )


if __name__ == "__main__":
    main()
