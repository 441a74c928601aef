"""Utilities shared by skdp's estimators: secure randomness and validation."""

from ._privacy import warn_data_derived
from ._random import RandomSource, check_random_source

__all__ = [
    "RandomSource",
    "check_random_source",
    "warn_data_derived",
]
