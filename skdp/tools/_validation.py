"""Checks shared by the private statistics and the private scaler.

Everything here runs before a charge and may raise; nothing here adds noise.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import ChargedFitError
from ..utils._feasibility import MAX_MAGNITUDE
from ..utils._privacy import warn_data_derived

__all__ = ["charge_and_run", "resolve_bounds", "rows_of"]


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


def resolve_bounds(bounds, X: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-column ``(lower, upper)`` of ``X``, public or read with a warning.

    Parameters
    ----------
    bounds : None or (lower, upper)
        Scalars or arrays broadcastable to one value per column of ``X``.
        ``None`` reads each column's minimum and maximum from ``X`` and emits
        a :class:`~skdp.exceptions.PrivacyLeakWarning`.
    X : ndarray of shape (n_rows, n_columns)
    what : str
        The caller, for messages.
    """
    n_columns = X.shape[1]
    if bounds is None:
        warn_data_derived(
            "bounds",
            "the smallest and largest value of each column",
            f"pass bounds=(lower, upper), public limits of the data, to {what}",
        )
        return X.min(axis=0), X.max(axis=0)
    if isinstance(bounds, str) or len(bounds) != 2:
        raise ValueError(
            "bounds must be a pair (lower, upper) of scalars or arrays, "
            f"got {bounds!r}."
        )
    try:
        lower = np.asarray(bounds[0], dtype=float)
        upper = np.asarray(bounds[1], dtype=float)
        lower, upper = (
            np.broadcast_to(lower, (n_columns,)).copy(),
            np.broadcast_to(upper, (n_columns,)).copy(),
        )
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must hold one lower and one upper value for each of the "
            f"{n_columns} columns (or a scalar for all), got {bounds!r}."
        ) from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError("bounds must be finite.")
    if np.any(lower > upper):
        raise ValueError("bounds must have lower <= upper for every column.")
    if max(np.abs(lower).max(), np.abs(upper).max()) > MAX_MAGNITUDE:
        raise ValueError(
            f"bounds beyond {MAX_MAGNITUDE:.0e} in magnitude cannot be computed "
            "with in float64."
        )
    return lower, upper


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
