"""Utilities shared by skdp's estimators: secure randomness and validation."""

from ._privacy import PrivateEstimatorMixin, warn_data_derived
from ._random import RandomSource, check_random_source

__all__ = [
    "PrivateEstimatorMixin",
    "RandomSource",
    "check_random_source",
    "warn_data_derived",
]
