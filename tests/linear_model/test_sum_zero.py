"""The sum-zero basis of the softmax noise, without forming the K x K basis."""

import numpy as np
import pytest
from scipy.linalg import helmert

from skdp.linear_model._sum_zero import from_sum_zero, to_sum_zero


@pytest.mark.parametrize("n_classes", [2, 3, 4, 7, 50])
@pytest.mark.parametrize("d", [1, 3])
def test_the_products_are_scipys_helmert_basis(n_classes, d):
    rng = np.random.default_rng(n_classes * 10 + d)
    V = rng.standard_normal((n_classes - 1, d))
    B = rng.standard_normal((n_classes, d))
    basis = helmert(n_classes).T  # K x (K - 1), orthonormal columns
    np.testing.assert_allclose(to_sum_zero(V), basis @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(from_sum_zero(B), basis.T @ B, rtol=1e-12, atol=1e-12)


def test_the_map_is_an_isometry_onto_the_sum_zero_subspace():
    # What the privacy proofs use: ||U V|| = ||V|| and 1^T U V = 0.
    rng = np.random.default_rng(0)
    V = rng.standard_normal((99_999, 2))
    B = to_sum_zero(V)
    assert B.shape == (100_000, 2)
    np.testing.assert_allclose(np.linalg.norm(B), np.linalg.norm(V), rtol=1e-10)
    np.testing.assert_allclose(B.sum(axis=0), 0.0, atol=1e-8)
    np.testing.assert_allclose(from_sum_zero(B), V, rtol=1e-8, atol=1e-10)
