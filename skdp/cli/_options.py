"""The options of ``python -m skdp synthesize``: types, public limits, checks.

Every option is parsed and checked here, before the file is opened; a bad
value is a :class:`CommandLineError` (a usage error, exit status 2) and
nothing has been spent.
"""

from __future__ import annotations

import argparse
import math
from numbers import Integral, Real
from typing import NamedTuple

__all__ = [
    "Bounds",
    "CommandLineError",
    "OutputError",
    "number",
    "parse_bounds",
    "parse_categories",
    "whole_number",
]

# Public limits of the command, documented in --help and the user guide.
# Beyond them the command would not release anything useful, or would fail
# (out of memory, an overflow in the noise calibration) after the budget
# is charged; they are checked before the file is read.
MIN_EPSILON = 1e-3  # below: noise only; the plan could spend more than asked
MAX_EPSILON = 1e6  # above: no privacy; the calibration overflows near 1e200
MAX_SAMPLES = 10**8
MAX_BINS = 1_000
MAX_ROUNDS = 10_000
DEFAULT_MAX_CATEGORIES = 100
# Values of a list read from the data that the first pass keeps per column.
MAX_CATEGORIES = 100_000
# The three largest columns' domain sizes multiplied: the cells of the
# largest marginal that the synthesizer counts (8 bytes each, twice).
MAX_MARGINAL_CELLS = 10**7


class CommandLineError(Exception):
    """A problem with the command's input, reported as a usage error.

    Raised before the privacy budget is charged: nothing has been spent.
    """


class OutputError(Exception):
    """Writing the synthetic file failed after the budget was charged."""


# -- argument types ----------------------------------------------------------
def number(text):
    """``argparse`` type: a float (its range is checked by :func:`_check_options`)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def whole_number(text):
    """``argparse`` type: an int (its range is checked by :func:`_check_options`)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _check_options(
    *, epsilon, delta, n_samples, n_bins, n_rounds, seed, max_categories
):
    """Refuse option values outside the command's public limits."""
    if not _is_real(epsilon) or not math.isfinite(epsilon):
        raise CommandLineError(f"--epsilon must be a finite number, got {epsilon}")
    if epsilon < MIN_EPSILON:
        raise CommandLineError(
            f"--epsilon must be at least {MIN_EPSILON:g}, got {epsilon:g}: below "
            "it the synthetic rows would be noise only"
        )
    if epsilon > MAX_EPSILON:
        raise CommandLineError(
            f"--epsilon must be at most {MAX_EPSILON:g}, got {epsilon:g}: such an "
            "epsilon provides no privacy (one row could change the odds of any "
            f"output by a factor e**{epsilon:g})"
        )
    if delta is not None and not (_is_real(delta) and 0 < delta < 1):
        raise CommandLineError(
            f"--delta must be > 0 and < 1, got {delta} (the synthesizer adds "
            "Gaussian noise, which needs delta > 0)"
        )
    more_rows = "; for more rows, fit PMWSynthesizer in Python and sample in parts"
    for option, value, low, high, hint in [
        ("--n-samples", n_samples, 1, MAX_SAMPLES, more_rows),
        ("--n-bins", n_bins, 1, MAX_BINS, ""),
        ("--n-rounds", n_rounds, 1, MAX_ROUNDS, ""),
        ("--seed", seed, 0, None, ""),
        ("--max-categories", max_categories, 1, MAX_CATEGORIES, ""),
    ]:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise CommandLineError(f"{option} must be a whole number, got {value!r}")
        if value < low:
            raise CommandLineError(f"{option} must be at least {low:,}, got {value}")
        if high is not None and value > high:
            raise CommandLineError(
                f"{option} must be at most {high:,}, got {value:,}{hint}"
            )


def _is_real(value):
    return isinstance(value, Real) and not isinstance(value, bool)


def parse_categories(text):
    """``argparse`` type: ``COLUMN=A,B,...`` -> ``(column, [A, B, ...])``."""
    column, sep, values = text.partition("=")
    if not sep or not column:
        raise argparse.ArgumentTypeError(
            f"expected COLUMN=A,B,... (for example sex=Female,Male), got {text!r}"
        )
    categories = values.split(",")
    if len(set(categories)) != len(categories):
        raise argparse.ArgumentTypeError(f"repeated value in {text!r}")
    return column, categories


class Bounds(NamedTuple):
    """The public range of a numeric column, as ``--bounds`` gave it."""

    low: float
    high: float
    whole: bool
    """Both ends were written as whole numbers (``age=0:120``, not ``0.0:120``)."""


def parse_bounds(text):
    """``argparse`` type: ``COLUMN=LOW:HIGH`` -> ``(column, Bounds)``."""
    column, sep, values = text.rpartition("=")
    low, colon, high = values.partition(":")
    try:
        if not (sep and column and colon):
            raise ValueError
        bounds = Bounds(float(low), float(high), _is_whole(low) and _is_whole(high))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected COLUMN=LOW:HIGH (for example age=0:100), got {text!r}"
        ) from None
    if not _valid_range(bounds):
        raise argparse.ArgumentTypeError(
            f"bounds must be finite with LOW < HIGH, got {text!r}"
        )
    return column, bounds


def _is_whole(text):
    """Whether an option's number is written as a whole number: digits, a sign."""
    return text.strip().lstrip("+-").isdigit()


def _valid_range(bounds):
    low, high = bounds[0], bounds[1]
    return math.isfinite(low) and math.isfinite(high) and low < high


def _as_bounds(column, value):
    """``(low, high)`` or :class:`Bounds` -> :class:`Bounds`; whole if ints."""
    if isinstance(value, Bounds):
        bounds = value
    else:
        try:
            low, high = value
            bounds = Bounds(float(low), float(high), _are_ints(low, high))
        except (TypeError, ValueError):
            bounds = None
    if bounds is None or not _valid_range(bounds):
        raise CommandLineError(
            f"bounds of column {column!r} must be finite with LOW < HIGH, got {value}"
        )
    return bounds


def _are_ints(*values):
    return all(isinstance(v, Integral) and not isinstance(v, bool) for v in values)
