"""Utilities shared by skdp's estimators: secure randomness and validation."""

from ._privacy import warn_data_derived
from ._random import RandomSource, check_random_source

__all__ = [
    "PrivateEstimatorMixin",
    "RandomSource",
    "check_random_source",
    "warn_data_derived",
]


def __getattr__(name):
    # The mixin lives in skdp.base (it needs the accounting layer); it is
    # also reachable here for code written against earlier releases.
    if name == "PrivateEstimatorMixin":
        from ..base import PrivateEstimatorMixin

        return PrivateEstimatorMixin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
