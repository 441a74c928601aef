"""
Grid search over epsilon and C, with the ledger
===============================================

scikit-learn's ``GridSearchCV`` clones the estimator for every fit.
A :class:`~skdp.PrivacyBudget` survives cloning — the clones all point to
the same budget object — so every fit of the search, the final refit
included, is charged to it and listed in its ledger.

Two caveats that the ledger makes visible:

* the search spends on *every* fit: a 3 x 3 grid with 3-fold
  cross-validation is 27 fits plus the refit;
* choosing the best candidate by its validation score is itself a release
  about the private data, which the sum of the fits' spends does not cover
  (:func:`skdp.check_pipeline` reports ``GridSearchCV`` as leaking for this
  reason; :class:`~skdp.model_selection.PrivateSearchCV` pays for the
  choice). A grid over epsilon is a trade-off curve to report, not a choice
  to make on private data.

The search passes ``error_score="raise"``. By default ``GridSearchCV``
turns an exception in a fit into a NaN score and a ``FitFailedWarning``: a
fit that the budget refuses (:class:`~skdp.BudgetExceededError`) would then
quietly become a hole in the table instead of stopping the search.
"""

# %%
import os

import numpy as np
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import OneHotEncoder, normalize

from skdp import DPLogisticRegression, PrivacyBudget
from skdp.datasets import load_adult

FAST = bool(os.environ.get("SKDP_EXAMPLES_FAST"))  # set by the test suite

# The discretized Adult data: every column is a code whose range (the
# domain) is published with the data set. One-hot rows scaled to unit norm
# make data_norm=1 a public bound.
adult = load_adult(discretized=True, as_frame=False)
domain = [range(adult.domain[c]) for c in adult.feature_names]
X = normalize(OneHotEncoder(categories=domain).fit_transform(adult.data).toarray())
X_train, X_test, y_train, y_test = train_test_split(
    X, adult.target, test_size=0.2, stratify=adult.target, random_state=0
)
if FAST:  # every step still runs: 27 fits, the refit, the ledger, the plot
    X_train, y_train = X_train[:600], y_train[:600]

# %%
# The search
# ----------
# Each of the 3 values of C is fitted 3 times (once per fold) at each
# epsilon: 3 x 3 x (0.1 + 0.5 + 1.0) = 14.4, plus the refit (at most 1.0).
# The budget is set just above that.
budget = PrivacyBudget(epsilon=16.0)
search = GridSearchCV(
    DPLogisticRegression(
        method="objective",
        data_norm=1.0,
        classes=[0, 1],
        random_state=0,
        budget=budget,
    ),
    param_grid={"epsilon": [0.1, 0.5, 1.0], "C": [0.1, 1.0, 10.0]},
    cv=3,
    error_score="raise",  # a refused fit stops the search, not a NaN score
)
search.fit(X_train, y_train)
print("best parameters:", search.best_params_)
print(f"test accuracy of the refitted model: {search.score(X_test, y_test):.3f}")

# %%
# The ledger
# ----------
# One line per fit: 27 cross-validation fits and the refit, each labelled
# with the parameters it used.
print(budget.summary())

# %%
# Mean validation accuracy of each candidate. Every cell cost the fits that
# produced it. Where a column shows the same number for every C, that number
# is the majority-class rate printed below: at that epsilon the noise of
# objective perturbation outweighs the signal, each fit predicts one class
# for every row, and C cannot change a constant prediction. Accuracy starts
# to depend on C only once epsilon leaves room for the data to show.
import matplotlib.pyplot as plt

majority = max(np.mean(y_train), 1 - np.mean(y_train))
print(f"majority-class rate of the training rows: {majority:.3f}")

# ``GridSearchCV`` orders candidates by parameter name: C varies slowest.
table = search.cv_results_["mean_test_score"].reshape(3, 3)
fig, ax = plt.subplots(figsize=(5, 4))
image = ax.imshow(table, cmap="viridis")
ax.set_xticks(range(3), labels=["eps=0.1", "eps=0.5", "eps=1"])
ax.set_yticks(range(3), labels=["C=0.1", "C=1", "C=10"])
for (i, j), value in np.ndenumerate(table):
    ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="white")
ax.set_title("mean validation accuracy")
fig.colorbar(image)
fig.tight_layout()
