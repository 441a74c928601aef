"""The orthonormal basis of the sum-zero subspace, applied without forming it.

A softmax model's noise lives in ``S = {B : 1^T B = 0}`` (each class's
coefficients summed over the classes are zero). Both perturbations draw it
as ``U V`` with ``U`` the ``K x (K - 1)`` Helmert basis of ``{u : 1^T u =
0}`` (scipy's ``helmert(K).T``). Forming ``U`` takes ``K**2`` doubles: 75
GiB at 100,000 classes, found only after the charge. Its structure gives
both products in ``O(K d)`` time and memory instead: column ``k`` of ``U``
(``k = 1, ..., K - 1``) is ``(1, ..., 1, -k, 0, ..., 0) / sqrt(k (k + 1))``
with ``k`` ones.
"""

from __future__ import annotations

import numpy as np

__all__ = ["from_sum_zero", "to_sum_zero"]


def _norms(n_classes: int) -> np.ndarray:
    k = np.arange(1, n_classes, dtype=float)
    return np.sqrt(k * (k + 1.0))


def to_sum_zero(V: np.ndarray) -> np.ndarray:
    """``U @ V`` for ``V`` of shape ``(K - 1, d)``: a ``(K, d)`` array in ``S``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import helmert
    >>> from skdp.linear_model._sum_zero import to_sum_zero
    >>> V = np.arange(6.0).reshape(3, 2)
    >>> bool(np.allclose(to_sum_zero(V), helmert(4).T @ V))
    True
    """
    V = np.asarray(V, dtype=float)
    n_classes = V.shape[0] + 1
    W = V / _norms(n_classes)[:, None]  # W[k - 1] = V[k - 1] / sqrt(k (k + 1))
    out = np.zeros((n_classes,) + V.shape[1:])
    # Row j: the sum of W[k - 1] over k > j, less j W[j - 1].
    suffix = np.cumsum(W[::-1], axis=0)[::-1]
    out[:-1] = suffix
    out[1:] -= np.arange(1, n_classes, dtype=float)[:, None] * W
    return out


def from_sum_zero(B: np.ndarray) -> np.ndarray:
    """``U.T @ B`` for ``B`` of shape ``(K, d)``: its ``(K - 1, d)`` coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import helmert
    >>> from skdp.linear_model._sum_zero import from_sum_zero
    >>> B = np.arange(8.0).reshape(4, 2)
    >>> bool(np.allclose(from_sum_zero(B), helmert(4) @ B))
    True
    """
    B = np.asarray(B, dtype=float)
    n_classes = B.shape[0]
    prefix = np.cumsum(B, axis=0)[:-1]  # prefix[k - 1] = sum of rows < k
    k = np.arange(1, n_classes, dtype=float)[:, None]
    return (prefix - k * B[1:]) / _norms(n_classes)[:, None]
