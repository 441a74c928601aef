"""Integer-valued noise on a grid: discrete Laplace and discrete Gaussian.

Textbook Laplace sampling in floating point leaks the input through the set
of floats it can output (Mironov 2012, "On significance of the least
significant bits for differential privacy"). skdp's additive mechanisms
instead work on a grid of spacing ``gamma`` (a power of two): the input is
rounded to the grid, integer noise from the discrete Laplace or discrete
Gaussian distribution (Canonne, Kamath & Steinke 2020, "The Discrete
Gaussian for Differential Privacy") is added in grid units, and the result
is a multiple of ``gamma``. Every input then has the same set of possible
outputs, which removes the porous-support attack. Rounding moves each
coordinate by at most ``gamma / 2``, so the mechanisms calibrate the noise to
the sensitivity plus the rounding slack (``d * gamma`` in L1,
``sqrt(d) * gamma`` in L2).
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._random import RandomSource

__all__ = [
    "GRID_BITS",
    "grid_spacing",
    "round_to_grid",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

#: The grid spacing is the largest power of two at most ``scale * 2**-GRID_BITS``.
GRID_BITS = 32
# Integers of magnitude below 2**53 are exact in float64; inputs are clipped
# to 2**50 grid steps so that input plus noise stays exact.
_MAX_GRID_INDEX = 2.0**50


def _shape(size) -> tuple[int, ...]:
    return (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)


def grid_spacing(noise_scale: float) -> float:
    """Power-of-two grid spacing about ``2**-GRID_BITS`` times the noise scale."""
    if not (noise_scale > 0 and math.isfinite(noise_scale)):
        raise ValueError(f"noise scale must be finite and > 0, got {noise_scale!r}.")
    return 2.0 ** math.floor(math.log2(noise_scale) - GRID_BITS)


def round_to_grid(value, gamma: float) -> np.ndarray:
    """Integer grid indices of ``value`` (clipped to +-2**50 steps)."""
    index = np.rint(np.asarray(value, dtype=float) / gamma)
    return np.clip(index, -_MAX_GRID_INDEX, _MAX_GRID_INDEX)


def sample_discrete_laplace(scale: float, size, source: RandomSource) -> np.ndarray:
    """Draws with ``P(z) proportional to exp(-|z| / scale)`` on the integers.

    The difference of two independent geometric variables
    ``floor(scale * E)`` with ``E`` standard exponential (Canonne, Kamath &
    Steinke 2020, Section 5). Returned as float64 holding exact integers.
    """
    e = source.exponential((2, *_shape(size)))
    return np.floor(scale * e[0]) - np.floor(scale * e[1])


def sample_discrete_gaussian(sigma: float, size, source: RandomSource) -> np.ndarray:
    """Draws with ``P(z) proportional to exp(-z**2 / (2 sigma**2))`` on the integers.

    Rejection sampling from the discrete Laplace with scale
    ``t = floor(sigma) + 1``, accepting ``y`` with probability
    ``exp(-(|y| - sigma**2 / t)**2 / (2 sigma**2))`` (Canonne, Kamath &
    Steinke 2020, Algorithm 3), vectorised in batches.
    """
    shape = _shape(size)
    n = int(np.prod(shape, dtype=np.int64))
    t = math.floor(sigma) + 1.0
    out = np.empty(n)
    filled = 0
    while filled < n:
        batch = max(2 * (n - filled) + 16, 64)
        y = sample_discrete_laplace(t, batch, source)
        accept_prob = np.exp(-((np.abs(y) - sigma**2 / t) ** 2) / (2.0 * sigma**2))
        y = y[source.uniform(batch) < accept_prob]
        take = min(y.size, n - filled)
        out[filled : filled + take] = y[:take]
        filled += take
    return out.reshape(shape)
