"""
Privacy–utility curve of private logistic regression
====================================================

How much accuracy does privacy cost? This example fits
:class:`~skdp.linear_model.DPLogisticRegression` with its three methods
(objective, output and gradient perturbation) at several epsilons on the
UCI Adult census data and plots test accuracy against epsilon, with a
non-private model and the majority class as references.

The features are built only from **public** information, so the privacy
guarantee covers the whole pipeline: categories come from the data set's
published schema, numeric columns are clipped to ranges fixed in advance,
and each row is scaled to unit L2 norm (``Normalizer`` learns nothing from
the data), which makes ``data_norm=1`` a public bound.

Every point of the curve is a separate fit on the same data, so the budget
records the sum of all of them. Such a curve is something to *report* (or to
compute on public stand-in data), not a menu from which to pick the epsilon
that happens to look best on the private data.
"""

# %%
# Public preprocessing
# --------------------
import os

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, OneHotEncoder

from skdp import DPLogisticRegression, PrivacyBudget
from skdp.datasets import load_adult

FAST = bool(os.environ.get("SKDP_EXAMPLES_FAST"))  # set by the test suite

adult = load_adult(as_frame=True)
X, y = adult.data.drop(columns="fnlwgt"), adult.target
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.2, stratify=y, random_state=0
)
if FAST:
    X_train, y_train = X_train[:3000], y_train[:3000]

# Ranges fixed from general knowledge, not read from the rows.
numeric_ranges = {
    "age": (0, 100),
    "education_num": (1, 16),
    "capital_gain": (0, 100_000),
    "capital_loss": (0, 10_000),
    "hr_per_week": (0, 100),
}
low = np.array([r[0] for r in numeric_ranges.values()], dtype=float)
high = np.array([r[1] for r in numeric_ranges.values()], dtype=float)
categorical = list(adult.categories)


def scale_to_unit_interval(values):
    return (np.clip(np.asarray(values, dtype=float), low, high) - low) / (high - low)


def public_encoding():
    return make_pipeline(
        ColumnTransformer(
            [
                (
                    "categories",
                    OneHotEncoder(
                        categories=[adult.categories[c] for c in categorical],
                        handle_unknown="ignore",
                        sparse_output=False,
                    ),
                    categorical,
                ),
                (
                    "numbers",
                    FunctionTransformer(scale_to_unit_interval),
                    list(numeric_ranges),
                ),
            ],
            sparse_threshold=0.0,
        ),
        Normalizer(norm="l2"),
    )


# %%
# References
# ----------
non_private = make_pipeline(public_encoding(), LogisticRegression(max_iter=1000))
non_private_accuracy = non_private.fit(X_train, y_train).score(X_test, y_test)
majority_accuracy = max(np.mean(y_test), 1 - np.mean(y_test))
print(f"non-private LogisticRegression: {non_private_accuracy:.3f}")
print(f"majority class:                 {majority_accuracy:.3f}")

# %%
# The curve
# ---------
# Each (method, epsilon) pair is fitted a few times with different noise;
# the seeds make the example reproducible and are not for a release. Every
# method uses the default ``C=1``; output perturbation is also run with
# ``C=0.01``, because the sensitivity of its minimiser, ``2 * C * R``, does
# not shrink with the number of rows: at ``C=1`` its noise swamps the
# weights, and only strong regularisation makes it competitive.
epsilons = [0.1, 1.0, 10.0] if FAST else [0.1, 0.3, 1.0, 3.0, 10.0]
models = [
    ("objective", "objective", 1.0),
    ("output", "output", 1.0),
    ("output, C=0.01", "output", 0.01),
    ("gradient", "gradient", 1.0),
]
n_repeats = 1 if FAST else 3
budget = PrivacyBudget(epsilon=float("inf"), delta=1e-5)

scores = {}
for name, method, C in models:
    for epsilon in epsilons:
        accuracies = []
        for seed in range(n_repeats):
            model = make_pipeline(
                public_encoding(),
                DPLogisticRegression(
                    epsilon=epsilon,
                    delta=1e-6 if method == "gradient" else None,
                    C=C,
                    method=method,
                    data_norm=1.0,
                    classes=[0, 1],
                    random_state=seed,
                    budget=budget,
                ),
            )
            accuracies.append(model.fit(X_train, y_train).score(X_test, y_test))
        scores[name, epsilon] = (np.mean(accuracies), np.std(accuracies))

print(f"{'method':<16}" + "".join(f"{e:>8g}" for e in epsilons))
for name, _, _ in models:
    row = "".join(f"{scores[name, e][0]:>8.3f}" for e in epsilons)
    print(f"{name:<16}{row}")

# %%
# Plot: mean accuracy and one standard deviation over the repeats.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6.4, 4.2))
for (name, _, _), marker in zip(models, "osvd"):
    mean = np.array([scores[name, e][0] for e in epsilons])
    std = np.array([scores[name, e][1] for e in epsilons])
    ax.plot(epsilons, mean, marker=marker, label=name)
    ax.fill_between(epsilons, mean - std, mean + std, alpha=0.2)
ax.axhline(non_private_accuracy, color="grey", linestyle="--", label="non-private")
ax.axhline(majority_accuracy, color="grey", linestyle=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# What the curve cost
# -------------------
# The budget was created without a limit (``epsilon=inf``) because a curve
# spends on every point. Its ledger holds one entry per fit, and the total
# is what publishing this whole curve would cost.
spent_epsilon, spent_delta = budget.spent()
print(f"{len(budget.ledger)} fits; total spent: epsilon={spent_epsilon:.4g}")
