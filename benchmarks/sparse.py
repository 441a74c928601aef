"""DPLogisticRegression on a 100,000-column TF-IDF problem (sparse input).

Synthetic documents, no download: a Zipfian vocabulary of 100,000 words in
which 3,000 of the 10,000 most frequent words are class-dependent (their
log-frequency shifted by +-tilt/2 between the two classes, tilt ~ N(0,
0.5)); documents of Poisson(120) + 5 words. Counts become sublinear TF-IDF
rows of unit L2 norm, so ``data_norm=1`` is public. The IDF weights are
fitted on a separate *public* sample of documents from the same
distribution, never on the training rows (IDF read from the private rows
would leak). The matrix stays CSR throughout (about 100 stored entries a
row).

For each method and epsilon in {0.5, 1, 5}, one fit per row in its own
subprocess (so that peak memories do not mix): the fit time, the process's
peak resident memory, its peak above the loaded data, and test accuracy,
beside scikit-learn's ``LogisticRegression`` (liblinear, C=1) on the same
sparse matrix and the majority class. ``'gradient'`` (DP-SGD) uses
``delta=1e-5``; ``'objective'`` and ``'output'`` are run pure (delta=0) and
with ``delta=1e-5`` (Gaussian noise, whose norm grows like ``sqrt(d)``
rather than ``d``). Run from the repository root (the fits need well under
1 GB)::

    ulimit -v 8000000; python benchmarks/sparse.py
    python benchmarks/sparse.py --n-train 40000 --seeds 3

Timings depend on the machine's load: run it on a quiet machine to compare.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]

N_FEATURES = 100_000
EPSILONS = (0.5, 1.0, 5.0)
DELTA = 1e-5
#: (label, method, delta) of each private row of the table.
VARIANTS = (
    ("objective", "objective", None),
    ("objective (delta=1e-5)", "objective", DELTA),
    ("output", "output", None),
    ("output (delta=1e-5)", "output", DELTA),
    ("gradient (delta=1e-5)", "gradient", DELTA),
)


def make_counts(n_samples, rng, tilt, n_features=N_FEATURES, mean_length=120):
    """Word counts (CSR) and labels of ``n_samples`` synthetic documents."""
    base = 1.0 / (np.arange(n_features) + 2.7) ** 1.07  # Zipf-Mandelbrot
    y = rng.integers(0, 2, n_samples)
    lengths = rng.poisson(mean_length, n_samples) + 5
    rows, cols = [], []
    for label, sign in ((0, -1.0), (1, 1.0)):
        p = base * np.exp(sign * tilt / 2)
        p /= p.sum()
        docs = np.flatnonzero(y == label)
        rows.append(np.repeat(docs, lengths[docs]))
        cols.append(rng.choice(n_features, size=int(lengths[docs].sum()), p=p))
    r, c = np.concatenate(rows), np.concatenate(cols)
    counts = sp.csr_matrix(
        (np.ones(r.size), (r, c)), shape=(n_samples, n_features), dtype=np.float64
    )
    counts.sum_duplicates()
    return counts, y


def make_problem(n_train, n_test, n_public=5000, seed=0):
    """Train/test TF-IDF matrices, IDF fitted on a separate public sample."""
    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(seed)
    tilt = np.zeros(N_FEATURES)
    informative = rng.choice(N_FEATURES // 10, 3000, replace=False)
    tilt[informative] = rng.normal(0.0, 0.5, informative.size)
    public, _ = make_counts(n_public, rng, tilt)
    counts, y = make_counts(n_train + n_test, rng, tilt)
    tfidf = TfidfTransformer(sublinear_tf=True).fit(public)
    X = sp.csr_matrix(tfidf.transform(counts))
    return X[:n_train], X[n_train:], y[:n_train], y[n_train:]


def _memory_mb(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process in MB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e3  # kB -> MB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def _reset_peak() -> None:
    """Reset the peak resident memory (Linux >= 4.0), so it measures the fit."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # then the peak includes loading the data
        pass


