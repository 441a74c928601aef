"""Privacy-utility benchmark of DPLogisticRegression on UCI Adult.

Setup (as in issue 3): ``adult_clean.csv`` (30,162 rows), categorical
columns one-hot encoded, numeric columns min-max scaled, every row scaled to
unit L2 norm (so ``data_norm=1`` is a true bound), a stratified 80/20 split
with ``random_state=0``. The encoders are fitted on the training part; this
preprocessing reads category lists and column ranges from the data and is
not itself private (in a release they would come from public metadata).

For each epsilon in {0.05, 0.1, 0.5, 1, 2, 5, 10} and each of the three
methods, ``DPLogisticRegression(epsilon, method=..., data_norm=1.0,
classes=[0, 1])`` is fitted with its default hyperparameters (``C=1``;
``delta``: 0, pure, for 'objective' and 'output', and 1e-5 for 'gradient',
pinned at the value these figures were first measured with, where skdp's
default delta for 'gradient' is now 1e-6) over
``--seeds`` noise seeds; test accuracy is reported as mean +- standard
deviation [standard error of the mean], with the mean fit time (a change
between two versions is noise unless it is several standard errors of the
difference; 5 seeds cannot tell 0.002 on DP-SGD). References: scikit-learn's
``LogisticRegression`` (lbfgs, C=1) and the majority class. The fit time of
scikit-learn's lbfgs is measured in the same run, interleaved with ours.

diffprivlib 0.6.6 runs side by side in its own virtualenv (it needs
scikit-learn <= 1.7.2)::

    python3 -m venv ../venvs/diffprivlib
    ../venvs/diffprivlib/bin/pip install diffprivlib==0.6.6 \\
        'scikit-learn<=1.7.2' pandas

It is skipped with a message if that interpreter is absent (override with
``--diffprivlib-python`` or ``SKDP_DIFFPRIVLIB_PYTHON``). Run from the repository root::

    python benchmarks/logreg_adult.py            # 10 seeds, ~3 minutes
    python benchmarks/logreg_adult.py --seeds 3  # quicker
    # one method at some epsilons, many seeds, on another checkout too:
    python benchmarks/logreg_adult.py --methods gradient --epsilons 0.05 0.1 \
        --seeds 200 --no-plot --skdp ../other-checkout

The table is printed; the plot goes to
``benchmarks/results/logreg_adult.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_data  # noqa: E402 (benchmarks/ is on sys.path)
from _peers import peer_python, run_peer_script  # noqa: E402

EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
METHODS = ("objective", "output", "gradient")
#: delta of the approximate-DP method, pinned (skdp's default is 1e-6).
GRADIENT_DELTA = 1e-5
DIFFPRIVLIB_PYTHON = peer_python("diffprivlib")
DIFFPRIVLIB_CS = (1.0, 0.1)

_DIFFPRIVLIB_SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
from diffprivlib.models import LogisticRegression
warnings.simplefilter("ignore")
data = np.load(sys.argv[1])
epsilons = json.loads(sys.argv[2])
seeds = int(sys.argv[3])
Cs = json.loads(sys.argv[4])
out = []
for C in Cs:
    for eps in epsilons:
        for seed in range(seeds):
            model = LogisticRegression(
                epsilon=eps, data_norm=1.0, C=C, random_state=seed
            )
            start = time.perf_counter()
            model.fit(data["X_train"], data["y_train"])
            seconds = time.perf_counter() - start
            acc = float((model.predict(data["X_test"]) == data["y_test"]).mean())
            out.append({"C": C, "epsilon": eps, "seed": seed, "accuracy": acc,
                        "seconds": seconds})
print(json.dumps(out))
"""


