"""Bisection shared by the calibration routines."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["bisect_upper"]


def bisect_upper(
    meets: Callable[[float], bool], lower: float, upper: float, rel_tol: float
) -> float:
    """Shrink ``[lower, upper]`` around the threshold of a monotone predicate.

    ``meets`` must be False at ``lower`` and True at ``upper`` and switch
    once in between. The upper end is returned, where the predicate holds:
    calibrations that use it always err on the side of privacy.
    """
    while upper - lower > rel_tol * max(abs(upper), 1e-300):
        middle = 0.5 * (lower + upper)
        if meets(middle):
            upper = middle
        else:
            lower = middle
    return upper
