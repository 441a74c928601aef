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

__all__ = ["crossing_bracket", "solve_monotone"]

# Bracket expansions before giving up: the search range grows geometrically
# with a doubling exponent; parameters stay within exp(+-300) (1e130), where
# their squares are still finite floats.
_MAX_EXPANSIONS = 12
_LOG_LIMIT = 300.0
_MAX_ITERATIONS = 200
# A bracketing step goes twice as far as the line through the two last
# points says the crossing is, and at most four times the doubled reach.
_OVERSHOOT = 2.0
_MAX_REACH = 4.0
# A crossing predicted within the tolerance of a bracket end is tested this
# fraction of the tolerance away from that end.
_INSIDE = 0.99
# Interpolation steps allowed before the bracket must have halved; else
# the next step bisects.
_SLOW_STEPS = 3
_TINY = 1e-300


def _interpolate(points: list[tuple[float, float]]) -> float | None:
    """Where the curve through the last (up to three) points crosses zero.

    Inverse quadratic interpolation through three points with distinct
    values, else the secant through two; ``None`` without two finite ones.
    """
    points = [(x, g) for x, g in points[-3:] if math.isfinite(g)]
    values = [g for _, g in points]
    if len(points) == 3 and len(set(values)) == 3:
        total = 0.0
        for i, (x_i, g_i) in enumerate(points):
            weight = x_i
            for j, (_, g_j) in enumerate(points):
                if j != i:
                    weight *= g_j / (g_j - g_i)
            total += weight
        return total
    points = points[-2:]
    if len(points) == 2 and points[0][1] != points[1][1]:
        (x_0, g_0), (x_1, g_1) = points
        return x_1 - g_1 * (x_1 - x_0) / (g_1 - g_0)
    return None


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
        Where to start looking, ``0 < low < high``; the crossing need not
        be inside. Both ends are evaluated; until they hold the crossing
        the search steps outwards, to twice the distance at which the line
        through its last two points crosses the target (at most four times
        a reach that doubles at each step).
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
    The search works on ``log p`` against ``log cost - log target`` (when
    the target is positive): privacy costs are close to powers of their
    parameter, so the curve is nearly a line. Once the crossing is
    bracketed, each step interpolates the last three points (inverse
    quadratic interpolation, as in Brent's method) or the last two
    (secant), falling back to regula falsi on the bracket ends when that
    leaves the bracket, and to bisection when the bracket has not halved
    in three steps or the costs are not finite. A crossing predicted within
    the tolerance of an end is tested at 0.99 times the tolerance from that
    end, so that a right prediction ends the search. The acceptable end of
    the bracket is kept throughout and returned, so the result errs towards
    less cost.
    """
    return crossing_bracket(
        cost, target, increasing=increasing, bracket=bracket, tolerance=tolerance
    )[0]


def crossing_bracket(
    cost: Callable[[float], float],
    target: float,
    *,
    increasing: bool,
    bracket: tuple[float, float] = (0.5, 2.0),
    tolerance: float = 1e-6,
) -> tuple[float, float]:
    """:func:`solve_monotone`'s final bracket: ``(acceptable, unacceptable)``.

    ``acceptable`` is what :func:`solve_monotone` returns; ``unacceptable``
    costs more than ``target`` and is within ``tolerance`` (relative) of it.
    """
    tolerance = float(tolerance)
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}.")
    low, high = (float(v) for v in bracket)
    if not (0 < low < high and math.isfinite(high)):
        raise ValueError(f"bracket must satisfy 0 < low < high, got {bracket!r}.")
    log_target = math.log(target) if target > 0 else None

    def gap(log_p: float) -> float:
        value = float(cost(math.exp(log_p)))
        if math.isnan(value):
            raise ValueError(f"cost({math.exp(log_p)!r}) is NaN.")
        if log_target is None:
            return value - target
        if value <= 0:
            return -math.inf
        # log cost - log target: privacy costs are close to powers of the
        # parameter, so this is close to linear in log p. Its sign is the
        # comparison's (the logs of two close numbers may round equal).
        difference = math.log(value) - log_target
        if value > target:
            return max(difference, _TINY)
        return min(difference, 0.0)

    # Orient so that larger x means more cost.
    sign = 1.0 if increasing else -1.0

    def oriented(x: float) -> float:
        return gap(sign * x)

    stop = math.log1p(tolerance)
    x_low, x_high = sorted((sign * math.log(low), sign * math.log(high)))
    g_low, g_high = oriented(x_low), oriented(x_high)
    history = [(x_low, g_low), (x_high, g_high)]
    reach = x_high - x_low
    for _ in range(_MAX_EXPANSIONS):
        if g_low <= 0 < g_high:
            break
        # Step to twice the distance at which the line through both ends
        # crosses the target; without such a line, the doubled reach.
        reach *= 2.0
        step = reach
        slope = (g_high - g_low) / (x_high - x_low)
        if math.isfinite(slope) and slope > 0:
            beyond = (g_low if g_low > 0 else -g_high) / slope
            step = min(_MAX_REACH * reach, max(_OVERSHOOT * beyond, stop))
        if g_low > 0:  # even the low end costs too much: move down
            if x_low <= -_LOG_LIMIT:
                break
            x_high, g_high = x_low, g_low
            x_low = max(x_low - step, -_LOG_LIMIT)
            g_low = oriented(x_low)
            history.append((x_low, g_low))
        else:  # even the high end is acceptable: move up
            if x_high >= _LOG_LIMIT:
                break
            x_low, g_low = x_high, g_high
            x_high = min(x_high + step, _LOG_LIMIT)
            g_high = oriented(x_high)
            history.append((x_high, g_high))
    if not g_low <= 0 < g_high:
        side = "acceptable" if g_low > 0 else "unacceptable"
        raise ValueError(
            f"target={target!r} is not reachable: no {side} parameter was found "
            f"between {math.exp(min(sign * x_low, sign * x_high)):.6g} and "
            f"{math.exp(max(sign * x_low, sign * x_high)):.6g}."
        )

    # Invariant: g_low <= 0 < g_high (x_low acceptable, x_high not).
    widths = [x_high - x_low]
    for _ in range(_MAX_ITERATIONS):
        width = x_high - x_low
        if width <= stop:
            break
        x = None
        if len(widths) <= _SLOW_STEPS or width <= 0.5 * widths[-1 - _SLOW_STEPS]:
            x = _interpolate(history)
            if x is None or not x_low < x < x_high:
                x = _interpolate([(x_low, g_low), (x_high, g_high)])
        if x is not None:
            # A crossing predicted within the tolerance of an end is tested
            # just inside the tolerance from it: if the prediction holds,
            # the bracket is then narrow enough.
            if x - x_low < stop:
                x = x_low + _INSIDE * stop
            elif x_high - x < stop:
                x = x_high - _INSIDE * stop
        else:
            x = 0.5 * (x_low + x_high)
        g = oriented(x)
        history.append((x, g))
        if g <= 0:
            x_low, g_low = x, g
        else:
            x_high, g_high = x, g
        widths.append(x_high - x_low)
    return math.exp(sign * x_low), math.exp(sign * x_high)
