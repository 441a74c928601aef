"""The data sets and public schemas of the tree-ensemble benchmarks.

* **Adult**: the bundled UCI Adult (``skdp.datasets.load_adult``: the 30,162
  complete rows of ``adult_clean.csv``, all 14 columns), categorical columns
  as their position in the published category lists, a stratified 80/20
  split with ``random_state=0`` (the rows of every Adult benchmark here).
  Public bounds of the numeric columns: :data:`ADULT_BOUNDS` (ranges a data
  owner can publish without looking: ages 17-90, education 1-16, the
  census's top codes for capital gain and loss, hours 1-99, fnlwgt up to
  1.5 million).
* **breast cancer**: scikit-learn's ``load_breast_cancer`` (569 rows, 30
  numeric columns), a stratified 75/25 split per seed; declared bounds are
  the whole data set's per-column range (this demo set has no published
  schema; the same bounds go to every library).
* **Adult hours per week** (regression): the other 13 columns, the target
  ``hr_per_week`` with public bounds [1, 99], a plain 80/20 split with
  ``random_state=0`` (the rows of ``benchmarks/linreg.py``).
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from skdp.datasets import load_adult

#: Public ranges of Adult's numeric columns.
ADULT_BOUNDS = {
    "age": (17, 90),
    "fnlwgt": (0, 1_500_000),
    "education_num": (1, 16),
    "capital_gain": (0, 99_999),
    "capital_loss": (0, 4_356),
    "hr_per_week": (1, 99),
}
#: Public bounds of the regression target.
HOURS_BOUNDS = ADULT_BOUNDS["hr_per_week"]


def _schema(names, categories):
    """The skdp parameters and the peers' ``(categorical, bounds)``."""
    categorical = [i for i, name in enumerate(names) if name in categories]
    bounds = {
        i: ADULT_BOUNDS[name] for i, name in enumerate(names) if i not in categorical
    }
    lower = np.array([bounds.get(i, (0, 1))[0] for i in range(len(names))], float)
    upper = np.array([bounds.get(i, (0, 1))[1] for i in range(len(names))], float)
    params = {
        "bounds": (lower, upper),
        "categorical_features": categorical,
        "categories": [list(range(len(categories[names[i]]))) for i in categorical],
    }
    return params, categorical, bounds


def adult_classification():
    """``(X_train, X_test, y_train, y_test), params, peer_schema``.

    ``params``: skdp's public schema (``bounds``, ``categorical_features``,
    ``categories``); ``peer_schema``: ``(categorical, {column: (lo, hi)})``
    for the peers, plus ``code_bounds`` (every column bounded, categorical
    codes in ``[0, k - 1]``) for diffprivlib's forest.
    """
    adult = load_adult()
    names = list(adult.feature_names)
    split = train_test_split(
        adult.data,
        adult.target.astype(int),
        test_size=0.2,
        stratify=adult.target,
        random_state=0,
    )
    params, categorical, bounds = _schema(names, adult.categories)
    code_bounds = dict(bounds)
    for i in categorical:
        code_bounds[i] = (0, len(adult.categories[names[i]]) - 1)
    return split, params, (categorical, bounds, code_bounds)


def adult_validation(seed):
    """A validation split of Adult's *training* rows (for tuning only)."""
    (X_train, _, y_train, _), params, _ = adult_classification()
    return (
        *train_test_split(
            X_train, y_train, test_size=0.25, stratify=y_train, random_state=100 + seed
        ),
        params,
    )


def adult_regression():
    """``(X_train, X_test, y_train, y_test), params, peer_schema`` for hours."""
    adult = load_adult()
    names = list(adult.feature_names)
    target = names.index("hr_per_week")
    keep = [i for i in range(len(names)) if i != target]
    X, y = adult.data[:, keep], adult.data[:, target].astype(float)
    split = train_test_split(X, y, test_size=0.2, random_state=0)
    kept = [names[i] for i in keep]
    params, categorical, bounds = _schema(kept, adult.categories)
    return split, params, (categorical, bounds)


def cancer_bounds():
    data = load_breast_cancer()
    return data.data.min(axis=0), data.data.max(axis=0)


def cancer_split(seed):
    """The breast-cancer split of one seed (stratified 75/25)."""
    data = load_breast_cancer()
    return train_test_split(
        data.data, data.target, test_size=0.25, stratify=data.target, random_state=seed
    )


def cancer_validation(seed):
    """A validation split of one cancer training part (for tuning only)."""
    X_train, _, y_train, _ = cancer_split(seed)
    return (
        *train_test_split(
            X_train, y_train, test_size=0.25, stratify=y_train, random_state=100 + seed
        ),
        {"bounds": cancer_bounds()},
    )
