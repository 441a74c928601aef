"""The one schema of a synthetic table: each column's finite, public domain.

Private synthetic data needs a finite, *public* universe. Each input column
becomes a discrete attribute with a known number of values:

* a categorical column keeps its declared categories (a pandas
  ``Categorical`` dtype's categories, or ``categories=``);
* a numeric column with public ``bounds=(low, high)`` is cut into ``n_bins``
  equal-width bins.

Encoding maps every value to a code ``0 .. size - 1``; it never fails on
values the schema has checked (numeric values are clipped into the end
bins, unknown categories are counted in the first category unless the
front end refuses them). Decoding draws a value for each code: the category
itself, or a uniform value inside the bin.

**Missing values** (``None``, NaN, ``pandas.NA``, ``NaT``) are a value of
their own in a column *declared* to have them (``missing_values="category"``
for every column, or per column): one more code, the last, which decodes to
NaN (numeric columns and numeric categories) or ``None``. Whether a column
has that code is part of the public schema, like its categories: it is never
read from whether the data happen to hold a missing value, because that fact
is private (a neighbouring data set may differ in exactly that row) and the
code changes the model's shape, the output's format and every marginal. A
missing value in a column *not* declared so is refused before the charge.

**One schema for every front end.** :class:`~skdp.PMWSynthesizer` (in
memory and on dask), :class:`~skdp.synthesis.OnlinePMW` and
``python -m skdp synthesize`` read their columns through this module:

1. :func:`declare_columns` turns the public parameters and the table's
   metadata (column names and dtypes, never values) into one
   :class:`ColumnSpec` per column: its declared domain, or which domain
   (categories or bounds) is to be read from the data. Every problem with
   the parameters is refused here.
2. :func:`inspect_block` summarises a block of rows column by column
   (:class:`ColumnSummary`): the problems it holds (a missing value where
   none is declared, a value of a numeric column that is not a number, an
   infinity, a value no look-up can place and, where the front end refuses
   them, values outside the declared categories) and what inference reads
   (the smallest and largest number, the distinct values up to a cap).
   Summaries merge, so one pass over the blocks of a row source (in memory
   or on dask, :func:`inspect_rows`) or over a file's chunks summarises the
   table.
3. :func:`resolve_domains` refuses the problems, with the same messages
   whatever holds the rows, and completes the domains: those not declared
   are read from the summaries (:func:`infer_categories`,
   :func:`infer_bounds`) with a :class:`~skdp.exceptions.PrivacyLeakWarning`.
4. :func:`encode_rows` gives the codes of a block of rows;
   :meth:`ColumnDomain.decode` and :func:`decode_rows` turn codes into
   values and rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Literal, TypeAlias

import numpy as np

from ..utils._dask import is_dask_collection
from ..utils._numbers import non_number_cells
from ..utils._privacy import warn_data_derived
from ..utils._row_source import RowSource, row_source
from ..utils._sklearn_compat import validate_data

__all__ = [
    "MAX_DATA_CATEGORIES",
    "ColumnDomain",
    "ColumnSpec",
    "ColumnSummary",
    "SchemaError",
    "Table",
    "binned_domain",
    "check_categories",
    "code_dtype",
    "decode_rows",
    "declare_columns",
    "encode_rows",
    "infer_bounds",
    "infer_categories",
    "inspect_block",
    "inspect_rows",
    "is_missing",
    "read_table",
    "resolve_domains",
    "sorted_categories",
    "warn_read_from_data",
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


class SchemaError(ValueError):
    """An input the schema refuses, before any charge.

    ``reason`` names the problem (``"missing"``, ``"unlisted"``,
    ``"not_number"``, ``"infinite"``, ``"too_many"``, ``"no_values"``) and
    ``column`` the column, so that a front end with parameters of its own
    (``OnlinePMW``'s ``domain``, the command's options) can word it.
    """

    def __init__(self, message, *, reason, column):
        super().__init__(message)
        self.reason = reason
        self.column = column


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

    def encode(self, values, unknown: int = 0) -> np.ndarray:
        """Codes ``0 .. size - 1`` of ``values``; never raises on unknowns.

        A value outside the categories gets the code ``unknown`` (0, the
        first category; -1 marks them for a check). Missing values get the
        last code when the column declares one (the caller has refused them
        otherwise). A categorical column refuses unhashable values
        (``TypeError``), which no look-up can place.
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
            return np.where(ordered[position] == values, order[position], unknown)
        if self.categories is not None:
            lookup = {value: code for code, value in enumerate(self.categories)}
            plain = _plain(values)
            try:
                codes = np.fromiter(
                    map(lookup.get, plain, itertools.repeat(unknown, len(plain))),
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


def sorted_categories(values) -> tuple:
    """Categories read from the data, in their natural order.

    Numbers by value and text alphabetically; values that do not compare
    with each other (mixed types) by their ``repr``.

    Examples
    --------
    >>> from skdp.synthesis._schema import sorted_categories
    >>> sorted_categories({10, 9, 1})
    (1, 9, 10)
    >>> sorted_categories({"b", 2, "a"})
    ('a', 'b', 2)
    """
    try:
        return tuple(sorted(values))
    except TypeError:
        return tuple(sorted(values, key=repr))


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
    >>> from skdp.synthesis._schema import is_missing
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
    flat = values.ravel()
    if not any(map(_may_be_missing, set(map(type, flat)))):
        # Objects of types that are never missing (text, integers): one
        # look at their types instead of one at each value.
        return np.zeros(values.shape, dtype=bool)
    return np.fromiter(
        (_missing_scalar(v) for v in flat), dtype=bool, count=values.size
    ).reshape(values.shape)


def _may_be_missing(kind) -> bool:
    """Whether a value of type ``kind`` may be missing (:func:`_missing_scalar`)."""
    return (
        kind is type(None)
        or issubclass(kind, float | np.floating)
        or kind.__name__ in ("NAType", "NaTType")
    )


# -- the public parameters, column by column ------------------------------------


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
    raise SchemaError(
        f"Column {name!r} holds missing values (None or NaN), and missing_values "
        "does not declare them for it. Declare missing_values='category' (or "
        "{column: 'category'}) to model them as a value of their own, or fill "
        "or drop them. Whether a column may be missing is public schema, like "
        "its categories: it is not read from the data.",
        reason="missing",
        column=name,
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


_MISSING_HINT = " and declare missing_values='category' for the column instead"


def check_categories(values, what, *, missing_hint=_MISSING_HINT) -> tuple:
    """Declared categories as a tuple of Python values, or a ValueError.

    ``what`` names them in the message (``"categories of column 'a'"``).
    """
    declared = tuple(_plain(list(values)))
    if len(declared) == 0 or len(set(declared)) != len(declared):
        raise ValueError(f"{what} must be non-empty and distinct, got {declared!r}.")
    if is_missing(np.array(declared, dtype=object)).any():
        raise ValueError(
            f"{what} include a missing value ({declared!r}); list the values "
            f"only{missing_hint}."
        )
    return declared


def _check_bounds(name, column_bounds):
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
    return low, high


def binned_domain(name, low, high, n_bins, *, dtype=None, missing=False):
    """``n_bins`` equal-width bins over ``[low, high]``, or a ValueError.

    Refuses a range that an integer ``dtype`` cannot hold (synthetic values
    would wrap around) or that float64 cannot cut into ``n_bins`` bins.
    """
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
    return ColumnDomain(name, edges=edges, dtype=dtype, missing=missing)


def value_kind(dtype) -> str:
    """The numpy kind of a column's values as the schema reads them.

    A numpy dtype is its own; pandas' nullable numbers are read as floats
    (NaN for missing values), every other pandas dtype (nullable booleans,
    text, categories) as objects.
    """
    if isinstance(dtype, np.dtype):
        return dtype.kind
    kind = getattr(dtype, "kind", "O")
    if getattr(dtype, "name", None) != "category" and kind in "iuf":
        return "f"
    if kind in "cmM":
        return kind
    return "O"


def _known_categories(dtype) -> bool:
    """A pandas Categorical dtype whose categories are known (dask may not
    know them: its metadata then holds a placeholder)."""
    if getattr(dtype, "name", None) != "category":
        return False
    categories = getattr(dtype, "categories", None)
    return categories is not None and "__UNKNOWN_CATEGORIES__" not in list(categories)


@dataclass(frozen=True)
class ColumnSpec:
    """What the public parameters and metadata say of one column.

    Attributes
    ----------
    name : str or int
    domain : ColumnDomain or None
        The declared domain; ``None`` when it is read from the data.
    numeric : bool
        Binned (bounds declared or read), else categorical.
    dtype : object
        The column's dtype (pandas), or None.
    missing : bool
        Whether the column has a missing-value code.
    unknown : {"first", "error"}
        Values outside declared categories: counted in the first category,
        or refused.
    hashable : bool
        The dtype holds hashable values only (pandas ``Categorical``).
    plain_integers : bool
        The dtype holds numpy integers or booleans only: no missing value,
        no infinity, no text, nothing unhashable.
    """

    name: object
    domain: ColumnDomain | None
    numeric: bool
    dtype: object = None
    missing: bool = False
    unknown: str = "first"
    hashable: bool = False
    plain_integers: bool = False

    @classmethod
    def of(cls, domain):
        """The spec of a fitted domain (to check new rows against it)."""
        return cls(
            domain.name,
            domain,
            numeric=domain.categories is None,
            dtype=domain.dtype,
            missing=domain.missing,
            hashable=domain.pandas_categorical,
        )

    @property
    def needs_values(self) -> bool:
        """Whether the values must be read: to check them, or to infer."""
        return self.domain is None or self.unknown == "error" or not self.plain_integers


def declare_columns(
    names,
    dtypes,
    *,
    categories,
    bounds,
    n_bins,
    missing_values="error",
    array_kind=None,
    all_numeric=False,
    unknown="first",
) -> list[ColumnSpec]:
    """The :class:`ColumnSpec` of every column; reads no value.

    Parameters
    ----------
    names : list
        Column names (DataFrames) or positions (arrays).
    dtypes : list or None
        Each column's dtype (DataFrames), or None (arrays).
    categories, bounds : dict, list or None
        The estimator's parameters.
    n_bins : int
        Bins of numeric columns.
    missing_values : {"error", "category"}, dict or list, default="error"
        Which columns have a missing-value code (public).
    array_kind : str or None
        The numpy kind of an array's values (arrays only).
    all_numeric : bool, default=False
        Every column without declared categories is numeric, whatever its
        dtype (an array fitted without ``categories``).
    unknown : {"first", "error"}, default="first"
        What becomes of values outside declared categories.

    Returns
    -------
    specs : list of ColumnSpec
    """
    n_columns = len(names)
    _check_per_column("categories", categories, n_columns)
    _check_per_column("bounds", bounds, n_columns)
    flags = _missing_flags(missing_values, names)
    specs = []
    for position, name in enumerate(names):
        dtype = None if dtypes is None else dtypes[position]
        kind = array_kind if dtypes is None else value_kind(dtype)
        plain = dtypes is None or isinstance(dtype, np.dtype)
        column = {
            "dtype": dtype,
            "missing": flags[position],
            "unknown": unknown,
            "plain_integers": plain and kind in "biu",
        }
        declared = _lookup(categories, name, position)
        is_pandas_categorical = getattr(dtype, "name", None) == "category"
        if declared is None and _known_categories(dtype):
            declared = list(dtype.categories)
        if declared is not None:
            declared = check_categories(declared, f"categories of column {name!r}")
            domain = ColumnDomain(
                name,
                categories=declared,
                dtype=dtype,
                pandas_categorical=is_pandas_categorical,
                missing=flags[position],
            )
            specs.append(
                ColumnSpec(
                    name, domain, False, hashable=is_pandas_categorical, **column
                )
            )
            continue
        column_bounds = bounds if _is_pair(bounds) else _lookup(bounds, name, position)
        numeric = all_numeric or kind in "biuf"
        if column_bounds is None and not numeric:
            specs.append(ColumnSpec(name, None, False, **column))  # categories read
            continue
        if kind in "mM":
            raise ValueError(
                f"Column {name!r} holds dates or durations; convert it to numbers "
                "(e.g. days since a public reference date) and give its bounds, "
                "or declare it categorical."
            )
        if column_bounds is None:
            specs.append(ColumnSpec(name, None, True, **column))  # bounds read
            continue
        low, high = _check_bounds(name, column_bounds)
        domain = binned_domain(
            name, low, high, n_bins, dtype=dtype, missing=flags[position]
        )
        specs.append(ColumnSpec(name, domain, True, **column))
    return specs


# -- what a block of rows holds ---------------------------------------------------


@dataclass
class ColumnSummary:
    """What the values of one column hold: problems, and what inference reads.

    Built block by block (:func:`inspect_block`, or the ``observe_*``
    methods on a file's chunks) and merged (:meth:`merge`); it keeps a
    bounded summary, never the values.

    Attributes
    ----------
    missing : bool
        A missing value (None, NaN, pandas.NA, NaT).
    not_number : bool
        A value of a numeric column that is not a number (text included).
    not_number_type : str or None
        For a value that is neither a number nor text (a dict, say), what
        converting it said (its type, never its value).
    infinite : bool
        An infinite number.
    unhashable : bool
        A value no look-up can place (a list, an array).
    unlisted : bool
        A value outside the declared categories (checked when refused).
    low, high : float
        Smallest and largest finite number seen (numeric columns).
    n_numbers : int
        Numbers seen, finite or not (numeric columns).
    distinct : set or None
        Distinct values seen (categorical columns read from the data);
        ``None`` once more than the cap were seen.
    """

    missing: bool = False
    not_number: bool = False
    not_number_type: str | None = None
    infinite: bool = False
    unhashable: bool = False
    unlisted: bool = False
    low: float = math.inf
    high: float = -math.inf
    n_numbers: int = 0
    distinct: set | None = field(default_factory=set)

    def observe_numbers(self, values) -> None:
        """Numbers (present values only): range, infinities, non-numbers."""
        if isinstance(values, np.ndarray) and values.dtype.kind in "SU":
            self.not_number = True  # text is not numbers, even if it parses
            return
        if isinstance(values, np.ndarray) and values.dtype == object:
            found = non_number_cells(values)  # numpy would read them as numbers
            if found is not None:
                self.not_number = True
                return
        try:
            numbers = np.asarray(values, dtype=float)
        except ValueError:  # text that is no number
            self.not_number = True
            return
        except TypeError as error:  # an object that is neither
            self.not_number = True
            self.not_number_type = self.not_number_type or str(error)
            return
        self.n_numbers += numbers.size
        finite = np.isfinite(numbers)
        if not finite.all():
            self.infinite = True
            numbers = numbers[finite]
        if numbers.size:
            self.low = min(self.low, float(numbers.min()))
            self.high = max(self.high, float(numbers.max()))

    def observe_distinct(self, values, cap) -> None:
        """Distinct values (present values only), while at most ``cap``."""
        if self.distinct is None:
            return
        try:
            self.distinct.update(_plain(values))
        except TypeError:
            self.unhashable = True
            return
        if len(self.distinct) > cap:
            self.distinct = None

    def observe_listed(self, values, domain, *, refuse_unknown, hashable=False):
        """Values of declared categories (present values only); their codes.

        Returns the codes (``-1`` for a value outside the categories), or
        ``None`` when they are not needed: the dtype guarantees hashable
        values and unknown values are not refused.
        """
        if not refuse_unknown and (hashable or domain.vectorized(values)):
            return None
        try:
            codes = domain.encode(values, unknown=-1)
        except TypeError:
            self.unhashable = True
            return None
        if refuse_unknown and (codes < 0).any():
            self.unlisted = True
        return codes

    def merge(self, other: ColumnSummary, cap: int) -> ColumnSummary:
        """The summary of both blocks."""
        distinct = None
        if self.distinct is not None and other.distinct is not None:
            distinct = self.distinct | other.distinct
            if len(distinct) > cap:
                distinct = None
        return ColumnSummary(
            self.missing or other.missing,
            self.not_number or other.not_number,
            self.not_number_type or other.not_number_type,
            self.infinite or other.infinite,
            self.unhashable or other.unhashable,
            self.unlisted or other.unlisted,
            min(self.low, other.low),
            max(self.high, other.high),
            self.n_numbers + other.n_numbers,
            distinct,
        )


def _column(block, j, dtype):
    """Column ``j`` of a block of rows, in its column's dtype when it has one.

    A DataFrame's block holds objects when its columns' dtypes differ
    (``to_numpy`` boxes each value); a column whose dtype is a plain numpy
    number or boolean gets it back (exactly: the values came from it), so
    that it is checked and encoded without a Python loop.
    """
    values = block[:, j]
    if values.dtype == object and isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return values.astype(dtype)
    return values


def inspect_block(block, _, specs, cap=MAX_DATA_CATEGORIES) -> list[ColumnSummary]:
    """The :class:`ColumnSummary` of each column of a block of rows.

    A block function of a row source (``block`` is a 2-D NumPy array, one
    column per spec): run by the workers on dask, it returns summaries only.
    """
    summaries = []
    for j, spec in enumerate(specs):
        values = _column(block, j, spec.dtype)
        summary = ColumnSummary()
        summaries.append(summary)
        if not spec.needs_values:
            continue
        absent = is_missing(values)
        summary.missing = bool(absent.any())
        present = values[~absent] if summary.missing else values
        if spec.domain is not None and spec.domain.categories is not None:
            summary.observe_listed(
                present,
                spec.domain,
                refuse_unknown=spec.unknown == "error",
                hashable=spec.hashable,
            )
        elif spec.numeric:
            summary.observe_numbers(present)
        else:
            summary.observe_distinct(present, cap)
    return summaries


def inspect_rows(rows: RowSource, specs, cap=MAX_DATA_CATEGORIES):
    """One pass over the blocks of ``rows``: each column's summary.

    Skipped (empty summaries) when no column needs its values read: every
    domain declared and held in plain numpy integers.
    """
    if not any(spec.needs_values for spec in specs):
        return [ColumnSummary() for _ in specs]
    per_block = rows.block_map(inspect_block, tuple(specs), cap)
    merged = per_block[0]
    for block in per_block[1:]:
        merged = [a.merge(b, cap) for a, b in zip(merged, block, strict=True)]
    return merged


# -- the domains ---------------------------------------------------------------

#: What a domain read from the data reveals, by the kind of domain.
_LEAKED = {
    "categories": "which values occur in that column",
    "bounds": "the smallest and largest value of that column",
}


def warn_read_from_data(kind, what, fix, *, stacklevel=None) -> None:
    """The :class:`~skdp.exceptions.PrivacyLeakWarning` of a domain read from
    the data: its ``kind`` ("categories" or "bounds"), named ``what`` as the
    front end's parameter, with the ``fix``."""
    warn_data_derived(what, _LEAKED[kind], fix, stacklevel=stacklevel)


def _warn_column(kind, name):
    """The synthesizers' wording of a domain read from the data."""
    if kind == "categories":
        fix = (
            "pass categories={column: [...]} or use a pandas Categorical "
            "dtype with declared categories"
        )
    else:
        fix = "pass bounds={column: (low, high)} from public knowledge"
    warn_read_from_data(kind, f"{kind} of column {name!r}", fix)


def infer_categories(summary: ColumnSummary) -> tuple:
    """Categories read from the data: the distinct values, sorted
    (:func:`sorted_categories`). The caller has refused too many or none."""
    return sorted_categories(summary.distinct)


def infer_bounds(summary: ColumnSummary, *, integer=False) -> tuple[float, float]:
    """Bounds read from the data: the smallest and largest number, whole
    numbers outward if ``integer``, widened by 0.5 each way if equal."""
    low, high = summary.low, summary.high
    if integer:
        low, high = math.floor(low), math.ceil(high)
    if not high > low:
        low, high = low - 0.5, high + 0.5
    return float(low), float(high)


def resolve_domains(
    specs, summaries, *, n_bins, cap=MAX_DATA_CATEGORIES, warn=_warn_column
) -> list[ColumnDomain]:
    """Every column's domain; refuses what the summaries found, before any charge.

    Column by column: a missing value where none is declared; for a
    categorical column a value no look-up can place or (when refused) one
    outside the declared categories; for a numeric column a value that is
    not a number or is infinite. A domain not declared is read from the
    summary, after ``warn(kind, name)`` (a
    :class:`~skdp.exceptions.PrivacyLeakWarning`): categories from at most
    ``cap`` distinct values, bounds from the smallest and largest number.
    """
    domains = []
    for spec, summary in zip(specs, summaries, strict=True):
        name = spec.name
        if summary.missing and not spec.missing:
            _refuse_missing(name)
        if summary.unhashable:
            _refuse_unhashable(name)
        if not spec.numeric:
            if summary.unlisted:
                raise SchemaError(
                    f"Column {name!r} holds values outside its declared "
                    "categories; nothing was charged.",
                    reason="unlisted",
                    column=name,
                )
            if spec.domain is not None:
                domains.append(spec.domain)
                continue
            warn("categories", name)
            if summary.distinct is None:
                raise SchemaError(
                    f"Column {name!r} has no declared categories and more than "
                    f"{cap} distinct values; reading them from the "
                    "data would publish the column's raw values in the synthetic "
                    "rows. Declare its public categories (categories={column: "
                    "[...]}), or, if it is numeric, convert it to numbers and "
                    "give bounds={column: (low, high)}.",
                    reason="too_many",
                    column=name,
                )
            if not summary.distinct:
                raise SchemaError(
                    f"Column {name!r} has no declared categories and no value "
                    "to read them from; declare its categories.",
                    reason="no_values",
                    column=name,
                )
            domains.append(
                ColumnDomain(
                    name,
                    categories=infer_categories(summary),
                    dtype=spec.dtype,
                    missing=spec.missing,
                )
            )
            continue
        if summary.not_number:
            message = (
                f"Column {name!r} is numeric (it has bounds or a numeric dtype, "
                "or the array declares no categories) but holds values that are "
                "not numbers; declare its categories instead, or clean the column."
            )
            if summary.not_number_type is not None:
                # Neither numbers nor text (numpy's TypeError, which names
                # the type only).
                raise TypeError(f"{message} ({summary.not_number_type})")
            raise SchemaError(message, reason="not_number", column=name)
        if summary.infinite:
            raise SchemaError(
                f"Column {name!r} holds infinite values, which the synthesizer "
                "does not model; clip them to the column's bounds or drop them.",
                reason="infinite",
                column=name,
            )
        if spec.domain is not None:
            domains.append(spec.domain)
            continue
        if summary.n_numbers == 0:
            raise SchemaError(
                f"Column {name!r} has no bounds and no value to read them "
                "from; give bounds={column: (low, high)}.",
                reason="no_values",
                column=name,
            )
        low, high = infer_bounds(summary)
        warn("bounds", name)
        domains.append(
            binned_domain(
                name, low, high, n_bins, dtype=spec.dtype, missing=spec.missing
            )
        )
    return domains


# -- the table a synthesizer reads ------------------------------------------------


def is_dataframe(X) -> bool:
    """A pandas or dask DataFrame (recognised without importing either)."""
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


@dataclass
class Table:
    """A table's public schema and its rows.

    Attributes
    ----------
    names : list
        Column names (DataFrames) or positions (arrays).
    dtypes : list or None
        Each column's dtype (DataFrames).
    array_kind : str or None
        The numpy kind of an array's values (arrays).
    rows : RowSource
        The rows, in memory or on dask.
    pandas : bool
        The input was a DataFrame (rows come back as one).
    """

    names: list
    dtypes: list | None
    array_kind: str | None
    rows: RowSource
    pandas: bool

    @property
    def n_samples(self) -> int:
        return self.rows.n_samples


def read_table(estimator, X, *, reset=True) -> Table:
    """Validate the table's shape and schema (setting ``n_features_in_``).

    Reads metadata only (names, dtypes, number of rows) the same way for a
    NumPy array, a pandas DataFrame and a dask array or DataFrame; the
    values are checked by :func:`inspect_rows`. Refuses empty tables and
    complex numbers.
    """
    who = type(estimator).__name__
    dask = is_dask_collection(X)
    if is_dataframe(X):
        meta = X._meta if dask else X
        validate_data(estimator, meta, skip_check_array=True, reset=reset)
        names, dtypes, array_kind = list(meta.columns), list(meta.dtypes), None
        kinds = [value_kind(dtype) for dtype in dtypes]
    else:
        if getattr(getattr(X, "dtype", None), "kind", None) == "c":
            raise ValueError("Complex data not supported.")
        if dask:
            if X.ndim != 2:
                raise ValueError(
                    f"Expected a 2-D dask array, got {X.ndim} dimension(s); "
                    "reshape your data (one row per individual)."
                )
            validate_data(estimator, X, skip_check_array=True, reset=reset)
        else:
            X = validate_data(
                estimator, X, dtype=None, ensure_all_finite=False, reset=reset
            )
        names, dtypes, array_kind = list(range(X.shape[1])), None, X.dtype.kind
        kinds = [array_kind]
    if not names:
        raise ValueError(
            f"Found array with 0 feature(s) while a minimum of 1 is required by {who}."
        )
    if "c" in kinds:
        raise ValueError("Complex data not supported.")
    rows = row_source(X)
    if rows.n_samples < 1:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={(0, len(names))}) while a "
            f"minimum of 1 is required by {who}."
        )
    return Table(names, dtypes, array_kind, rows, dtypes is not None)


