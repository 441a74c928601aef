"""Where the benchmarks find their peers' virtualenvs and the shared data.

Nothing here is an absolute path of one machine: each location comes from
an environment variable, with a default relative to the repository (its
parent directory holds ``venvs/`` and ``shared/`` in the layout the
benchmarks' docstrings describe).

* ``SKDP_DIFFPRIVLIB_PYTHON``: diffprivlib 0.6.6's interpreter (default
  ``../venvs/diffprivlib/bin/python``);
* ``SKDP_SMARTNOISE_PYTHON``: smartnoise-synth's interpreter (default
  ``../venvs/smartnoise/bin/python``);
* ``SKDP_INTERPRET_PYTHON``: interpret-core 0.7.8's interpreter, for its
  DP-EBMs (default ``../venvs/interpret/bin/python``); made with
  ``python3 -m venv ../venvs/interpret`` and ``../venvs/interpret/bin/pip
  install interpret-core==0.7.8 numpy scikit-learn pandas scipy``;
* ``SKDP_ADULT_DIR``: the UCI Adult folder (default ``../shared/data/adult``).

diffprivlib 0.6.6 needs ``scikit-learn<=1.7.2`` (its forest imports
``sklearn.tree._tree.DOUBLE``, gone from later releases)::

    python3 -m venv ../venvs/diffprivlib
    ../venvs/diffprivlib/bin/pip install diffprivlib==0.6.6 'scikit-learn<=1.7.2' pandas

The tree-ensemble peers (:func:`run_dpebm_classifier`,
:func:`run_dpebm_regressor`, :func:`run_diffprivlib_forest`) hand the
arrays ``X_train, X_test, y_train, y_test`` to a script that loops over
epsilons x seeds in one process and returns one record per fit: the scores,
the fit's wall and CPU seconds (``time.perf_counter``,
``time.process_time``), its memory and the distinct warnings it raised.
Memory: ``maxrss_mb`` is the child's ``resource.getrusage`` ``ru_maxrss``
after the fit, a high-water mark that on Linux also keeps the RSS of the
forked parent before ``exec`` (so it is at least the calling benchmark's
size: ``baseline_maxrss_mb``, its value before the first fit, shows it);
``peak_rss_mb`` is the process's own peak (``VmHWM`` in
``/proc/self/status``), reset before each fit when ``/proc/self/clear_refs``
allows (``peak_reset``), so it is that fit's peak, ``rss_before_mb`` the
resident size it started from.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peer_python(name: str) -> str:
    """The interpreter of the peer library ``name`` ('diffprivlib', ...)."""
    variable = f"SKDP_{name.upper()}_PYTHON"
    default = ROOT.parent / "venvs" / name / "bin" / "python"
    return os.environ.get(variable, str(default))


def adult_dir() -> Path:
    """The folder of the shared UCI Adult files."""
    default = ROOT.parent / "shared" / "data" / "adult"
    return Path(os.environ.get("SKDP_ADULT_DIR", str(default)))


def run_peer_script(python: str, script: str, data: dict, *args) -> list | None:
    """Run ``script`` (a ``python -c`` program) in a peer's interpreter.

    ``data`` (arrays) is handed over as an ``.npz`` file whose path is the
    script's first argument, followed by ``args`` as JSON; the script
    prints its results as one JSON document. Returns them, or None (with a
    message) when the interpreter is absent or the script fails.
    """
    import json
    import subprocess
    import tempfile

    import numpy as np

    if not Path(python).exists():
        print(f"peer skipped: {python} not found (see the module docstring).")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, **data)
        proc = subprocess.run(
            [python, "-c", script, path, *(json.dumps(a) for a in args)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        print("peer failed:\n" + proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout)


# The tree-ensemble peers. Each script gets the .npz path, then JSON
# arguments: ``categorical`` (column indices), ``bounds`` ({column index:
# [lower, upper]}), ``epsilons``, ``seeds`` (and for the regressor
# ``target_bounds``). Numeric columns are clipped to their declared bounds
# before fitting (a no-op when the bounds are true ones).

# How a fit is measured: one source, run in the peers' interpreters (in
# their scripts) and in the benchmark's own (:func:`measure_functions`).
MEASURE = r"""
import resource, time, warnings
def maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
def status_mb(field):
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None
def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False
baseline = maxrss_mb()
def timed_fit(model, X, y):
    rss_before, reset = status_mb("VmRSS"), reset_peak()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wall, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return {"fit_wall_s": wall, "fit_cpu_s": cpu, "maxrss_mb": maxrss_mb(),
            "baseline_maxrss_mb": baseline, "peak_rss_mb": status_mb("VmHWM"),
            "peak_reset": reset, "rss_before_mb": rss_before, "warnings": messages}
