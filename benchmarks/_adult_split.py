"""The UCI Adult train/test split shared by the logistic-regression benchmarks.

Categorical columns one-hot encoded, numeric columns min-max scaled, every
row scaled to unit L2 norm (so ``data_norm=1`` is a true bound), a stratified
80/20 split with ``random_state=0``. The encoders are fitted on the training
part; this preprocessing reads category lists and column ranges from the data
and is not itself private (in a release they would come from public
metadata).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _peers import adult_dir
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, Normalizer, OneHotEncoder

ROOT = Path(__file__).resolve().parents[1]
DATA = adult_dir() / "adult_clean.csv"


def _frame():
    if DATA.exists():
        return pd.read_csv(DATA)
    from skdp.datasets import load_adult  # the same file, bundled with skdp

    return load_adult(as_frame=True).frame


def _encoder(frame):
    numeric = list(frame.select_dtypes(include="number").columns)
    categorical = [c for c in frame.columns if c not in numeric]
    return make_pipeline(
        ColumnTransformer(
            [
                (
                    "categorical",
                    OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                    categorical,
                ),
                ("numeric", MinMaxScaler(clip=True), numeric),
            ]
        ),
        Normalizer(),
    )


def _pop_target(frame) -> np.ndarray:
    """The income label as 0/1, from the shared file (">50K" strings) or the
    bundled one (already 0/1)."""
    column = frame.pop(frame.columns[-1])
    if column.dtype.kind in "iub":
        return column.to_numpy(dtype=int)
    return column.astype(str).str.strip().str.startswith(">").to_numpy(dtype=int)


def load_raw_split():
    """The split of :func:`load_data` before any encoding.

    ``frame_train, frame_test, y_train, y_test``: the same rows in the same
    order, the features as a DataFrame (for pipelines that encode privately).
    """
    frame = _frame()
    y = _pop_target(frame)
    return tuple(train_test_split(frame, y, test_size=0.2, stratify=y, random_state=0))


def load_data():
    """``X_train, X_test, y_train, y_test`` (rows of unit L2 norm)."""
    X_train, X_test, y_train, y_test = load_raw_split()
    prep = _encoder(X_train)
    return prep.fit_transform(X_train), prep.transform(X_test), y_train, y_test


def load_regression_data():
    """The same encoding of the other columns (income left out), hours per week.

    The target is the hours-per-week column (``hr_per_week`` in the cleaned
    file); a plain (unstratified) 80/20 split with ``random_state=0``.
    """
    frame = _frame()
    frame = frame.drop(columns=frame.columns[-1])  # the income label
    target = next(c for c in frame.columns if "hour" in c or c == "hr_per_week")
    y = frame.pop(target).to_numpy(dtype=float)
    X_train, X_test, y_train, y_test = train_test_split(
        frame, y, test_size=0.2, random_state=0
    )
    prep = _encoder(frame)
    return prep.fit_transform(X_train), prep.transform(X_test), y_train, y_test
