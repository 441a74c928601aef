"""
A synthetic twin of Adult, and its marginal errors
==================================================

:class:`~skdp.PMWSynthesizer` (MWEM) learns a private model of eight columns
of the discretized Adult data and samples a synthetic table of the same size.
We measure how well the synthetic table reproduces every 3-way marginal of
those columns — the L1 distance between the real and the synthetic
normalised contingency tables, 0 when they agree and 2 when they are
disjoint — and compare it with a non-private baseline that keeps every
column's distribution but no relationship between columns.

The domain of every column (its number of codes) is published with the data
set, so it is public and costs no privacy.
"""

# %%
import itertools
import os

import numpy as np

from skdp import PMWSynthesizer, PrivacyBudget
from skdp.datasets import ADULT_SYNTHESIS_COLUMNS, load_adult

FAST = bool(os.environ.get("SKDP_EXAMPLES_FAST"))  # set by the test suite

adult = load_adult(discretized=True, as_frame=True)
columns = list(ADULT_SYNTHESIS_COLUMNS)
if FAST:
    columns = ["workclass", "race", "sex", "income>50K"]
table = adult.frame[columns]
if FAST:
    table = table.iloc[:3000]
categories = {c: list(range(adult.domain[c])) for c in columns}

# %%
# Fit and sample
# --------------
# One fit, charged once to the budget before the data are read. The seed
# makes the example reproducible; never set it for a release.
budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
synthesizer = PMWSynthesizer(
    epsilon=1.0, categories=categories, random_state=0, budget=budget
)
synthetic = synthesizer.fit_transform(table)
print(synthetic.head())
print(budget.summary())

# %%
# Marginal errors
# ---------------


def marginal(frame, triple):
    sizes = [adult.domain[c] for c in triple]
    cells = np.ravel_multi_index([frame[c].to_numpy() for c in triple], sizes)
    counts = np.bincount(cells, minlength=int(np.prod(sizes)))
    return counts / counts.sum()


rng = np.random.default_rng(0)
independent = table.apply(lambda column: rng.permutation(column.to_numpy()))

triples = list(itertools.combinations(columns, 3))
errors = {"PMWSynthesizer (private)": [], "independent columns (not private)": []}
for triple in triples:
    real = marginal(table, triple)
    errors["PMWSynthesizer (private)"].append(
        np.abs(real - marginal(synthetic, triple)).sum()
    )
    errors["independent columns (not private)"].append(
        np.abs(real - marginal(independent, triple)).sum()
    )
for name, values in errors.items():
    print(
        f"{name:<36} mean L1 error {np.mean(values):.3f} over {len(values)} marginals"
    )

# %%
# The error of each marginal, sorted. Lower is better.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6.4, 4))
for name, values in errors.items():
    ax.plot(np.sort(values), marker=".", label=name)
ax.set_xlabel("3-way marginals, sorted by error")
ax.set_ylabel("L1 error")
ax.legend()
fig.tight_layout()

# %%
# One 2-way marginal, real against synthetic: income by race.
pair = ["race", "income>50K"]
shape = [adult.domain[c] for c in pair]
real = marginal(table, pair).reshape(shape)
fake = marginal(synthetic, pair).reshape(shape)
fig, ax = plt.subplots(figsize=(6.4, 3.5))
positions = np.arange(shape[0])
ax.bar(positions - 0.2, real[:, 1], width=0.4, label="real")
ax.bar(positions + 0.2, fake[:, 1], width=0.4, label="synthetic")
ax.set_xticks(positions)
ax.set_xlabel("race (code)")
ax.set_ylabel("share of rows: income > 50K")
ax.legend()
fig.tight_layout()
