"""Per-row clipping of DP-SGD when a row's gradient vanishes (large weights)."""

import warnings

import numpy as np

from skdp.linear_model._dpsgd import clipped_gradient_sum


def test_vanishing_gradients_clip_without_overflow():
    # Margins of 1e4 make expit underflow to 0: the row's gradient is 0, and
    # dividing a clipping norm >= 4 by a norm floored at the smallest float
    # used to overflow (a RuntimeWarning, an error under the test settings).
    Z = np.array([[1.0, 2.0], [3.0, 4.0]])
    Y = np.array([[1.0], [-1.0]])
    W = np.array([[1e4, -1e4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = clipped_gradient_sum(Z, Y, W, max_grad_norm=10.0)
    slopes = -Y * (1 / (1 + np.exp(np.clip(Y * (Z @ W.T), -700, 700))))
    norms = np.linalg.norm(slopes, axis=1) * np.linalg.norm(Z, axis=1)
    expected = (slopes * np.minimum(1, 10.0 / np.maximum(norms, 1e-300))[:, None]).T @ Z
    np.testing.assert_allclose(total, expected)
    # Large rows are still scaled down to the clipping norm.
    big = clipped_gradient_sum(
        np.array([[30.0, 40.0]]), np.array([[1.0]]), np.zeros((1, 2)), max_grad_norm=1.0
    )
    np.testing.assert_allclose(np.linalg.norm(big), 1.0)