"""


def measure_functions() -> dict:
    """``maxrss_mb``, ``status_mb``, ``reset_peak`` and ``timed_fit(model, X,
    y)`` of :data:`MEASURE`, for fits in this process (the same records as
    the peers': wall and CPU seconds, memory, distinct warnings)."""
    namespace: dict = {}
    exec(MEASURE, namespace)  # noqa: S102 (our own constant source)
    return namespace


_TREES_PRELUDE = (
    r"""
import json, resource, sys, time, warnings
import numpy as np
from sklearn.metrics import accuracy_score, r2_score, roc_auc_score
data = np.load(sys.argv[1])
X_train, X_test = data["X_train"].astype(float), data["X_test"].astype(float)
y_train, y_test = data["y_train"], data["y_test"]
categorical = [int(c) for c in json.loads(sys.argv[2])]
bounds = {int(c): (float(lo), float(hi))
          for c, (lo, hi) in json.loads(sys.argv[3]).items()}
epsilons, seeds = json.loads(sys.argv[4]), json.loads(sys.argv[5])
numeric = [c for c in range(X_train.shape[1]) if c not in categorical]
for c in numeric:
    if c in bounds:
        X_train[:, c] = np.clip(X_train[:, c], *bounds[c])
"""
    + MEASURE
    + r"""
def scores(model):
    out = {"accuracy": float(accuracy_score(y_test, model.predict(X_test)))}
    if hasattr(model, "predict_proba"):
        out["auc"] = float(roc_auc_score(y_test, model.predict_proba(X_test)[:, 1]))
    return out
records = []
"""
)

# DP-EBM: interpret's defaults except epsilon, delta=1e-5 (its default too,
# written out), random_state=seed; every column's type declared ('nominal'
# for the categorical ones, 'continuous' otherwise) and the numeric columns'
# public bounds passed as ``privacy_bounds``, so that neither is read from
# the data. Nominal columns need no bounds: interpret bins them by noisy
# counts of the values present in the training data.
_DPEBM_MODEL = r"""
import interpret
from interpret.privacy import (DPExplainableBoostingClassifier,
                               DPExplainableBoostingRegressor)
feature_types = ["nominal" if c in categorical else "continuous"
                 for c in range(X_train.shape[1])]
privacy_bounds = {c: bounds[c] for c in numeric if c in bounds}
def dpebm(cls, epsilon, seed, **extra):
    return cls(feature_types=feature_types, privacy_bounds=privacy_bounds,
               epsilon=epsilon, delta=1e-5, random_state=seed, **extra)
"""

DPEBM_CLASSIFIER_SCRIPT = (
    _TREES_PRELUDE
    + _DPEBM_MODEL
    + r"""
for epsilon in epsilons:
    for seed in seeds:
        model = dpebm(DPExplainableBoostingClassifier, epsilon, seed)
        record = {"peer": "interpret DPExplainableBoostingClassifier",
                  "version": interpret.__version__, "epsilon": epsilon, "seed": seed}
        record.update(timed_fit(model, X_train, y_train))
        record.update(scores(model))
        records.append(record)
print(json.dumps(records))
"""
)

DPEBM_REGRESSOR_SCRIPT = (
    _TREES_PRELUDE
    + _DPEBM_MODEL
    + r"""
target_min, target_max = (float(t) for t in json.loads(sys.argv[6]))
for epsilon in epsilons:
    for seed in seeds:
        model = dpebm(DPExplainableBoostingRegressor, epsilon, seed,
                      privacy_target_min=target_min, privacy_target_max=target_max)
        record = {"peer": "interpret DPExplainableBoostingRegressor",
                  "version": interpret.__version__, "epsilon": epsilon, "seed": seed}
        record.update(timed_fit(model, X_train, y_train))
        record["r2"] = float(r2_score(y_test, model.predict(X_test)))
        records.append(record)
print(json.dumps(records))
"""
)

# diffprivlib's forest has no categorical features: every column is split at
# a random threshold drawn uniformly within its bounds, so every column needs
# declared bounds, categorical ones included (their integer codes 0 .. k - 1
# against the public category list: bounds [0, k - 1]). Defaults otherwise
# (n_estimators=10, max_depth=5, n_jobs=1), classes=[0, 1] declared (the
# labels are 0/1), random_state=seed. Its predict_proba is the fraction of
# trees voting for each class (one noisy label per leaf).
DIFFPRIVLIB_FOREST_SCRIPT = (
    _TREES_PRELUDE
    + r"""
import diffprivlib
from diffprivlib.models import RandomForestClassifier
missing = [c for c in range(X_train.shape[1]) if c not in bounds]
if missing:
    raise SystemExit(f"diffprivlib's forest needs bounds for every column: {missing}")
lower = np.array([bounds[c][0] for c in range(X_train.shape[1])])
upper = np.array([bounds[c][1] for c in range(X_train.shape[1])])
for epsilon in epsilons:
    for seed in seeds:
        model = RandomForestClassifier(epsilon=epsilon, bounds=(lower, upper),
                                       classes=[0, 1], random_state=seed)
        record = {"peer": "diffprivlib RandomForestClassifier",
                  "version": diffprivlib.__version__, "epsilon": epsilon, "seed": seed}
        record.update(timed_fit(model, X_train, y_train))
        record.update(scores(model))
        records.append(record)
print(json.dumps(records))
"""
)


def _tree_data(X_train, X_test, y_train, y_test) -> dict:
    return {"X_train": X_train, "X_test": X_test, "y_train": y_train, "y_test": y_test}


def _tree_bounds(bounds) -> dict:
    """``{column index: (lower, upper)}`` as JSON (string keys)."""
    return {str(int(c)): [float(lo), float(hi)] for c, (lo, hi) in bounds.items()}


def run_dpebm_classifier(
    X_train, X_test, y_train, y_test, categorical, bounds, epsilons, seeds, python=None
) -> list | None:
    """interpret's DPExplainableBoostingClassifier per (epsilon, seed).

    ``categorical``: column indices (declared 'nominal'); ``bounds``:
    ``{column index: (lower, upper)}`` for the numeric columns. Records
    carry ``auc``, ``accuracy``, the fit times and memory (module
    docstring), or None when the peer is absent or fails.
    """
    return run_peer_script(
        python or peer_python("interpret"),
        DPEBM_CLASSIFIER_SCRIPT,
        _tree_data(X_train, X_test, y_train, y_test),
        [int(c) for c in categorical],
        _tree_bounds(bounds),
        [float(e) for e in epsilons],
        [int(s) for s in seeds],
    )


def run_dpebm_regressor(
    X_train,
    X_test,
    y_train,
    y_test,
    categorical,
    bounds,
    epsilons,
    seeds,
    target_bounds,
    python=None,
) -> list | None:
    """interpret's DPExplainableBoostingRegressor per (epsilon, seed).

    As :func:`run_dpebm_classifier`, with ``target_bounds = (min, max)``
    declared as ``privacy_target_min`` and ``privacy_target_max``; records
    carry ``r2``.
    """
    return run_peer_script(
        python or peer_python("interpret"),
        DPEBM_REGRESSOR_SCRIPT,
        _tree_data(X_train, X_test, y_train, y_test),
        [int(c) for c in categorical],
        _tree_bounds(bounds),
        [float(e) for e in epsilons],
        [int(s) for s in seeds],
        [float(t) for t in target_bounds],
    )


def run_diffprivlib_forest(
    X_train, X_test, y_train, y_test, categorical, bounds, epsilons, seeds, python=None
) -> list | None:
    """diffprivlib's RandomForestClassifier per (epsilon, seed).

    ``bounds`` must cover every column: the numeric columns' public bounds
    and, for the ``categorical`` ones (integer codes against the public
    category list), ``(0, k - 1)``. Records carry ``auc`` (from its
    tree-vote ``predict_proba``) and ``accuracy``.
    """
    return run_peer_script(
        python or peer_python("diffprivlib"),
        DIFFPRIVLIB_FOREST_SCRIPT,
        _tree_data(X_train, X_test, y_train, y_test),
        [int(c) for c in categorical],
        _tree_bounds(bounds),
        [float(e) for e in epsilons],
        [int(s) for s in seeds],
    )
