"""Checks shared by the private statistics, before their charge.

Everything here runs before the charge and may raise; nothing here adds
noise. The statistics charge and run through :func:`skdp.base.charge_and_run`,
the charge path every private fit and release takes.
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._dask import as_row_blocks, is_dask_collection
from ..utils._row_checks import FactsRequest, RowFacts, read_facts
from ..utils._row_source import RowSource, row_source

__all__ = ["tool_rows"]


def _dask_matrix(a):
    """A dask collection as a dask array with known rows, its shape kept."""
    X = as_row_blocks(a)[0]
    if X.ndim > 2:  # whole rows in every block, then (n_rows, n_values)
        X = X.rechunk({axis: -1 for axis in range(1, X.ndim)})
    if X.ndim and any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()  # the number of rows is public
    return X


def tool_rows(
    a, axis, what: str, *, finite: bool = True, extremes: bool = False
) -> tuple[RowSource, tuple, RowFacts | None]:
    """The rows of ``a`` as a ``(n_rows, n_columns)`` row source, checked.

    The first axis holds the rows, skdp's unit of privacy (one person per
    row; a 1-D array has one value per row). ``axis`` must be ``None`` or
    the first axis: a statistic along another axis would summarise one
    person's values, which no amount of noise makes private at a useful
    accuracy. ``a`` is a NumPy array (or array-like) or a dask array,
    DataFrame or Series: the same checks, with the same messages, either
    way. Shape and dtype are read from metadata; then, when ``finite`` or
    ``extremes``, one pass (:func:`read_facts`) converts every block to
    float64, refusing values that are not numbers and (when ``finite``) NaN
    and infinities, and reads each column's extremes when ``extremes``
    (bounds read from the data; in memory only).

    Returns
    -------
    rows : RowSource
        The rows as they are stored (blocks are read as float64 by the
        block functions): no copy of ``a``.
    shape : tuple
        The shape of ``a`` after its first axis.
    facts : RowFacts or None
        What the pass found, or None when there was no pass.
    """
    if is_dask_collection(a):
        X = _dask_matrix(a)
    else:
        try:
            X = np.asarray(a)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{what} needs numeric input: {error}") from None
    if X.dtype.kind not in "biufcOUS":
        raise ValueError(f"{what} needs numeric input, got dtype {X.dtype}.")
    if X.ndim == 0:
        raise ValueError(f"{what} needs at least one row, got a scalar.")
    if axis is not None and axis not in (0, -X.ndim):
        raise ValueError(
            f"{what} supports axis=None or axis=0 (rows are the unit of "
            f"privacy), got axis={axis!r} for an array of {X.ndim} dimensions."
        )
    if X.shape[0] == 0 or math.prod(X.shape) == 0:
        raise ValueError(f"{what} needs at least one row and one value.")
    shape = tuple(int(s) for s in X.shape[1:])
    rows = row_source(X.reshape(X.shape[0], -1))
    facts = None
    if finite or extremes:
        request = FactsRequest(
            extremes=extremes, numeric_error=f"{what} needs numeric input: "
        )
        facts = read_facts(rows, request)
        if finite and (facts.x_nan or facts.x_inf):
            raise ValueError(f"{what} needs finite input (no NaN or infinity).")
    return rows, shape, facts
