"""Numerical feasibility checks that a plan runs before the charge.

A private fit must find every problem before it charges its budget; after
the charge nothing may raise and no released number may be NaN or
infinite. Plans therefore check, from public quantities only, that the
magnitudes their run will compute stay well inside float64's range, that
the memory it will need exists on this machine, and that its sequential
rounds can finish.
"""

from __future__ import annotations

import math
import os

__all__ = [
    "MAX_MAGNITUDE",
    "MAX_ROUNDS",
    "MAX_WORK",
    "available_memory",
    "check_magnitudes",
    "check_memory",
    "check_rounds",
    "check_work",
    "max_rounds",
    "max_work",
    "physical_memory",
]

#: Largest magnitude a plan lets its run compute with: squares and sums of a
#: few thousand such numbers still fit in float64 (max about 1.8e308).
MAX_MAGNITUDE = 1e150
#: Narrowest bounds (``upper - lower``) a plan accepts: squares of narrower
#: widths underflow (the reciprocal of ``MAX_MAGNITUDE``).
MIN_WIDTH = 1.0 / MAX_MAGNITUDE
#: Most sequential rounds (DP-SGD steps, quantile selections) one fit may
#: plan, unless the environment variable ``SKDP_MAX_ROUNDS`` says otherwise.
#: Each costs from about 10 microseconds to a millisecond of Python and
#: numpy work, so a million is seconds to about a quarter of an hour on one
#: core; more would run for hours after the charge. Default fits plan far
#: fewer (DP-SGD on a million rows: 39,063 steps).
MAX_ROUNDS = 10**6
#: Most operations (each about a nanosecond of one core: a product of a
#: row entry and a coefficient, a model cell in a synthesizer's refit) one
#: fit's worst case may take, unless the environment variable
#: ``SKDP_MAX_WORK`` says otherwise: about 12 days. Plans bound their worst
#: case, which most fits stay far below: the exact solver's bound
#: (``SolverPlan.work_bound``: Newton's pass budget and the fallback's
#: proven step count) is what it would need if Newton never certified its
#: point, and fits that converge read the rows 10 to 250 times, e.g. 4.6e14
#: for the 20 million rows of 51 coefficients of
#: ``benchmarks/dask_scale.py``, which takes about 12 passes; MWEM's bound
#: (``skdp.synthesis._cost``) assumes every planned round runs, 8 to 100
#: times what the fits of ``benchmarks/plan_checks.py`` took. Beyond the
#: limit are plans such as 10,000 rows of 100 features with a million
#: classes (1e12 products a pass), or PMW's default workload on 300
#: columns (45,000 candidate marginals, 4,800 rounds).
MAX_WORK = 10**15


def check_magnitudes(what: str, **quantities: float) -> None:
    """Refuse quantities that are not finite or exceed :data:`MAX_MAGNITUDE`.

    Parameters
    ----------
    what : str
        What is being planned, for the message.
    **quantities : float
        Named public quantities the run will compute with.

    Raises
    ------
    ValueError
        Naming the first offending quantity and its (public) value.

    Examples
    --------
    >>> from skdp.utils._feasibility import check_magnitudes
    >>> check_magnitudes("a fit", C=1.0)
    >>> check_magnitudes("a fit", C=1e300)
    Traceback (most recent call last):
    ...
    ValueError: a fit cannot be computed in float64: C is 1e+300...
    """
    for name, value in quantities.items():
        value = float(value)
        if not (math.isfinite(value) and abs(value) <= MAX_MAGNITUDE):
            raise ValueError(
                f"{what} cannot be computed in float64: {name} is {value:.3g}, "
                f"beyond {MAX_MAGNITUDE:.0e} (overflow would follow). Use "
                "smaller parameters or bounds."
            )


