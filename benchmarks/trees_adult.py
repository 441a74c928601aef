"""Private tree ensembles against their peers: Adult, breast cancer, hours.

Three parts (``--parts``), the data and public schemas of
``benchmarks/_trees_data.py``:

* ``adult``: raw UCI Adult (the bundled 30,162 rows, all 14 columns),
  stratified 80/20 with ``random_state=0``, public bounds and categories
  declared, epsilon in ``--epsilons`` (default 0.1, 0.5, 1, 2, 5) and
  ``--seeds`` noise seeds (default 10; seed ``s`` is every model's
  ``random_state``). Rows: skdp's ``DPHistGradientBoostingClassifier`` and
  ``DPRandomForestClassifier`` at their defaults; interpret's
  ``DPExplainableBoostingClassifier`` (DP-EBM, interpret-core 0.7.8, its
  defaults, the same bounds, every column's type declared); diffprivlib
  0.6.6's ``RandomForestClassifier`` (its defaults, every column bounded);
  skdp's best private logistic pipeline (``skdp.cli._demo.private_pipeline``:
  one-hot over the published categories, ``DPStandardScaler`` on public
  ranges, DP-SGD ``DPLogisticRegression``, one budget of ``(epsilon,
  1e-5)``); the non-private references (scikit-learn's
  ``HistGradientBoostingClassifier``, ``RandomForestClassifier`` and the
  same logistic pipeline without noise). All at ``delta=1e-5``.
* ``cancer``: scikit-learn's breast-cancer data, stratified 75/25 per seed
  (split ``random_state`` = seed), epsilon 0.5, 1 and 5: the same private
  models (the logistic one on public-range min-max scaling) and DP-EBM.
* ``hours``: regression of Adult's ``hr_per_week`` (target bounds [1, 99])
  from the other 13 columns (the rows of ``benchmarks/linreg.py``) at
  epsilon 1: ``DPHistGradientBoostingRegressor``,
  ``DPRandomForestRegressor``, ``DPLinearRegression`` (each method, on the
  linear benchmark's encoding), DP-EBM's regressor; ``Ridge`` and
  ``HistGradientBoostingRegressor`` without privacy.

Reported per row: test AUC and accuracy (R^2 for hours) as mean +- std over
the seeds; the fit's wall and CPU seconds; ``fit MB``, the fit's peak
resident memory above the resident size it started from (``VmHWM`` reset
before each fit; the peers measure themselves the same way in their own
interpreters, ``benchmarks/_peers.py``). The peers run in their own
virtualenvs (``SKDP_INTERPRET_PYTHON``, ``SKDP_DIFFPRIVLIB_PYTHON``; see
``_peers.py`` for how to make them) and are skipped with a message when
absent. Run from the repository root::

    python benchmarks/trees_adult.py                      # ~10 minutes
    python benchmarks/trees_adult.py --seeds 3 --parts adult --epsilons 1
    python benchmarks/trees_adult.py --json benchmarks/results/trees.json \\
        --plot benchmarks/results/trees_adult.png

``random_state`` seeds are for reproducing the table only; a release fits
with ``random_state=None``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, r2_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _adult_split import load_regression_data  # noqa: E402
from _peers import (  # noqa: E402
    measure_functions,
    run_diffprivlib_forest,
    run_dpebm_classifier,
    run_dpebm_regressor,
)
from _trees_data import (  # noqa: E402
    HOURS_BOUNDS,
    adult_classification,
    adult_regression,
    cancer_bounds,
    cancer_split,
)

from skdp.cli._demo import private_pipeline  # noqa: E402
from skdp.ensemble import (  # noqa: E402
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    DPRandomForestClassifier,
    DPRandomForestRegressor,
)
from skdp.linear_model import DPLinearRegression, DPLogisticRegression  # noqa: E402

DELTA = 1e-5
MEASURE = measure_functions()


def _record(name, epsilon, seed, model, X_train, y_train, X_test, y_test, task):
    record = {"peer": name, "epsilon": epsilon, "seed": seed}
    record.update(MEASURE["timed_fit"](model, X_train, y_train))
    if task == "regression":
        record["r2"] = float(r2_score(y_test, model.predict(X_test)))
    else:
        proba = model.predict_proba(X_test)[:, 1]
        record["auc"] = float(roc_auc_score(y_test, proba))
        record["accuracy"] = float(accuracy_score(y_test, model.predict(X_test)))
    return record


def _logistic_scaled(epsilon, lower, upper, seed):
    """Min-max scaling by declared bounds (stateless), unit rows, DP-SGD."""
    span = np.where(upper > lower, upper - lower, 1.0)
    return make_pipeline(
        FunctionTransformer(lambda X: np.clip((X - lower) / span, 0, 1)),
        Normalizer(),
        DPLogisticRegression(
            epsilon=epsilon,
            delta=DELTA,
            method="gradient",
            data_norm=1.0,
            classes=[0, 1],
            random_state=seed,
        ),
    )


def adult_part(epsilons, seeds, peers):
    (X_train, X_test, y_train, y_test), params, peer_schema = adult_classification()
    categorical, bounds, code_bounds = peer_schema
    private = {
        "skdp DPHistGradientBoostingClassifier": lambda e, s: (
            DPHistGradientBoostingClassifier(
                epsilon=e, delta=DELTA, classes=[0, 1], random_state=s, **params
            )
        ),
        "skdp DPRandomForestClassifier": lambda e, s: DPRandomForestClassifier(
            epsilon=e, delta=DELTA, classes=[0, 1], random_state=s, **params
        ),
        "skdp private logistic pipeline (DP-SGD)": lambda e, s: private_pipeline(
            e, method="gradient", delta=DELTA, random_state=2 * s
        ),
    }
    records = []
    for epsilon in epsilons:
        for name, make in private.items():
            for seed in seeds:
                records.append(
                    _record(
                        name,
                        epsilon,
                        seed,
                        make(epsilon, seed),
                        X_train,
                        y_train,
                        X_test,
                        y_test,
                        "classification",
                    )
                )
    reference = private_pipeline(1.0)
    reference.set_params(
        columntransformer__scale=StandardScaler(),
        dplogisticregression=LogisticRegression(max_iter=1000),
    )
    references = {
        "sklearn HistGradientBoostingClassifier (no privacy)": (
            HistGradientBoostingClassifier(
                categorical_features=params["categorical_features"], random_state=0
            )
        ),
        "sklearn RandomForestClassifier (no privacy)": RandomForestClassifier(
            random_state=0, n_jobs=1
        ),
        "logistic pipeline (no privacy)": reference,
    }
    for name, model in references.items():
        records.append(
            _record(
                name,
                float("inf"),
                0,
                model,
                X_train,
                y_train,
                X_test,
                y_test,
                "classification",
            )
        )
    if peers:
        split = (X_train, X_test, y_train, y_test)
        for run, schema in (
            (run_dpebm_classifier, bounds),
            (run_diffprivlib_forest, code_bounds),
        ):
            out = run(*split, categorical, schema, epsilons, list(seeds))
            records += out or []
    for r in records:
        r["dataset"] = "Adult"
    return records


def cancer_part(epsilons, seeds, peers):
    lower, upper = cancer_bounds()
    params = {"bounds": (lower, upper)}
    private = {
        "skdp DPHistGradientBoostingClassifier": lambda e, s: (
            DPHistGradientBoostingClassifier(
                epsilon=e, delta=DELTA, classes=[0, 1], random_state=s, **params
            )
        ),
        "skdp DPRandomForestClassifier": lambda e, s: DPRandomForestClassifier(
            epsilon=e, delta=DELTA, classes=[0, 1], random_state=s, **params
        ),
        "skdp private logistic pipeline (DP-SGD)": lambda e, s: _logistic_scaled(
            e, lower, upper, s
        ),
    }
    records = []
    bounds = {j: (float(lower[j]), float(upper[j])) for j in range(lower.size)}
    for seed in seeds:
        X_train, X_test, y_train, y_test = cancer_split(seed)
        for epsilon in epsilons:
            for name, make in private.items():
                records.append(
                    _record(
                        name,
                        epsilon,
                        seed,
                        make(epsilon, seed),
                        X_train,
                        y_train,
                        X_test,
                        y_test,
                        "classification",
                    )
                )
        records.append(
            _record(
                "sklearn HistGradientBoostingClassifier (no privacy)",
                float("inf"),
                seed,
                HistGradientBoostingClassifier(random_state=0),
                X_train,
                y_train,
                X_test,
                y_test,
                "classification",
            )
        )
        if peers:
            out = run_dpebm_classifier(
                X_train, X_test, y_train, y_test, [], bounds, epsilons, [seed]
            )
            records += out or []
    for r in records:
        r["dataset"] = "breast cancer"
    return records


def hours_part(epsilons, seeds, peers):
    (X_train, X_test, y_train, y_test), params, (categorical, bounds) = (
        adult_regression()
    )
    Z_train, Z_test, _, _ = load_regression_data()  # the linear benchmark's rows
    private = {
        "skdp DPHistGradientBoostingRegressor": lambda e, s: (
            DPHistGradientBoostingRegressor(
                epsilon=e, delta=DELTA, y_bounds=HOURS_BOUNDS, random_state=s, **params
            )
        ),
        "skdp DPRandomForestRegressor": lambda e, s: DPRandomForestRegressor(
            epsilon=e, delta=DELTA, y_bounds=HOURS_BOUNDS, random_state=s, **params
        ),
    }
    records = []
    for epsilon in epsilons:
        for seed in seeds:
            for name, make in private.items():
                records.append(
                    _record(
                        name,
                        epsilon,
                        seed,
                        make(epsilon, seed),
                        X_train,
                        y_train,
                        X_test,
                        y_test,
                        "regression",
                    )
                )
            for method in ("adassp", "objective", "output", "gradient"):
                model = DPLinearRegression(
                    epsilon=epsilon,
                    delta=DELTA,
                    method=method,
                    data_norm=1.0,
                    y_bounds=HOURS_BOUNDS,
                    random_state=seed,
                )
                records.append(
                    _record(
                        f"skdp DPLinearRegression ({method})",
                        epsilon,
                        seed,
                        model,
                        Z_train,
                        y_train,
                        Z_test,
                        y_test,
                        "regression",
                    )
                )
    for name, model, data in (
        ("sklearn Ridge (no privacy)", Ridge(alpha=1.0), (Z_train, Z_test)),
        (
            "sklearn HistGradientBoostingRegressor (no privacy)",
            HistGradientBoostingRegressor(
                categorical_features=params["categorical_features"], random_state=0
            ),
            (X_train, X_test),
        ),
    ):
        records.append(
            _record(
                name,
                float("inf"),
                0,
                model,
                data[0],
                y_train,
                data[1],
                y_test,
                "regression",
            )
        )
    if peers:
        out = run_dpebm_regressor(
            X_train,
            X_test,
            y_train,
            y_test,
            categorical,
            bounds,
            epsilons,
            list(seeds),
            HOURS_BOUNDS,
        )
        records += out or []
    for r in records:
        r["dataset"] = "Adult hr_per_week"
    return records


def _stat(values, digits=4):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def _fit_mb(record):
    peak, before = record.get("peak_rss_mb"), record.get("rss_before_mb")
    if peak is None or before is None or not record.get("peak_reset"):
        return None
    return peak - before


def table(records):
    """One markdown row per (dataset, model, epsilon)."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["dataset"], r["epsilon"], r["peer"]), []).append(r)
    lines = [
        "| data | model | eps | n | AUC | accuracy / R^2 | fit wall s | fit CPU s "
        "| fit MB |",
        "|---|---|---:|---:|---|---|---:|---:|---:|",
    ]
    for (dataset, epsilon, name), rows in groups.items():
        second = [r.get("accuracy", r.get("r2")) for r in rows]
        eps = "—" if epsilon == float("inf") else f"{epsilon:g}"
        lines.append(
            f"| {dataset} | {name} | {eps}"
            f" | {len(rows)} | {_stat([r.get('auc') for r in rows])} | {_stat(second)}"
            f" | {np.mean([r['fit_wall_s'] for r in rows]):.3f}"
            f" | {np.mean([r['fit_cpu_s'] for r in rows]):.3f}"
            f" | {_stat([_fit_mb(r) for r in rows], 1)} |"
        )
    return "\n".join(lines)


