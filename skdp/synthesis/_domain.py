"""The finite universe a synthesizer models: one discrete domain per column.

Private synthetic data needs a finite, *public* universe. Each input column
becomes a discrete attribute with a known number of values:

* a categorical column keeps its declared categories (a pandas
  ``Categorical`` dtype's categories, or ``categories=``);
* a numeric column with public ``bounds=(low, high)`` is cut into ``n_bins``
  equal-width bins.

Encoding maps every value to a code ``0 .. size - 1``; it never fails on
values outside the domain (numeric values are clipped into the end bins,
unknown categories are counted in the first category). Numeric columns are
checked when the domains are built (numbers only, finite, no missing
values), and the synthesizer encodes before it charges its budget, so no
error can occur after the charge. Decoding draws a value for each code: the
category itself, or a uniform value inside the bin.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..utils._privacy import warn_data_derived

__all__ = [
    "MAX_DATA_CATEGORIES",
    "ColumnDomain",
    "build_domains",
    "code_dtype",
    "encode_columns",
]

#: Most distinct values a column may have for its categories to be read from
#: the data. Above it, the "categories" would be little more than the
#: column's raw values, which the synthetic rows would then publish.
MAX_DATA_CATEGORIES = 100


@dataclass(frozen=True)
class ColumnDomain:
    """The discrete domain of one column.

    Attributes
    ----------
    name : str or int
        Column name (pandas) or position (arrays).
    categories : tuple or None
        Values of a categorical column, in code order.
    edges : ndarray or None
        ``n_bins + 1`` increasing bin edges of a numeric column.
    dtype : numpy dtype or None
        dtype to give decoded values (pandas input).
    pandas_categorical : bool
        Whether decoded values form a pandas ``Categorical``.
    """

    name: object
    categories: tuple | None = None
    edges: np.ndarray | None = None
    dtype: object = None
    pandas_categorical: bool = False

    @property
    def size(self) -> int:
        """Number of codes."""
        if self.categories is not None:
            return len(self.categories)
        return len(self.edges) - 1

    def encode(self, values) -> np.ndarray:
        """Codes ``0 .. size - 1`` of ``values``; never raises on unknowns."""
        if self._encodes_integers(values):
            # Integer categories of an integer array: one vectorized search
            # instead of a dictionary look-up per value (same codes).
            categories = np.array(self.categories, dtype=np.int64)
            order = np.argsort(categories, kind="stable")
            ordered = categories[order]
            position = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
            return np.where(ordered[position] == values, order[position], 0)
        if self.categories is not None:
            lookup = {value: code for code, value in enumerate(self.categories)}
            plain = _plain(values)
            return np.fromiter(
                map(lookup.get, plain, itertools.repeat(0, len(plain))),
                dtype=np.int64,
                count=len(plain),
            )
        x = np.asarray(values, dtype=float)
        low, high = self.edges[0], self.edges[-1]
        scaled = (x - low) / (high - low) * self.size
        return np.clip(np.floor(scaled), 0, self.size - 1).astype(np.int64)

    def decode(self, codes: np.ndarray, rng: np.random.Generator):
        """Values for ``codes``: the category, or a uniform draw in the bin."""
        if self.categories is not None:
            table = np.empty(len(self.categories), dtype=object)
            for code, category in enumerate(self.categories):
                table[code] = category  # one by one: tuples stay scalars
            return table[codes]
        low = self.edges[codes]
        high = self.edges[codes + 1]
        values = low + (high - low) * rng.uniform(size=len(codes))
        if self.integer:
            values = np.clip(
                np.rint(values), np.ceil(self.edges[0]), np.floor(self.edges[-1])
            )
        return values

    def vectorized(self, values) -> bool:
        """Whether :meth:`encode` of ``values`` runs without a Python loop.

        Bins always do, and so do integer categories of an integer array;
        other categories are looked up value by value.
        """
        return self.categories is None or self._encodes_integers(values)

    def _encodes_integers(self, values) -> bool:
        if self.categories is None or not isinstance(values, np.ndarray):
            return False
        # Signed, or unsigned narrower than int64: compared exactly as int64.
        kind, size = values.dtype.kind, values.dtype.itemsize
        if not (kind == "i" or (kind == "u" and size < 8)):
            return False
        return all(type(c) is int and -(2**63) <= c < 2**63 for c in self.categories)

    @property
    def integer(self) -> bool:
        """Whether decoded numbers are rounded: the input dtype was integer.

        The dtype is public (a property of the schema, not of the values);
        numpy and pandas nullable integer dtypes both count.
        """
        return getattr(self.dtype, "kind", None) in ("i", "u")


def _plain(values):
    """Python scalars, so that numpy and Python values hash alike."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return values.tolist()  # Python scalars already
    if isinstance(values, tuple | list) and set(map(type, values)) <= {str}:
        return values  # text read from a file: nothing to convert
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def _lookup(mapping, name, position):
    """Entry of a per-column parameter given as dict (by name or index) or list."""
    if mapping is None:
        return None
    if isinstance(mapping, dict):
        if name in mapping:
            return mapping[name]
        return mapping.get(position)
    return mapping[position]


