"""Utilities shared by skdp's estimators: secure randomness and validation."""

from ._random import RandomSource, check_random_source

__all__ = ["RandomSource", "check_random_source"]