def plot(records, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib absent: no plot")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    adult = [r for r in records if r["dataset"] == "Adult" and "auc" in r]
    for name in dict.fromkeys(r["peer"] for r in adult):
        rows = [r for r in adult if r["peer"] == name]
        epsilons = sorted({r["epsilon"] for r in rows})
        if epsilons == [float("inf")]:
            ax.axhline(rows[0]["auc"], linestyle=":", linewidth=1, label=name)
            continue
        means = [
            np.mean([r["auc"] for r in rows if r["epsilon"] == e]) for e in epsilons
        ]
        ax.plot(epsilons, means, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_ylabel("test AUC, mean over seeds")
    ax.set_title("UCI Adult, 80/20 stratified")
    ax.legend(fontsize=7)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", default=["adult", "cancer", "hours"])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0, 5.0]
    )
    parser.add_argument("--cancer-epsilons", type=float, nargs="+", default=[0.5, 1, 5])
    parser.add_argument("--hours-epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--json", help="write every fit's record here")
    parser.add_argument("--plot", help="write Adult's AUC against epsilon here")
    args = parser.parse_args(argv)
    seeds = range(args.seeds)
    peers = not args.no_peers
    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "adult" in args.parts:
            records += adult_part(args.epsilons, seeds, peers)
        if "cancer" in args.parts:
            records += cancer_part(args.cancer_epsilons, seeds, peers)
        if "hours" in args.parts:
            records += hours_part(args.hours_epsilons, seeds, peers)
    print(table(records))
    warned = sorted(
        {w for r in records if r["peer"].startswith("skdp") for w in r["warnings"]}
    )
    print("\nwarnings raised by skdp's fits:", warned or "none")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(records, indent=1, default=str))
    if args.plot:
        plot(records, args.plot)


if __name__ == "__main__":
    main()