def worker(data_dir: Path, spec: dict) -> dict:
    """One fit in this process: time, peak memory and test accuracy."""
    sys.path.insert(0, str(ROOT))
    import warnings

    from sklearn.linear_model import LogisticRegression

    from skdp.linear_model import DPLogisticRegression

    X_train = sp.load_npz(data_dir / "X_train.npz").tocsr()
    X_test = sp.load_npz(data_dir / "X_test.npz").tocsr()
    y_train = np.load(data_dir / "y_train.npy")
    y_test = np.load(data_dir / "y_test.npy")
    if spec["method"] == "sklearn":
        model = LogisticRegression(C=1.0, solver="liblinear")
    else:
        model = DPLogisticRegression(
            epsilon=spec["epsilon"],
            delta=spec["delta"],
            method=spec["method"],
            data_norm=1.0,
            classes=[0, 1],
            random_state=spec["seed"],
        )
    _reset_peak()
    before = _memory_mb("VmRSS")
    start = time.perf_counter()
    with warnings.catch_warnings():
        if spec["method"] != "sklearn":
            warnings.simplefilter("error")  # a private fit must not warn
        model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    peak = _memory_mb("VmHWM")
    return {
        "seconds": seconds,
        "peak_mb": peak,
        "fit_mb": max(0.0, peak - before),
        "accuracy": float(model.score(X_test, y_test)),
    }


def run_one(data_dir: Path, spec: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec), str(data_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=20000)
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--seeds", type=int, default=1, help="noise seeds per cell")
    parser.add_argument(
        "--methods",
        default="objective,output,gradient",
        help="comma-separated methods to run (objective, output, gradient)",
    )
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        spec, data_dir = json.loads(args.worker[0]), Path(args.worker[1])
        print(json.dumps(worker(data_dir, spec)))
        return

    start = time.perf_counter()
    X_train, X_test, y_train, y_test = make_problem(args.n_train, args.n_test)
    print(
        f"TF-IDF-like problem: {X_train.shape[0]} training rows, "
        f"{X_test.shape[0]} test rows, {X_train.shape[1]} columns, "
        f"{X_train.nnz / X_train.shape[0]:.0f} stored entries a row "
        f"(CSR: {(X_train.data.nbytes + X_train.indices.nbytes) / 1e6:.0f} MB; "
        f"dense it would be {8 * X_train.shape[0] * X_train.shape[1] / 1e9:.0f} GB); "
        f"generated in {time.perf_counter() - start:.0f} s"
    )
    majority = max(np.mean(y_test == 0), np.mean(y_test == 1))
    wanted = set(args.methods.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        sp.save_npz(data_dir / "X_train.npz", X_train, compressed=False)
        sp.save_npz(data_dir / "X_test.npz", X_test, compressed=False)
        np.save(data_dir / "y_train.npy", y_train)
        np.save(data_dir / "y_test.npy", y_test)
        baseline = run_one(data_dir, {"method": "sklearn"})
        results = []
        for label, method, delta in VARIANTS:
            if method not in wanted:
                continue
            for epsilon in EPSILONS:
                runs = [
                    run_one(
                        data_dir,
                        {
                            "method": method,
                            "epsilon": epsilon,
                            "delta": delta,
                            "seed": seed,
                        },
                    )
                    for seed in range(args.seeds)
                ]
                results.append((label, epsilon, runs))
                _print_row(label, epsilon, runs)
    print()
    header = (
        f"{'model':<24} {'epsilon':>7} {'fit s':>8} {'peak MB':>8} "
        f"{'fit MB':>7} {'accuracy':>15}"
    )
    print(header)
    print("-" * len(header))
    for label, epsilon, runs in results:
        _print_row(label, epsilon, runs)
    _print_row("sklearn liblinear C=1", None, [baseline])
    print(f"{'majority class':<24} {'':>7} {'':>8} {'':>8} {'':>7} {majority:>15.4f}")
    print(
        "\nfit s: wall-clock seconds of fit (median over seeds); peak MB: peak "
        "resident memory of the fit's process during fit (the loaded data, "
        "interpreter and libraries included); fit MB: that peak above the "
        "memory in use just before fit; accuracy: test accuracy, mean +- sd "
        "over seeds. One subprocess per fit."
    )


def _print_row(label, epsilon, runs):
    good = [r for r in runs if "error" not in r]
    eps = "" if epsilon is None else f"{epsilon:g}"
    if not good:
        print(f"{label:<24} {eps:>7} failed: {runs[0]['error']}")
        return
    acc = np.array([r["accuracy"] for r in good])
    accuracy = f"{acc.mean():.4f}" + (f" +- {acc.std():.4f}" if acc.size > 1 else "")
    print(
        f"{label:<24} {eps:>7} {np.median([r['seconds'] for r in good]):>8.1f} "
        f"{max(r['peak_mb'] for r in good):>8.0f} "
        f"{max(r['fit_mb'] for r in good):>7.0f} {accuracy:>15}",
        flush=True,
    )


if __name__ == "__main__":
    main()
