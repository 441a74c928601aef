"""Values numpy converts to numbers although they are not numbers.

``np.asarray(X, dtype=float)`` reads a ``datetime64`` or ``timedelta64``
array as counts of its time unit (days, or nanoseconds: the unit changes
the value by a factor of 86,400e9), bytes such as ``b"3"`` as the number
they spell, and an object cell holding a ``np.datetime64`` as its count of
days. scikit-learn's ``validate_data(dtype="numeric")`` lets all of them
through. An estimator of numbers fitted on them would release a model of
an arbitrary encoding, with no word to the user: :func:`refuse_non_numbers`
refuses them, before any charge, with a message that names the kind of
value and never a value.
"""

from __future__ import annotations

import datetime

import numpy as np

__all__ = ["non_number_cells", "non_number_error", "refuse_non_numbers"]

# Cells of an object array that float() would accept or that mean a time.
_TIME_CELLS = (np.datetime64, np.timedelta64, datetime.date, datetime.timedelta)

_DATES = (
    "holds dates or durations ({what}); an estimator of numbers would read "
    "them as counts of a time unit. Convert them to numbers first (e.g. days "
    "since a public reference date)."
)
_BYTES = (
    "holds bytes ({what}); they are not read as the numbers they may spell. "
    "Decode and convert them to numbers first."
)


def _refuse_kind(kind: str, what: str, where: str) -> None:
    if kind in "mM":
        raise ValueError(f"{where} " + _DATES.format(what=what))
    if kind == "S":
        raise ValueError(f"{where} " + _BYTES.format(what=what))


def non_number_cells(values: np.ndarray) -> str | None:
    """What an object array holds that is not a number: ``"dates"``,
    ``"bytes"`` or ``None`` (one pass over the cells, collecting their
    types; only the distinct types are then examined)."""
    flat = np.asarray(values, dtype=object).ravel()
    types = set(map(type, flat))
    if any(issubclass(kind, _TIME_CELLS) for kind in types):
        return "dates"
    if any(issubclass(kind, bytes) for kind in types):
        return "bytes"
    return None


def non_number_error(found: str | None, where: str) -> ValueError | None:
    """The refusal of cells :func:`non_number_cells` found (``None`` if none).

    What :func:`refuse_non_numbers` raises for an object array holding
    them; a block function returns ``found`` and its caller raises this, so
    a dask pass refuses them in the client, as memory does.
    """
    if found == "dates":
        return ValueError(f"{where} " + _DATES.format(what="cells of date/time types"))
    if found == "bytes":
        return ValueError(f"{where} " + _BYTES.format(what="cells of type bytes"))
    return None


def _refuse_cells(values: np.ndarray, where: str) -> None:
    error = non_number_error(non_number_cells(values), where)
    if error is not None:
        raise error


def refuse_non_numbers(X, name: str = "X", *, cells: bool = True) -> None:
    """Refuse dates, durations and bytes where an estimator expects numbers.

    Looks at the dtype of an array (NumPy or dask), at each column's dtype
    of a DataFrame, and, for object arrays and object columns held in
    memory, at the type of every cell (one pass; a dask block is checked
    where it is converted). Lists are read through ``np.asarray``.

    Parameters
    ----------
    X : array-like, DataFrame, sparse matrix or dask collection
    name : str, default="X"
        The input's name in the message.
    cells : bool, default=True
        Also look at the cells of object arrays and columns (``False``
        where object cells are categories, read as values).

    Raises
    ------
    ValueError
        ``X`` holds ``datetime64``/``timedelta64`` values, bytes, or object
        cells of a date, time or bytes type.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.utils._numbers import refuse_non_numbers
    >>> refuse_non_numbers(np.array([[1.0, 2.0]]))
    >>> refuse_non_numbers(np.array([["2024-01-02"]], dtype="datetime64[D]"))
    Traceback (most recent call last):
    ...
    ValueError: X holds dates or durations (dtype datetime64[D]); ...
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns"):
        lazy = hasattr(X, "dask")
        for column, dtype in zip(X.columns, dtypes):
            where = f"{name}'s column {column!r}"
            _refuse_kind(dtype.kind, f"dtype {dtype}", where)
            if cells and dtype.kind == "O" and not lazy:
                _refuse_cells(X[column].to_numpy(), where)
        return
    if hasattr(X, "tocsr") or hasattr(X, "dask"):
        dtype = getattr(X, "dtype", None)
        if dtype is not None:
            _refuse_kind(dtype.kind, f"dtype {dtype}", name)
        return
    if not hasattr(X, "dtype"):
        try:
            X = np.asarray(X)
        except (TypeError, ValueError):
            return  # scikit-learn's own conversion gives its error
    dtype = getattr(X, "dtype", None)
    if dtype is None:
        return
    _refuse_kind(dtype.kind, f"dtype {dtype}", name)
    if cells and dtype.kind == "O":
        _refuse_cells(np.asarray(X), name)
