"""Noise mechanisms: small functions returning ``(output, event_to_charge)``.

Every mechanism draws from the operating system's CSPRNG unless a seed is
given, and additive noise is sampled on a grid (discrete Laplace / discrete
Gaussian) so outputs carry no floating-point fingerprint of the input. Each
additive mechanism also comes split into a plan (``plan_*``, before the
charge) and its application (:func:`add_noise`, after it); the private
quantiles likewise (:func:`plan_quantiles`, :func:`run_quantiles`).
"""

from ._additive import (
    NoisePlan,
    add_noise,
    draw_l2_noise,
    gaussian_mechanism,
    l2_vector_mechanism,
    l2_vector_noise,
    laplace_mechanism,
    plan_gaussian,
    plan_l2_noise,
    plan_l2_vector,
    plan_laplace,
)
from ._exponential import exponential_mechanism
from ._quantile import (
    QuantilePlan,
    plan_quantiles,
    quantile_mechanism,
    run_quantiles,
)
from ._samplers import sample_discrete_gaussian, sample_discrete_laplace

__all__ = [
    "NoisePlan",
    "QuantilePlan",
    "add_noise",
    "draw_l2_noise",
    "exponential_mechanism",
    "gaussian_mechanism",
    "l2_vector_mechanism",
    "l2_vector_noise",
    "laplace_mechanism",
    "plan_gaussian",
    "plan_l2_noise",
    "plan_l2_vector",
    "plan_laplace",
    "plan_quantiles",
    "quantile_mechanism",
    "run_quantiles",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]
