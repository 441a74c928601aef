"""The one monotone root-finder behind every calibration in skdp.

:func:`solve_monotone` finds where a monotone cost crosses a target, on the
safe side: the returned parameter never costs more than the target. It is
used by :func:`~skdp.accounting.calibrate_parameter` (an event's epsilon
against a target epsilon) and by the closed-form Gaussian calibrations of
:mod:`skdp.accounting._analytic_gaussian`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["solve_monotone"]

# Bracket expansions before giving up: the search range grows geometrically
# with a doubling exponent; parameters stay within exp(+-300) (1e130), where
# their squares are still finite floats.
_MAX_EXPANSIONS = 12
_LOG_LIMIT = 300.0
_MAX_ITERATIONS = 200


def solve_monotone(
    cost: Callable[[float], float],
    target: float,
    *,
    increasing: bool,
    bracket: tuple[float, float] = (0.5, 2.0),
    tolerance: float = 1e-6,
) -> float:
    """Positive parameter where a monotone ``cost`` crosses ``target``.

    Parameters
    ----------
    cost : callable
        ``cost(p)`` for ``p > 0``, monotone in ``p`` (``inf`` allowed).
    target : float
        The largest acceptable cost.
    increasing : bool
        ``True`` when the cost grows with ``p`` (the answer is the largest
        acceptable ``p``), ``False`` when it falls (the smallest).
    bracket : (float, float), default=(0.5, 2.0)
        Where to start looking, ``0 < low < high``. It is widened
        geometrically (factors 2, 4, 16, 256, ...) until it holds the
        crossing.
    tolerance : float, default=1e-6
        Relative precision on the parameter, in (0, 1).

    Returns
    -------
    parameter : float
        A ``p`` with ``cost(p) <= target`` whose neighbour at relative
        distance at most ``tolerance`` (towards more cost) was evaluated and
        costs more than ``target``.

    Raises
    ------
    ValueError
        If no acceptable, or no unacceptable, parameter is found while
        widening the bracket (the target cannot be met, or is met by every
        positive parameter).

    Notes
    -----
    The search works on ``log p``. Once the crossing is bracketed it takes
    regula falsi steps with the Illinois modification (Dowell & Jarratt
    1971), which converges superlinearly for a smooth cost, and falls back
    to bisection whenever a step would not at least halve the bracket twice
    in a row or the costs are not finite. The acceptable end of the bracket
    is kept throughout and returned, so the result errs towards less cost.
    """
    tolerance = float(tolerance)
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}.")
    low, high = (float(v) for v in bracket)
    if not (0 < low < high and math.isfinite(high)):
        raise ValueError(f"bracket must satisfy 0 < low < high, got {bracket!r}.")

    def gap(log_p: float) -> float:
        value = float(cost(math.exp(log_p)))
        if math.isnan(value):
            raise ValueError(f"cost({math.exp(log_p)!r}) is NaN.")
        return value - target

    # Orient so that larger x means more cost.
    sign = 1.0 if increasing else -1.0

    def oriented(x: float) -> float:
        return gap(sign * x)

    x_low, x_high = sorted((sign * math.log(low), sign * math.log(high)))
    g_low, g_high = oriented(x_low), oriented(x_high)
    width = x_high - x_low
    for _ in range(_MAX_EXPANSIONS):
        if g_low <= 0 < g_high:
            break
        width *= 2.0
        if g_low > 0:  # even the low end costs too much: move down
            if x_low <= -_LOG_LIMIT:
                break
            x_high, g_high = x_low, g_low
            x_low = max(x_low - width, -_LOG_LIMIT)
            g_low = oriented(x_low)
        else:  # even the high end is acceptable: move up
            if x_high >= _LOG_LIMIT:
                break
            x_low, g_low = x_high, g_high
            x_high = min(x_high + width, _LOG_LIMIT)
            g_high = oriented(x_high)
    if not g_low <= 0 < g_high:
        side = "acceptable" if g_low > 0 else "unacceptable"
        raise ValueError(
            f"target={target!r} is not reachable: no {side} parameter was found "
            f"between {math.exp(min(sign * x_low, sign * x_high)):.6g} and "
            f"{math.exp(max(sign * x_low, sign * x_high)):.6g}."
        )

    # Invariant: g_low <= 0 < g_high (x_low acceptable, x_high not).
    stop = math.log1p(tolerance)
    last_side, slow_steps = 0, 0
    for _ in range(_MAX_ITERATIONS):
        width = x_high - x_low
        if width <= stop:
            break
        finite = math.isfinite(g_low) and math.isfinite(g_high)
        if finite and slow_steps < 2 and g_high != g_low:
            x = x_low - g_low * width / (g_high - g_low)
            # Keep away from the ends so that both can move.
            margin = 0.01 * width
            x = min(max(x, x_low + margin), x_high - margin)
        else:
            x = 0.5 * (x_low + x_high)
        g = oriented(x)
        if g <= 0:
            x_low, g_low = x, g
            if last_side == -1:
                g_high /= 2.0  # Illinois: the stale end's value is halved
            last_side = -1
        else:
            x_high, g_high = x, g
            if last_side == 1:
                g_low /= 2.0
            last_side = 1
        slow_steps = slow_steps + 1 if x_high - x_low > 0.5 * width else 0
    return math.exp(sign * x_low)
