"""What the plan-time checks of issue 26 cost at the sizes they guard.

Every check runs before the charge, so its cost is paid by every fit. Rows:

* the refusal of dates, durations and bytes where numbers are expected
  (``skdp.utils._numbers.refuse_non_numbers``) on a float array (a dtype
  check only), an object array (every cell's type is looked at) and a
  DataFrame with object columns, at ``--rows`` x 50;
* declared ``classes`` (missing values, one dimension) at 100,000 classes;
* the epsilon constraint (scikit-learn's parameter validation);
* the round bound of DP-SGD (the plan itself: steps, calibration) and of
  the quantile discretizer, at the largest sizes they accept;
* the narrow-bounds check of declared bounds at 50 features;
* the exact solver's work bound (``SolverPlan.work_bound`` and the check;
  objective perturbation's includes the noise norm's quantile) at 100,000
  classes and at 20 million rows;
* MWEM's work bound (``skdp.synthesis._cost.mwem_work``) for
  SyntheticDataClassifier's workload at 1,000 columns and PMW's default
  workload at 300 columns (45,150 candidates), and the counted cliques of
  that workload (``maximal_cliques``);
* the gradient step's memory check (DP-SGD, full-batch) at 10**7
  classes (refused);
* the utility forecasts: a DP-SGD plan's ratio and warning check, and
  DPKMeans's.

Each row gives the first run and the median of ``--repeats`` more (wall
seconds). Run from the
repository root::

    python benchmarks/plan_checks.py [--rows 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _refused(func):
    """Run a check expected to refuse; a check that passes is an error."""
    try:
        func()
    except (MemoryError, ValueError):
        return
    raise AssertionError("the check did not refuse")


def _seconds(func, repeats):
    """``(first run, median of the later runs)``: the first fills caches
    (the DP-SGD calibration is cached on its public inputs)."""
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times[0], statistics.median(times[1:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    import itertools

    import pandas as pd

    from skdp.cluster._kmeans import centre_noise_ratio
    from skdp.linear_model._dpsgd import check_gradient_memory, plan_dpsgd
    from skdp.linear_model._forecast import warn_if_noise_swamps_learning
    from skdp.linear_model._objective import plan_objective
    from skdp.linear_model._output import plan_output
    from skdp.mechanisms import plan_laplace
    from skdp.synthesis._cost import mwem_work
    from skdp.synthesis._counting import maximal_cliques
    from skdp.utils._bounds import declared_bounds
    from skdp.utils._constraints import EPSILON_CONSTRAINT
    from skdp.utils._feasibility import check_rounds
    from skdp.utils._labels import declared_classes
    from skdp.utils._numbers import refuse_non_numbers

    n, d = args.rows, 50
    rng = np.random.default_rng(0)
    floats = rng.standard_normal((n, d))
    small = max(1, n // 10)
    objects = floats[:small].astype(object)
    frame = pd.DataFrame(floats[:small]).astype(object)
    classes = list(range(100_000))
    rows = [
        (f"dates/bytes check, float64 {n:,} x {d}", lambda: refuse_non_numbers(floats)),
        (
            f"dates/bytes check, object {small:,} x {d}",
            lambda: refuse_non_numbers(objects),
        ),
        (
            f"dates/bytes check, DataFrame of {d} object columns, {small:,} rows",
            lambda: refuse_non_numbers(frame),
        ),
        ("declared classes, 100,000", lambda: declared_classes(classes)),
        ("epsilon constraint", lambda: EPSILON_CONSTRAINT.is_satisfied_by(1.0)),
        (
            "round bound alone (1,000,000 steps)",
            lambda: check_rounds(1_000_000, "DP-SGD steps", "use fewer epochs"),
        ),
        (
            "DP-SGD plan at the round bound (n=1e6, batch 256, 256 epochs: 1e6 steps)",
            lambda: plan_dpsgd(
                epsilon=1.0,
                delta=1e-6,
                C=1.0,
                n_samples=1_000_000,
                n_features=51,
                n_models=1,
                row_norm=1.0,
                batch_size=256,
                epochs=256,
                learning_rate=None,
                max_grad_norm=None,
            ),
        ),
        (
            f"declared bounds with the width check, {d} features",
            lambda: declared_bounds((np.zeros(d), np.ones(d)), d),
        ),
    ]
    exact = dict(epsilon=1.0, C=1.0, tol=1e-12, max_iter=100)
    many_classes = dict(row_norm=1.0, n_samples=40, n_features=4, n_classes=100_000)
    rows_ = dict(row_norm=5**0.5, n_samples=20_000_000, n_features=51, n_classes=2)
    wide = 1000
    sdc_sizes, sdc_initial = (5,) * wide + (2,), [(a, wide) for a in range(wide)]
    pmw_sizes = (10,) * 300
    pmw_workload = list(itertools.combinations(range(300), 2))
    pmw_candidates = [(a,) for a in range(300)] + pmw_workload
    dpsgd = plan_dpsgd(
        epsilon=1.0, delta=1e-5, C=1.0, n_samples=24_129, n_features=104,
        n_models=1, row_norm=1.0, batch_size=256, epochs=10,
        learning_rate=None, max_grad_norm=None,
    )  # fmt: skip
    mwem_common = dict(
        dense=False, max_model_size=10**6, n_queries=0, round_iter=30, final_iter=100
    )
    sums = plan_laplace(2.0 * 512, 0.5, 10 * 64, magnitude=1e5)
    rows += [
        (
            "exact solver work bound, output, 100,000 classes x 4 on 40 rows",
            lambda: plan_output(delta=0.0, **exact, **many_classes),
        ),
        (
            "exact solver work bound, objective, 100,000 classes x 4 on 40 rows",
            lambda: plan_objective(**exact, **many_classes),
        ),
        (
            "exact solver work bound, objective, 20,000,000 rows x 51",
            lambda: plan_objective(**exact, **rows_),
        ),
        (
            "MWEM work bound, SyntheticDataClassifier workload, 1,000 columns",
            lambda: mwem_work(
                sizes=sdc_sizes,
                initial=sdc_initial,
                n_rounds=wide,
                candidates=sdc_initial,
                **mwem_common,
            ),
        ),  # fmt: skip
        (
            "MWEM work bound, PMW default workload, 300 columns (45,150 candidates)",
            lambda: mwem_work(
                sizes=pmw_sizes,
                initial=[(a,) for a in range(300)],
                n_rounds=4800,
                candidates=pmw_candidates,
                **mwem_common,
            ),
        ),  # fmt: skip
        (
            "counted cliques of that workload (maximal_cliques)",
            lambda: maximal_cliques(pmw_candidates),
        ),
        (
            "gradient step memory check, 10,000,000 classes x 4 on 40 rows",
            lambda: _refused(
                lambda: check_gradient_memory("A DP-SGD step", 10**7, 4, 40)
            ),
        ),
        (
            "utility forecast, DP-SGD plan (Adult-sized, no warning)",
            lambda: warn_if_noise_swamps_learning(
                "DPLogisticRegression",
                dpsgd,
                n_features=104,
                n_samples=24_129,
                epsilon=1.0,
            ),
        ),  # fmt: skip
        (
            "utility forecast, DPKMeans (digits-sized) ratio",
            lambda: centre_noise_ratio(sums, np.full(64, 8.0), 10, 1797),
        ),
    ]
    print("| check | first run, s | median after, s |")
    print("|---|---:|---:|")
    for name, func in rows:
        first, median = _seconds(func, args.repeats)
        print(f"| {name} | {first:.6f} | {median:.6f} |", flush=True)


if __name__ == "__main__":
    main()
