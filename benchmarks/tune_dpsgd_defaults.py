"""How the defaults of DPLogisticRegression(method='gradient') were chosen.

Only the *training* part of the UCI Adult split of ``_adult_split.py`` is
used: it is split again, stratified 80/20 with ``random_state=1``, into a fit
part and a validation part. Every candidate is fitted on the fit part and
scored on the validation part; the test split is never read.

Candidates (``R`` the row-norm bound with the intercept column, ``c`` the
clipping norm, ``q`` the sampling rate, ``T`` the number of steps,
``sigma`` the calibrated noise multiplier; ``B = 256``, ``epochs = 10`` and
``c = R / 2`` unless stated):

- the previous default step ``16 / R**2``, and fixed multiples of it;
- smaller clipping norms (with the step scaled up to match);
- larger and smaller batches, more epochs;
- the noise cap: the step at most ``s q n / (sqrt(T) sigma c R)``, so the
  noise summed over all steps moves the margin of a row of norm ``R`` by a
  standard deviation of at most ``s``, for several ``s``;
- post-processing of the noisy gradients (averaging all iterates or only
  the last quarter, an exponential moving average, momentum), which costs
  no privacy. These are not options of the estimator, so they run a copy
  of the DP-SGD loop with continuous Gaussian noise of the same
  calibrated multiplier (the estimator's discrete Gaussian matches it to
  within its 2**-32 grid) and another random stream; compare them with the
  copy's own run of the default (average of the second half).

Every estimator candidate uses ``DPLogisticRegression`` itself (its
accountant, sampler and noise). The table gives the mean validation
accuracy ± standard deviation over the seeds, and the mean over the
epsilons. Run from the repository root::

    python benchmarks/tune_dpsgd_defaults.py              # 5 seeds
    python benchmarks/tune_dpsgd_defaults.py --seeds 10
    python benchmarks/tune_dpsgd_defaults.py --n-fit 5000  # a smaller n
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _adult_split import load_data  # noqa: E402 (benchmarks/ is on sys.path)

from skdp import DPLogisticRegression
from skdp.accounting._calibration import calibrate_gaussian_noise_multiplier
from skdp.linear_model._dpsgd import clipped_gradient_sum, default_learning_rate

EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0)
DELTA = 1e-5
INTERCEPT_SCALING = 0.5  # the estimator's default
R = math.hypot(1.0, INTERCEPT_SCALING)  # rows have unit norm, plus intercept
OLD_STEP = 16.0 / R**2


def _resolved(n, epsilon, batch_size=256, epochs=10):
    """Sampling rate, steps and noise multiplier, as the estimator computes."""
    q = min(1.0, batch_size / n)
    steps = math.ceil(epochs / q)
    sigma = calibrate_gaussian_noise_multiplier(epsilon, DELTA, q, steps)
    return q, steps, sigma


def noise_cap(s, batch_size=256, epochs=10, clip=R / 2):
    """Step size rule: the default one with margin noise at most ``s``."""

    def rule(n, epsilon):
        q, steps, sigma = _resolved(n, epsilon, batch_size, epochs)
        return default_learning_rate(
            n_samples=n,
            sampling_rate=q,
            steps=steps,
            noise_multiplier=sigma,
            max_grad_norm=clip,
            row_norm=R,
            C=1.0,
            margin_noise_std=s,
        )

    return rule


# name -> estimator parameters; a callable learning_rate is a rule of (n, eps).
ESTIMATOR_CANDIDATES = {
    "previous: step 16/R^2": {"learning_rate": OLD_STEP},
    "step 16/R^2 / 16": {"learning_rate": OLD_STEP / 16},
    "step 16/R^2 / 4": {"learning_rate": OLD_STEP / 4},
    "step 16/R^2 * 4": {"learning_rate": OLD_STEP * 4},
    "clip R/4, step 2*16/R^2": {"max_grad_norm": R / 4, "learning_rate": 2 * OLD_STEP},
    "clip R/8, step 16/R^2": {"max_grad_norm": R / 8, "learning_rate": OLD_STEP},
    "clip R/8, step 4*16/R^2": {"max_grad_norm": R / 8, "learning_rate": 4 * OLD_STEP},
    "batch 1024": {"batch_size": 1024, "learning_rate": OLD_STEP},
    "batch 1024, 40 epochs": {
        "batch_size": 1024,
        "epochs": 40,
        "learning_rate": OLD_STEP,
    },
    "batch 64, 5 epochs": {"batch_size": 64, "epochs": 5, "learning_rate": OLD_STEP},
    "30 epochs": {"epochs": 30, "learning_rate": OLD_STEP},
    "noise cap s=1": {"learning_rate": noise_cap(1.0)},
    "noise cap s=1.5": {"learning_rate": noise_cap(1.5)},
    "noise cap s=2": {"learning_rate": noise_cap(2.0)},
    "noise cap s=2.5 (default)": {},
    "noise cap s=3": {"learning_rate": noise_cap(3.0)},
    "noise cap s=4": {"learning_rate": noise_cap(4.0)},
    "noise cap s=2.5, clip R/4": {
        "max_grad_norm": R / 4,
        "learning_rate": noise_cap(2.5, clip=R / 4),
    },
    "noise cap s=2.5, batch 1024": {
        "batch_size": 1024,
        "learning_rate": noise_cap(2.5, batch_size=1024),
    },
    "noise cap s=2.5, 20 epochs": {
        "epochs": 20,
        "learning_rate": noise_cap(2.5, epochs=20),
    },
}

# name -> (averaging, momentum) for the post-processing copy of the loop,
# all with the default step rule (s = 2.5).
POST_PROCESSING_CANDIDATES = {
    "s=2.5, second half (copy of default)": ("half", 0.0),
    "s=2.5, average all iterates": ("all", 0.0),
    "s=2.5, average last quarter": ("quarter", 0.0),
    "s=2.5, EMA 0.99 of iterates": ("ema", 0.0),
    "s=2.5, momentum 0.9": ("half", 0.9),
}


def _fit_estimator(params, X, y, epsilon, seed):
    params = dict(params)
    if callable(params.get("learning_rate")):
        params["learning_rate"] = params["learning_rate"](X.shape[0], epsilon)
    model = DPLogisticRegression(
        epsilon,
        method="gradient",
        data_norm=1.0,
        classes=[0, 1],
        random_state=seed,
        **params,
    )
    return model.fit(X, y)


def _post_processing_variant(X, y, epsilon, seed, averaging, momentum):
    """The DP-SGD loop of ``dpsgd_logistic`` with another post-processing.

    Same sampling, clipping, calibrated noise multiplier and step size as the
    estimator's defaults; only what is done with the released noisy gradients
    differs (momentum ``beta`` averages them, the step stays the same).
    Returns the decision function's weights ``(coef, intercept)``.
    """
    n = X.shape[0]
    Z = np.hstack([X, np.full((n, 1), INTERCEPT_SCALING)])
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    clip = R / 2
    q, steps, sigma = _resolved(n, epsilon)
    lr = noise_cap(2.5)(n, epsilon)
    rng = np.random.default_rng(seed)
    W = np.zeros((1, Z.shape[1]))
    velocity = np.zeros_like(W)
    start = {"all": 0, "half": steps // 2, "quarter": steps - steps // 4}.get(
        averaging, 0
    )
    total, count = np.zeros_like(W), 0
    for step in range(steps):
        batch = np.flatnonzero(rng.random(n) < q)
        noisy = clipped_gradient_sum(Z[batch], Y[batch], W, clip)
        noisy = noisy + rng.normal(scale=sigma * clip, size=W.shape)
        gradient = noisy / (q * n) + W / n
        velocity = momentum * velocity + (1 - momentum) * gradient
        W = W - lr * velocity
        if averaging == "ema":
            total = W.copy() if step == 0 else 0.99 * total + 0.01 * W
            count = 1
        elif step >= start:
            total += W
            count += 1
    W = total / count
    return W[0, :-1], W[0, -1] * INTERCEPT_SCALING


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--n-fit",
        type=int,
        default=None,
        help="subsample the fit part to this many rows (robustness in n)",
    )
    args = parser.parse_args(argv)

    X_train, _, y_train, _ = load_data()  # the test split is not used
    X_fit, X_val, y_fit, y_val = train_test_split(
        X_train, y_train, test_size=0.2, stratify=y_train, random_state=1
    )
    if args.n_fit is not None:
        X_fit, _, y_fit, _ = train_test_split(
            X_fit, y_fit, train_size=args.n_fit, stratify=y_fit, random_state=2
        )
    print(
        f"UCI Adult training part: {X_fit.shape[0]} fit rows, "
        f"{X_val.shape[0]} validation rows (the test split is not read); "
        f"majority class {max(y_val.mean(), 1 - y_val.mean()):.4f}"
    )

    rows = []
    start = time.perf_counter()
    for name, params in ESTIMATOR_CANDIDATES.items():
        for epsilon in EPSILONS:
            for seed in range(args.seeds):
                model = _fit_estimator(params, X_fit, y_fit, epsilon, seed)
                rows.append((name, epsilon, seed, model.score(X_val, y_val)))
    for name, (averaging, momentum) in POST_PROCESSING_CANDIDATES.items():
        for epsilon in EPSILONS:
            for seed in range(args.seeds):
                coef, intercept = _post_processing_variant(
                    X_fit, y_fit, epsilon, seed, averaging, momentum
                )
                predicted = (X_val @ coef + intercept > 0).astype(int)
                rows.append((name, epsilon, seed, np.mean(predicted == y_val)))
    results = pd.DataFrame(rows, columns=["candidate", "epsilon", "seed", "accuracy"])

    order = list(ESTIMATOR_CANDIDATES) + list(POST_PROCESSING_CANDIDATES)
    grouped = results.groupby(["candidate", "epsilon"], sort=False)["accuracy"]
    mean = grouped.mean().unstack("epsilon").loc[order]
    std = grouped.std().unstack("epsilon").loc[order]
    table = mean.map(lambda m: f"{m:.4f}") + " ± " + std.map(lambda s: f"{s:.4f}")
    table["mean over epsilons"] = mean.mean(axis=1).map(lambda m: f"{m:.4f}")
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(
            f"\nValidation accuracy, mean ± std over {args.seeds} seeds "
            f"(delta={DELTA:g}, C=1, data_norm=1)"
        )
        print(table.to_string())
    print(f"\n{len(results)} fits in {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)
        main()
