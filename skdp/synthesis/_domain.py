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
checked when the domains are built (numbers only, finite), and the
synthesizer encodes before it charges its budget, so no error can occur
after the charge. Decoding draws a value for each code: the category itself,
or a uniform value inside the bin.

**Missing values** (``None``, NaN, ``pandas.NA``, ``NaT``) are a value of
their own in a column *declared* to have them (``missing_values="category"``
for every column, or per column): one more code, the last, which decodes to
NaN (numeric columns and numeric categories) or ``None``. Whether a column
has that code is part of the public schema, like its categories: it is never
read from whether the data happen to hold a missing value, because that fact
is private (a neighbouring data set may differ in exactly that row) and the
code changes the model's shape, the output's format and every marginal. A
missing value in a column *not* declared so is refused before the charge.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal, TypeAlias

import numpy as np

from ..utils._privacy import warn_data_derived

__all__ = [
    "MAX_DATA_CATEGORIES",
    "ColumnDomain",
    "build_domains",
    "code_dtype",
    "encode_columns",
    "is_missing",
]

# Types of the per-column schema parameters (``bounds``, ``categories``,
# ``missing_values``) of the synthesizers and of ``marginal_errors``: one
# value for every column, a dict keyed by column (name or position), or a
# list with one entry (or None) per column.
BoundsPair: TypeAlias = tuple[float, float]
TableBounds: TypeAlias = (
    BoundsPair | dict[Any, BoundsPair | None] | list[BoundsPair | None]
)
TableCategories: TypeAlias = (
    dict[Any, Sequence[Any] | None] | list[Sequence[Any] | None]
)
MissingOption: TypeAlias = Literal["error", "category"]
MissingValues: TypeAlias = (
    MissingOption | dict[Any, MissingOption | None] | list[MissingOption | None]
)

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
    missing : bool
        Whether the column has a missing-value code (the last one), as
        declared by ``missing_values``.
    """

    name: object
    categories: tuple | None = None
    edges: np.ndarray | None = None
    dtype: object = None
    pandas_categorical: bool = False
    missing: bool = False

    @property
    def n_values(self) -> int:
        """Number of codes for values: categories or bins (not the missing code)."""
        if self.categories is not None:
            return len(self.categories)
        return len(self.edges) - 1

    @property
    def size(self) -> int:
        """Number of codes, the missing-value code included."""
        return self.n_values + int(self.missing)

    @property
    def numeric(self) -> bool:
        """Binned, or every category a (non-boolean) number."""
        if self.categories is None:
            return True
        return all(
            isinstance(c, Real) and not isinstance(c, bool) for c in self.categories
        )

    @property
    def missing_value(self):
        """What the missing-value code decodes to: NaN for numbers, else None."""
        return np.nan if self.numeric else None

    def encode(self, values) -> np.ndarray:
        """Codes ``0 .. size - 1`` of ``values``; never raises on unknowns.

        Missing values get the last code when the column declares one (the
        caller has refused them otherwise). A categorical column refuses
        unhashable values (``TypeError``), which no look-up can place.
        """
        missing = is_missing(values) if self.missing else None
        if self._encodes_integers(values):
            # Integer categories of an integer array (which holds no missing
            # value): one vectorized search instead of a dictionary look-up
            # per value (same codes).
            categories = np.array(self.categories, dtype=np.int64)
            order = np.argsort(categories, kind="stable")
            ordered = categories[order]
            position = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
            return np.where(ordered[position] == values, order[position], 0)
        if self.categories is not None:
            lookup = {value: code for code, value in enumerate(self.categories)}
            plain = _plain(values)
            try:
                codes = np.fromiter(
                    map(lookup.get, plain, itertools.repeat(0, len(plain))),
                    dtype=np.int64,
                    count=len(plain),
                )
            except TypeError:  # an unhashable value: a list, an array, ...
                _refuse_unhashable(self.name)
        else:
            if missing is not None:
                values = np.where(missing, self.edges[0], values)
            x = np.asarray(values, dtype=float)
            low, high = self.edges[0], self.edges[-1]
            scaled = (x - low) / (high - low) * self.n_values
            codes = np.clip(np.floor(scaled), 0, self.n_values - 1).astype(np.int64)
        if missing is not None:
            codes[missing] = self.n_values
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator):
        """Values for ``codes``: the category, a uniform draw in the bin, or
        the missing value."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.categories is not None:
            table = np.empty(self.size, dtype=object)
            for code, category in enumerate(self.categories):
                table[code] = category  # one by one: tuples stay scalars
            if self.missing:
                table[self.n_values] = self.missing_value
            return table[codes]
        missing = codes >= self.n_values
        inside = np.minimum(codes, self.n_values - 1)
        low = self.edges[inside]
        high = self.edges[inside + 1]
        values = low + (high - low) * rng.uniform(size=len(codes))
        if self.integer:
            values = np.clip(
                np.rint(values), np.ceil(self.edges[0]), np.floor(self.edges[-1])
            )
        if self.missing:
            values = np.where(missing, np.nan, values)
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


