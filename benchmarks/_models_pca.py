"""DPPCA against diffprivlib 0.6.6's PCA and scikit-learn's, on UCI Adult.

The logistic benchmark's split (``_adult_split.load_data``: one-hot and
min-max encoded, rows of unit L2 norm, so ``data_norm=1`` is a true bound).
Metric: the fraction of the TEST part's total variance (centred at the test
part's own mean) captured by the top 5 components fitted on the training
part, ``||(X_test - mean) V^T||_F**2 / ||X_test - mean||_F**2``.

* skdp, ``delta=1e-5``: Analyze Gauss, (epsilon, 1e-5)-DP;
* skdp, ``delta=0``: the L2 vector mechanism, pure epsilon-DP (the same
  guarantee as diffprivlib's);
* diffprivlib 0.6.6 ``PCA(5, epsilon, data_norm=1, bounds=(0, 1))`` in its
  own interpreter (``_peers.peer_python('diffprivlib')``): half of epsilon
  for a mean from the bounds, half for the eigenvectors (Amin et al. 2019,
  Bingham sampling). Its Bingham rejection sampler accepts a proposal with
  probability ~1e-67 at epsilon = 1 on this data, so most of its fits never
  end: each epsilon gets ``--peer-timeout`` seconds in total, and the seeds
  finished by then are reported (``seeds``), none meaning it did not finish.
* scikit-learn's ``PCA(5)``.

Run ``python benchmarks/_models_pca.py --seeds 10``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _adult_split import load_data  # noqa: E402
from _peers import peer_python, run_peer_script  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
N_COMPONENTS = 5
METRIC = "captured variance (top 5)"
PEER = "diffprivlib 0.6.6"

_PEER_SCRIPT = r"""
import json, signal, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from diffprivlib.models import PCA
data = np.load(sys.argv[1])
X, T = data["X"], data["T"]
seeds, epsilons, k, timeout = (json.loads(a) for a in sys.argv[2:6])
T = T - T.mean(axis=0)
total = float((T ** 2).sum())
class Late(Exception):
    pass
def late(*_):
    raise Late
signal.signal(signal.SIGALRM, late)
bounds = (np.zeros(X.shape[1]), np.ones(X.shape[1]))
out = []
for eps in epsilons:
    scores, times, start = [], [], time.time()
    for seed in range(seeds):
        left = timeout - (time.time() - start)
        if left < 1:
            break
        signal.alarm(int(left))
        try:
            t0 = time.time()
            pca = PCA(k, epsilon=eps, data_norm=1.0, bounds=bounds,
                      random_state=seed).fit(X)
            times.append(time.time() - t0)
        except Late:
            break
        finally:
            signal.alarm(0)
        scores.append(float(((T @ pca.components_.T) ** 2).sum() / total))
    out.append({"epsilon": eps, "scores": scores, "times": times})
print(json.dumps(out))
"""


def _captured(components: np.ndarray, T_centred: np.ndarray, total: float) -> float:
    return float(np.sum((T_centred @ components.T) ** 2) / total)


def _row(library, epsilon, scores, times, **extra):
    scores = np.asarray(scores, dtype=float)
    return {
        "model": "PCA",
        "library": library,
        "epsilon": epsilon,
        "metric": METRIC,
        "mean": float(scores.mean()) if scores.size else None,
        "std": float(scores.std()) if scores.size else None,
        "fit_seconds": float(np.mean(times)) if len(times) else None,
        **extra,
    }


def run(seeds: int, epsilons=EPSILONS, *, peer_timeout: float = 600.0) -> list[dict]:
    """Rows of the PCA benchmark (see the module docstring).

    Beyond the common keys, every row has ``delta`` (the skdp rows' delta,
    0 for pure methods, None for scikit-learn) and ``seeds`` (fits
    averaged; diffprivlib's may be fewer than asked, see the docstring).
    """
    from sklearn.decomposition import PCA

    from skdp.decomposition import DPPCA

    X, T, _, _ = load_data()
    T_centred = T - T.mean(axis=0)
    total = float(np.sum(T_centred**2))
    rows = []
    start = time.perf_counter()
    reference = PCA(N_COMPONENTS).fit(X)
    rows.append(
        _row(
            "scikit-learn",
            None,
            [_captured(reference.components_, T_centred, total)],
            [time.perf_counter() - start],
            delta=None,
            seeds=1,
        )
    )
    for epsilon in epsilons:
        for delta in (1e-5, 0.0):
            scores, times = [], []
            for seed in range(seeds):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # no leak: data_norm is given
                    est = DPPCA(
                        N_COMPONENTS,
                        epsilon=epsilon,
                        delta=delta,
                        data_norm=1.0,
                        random_state=seed,
                    ).fit(X)
                times.append(time.perf_counter() - start)
                scores.append(_captured(est.components_, T_centred, total))
            rows.append(
                _row("skdp", epsilon, scores, times, delta=delta, seeds=len(scores))
            )
    peer = run_peer_script(
        peer_python("diffprivlib"),
        _PEER_SCRIPT,
        {"X": X, "T": T},
        seeds,
        list(epsilons),
        N_COMPONENTS,
        peer_timeout,
    )
    for result in peer or []:
        rows.append(
            _row(
                PEER,
                result["epsilon"],
                result["scores"],
                result["times"],
                delta=0.0,
                seeds=len(result["scores"]),
            )
        )
    return rows


def _fmt(value, spec):
    width = int("".join(c for c in spec if c.isdigit()) or 0)
    return "-".rjust(width) if value is None else format(value, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--epsilons", type=float, nargs="+", default=list(EPSILONS), metavar="EPS"
    )
    parser.add_argument(
        "--peer-timeout",
        type=float,
        default=600.0,
        help="seconds diffprivlib gets per epsilon, all seeds together",
    )
    args = parser.parse_args(argv)
    rows = run(args.seeds, args.epsilons, peer_timeout=args.peer_timeout)
    print(
        f"{'library':<18} {'epsilon':>7} {'delta':>6} {METRIC:>26} {'seeds':>5} "
        f"{'fit s':>7}"
    )
    order = sorted(
        rows, key=lambda r: (r["epsilon"] or 0, r["library"], -(r["delta"] or 0))
    )
    for r in order:
        score = (
            "did not finish"
            if r["mean"] is None
            else f"{r['mean']:.4f} +- {r['std']:.4f}"
        )
        print(
            f"{r['library']:<18} {_fmt(r['epsilon'], '>7g')} {_fmt(r['delta'], '>6g')} "
            f"{score:>26} {r['seeds']:>5} {_fmt(r['fit_seconds'], '>7.2f')}"
        )


if __name__ == "__main__":
    main()
