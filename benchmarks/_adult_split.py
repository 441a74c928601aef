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
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, Normalizer, OneHotEncoder

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "adult" / "adult_clean.csv"


def load_data():
    """``X_train, X_test, y_train, y_test`` (rows of unit L2 norm)."""
    if DATA.exists():
        frame = pd.read_csv(DATA)
    else:  # the same file, bundled with skdp
        from skdp.datasets import load_adult

        frame = load_adult(as_frame=True).frame
    target = frame.columns[-1]
    y = frame.pop(target).astype(str).str.strip().str.startswith(">").to_numpy()
    y = np.asarray(y, dtype=int)
    numeric = list(frame.select_dtypes(include="number").columns)
    categorical = [c for c in frame.columns if c not in numeric]
    X_train, X_test, y_train, y_test = train_test_split(
        frame, y, test_size=0.2, stratify=y, random_state=0
    )
    prep = make_pipeline(
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
    return prep.fit_transform(X_train), prep.transform(X_test), y_train, y_test