def _missing_scalar(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(value != value)
    # pandas.NA and pandas.NaT, recognised without importing pandas.
    return type(value).__name__ in ("NAType", "NaTType")


def is_missing(values) -> np.ndarray:
    """Boolean mask of the missing values (None, NaN, pandas.NA, NaT).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis._domain import is_missing
    >>> is_missing(np.array([1.0, np.nan])).tolist()
    [False, True]
    >>> is_missing(np.array(["a", None, float("nan")], dtype=object)).tolist()
    [False, True, True]
    """
    values = np.asarray(values)
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind in "biuSU":
        return np.zeros(values.shape, dtype=bool)
    if values.dtype.kind in "mM":
        return np.isnat(values)
    return np.fromiter(
        (_missing_scalar(v) for v in values.ravel()), dtype=bool, count=values.size
    ).reshape(values.shape)


def _missing_flags(missing_values, names):
    """Whether each column has a missing-value code, from the public parameter."""
    if missing_values is None or isinstance(missing_values, str):
        _check_missing_option(missing_values, "missing_values")
        return [missing_values == "category"] * len(names)
    _check_per_column("missing_values", missing_values, len(names))
    flags = []
    for position, name in enumerate(names):
        option = _lookup(missing_values, name, position)
        option = "error" if option is None else option
        _check_missing_option(option, f"missing_values of column {name!r}")
        flags.append(option == "category")
    return flags


def _check_missing_option(option, what):
    if option not in ("error", "category"):
        raise ValueError(f"{what} must be 'error' or 'category', got {option!r}.")


def _refuse_missing(name):
    raise ValueError(
        f"Column {name!r} holds missing values (None or NaN), and missing_values "
        "does not declare them for it. Declare missing_values='category' (or "
        "{column: 'category'}) to model them as a value of their own, or fill "
        "or drop them. Whether a column may be missing is public schema, like "
        "its categories: it is not read from the data."
    )


def _refuse_unhashable(name):
    raise TypeError(
        f"Column {name!r} holds values that cannot be looked up among its "
        "declared categories (unhashable values, such as lists or arrays); "
        "store each cell as one value (a number, a string or a tuple)."
    )


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


def undeclared_domains(bounds, categories) -> tuple[str, ...]:
    """``("bounds", "categories")`` if a fit with these parameters reads some
    column's domain from the data, else ``()``; from the parameters alone.

    A single ``(low, high)`` pair covers every column. With lists, a column
    both leave at ``None`` is read. A dict is taken to name every column
    (one it leaves out is read at fit, with a warning). With neither, every
    column is read unless it is a pandas ``Categorical`` (which only the data
    can tell: this says "read").
    """
    if _is_pair(bounds):
        return ()
    if isinstance(bounds, dict) or isinstance(categories, dict):
        return ()
    declared = [entries for entries in (bounds, categories) if entries is not None]
    n_columns = max((len(entries) for entries in declared), default=0)
    for position in range(n_columns if declared else 1):
        if all(
            position >= len(entries) or entries[position] is None
            for entries in declared
        ):
            return ("bounds", "categories")
    return ()


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


def build_domains(
    columns,
    names,
    *,
    categories,
    bounds,
    n_bins,
    pandas_dtypes,
    missing_values="error",
):
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
    missing_values : {"error", "category"}, dict or list, default="error"
        Which columns have a missing-value code (public).

    Returns
    -------
    domains : list of ColumnDomain
    """
    n_columns = len(columns)
    _check_per_column("categories", categories, n_columns)
    _check_per_column("bounds", bounds, n_columns)
    flags = _missing_flags(missing_values, names)
    domains = []
    for position, (name, values) in enumerate(zip(names, columns, strict=True)):
        dtype = None if pandas_dtypes is None else pandas_dtypes[position]
        missing = flags[position]
        absent = is_missing(values)
        if absent.any() and not missing:
            _refuse_missing(name)
        present = values[~absent] if absent.any() else values
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
            if is_missing(np.array(declared, dtype=object)).any():
                raise ValueError(
                    f"categories of column {name!r} include a missing value "
                    f"({declared!r}); list the values only and declare "
                    "missing_values='category' for the column instead."
                )
            domains.append(
                ColumnDomain(
                    name,
                    categories=declared,
                    dtype=dtype,
                    pandas_categorical=is_pandas_categorical,
                    missing=missing,
                )
            )
            continue
        column_bounds = bounds if _is_pair(bounds) else _lookup(bounds, name, position)
        numeric = values.dtype.kind in "biuf"
        if column_bounds is None and not numeric:
            found = tuple(sorted(set(_plain(list(present))), key=repr))
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
            if not found:
                raise ValueError(
                    f"Column {name!r} has no declared categories and no value "
                    "to read them from; declare its categories."
                )
            domains.append(
                ColumnDomain(name, categories=found, dtype=dtype, missing=missing)
            )
            continue
        if getattr(dtype, "kind", None) in ("M", "m") or values.dtype.kind in "Mm":
            raise ValueError(
                f"Column {name!r} holds dates or durations; convert it to numbers "
                "(e.g. days since a public reference date) and give its bounds, "
                "or declare it categorical."
            )
        values = _numeric(present, name)
        if column_bounds is None:
            if values.size == 0:
                raise ValueError(
                    f"Column {name!r} has no bounds and no value to read them "
                    "from; give bounds={column: (low, high)}."
                )
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
        domains.append(ColumnDomain(name, edges=edges, dtype=dtype, missing=missing))
    return domains


def _numeric(values, name) -> np.ndarray:
    """The column (missing values removed) as finite floats, or a ValueError
    (before any charge)."""
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
            f"Column {name!r} holds infinite values, which the synthesizer does "
            "not model; clip them to the column's bounds or drop them."
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