def _is_pair(bounds) -> bool:
    return (
        isinstance(bounds, tuple | list)
        and len(bounds) == 2
        and all(np.isscalar(b) and not isinstance(b, str) for b in bounds)
    )


def _check_per_column(param, value, n_columns):
    if value is None or isinstance(value, dict):
        return
    if param == "bounds" and _is_pair(value):
        return
    if len(value) != n_columns:
        raise ValueError(
            f"{param} must be a dict keyed by column, or a list with one entry "
            f"per column ({n_columns}), got {len(value)} entries."
        )


def build_domains(columns, names, *, categories, bounds, n_bins, pandas_dtypes):
    """The domain of every column, from public parameters or (with a warning) data.

    Parameters
    ----------
    columns : list of ndarray
        The column values (only read when a domain is missing).
    names : list
        Column names (pandas) or positions.
    categories, bounds : dict, list or None
        The estimator's parameters.
    n_bins : int
        Bins of numeric columns.
    pandas_dtypes : list or None
        Input dtypes (pandas input).

    Returns
    -------
    domains : list of ColumnDomain
    """
    n_columns = len(columns)
    _check_per_column("categories", categories, n_columns)
    _check_per_column("bounds", bounds, n_columns)
    domains = []
    for position, (name, values) in enumerate(zip(names, columns, strict=True)):
        dtype = None if pandas_dtypes is None else pandas_dtypes[position]
        declared = _lookup(categories, name, position)
        is_pandas_categorical = getattr(dtype, "name", None) == "category"
        if declared is None and is_pandas_categorical:
            declared = list(dtype.categories)
        if declared is not None:
            declared = tuple(_plain(list(declared)))
            if len(declared) == 0 or len(set(declared)) != len(declared):
                raise ValueError(
                    f"categories of column {name!r} must be non-empty and "
                    f"distinct, got {declared!r}."
                )
            domains.append(
                ColumnDomain(
                    name,
                    categories=declared,
                    dtype=dtype,
                    pandas_categorical=is_pandas_categorical,
                )
            )
            continue
        column_bounds = bounds if _is_pair(bounds) else _lookup(bounds, name, position)
        numeric = values.dtype.kind in "biuf"
        if column_bounds is None and not numeric:
            found = tuple(sorted(set(_plain(list(values))), key=repr))
            warn_data_derived(
                f"categories of column {name!r}",
                "which values occur in that column",
                "pass categories={column: [...]} or use a pandas Categorical "
                "dtype with declared categories",
            )
            if len(found) > MAX_DATA_CATEGORIES:
                raise ValueError(
                    f"Column {name!r} has no declared categories and more than "
                    f"{MAX_DATA_CATEGORIES} distinct values; reading them from the "
                    "data would publish the column's raw values in the synthetic "
                    "rows. Declare its public categories (categories={column: "
                    "[...]}), or, if it is numeric, convert it to numbers and "
                    "give bounds={column: (low, high)}."
                )
            domains.append(ColumnDomain(name, categories=found, dtype=dtype))
            continue
        if getattr(dtype, "kind", None) in ("M", "m") or values.dtype.kind in "Mm":
            raise ValueError(
                f"Column {name!r} holds dates or durations; convert it to numbers "
                "(e.g. days since a public reference date) and give its bounds, "
                "or declare it categorical."
            )
        values = _numeric(values, name)
        if column_bounds is None:
            low, high = float(np.min(values)), float(np.max(values))
            warn_data_derived(
                f"bounds of column {name!r}",
                "the smallest and largest value of that column",
                "pass bounds={column: (low, high)} from public knowledge",
            )
            if not high > low:
                low, high = low - 0.5, high + 0.5
        else:
            if not _is_pair(column_bounds):
                raise ValueError(
                    f"bounds of column {name!r} must be a pair (low, high), got "
                    f"{column_bounds!r}."
                )
            low, high = (float(b) for b in column_bounds)
            if not (math.isfinite(low) and math.isfinite(high) and high > low):
                raise ValueError(
                    f"bounds of column {name!r} must be finite with low < high, "
                    f"got {column_bounds!r}."
                )
        if getattr(dtype, "kind", None) in ("i", "u"):
            info = np.iinfo(np.dtype(dtype.kind + str(dtype.itemsize)))
            if not (info.min <= math.ceil(low) and math.floor(high) <= info.max):
                raise ValueError(
                    f"bounds of column {name!r}, {(low, high)!r}, exceed the range "
                    f"of its integer dtype {dtype} [{info.min}, {info.max}]; "
                    "synthetic values would wrap around. Give bounds inside it, "
                    "or convert the column to a wider or float dtype."
                )
        if not (math.isfinite(high - low) and (high - low) / n_bins > 0):
            raise ValueError(
                f"bounds of column {name!r} span {high - low!r}, which float64 "
                f"cannot cut into {n_bins} bins; give a narrower range."
            )
        edges = np.linspace(low, high, n_bins + 1)
        domains.append(ColumnDomain(name, edges=edges, dtype=dtype))
    return domains


