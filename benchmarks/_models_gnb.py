"""Gaussian naive Bayes on Adult: skdp, diffprivlib 0.6.6 and scikit-learn.

Test accuracy on the logistic benchmark's split (:mod:`_adult_split`: every
entry in ``[0, 1]``, so ``bounds=(0, 1)`` per feature is a true public
bound; classes ``[0, 1]``), each model at its default parameters otherwise.
diffprivlib runs in its own interpreter (:mod:`_peers`).

Run ``python benchmarks/_models_gnb.py --seeds 10``; ``benchmarks/models.py``
imports :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _adult_split import load_data  # noqa: E402
from _peers import peer_python, run_peer_script  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
METRIC = "test accuracy"

_DIFFPRIVLIB_SCRIPT = """
import json, sys, time, warnings
import numpy as np
import diffprivlib
from diffprivlib.models import GaussianNB
warnings.simplefilter("ignore")
data = np.load(sys.argv[1])
seeds, epsilons = json.loads(sys.argv[2]), json.loads(sys.argv[3])
rows = []
for epsilon in epsilons:
    scores, seconds = [], []
    for seed in range(seeds):
        start = time.perf_counter()
        model = GaussianNB(epsilon=epsilon, bounds=(0.0, 1.0), random_state=seed)
        model.fit(data["X_train"], data["y_train"])
        seconds.append(time.perf_counter() - start)
        scores.append(model.score(data["X_test"], data["y_test"]))
    rows.append([epsilon, scores, seconds])
print(json.dumps({"version": diffprivlib.__version__, "rows": rows}))
"""


def _row(library, epsilon, scores, seconds):
    return {
        "model": "GaussianNB",
        "library": library,
        "epsilon": epsilon,
        "metric": METRIC,
        "mean": float(np.mean(scores)),
        "std": float(np.std(scores)),
        "fit_seconds": float(np.mean(seconds)),
    }


def run(seeds: int, epsilons=EPSILONS) -> list[dict]:
    """Rows of test accuracy (mean and std over ``seeds`` fits) per library."""
    from sklearn.naive_bayes import GaussianNB

    from skdp.naive_bayes import DPGaussianNB

    X_train, X_test, y_train, y_test = load_data()
    rows = []
    start = time.perf_counter()
    exact = GaussianNB().fit(X_train, y_train)
    rows.append(
        _row(
            "scikit-learn",
            None,
            [exact.score(X_test, y_test)],
            [time.perf_counter() - start],
        )
    )
    for epsilon in epsilons:
        scores, seconds = [], []
        for seed in range(seeds):
            start = time.perf_counter()
            model = DPGaussianNB(
                epsilon=epsilon, bounds=(0.0, 1.0), classes=[0, 1], random_state=seed
            ).fit(X_train, y_train)
            seconds.append(time.perf_counter() - start)
            scores.append(model.score(X_test, y_test))
        rows.append(_row("skdp", float(epsilon), scores, seconds))
    peer = run_peer_script(
        peer_python("diffprivlib"),
        _DIFFPRIVLIB_SCRIPT,
        {"X_train": X_train, "X_test": X_test, "y_train": y_train, "y_test": y_test},
        int(seeds),
        [float(e) for e in epsilons],
    )
    if peer is not None:
        for epsilon, scores, seconds in peer["rows"]:
            rows.append(
                _row(f"diffprivlib {peer['version']}", float(epsilon), scores, seconds)
            )
    return rows


def print_table(rows) -> None:
    """The rows as a table, one line per (epsilon, library)."""
    print(f"{'library':<18} {'epsilon':>7} {METRIC:>16} {'fit s':>7}")
    key = lambda r: (r["epsilon"] is not None, r["epsilon"] or 0, r["library"])  # noqa: E731
    for r in sorted(rows, key=key):
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        score = f"{r['mean']:.4f} +- {r['std']:.4f}"
        print(f"{r['library']:<18} {eps:>7} {score:>16} {r['fit_seconds']:>7.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    print_table(run(args.seeds))


if __name__ == "__main__":
    main()
