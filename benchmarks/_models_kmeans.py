"""DPKMeans against diffprivlib 0.6.6's KMeans on UCI Adult (k = 5).

The logistic benchmark's Adult split (``_adult_split.load_data``): every
entry is in [0, 1], so ``bounds=(0, 1)`` is a true public bound. The metric
is the inertia of the TEST rows under each model's centres divided by that
under scikit-learn's ``KMeans(5, n_init=10, random_state=0)`` fitted on the
training rows (1 is scikit-learn's quality; the single global mean scores
about 1.43). diffprivlib runs in its own interpreter (``_peers.py``) with
the same bounds and epsilon; both libraries at their default parameters
otherwise.

Run: ``python benchmarks/_models_kmeans.py --seeds 10``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _adult_split import load_data
from _peers import peer_python, run_peer_script
from sklearn.cluster import KMeans

from skdp.cluster import DPKMeans

MODEL = "KMeans (k=5)"
METRIC = "inertia / sklearn inertia"
EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
K = 5

_PEER = """
import json, sys, time, warnings
import numpy as np
from diffprivlib.models import KMeans
data = np.load(sys.argv[1])
X_train, X_test = data["X_train"], data["X_test"]
epsilons, seeds, k = (json.loads(a) for a in sys.argv[2:5])
warnings.simplefilter("ignore")
out = []
for eps in epsilons:
    for seed in range(seeds):
        start = time.perf_counter()
        km = KMeans(k, epsilon=eps, bounds=(0, 1), random_state=seed).fit(X_train)
        seconds = time.perf_counter() - start
        C = km.cluster_centers_
        d = (X_test**2).sum(1)[:, None] - 2 * X_test @ C.T + (C**2).sum(1)
        out.append([eps, seed, float(np.maximum(d, 0).min(1).sum()), seconds])
print(json.dumps(out))
"""


def inertia_of(X, centers) -> float:
    squared = (X**2).sum(1)[:, None] - 2 * X @ centers.T + (centers**2).sum(1)
    return float(np.maximum(squared, 0).min(1).sum())


def _row(library, epsilon, values, seconds):
    return {
        "model": MODEL,
        "library": library,
        "epsilon": epsilon,
        "metric": METRIC,
        "mean": float(np.mean(values)),
        "std": float(np.std(values)),
        "fit_seconds": float(np.mean(seconds)),
    }


def run(seeds: int = 10, epsilons=EPSILONS) -> list[dict]:
    """Rows of the table: scikit-learn, then skdp and diffprivlib per epsilon."""
    X_train, X_test, _, _ = load_data()
    start = time.perf_counter()
    reference = KMeans(K, n_init=10, random_state=0).fit(X_train)
    seconds = time.perf_counter() - start
    base = inertia_of(X_test, reference.cluster_centers_)
    rows = [_row("scikit-learn", None, [1.0], [seconds])]
    peer = run_peer_script(
        peer_python("diffprivlib"),
        _PEER,
        {"X_train": X_train, "X_test": X_test},
        list(epsilons),
        seeds,
        K,
    )
    for epsilon in epsilons:
        values, times = [], []
        for seed in range(seeds):
            start = time.perf_counter()
            km = DPKMeans(K, epsilon=epsilon, bounds=(0, 1), random_state=seed)
            km.fit(X_train)
            times.append(time.perf_counter() - start)
            values.append(inertia_of(X_test, km.cluster_centers_) / base)
        rows.append(_row("skdp", epsilon, values, times))
        if peer is not None:
            mine = [r for r in peer if r[0] == epsilon]
            rows.append(
                _row(
                    "diffprivlib 0.6.6",
                    epsilon,
                    [r[2] / base for r in mine],
                    [r[3] for r in mine],
                )
            )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = run(args.seeds)
    print(f"{MODEL} on Adult, {METRIC} (lower is better), {args.seeds} seeds")
    print(f"{'library':<20}{'epsilon':>8}{'mean':>9}{'std':>8}{'fit s':>8}")
    for r in rows:
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        print(
            f"{r['library']:<20}{eps:>8}{r['mean']:>9.3f}{r['std']:>8.3f}"
            f"{r['fit_seconds']:>8.2f}"
        )


if __name__ == "__main__":
    main()