def physical_memory() -> int:
    """Bytes of physical memory of this machine (a public fact), or 2**40."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return 2**40


def available_memory() -> int:
    """Bytes a fit may plan to use: physical memory, or ``ulimit -v`` if lower.

    Both are facts about the machine and the process's limits, never about
    the data (the memory already in use, which depends on the data's size,
    is not subtracted), so a plan may read them. Without the address-space
    limit, a plan that fits in physical memory could still fail after the
    charge in a process started under ``ulimit -v``.
    """
    available = physical_memory()
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return available
    if soft != resource.RLIM_INFINITY and soft > 0:
        available = min(available, int(soft))
    return available


def check_memory(n_bytes: float, what: str, fix: str) -> None:
    """Refuse a plan whose run needs more memory than this machine has.

    Examples
    --------
    >>> from skdp.utils._feasibility import check_memory
    >>> check_memory(1024, "a small table", "make it smaller")
    >>> check_memory(2.0**80, "a huge table", "make it smaller")
    Traceback (most recent call last):
    ...
    MemoryError: a huge table needs 1.2e+24 bytes...
    """
    available = available_memory()
    if not n_bytes <= available:
        raise MemoryError(
            f"{what} needs {n_bytes:.2g} bytes, more than the {available:.2g} "
            "bytes this process may use (physical memory, or the address-space "
            f"limit when lower); nothing was charged. To fit, {fix}."
        )


def check_rounds(n_rounds: float, what: str, fix: str) -> None:
    """Refuse a plan of more than :data:`MAX_ROUNDS` sequential rounds.

    Parameters
    ----------
    n_rounds : float
        The number of rounds, from public quantities only.
    what : str
        What the rounds are, for the message (``"DP-SGD steps"``).
    fix : str
        How to plan fewer.

    Raises
    ------
    ValueError
        Before the charge, naming the count and the limit.

    Examples
    --------
    >>> from skdp.utils._feasibility import check_rounds
    >>> check_rounds(1000, "DP-SGD steps", "use fewer epochs")
    >>> check_rounds(10**7, "DP-SGD steps", "use fewer epochs")
    Traceback (most recent call last):
    ...
    ValueError: this fit would run 1e+07 DP-SGD steps, more than the 1000000...
    """
    limit = max_rounds()
    if not n_rounds <= limit:
        raise ValueError(
            f"this fit would run {float(n_rounds):.3g} {what}, more than the "
            f"{limit} a fit may plan (each is sequential work: it would not "
            f"finish in reasonable time); nothing was charged. To fit, {fix}; "
            "or, to wait that long, raise the limit with the environment "
            "variable SKDP_MAX_ROUNDS."
        )


def max_rounds() -> int:
    """The round limit: ``SKDP_MAX_ROUNDS`` if set, else :data:`MAX_ROUNDS`.

    Examples
    --------
    >>> from skdp.utils._feasibility import max_rounds
    >>> max_rounds()
    1000000
    """
    return _limit("SKDP_MAX_ROUNDS", MAX_ROUNDS)


def check_work(work: float, what: str, fix: str) -> None:
    """Refuse a plan whose worst case takes more than :func:`max_work` operations.

    Parameters
    ----------
    work : float
        Operations the run may take at most (each about a nanosecond of one
        core: a product of a row entry and a coefficient, or a model cell
        in a synthesizer's refit), from public quantities only.
    what : str
        What takes them, for the message.
    fix : str
        How to plan less work.

    Raises
    ------
    ValueError
        Before the charge, naming the bound, the time it stands for and
        the limit.

    Examples
    --------
    >>> from skdp.utils._feasibility import check_work
    >>> check_work(1e12, "the exact solve", "use fewer classes")
    >>> check_work(1e18, "the exact solve", "use fewer classes")
    Traceback (most recent call last):
    ...
    ValueError: the exact solve may take up to 1e+18 operations (about 32 years...
    """
    limit = max_work()
    if not work <= limit:
        raise ValueError(
            f"{what} may take up to {float(work):.3g} operations (about "
            f"{_duration(work)} of one core at a nanosecond each, in the worst "
            f"case, after the charge), more than the {float(limit):.3g} a fit "
            f"may plan; nothing was charged. To fit, {fix}; or, to wait that "
            "long, raise the limit with the environment variable SKDP_MAX_WORK."
        )


def _duration(operations: float) -> str:
    """``operations`` nanoseconds in words.

    Examples
    --------
    >>> from skdp.utils._feasibility import _duration
    >>> _duration(9e11), _duration(7.2e13), _duration(1e18)
    ('15 minutes', '20 hours', '32 years')
    """
    seconds = float(operations) / 1e9
    for unit, length in (("years", 3.15e7), ("days", 86400.0), ("hours", 3600.0)):
        if seconds >= 2 * length:
            return f"{seconds / length:.0f} {unit}"
    if seconds >= 120:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


def max_work() -> int:
    """The work limit: ``SKDP_MAX_WORK`` if set, else :data:`MAX_WORK`.

    Examples
    --------
    >>> from skdp.utils._feasibility import max_work
    >>> max_work()
    1000000000000000
    """
    return _limit("SKDP_MAX_WORK", MAX_WORK)


def _limit(name: str, default: int) -> int:
    """A positive whole number from the environment variable ``name``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        value = 0
    if value < 1:
        raise ValueError(f"{name} must be a positive whole number, got {text!r}.")
    return value
