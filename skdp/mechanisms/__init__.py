"""Noise mechanisms: small functions returning ``(output, event_to_charge)``.

Every mechanism draws from the operating system's CSPRNG unless a seed is
given, and additive noise is sampled on a grid (discrete Laplace / discrete
Gaussian) so outputs carry no floating-point fingerprint of the input.
"""

from ._additive import (
    gaussian_mechanism,
    l2_vector_mechanism,
    l2_vector_noise,
    laplace_mechanism,
)
from ._exponential import exponential_mechanism
from ._samplers import sample_discrete_gaussian, sample_discrete_laplace

__all__ = [
    "exponential_mechanism",
    "gaussian_mechanism",
    "l2_vector_mechanism",
    "l2_vector_noise",
    "laplace_mechanism",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]
