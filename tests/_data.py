"""Data the test modules share: seeded rows, labelled tables, dask wrappers.

Plain functions rather than fixtures, so that a module may build its data
at import time or inside ``pytest.mark.parametrize``; test modules import
them by name (``from _data import sphere_rows``), as ``tests/`` is on the
import path of every test module (pytest's default ``prepend`` import
mode puts the directory of the root ``conftest.py`` there).

Each function draws from the generator or seed it is given, in a fixed
order, so that a test keeps the exact rows its seed always meant.
"""

import math

import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor


def sphere_rows(rng, n, d, norm=1.0):
    """``n`` Gaussian rows of ``d`` features, each scaled to norm ``norm``.

    Every row on the sphere: the worst case of a bound that depends on
    ``data_norm``.
    """
    X = rng.normal(size=(n, d))
    return norm * X / np.linalg.norm(X, axis=1, keepdims=True)


def clip_rows(X, norm=1.0):
    """``X`` with every row longer than ``norm`` scaled down to norm ``norm``."""
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) / norm)


def estimator_data(estimator, n=40, d=3, seed=0):
    """``(X, y)`` that ``estimator`` can fit: ``n`` rows in the unit ball.

    Uniform features in [-1, 1] scaled into the unit ball; ``y`` is a
    noiseless linear target for a regressor, the sign of the first feature
    for a classifier (both classes present whatever ``n``), and ``None``
    for a transformer or clusterer.
    """
    rng = np.random.default_rng(seed)
    X = clip_rows(rng.uniform(-1, 1, (n, d)))
    if is_regressor(estimator):
        return X, X @ np.array([1.0, 0.5, -0.3][:d] + [0.0] * max(0, d - 3))
    y = (X[:, 0] > 0).astype(int)
    y[:2] = [0, 1]
    return X, (y if is_classifier(estimator) else None)


def marginal_counts(codes, clique, sizes):
    """Counts of the marginal ``clique`` of encoded rows (an oracle: bincount).

    ``codes`` holds one integer code per cell, ``sizes[a]`` is the number of
    values of column ``a``; the result has one axis per column of ``clique``.
    """
    shape = [sizes[a] for a in clique]
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in clique), shape)
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(float)


def dask_rows(a, rows=700, columns=None):
    """``a`` as a dask array cut into blocks of ``rows`` rows.

    ``rows`` is a block length or a tuple of explicit block lengths;
    ``columns`` a block width (all columns in one block by default). The
    default 700 is not a multiple of the canonical 1024-row blocks, so the
    row source has to rechunk. Skips the test when dask is missing.
    """
    da = pytest.importorskip("dask.array")
    widths = a.shape[1:] if columns is None else (columns,) * (a.ndim - 1)
    return da.from_array(a, chunks=(rows, *widths))