def run_diffprivlib(python, data, seeds, epsilons=EPSILONS):
    """diffprivlib results as a list of dicts, or None when unavailable."""
    return run_peer_script(
        python, _DIFFPRIVLIB_SCRIPT, data, list(epsilons), seeds, list(DIFFPRIVLIB_CS)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument(
        "--skdp", type=Path, help="another skdp checkout to measure (default: this one)"
    )
    parser.add_argument("--diffprivlib-python", default=DIFFPRIVLIB_PYTHON)
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    if args.skdp is not None:
        sys.path.insert(0, str(args.skdp.resolve()))
    from skdp import DPLogisticRegression

    print(f"skdp from {Path(sys.modules['skdp'].__file__).parent.parent.name}")

    X_train, X_test, y_train, y_test = load_data()
    max_norm = np.linalg.norm(X_train, axis=1).max()
    print(
        f"UCI Adult: {X_train.shape[0]} training rows, {X_test.shape[0]} test rows, "
        f"{X_train.shape[1]} features; max row norm {max_norm:.3f}"
    )
    majority = max(np.mean(y_test == 0), np.mean(y_test == 1))

    rows = []
    lbfgs_seconds = []
    lbfgs1_seconds = []
    lbfgs_accuracy = None
    for epsilon in args.epsilons:
        for method in args.methods:
            for seed in range(args.seeds):
                # Interleave the non-private reference so that both sides of
                # the timing comparison see the same machine load.
                if seed < 3:
                    start = time.perf_counter()
                    reference = LogisticRegression(C=1.0).fit(X_train, y_train)
                    lbfgs_seconds.append(time.perf_counter() - start)
                    lbfgs_accuracy = reference.score(X_test, y_test)
                    # skdp fits with one BLAS thread; so does this reference.
                    with threadpool_limits(limits=1, user_api="blas"):
                        start = time.perf_counter()
                        LogisticRegression(C=1.0).fit(X_train, y_train)
                        lbfgs1_seconds.append(time.perf_counter() - start)

                model = DPLogisticRegression(
                    epsilon,
                    GRADIENT_DELTA if method == "gradient" else None,
                    method=method,
                    data_norm=1.0,
                    classes=[0, 1],
                    random_state=seed,
                )
                start = time.perf_counter()
                model.fit(X_train, y_train)
                seconds = time.perf_counter() - start
                rows.append(
                    {
                        "library": "skdp",
                        "method": method,
                        "epsilon": epsilon,
                        "seed": seed,
                        "accuracy": model.score(X_test, y_test),
                        "seconds": seconds,
                    }
                )
    results = pd.DataFrame(rows)

    dpl = run_diffprivlib(
        args.diffprivlib_python,
        {
            "X_train": X_train,
            "X_test": X_test,
            "y_train": y_train,
            "y_test": y_test,
        },
        args.seeds,
        args.epsilons,
    )
    if dpl is not None:
        dpl = pd.DataFrame(dpl)
        dpl["library"] = "diffprivlib"
        dpl["method"] = "diffprivlib C=" + dpl["C"].astype(str)
        results = pd.concat([results, dpl.drop(columns="C")], ignore_index=True)

    summary = results.groupby(["method", "epsilon"]).agg(
        mean=("accuracy", "mean"),
        std=("accuracy", "std"),
        sem=("accuracy", "sem"),
        seconds=("seconds", "mean"),
    )
    table = summary.apply(
        lambda r: (
            f"{r['mean']:.4f} ± {r['std']:.4f} [{r['sem']:.4f}] ({r['seconds']:.2f}s)"
        ),
        axis=1,
    ).unstack("epsilon")
    with pd.option_context("display.width", 300, "display.max_columns", 20):
        print(
            f"\nTest accuracy, mean ± std [standard error of the mean] over "
            f"{args.seeds} seeds (mean fit time)"
        )
        print(table.to_string())
    lbfgs_median = float(np.median(lbfgs_seconds))
    print(
        f"\nnon-private sklearn LogisticRegression(C=1, lbfgs): "
        f"accuracy {lbfgs_accuracy:.4f}, median fit {lbfgs_median:.3f}s"
    )
    print(f"majority class: accuracy {majority:.4f}")
    skdp_times = results[results["library"] == "skdp"].groupby("method")["seconds"]
    lbfgs1_median = float(np.median(lbfgs1_seconds))
    print(f"the same with one BLAS thread: median fit {lbfgs1_median:.3f}s")
    print("\nFit time relative to lbfgs (median over all epsilons and seeds):")
    for method, seconds in skdp_times:
        print(
            f"  {method:9s} {np.median(seconds):.3f}s = "
            f"{np.median(seconds) / lbfgs_median:.2f}x lbfgs, "
            f"{np.median(seconds) / lbfgs1_median:.2f}x one-thread lbfgs"
        )
    best = summary["mean"].unstack("method")[list(args.methods)]
    print("\nBest skdp method per epsilon:")
    for epsilon, row in best.iterrows():
        print(f"  epsilon={epsilon:<5g} {row.idxmax():9s} {row.max():.4f}")
    print(f"load average: {os.getloadavg()}")

    if not args.no_plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib not installed: no plot.")
            return
        out = ROOT / "benchmarks" / "results"
        out.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for method, group in summary.groupby(level="method"):
            group = group.droplevel("method")
            ax.errorbar(
                group.index,
                group["mean"],
                yerr=group["std"],
                marker="o",
                capsize=3,
                label=method,
            )
        ax.axhline(lbfgs_accuracy, color="k", ls="--", label="non-private (C=1)")
        ax.axhline(majority, color="grey", ls=":", label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy")
        ax.set_title("DPLogisticRegression on UCI Adult")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / "logreg_adult.png"
        fig.savefig(path, dpi=120)
        print(f"plot written to {path}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)
        main()
