"""Checks shared by the private statistics and the private scaler.

Everything here runs before a charge and may raise; nothing here adds noise.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import ChargedFitError

__all__ = ["charge_and_run", "rows_of"]


def rows_of(a, axis, what: str) -> np.ndarray:
    """``a`` as a finite float matrix of shape ``(n_rows, n_columns)``.

    The first axis holds the rows, skdp's unit of privacy (one person per
    row; a 1-D array has one value per row). ``axis`` must be ``None`` or
    the first axis: a statistic along another axis would summarise one
    person's values, which no amount of noise makes private at a useful
    accuracy.
    """
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} needs numeric input: {error}") from None
    if arr.ndim == 0:
        raise ValueError(f"{what} needs at least one row, got a scalar.")
    if axis is not None and axis not in (0, -arr.ndim):
        raise ValueError(
            f"{what} supports axis=None or axis=0 (rows are the unit of "
            f"privacy), got axis={axis!r} for an array of {arr.ndim} dimensions."
        )
    if arr.shape[0] == 0 or arr.size == 0:
        raise ValueError(f"{what} needs at least one row and one value.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} needs finite input (no NaN or infinity).")
    return arr.reshape(arr.shape[0], -1)


def charge_and_run(event, budget, run, what: str):
    """Charge ``event`` to ``budget`` (if any), then return ``run()``.

    A refused spend raises :class:`~skdp.exceptions.BudgetExceededError`
    before ``run`` is called. After the charge nothing escapes: warnings
    are discarded and an exception (a bug: runs are written not to raise)
    becomes a :class:`~skdp.exceptions.ChargedFitError` with a fixed
    message, because the original could reveal private values.
    """
    if budget is not None:
        budget.spend(event, event.label)
    failed = False
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = run()
    except Exception:
        failed = True
    if failed:
        raise ChargedFitError(
            f"{what} failed after charging its budget; the spend stands and "
            "nothing was released. This is a bug in skdp: please report it."
        )
    return result
