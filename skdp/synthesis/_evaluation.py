"""Evaluating synthetic data against the real data (not private)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike

from ._schema import (
    ColumnDomain,
    TableBounds,
    TableCategories,
    _is_pair,
    _lookup,
    _plain,
    is_missing,
)

__all__ = ["marginal_errors"]


def _table_columns(table):
    """Column names and value arrays of an array or a DataFrame."""
    if hasattr(table, "columns") and hasattr(table, "iloc"):
        names = list(table.columns)
        columns = [
            table.iloc[:, j].to_numpy(dtype=object, na_value=None)
            for j in range(table.shape[1])
        ]
        return names, columns
    array = np.asarray(table)
    if array.ndim != 2:
        raise ValueError(f"Expected a 2-D table, got shape {array.shape}.")
    return list(range(array.shape[1])), [array[:, j] for j in range(array.shape[1])]


def _evaluation_domain(name, position, real, synthetic, categories, bounds, n_bins):
    """The domain of one column: declared, or the values both tables hold."""
    declared = _lookup(categories, name, position)
    column_bounds = bounds if _is_pair(bounds) else _lookup(bounds, name, position)
    if declared is None and column_bounds is not None:
        low, high = (float(b) for b in column_bounds)
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            raise ValueError(
                f"bounds of column {name!r} must be finite with low < high, got "
                f"{column_bounds!r}."
            )
        edges = np.linspace(low, high, n_bins + 1)
        return ColumnDomain(name, edges=edges, missing=True)
    if declared is None:
        both = np.concatenate([real, synthetic]).astype(object)
        present = both[~is_missing(both)]
        declared = sorted(set(_plain(list(present))), key=repr) or [None]
    return ColumnDomain(name, categories=tuple(_plain(list(declared))), missing=True)


def marginal_errors(
    real: ArrayLike,
    synthetic: ArrayLike,
    workload: Sequence[tuple[Hashable, ...]] | None = None,
    *,
    categories: TableCategories | None = None,
    bounds: TableBounds | None = None,
    n_bins: int = 10,
) -> dict[tuple[Hashable, ...], float]:
    """L1 distance between the marginals of a real and a synthetic table.

    .. warning::
       This function **reads the real data** and its result is **not
       differentially private**: it is for evaluating a synthesizer (in
       research, or on data that are not sensitive), never for publishing.
       Whatever it returns reveals the real table's marginals.

    For each marginal (a tuple of columns) both tables are reduced to the
    normalised histogram over the combinations of those columns' values,
    and the error is the L1 distance between the two histograms: 0 when
    they agree, 2 when they are disjoint. Twice the total variation
    distance.

    Parameters
    ----------
    real, synthetic : array-like or DataFrame of shape (n_rows, n_columns)
        The two tables, with the same columns; they may have different
        numbers of rows.
    workload : list of tuple or None, default=None
        The marginals, as tuples of column names (DataFrames) or positions.
        ``None``: every 3-way marginal (every column together when there are
        fewer than three).
    categories : dict, list or None, default=None
        Values of categorical columns, as for
        :class:`~skdp.PMWSynthesizer`. A value outside them is
        counted in the first category, as the synthesizer does. Columns
        with neither ``categories`` nor ``bounds`` take as values the
        distinct values found in either table.
    bounds : dict, list, tuple or None, default=None
        ``(low, high)`` of numeric columns, cut into ``n_bins`` equal-width
        bins (values outside are clipped into the end bins).
    n_bins : int, default=10
        Bins of each column with bounds.

    Returns
    -------
    errors : dict
        The L1 error of each marginal of the workload, keyed by the tuple of
        columns, in workload order. Missing values (None, NaN) count as one
        more value of every column.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis import marginal_errors
    >>> real = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
    >>> synthetic = np.array([[0, 0], [1, 1]])
    >>> marginal_errors(real, synthetic, workload=[(0,), (0, 1)])
    {(0,): 0.0, (0, 1): 0.5}
    """
    names, real_columns = _table_columns(real)
    synthetic_names, synthetic_columns = _table_columns(synthetic)
    if synthetic_names != names:
        raise ValueError(
            f"The tables have different columns: {names!r} and {synthetic_names!r}."
        )
    if not isinstance(n_bins, Integral) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}.")
    if len(real_columns[0]) == 0 or len(synthetic_columns[0]) == 0:
        raise ValueError("Both tables need at least one row.")
    positions = {name: j for j, name in enumerate(names)}
    if workload is None:
        k = min(3, len(names))
        workload = list(itertools.combinations(names, k))
    resolved = []
    for marginal in workload:
        if isinstance(marginal, str) or not hasattr(marginal, "__iter__"):
            marginal = (marginal,)
        marginal = tuple(marginal)
        unknown = [c for c in marginal if c not in positions]
        if unknown or not marginal or len(set(marginal)) != len(marginal):
            raise ValueError(
                f"Each marginal needs distinct, known columns; got {marginal!r} "
                f"(columns are {names!r})."
            )
        resolved.append(marginal)
    used = sorted({positions[c] for m in resolved for c in m})
    codes = {}
    for j in used:
        domain = _evaluation_domain(
            names[j],
            j,
            real_columns[j],
            synthetic_columns[j],
            categories,
            bounds,
            n_bins,
        )
        codes[j] = (
            domain.size,
            domain.encode(real_columns[j]),
            domain.encode(synthetic_columns[j]),
        )
    errors = {}
    for marginal in resolved:
        columns = [positions[c] for c in marginal]
        shape = [codes[j][0] for j in columns]
        tables = []
        for side in (1, 2):
            flat = np.ravel_multi_index([codes[j][side] for j in columns], shape)
            counts = np.bincount(flat, minlength=math.prod(shape))
            tables.append(counts / counts.sum())
        errors[marginal] = float(np.abs(tables[0] - tables[1]).sum())
    return errors