# -- codes ---------------------------------------------------------------------


def code_dtype(domains) -> np.dtype:
    """The narrowest unsigned integer dtype that holds every column's codes."""
    return np.min_scalar_type(max([domain.size for domain in domains] + [1]) - 1)


def encode_rows(block, domains) -> np.ndarray:
    """Codes of a block of rows, shape ``(n_rows, n_columns)``, in :func:`code_dtype`.

    ``block`` is a 2-D array (one column per domain) whose values the
    schema has checked, so this cannot fail. One byte a cell for domains of
    at most 256 values.
    """
    codes = np.empty((block.shape[0], len(domains)), dtype=code_dtype(domains))
    for j, domain in enumerate(domains):
        codes[:, j] = domain.encode(_column(block, j, domain.dtype))
    return codes


def decode_rows(codes, domains, pandas, rng):
    """Rows for a matrix of codes, in the output format of the domains.

    A DataFrame with the input's columns and dtypes if ``pandas``, else an
    array: float64 when every column is numeric, objects otherwise. The
    format follows the domains (public), never the draws.
    """
    n_samples = codes.shape[0]
    values = [domain.decode(codes[:, j], rng) for j, domain in enumerate(domains)]
    if pandas:
        return _as_frame(values, domains)
    if all(domain.numeric for domain in domains):
        return np.column_stack([np.asarray(v, dtype=float) for v in values]).reshape(
            n_samples, len(values)
        )
    out = np.empty((n_samples, len(values)), dtype=object)
    for j, v in enumerate(values):
        out[:, j] = v
    return out


def _as_frame(values, domains):
    import pandas as pd

    data = {}
    for domain, column in zip(domains, values, strict=True):
        dtype = domain.dtype
        if domain.pandas_categorical:
            data[domain.name] = pd.Categorical(
                column, categories=dtype.categories, ordered=dtype.ordered
            )
        elif domain.missing and getattr(dtype, "kind", None) in ("i", "u"):
            # A column declared to have missing values is sampled in the
            # nullable counterpart of its integer dtype, whatever the draws.
            name = dtype.name  # "int64" -> "Int64", "uint8" -> "UInt8"
            if isinstance(dtype, np.dtype):
                name = "U" + name[1:].capitalize() if name[0] == "u" else name.title()
            nullable = pd.api.types.pandas_dtype(name)
            data[domain.name] = pd.Series(column, dtype=float).astype(nullable)
        else:
            try:
                data[domain.name] = pd.Series(column).astype(dtype)
            except (TypeError, ValueError):
                data[domain.name] = pd.Series(column)
    return pd.DataFrame(data, columns=[d.name for d in domains])