def _numeric(values, name) -> np.ndarray:
    """The column as finite floats, or a ValueError (before any charge)."""
    try:
        numbers = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"Column {name!r} is numeric (it has bounds or a numeric dtype) but "
            "holds values that are not numbers; declare its categories instead, "
            "or clean the column."
        ) from None
    if not np.all(np.isfinite(numbers)):
        raise ValueError(
            f"Column {name!r} holds NaN, missing or infinite values, which the "
            "synthesizer does not model; fill or drop them, or declare the "
            "column's categories (missing values then count as an unknown "
            "category)."
        )
    return numbers


#: Rows encoded at a time by :func:`encode_columns` (vectorized columns):
#: the temporaries of one block, not of the whole column, are in memory.
_ENCODE_BLOCK = 2**16


def code_dtype(domains) -> np.dtype:
    """The narrowest unsigned integer dtype that holds every column's codes."""
    return np.min_scalar_type(max([domain.size for domain in domains] + [1]) - 1)


def encode_columns(columns, domains) -> np.ndarray:
    """Integer codes of shape ``(n_samples, n_columns)``, in :func:`code_dtype`.

    One byte a cell for domains of at most 256 values: a large table's codes
    take far less memory than its values.
    """
    n_samples = len(columns[0]) if len(columns) else 0
    codes = np.empty((n_samples, len(domains)), dtype=code_dtype(domains))
    for j, (domain, values) in enumerate(zip(domains, columns, strict=True)):
        if not domain.vectorized(values):
            codes[:, j] = domain.encode(values)
            continue
        for start in range(0, n_samples, _ENCODE_BLOCK):
            block = values[start : start + _ENCODE_BLOCK]
            codes[start : start + _ENCODE_BLOCK, j] = domain.encode(block)
    return codes
