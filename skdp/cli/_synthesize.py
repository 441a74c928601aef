"""``python -m skdp synthesize``: a private synthetic copy of a CSV file.

The file is read with the standard library (pandas is not needed). Text
columns, and columns named with ``--categorical``, are categorical: they are
encoded as integer codes over their public list of values (``--categories``)
before the synthesizer sees them, and decoded afterwards. Numeric columns
are passed with their public range (``--bounds``). Where a list or a range
is not given, it is read from the data with a
:class:`~skdp.exceptions.PrivacyLeakWarning`, or refused with ``--strict``.

The file is never held in memory: it is read a chunk of rows at a time,
once to check every cell, summarise each column (its range, or its distinct
values up to ``--max-categories``) and encode the columns whose domain the
options give, and a second time, only if a list or range was read from the
data, to encode the other columns. The synthesizer is fitted on the cells'
integer codes (one byte a cell for domains of at most 256 values or bins),
and the synthetic rows are sampled, decoded and written a chunk at a time.

Each column's summary, the lists and ranges read from the data, the
encoding of cells and the decoding of codes are the synthesizers' own
schema (:mod:`skdp.synthesis._schema`); what is specific to a CSV file
(which columns hold numbers, empty cells, the text of a cell) is here.

The command releases nothing but the noise: every problem with the file or
the options is found before ``PMWSynthesizer.fit`` charges the budget, and
what leaves the run after it (the file, its format, messages) depends on
the data only through the fitted, noisy model. The output format of each
column is fixed from the options before the fit, never from the values.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import io
import itertools
import math
import os
import shutil
import tempfile
from numbers import Integral, Real
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .synthesis._schema import (
    ColumnDomain,
    ColumnSummary,
    binned_domain,
    check_categories,
    code_dtype,
    infer_bounds,
    infer_categories,
    warn_read_from_data,
)

__all__ = [
    "Bounds",
    "CommandLineError",
    "OutputError",
    "number",
    "parse_bounds",
    "parse_categories",
    "synthesize_csv",
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
# Synthetic cells sampled, decoded and written at a time: memory stays
# bounded whatever --n-samples is.
_CHUNK_CELLS = 10**6
# Rows of the input read, checked and encoded at a time: the text of one
# chunk is all the command holds of the file's text.
_READ_ROWS = 2**16


class CommandLineError(Exception):
    """A problem with the command's input, reported as a usage error.

    Raised before the privacy budget is charged: nothing has been spent.
    """


class OutputError(Exception):
    """Writing the synthetic file failed after the budget was charged."""


# -- argument types ----------------------------------------------------------
def number(text):
    """``argparse`` type: a float (its range is checked by :func:`synthesize_csv`)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def whole_number(text):
    """``argparse`` type: an int (its range is checked by :func:`synthesize_csv`)."""
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


# -- reading -----------------------------------------------------------------
class _CsvFile:
    """The input file, read a chunk of rows at a time; never whole.

    Opened as ``utf-8-sig``: spreadsheet programs often start the file with
    a byte order mark, which would otherwise become part of the first
    column's name. Blank lines are skipped; every other row must have as
    many fields as the header. Problems become a :class:`CommandLineError`
    naming the row (counted without blank lines, the header being row 1).
    """

    def __init__(self, path):
        self.path = path
        with self._reading() as reader:
            header = next((row for row in reader if row), None)
            has_data = header is not None and any(row for row in reader)
        if header is None:
            raise CommandLineError(f"{path} is empty: expected a header row and data")
        if any(not name.strip() for name in header):
            raise CommandLineError(f"{path}: the header row has an empty column name")
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise CommandLineError(f"{path}: repeated column names {repeated}")
        if not has_data:
            raise CommandLineError(f"{path} has a header but no data rows")
        self.header = header

    @contextlib.contextmanager
    def _reading(self):
        path = self.path
        try:
            with open(path, encoding="utf-8-sig", newline="") as handle:
                yield csv.reader(handle)
        except UnicodeDecodeError:
            raise CommandLineError(f"{path} is not a UTF-8 text file") from None
        except csv.Error as error:
            raise CommandLineError(f"{path} is not a valid CSV file: {error}") from None
        except OSError as error:
            raise CommandLineError(f"cannot read {path}: {error.strerror}") from None
        except MemoryError:
            raise CommandLineError(f"{path}: a row is too large to read") from None

    def chunks(self):
        """``(first row, columns)`` per chunk: ``columns[j]`` is a tuple of cells.

        The cyclic garbage collector is paused while the chunks are read:
        rows of strings hold no cycles, and rescanning the chunk's
        hundreds of thousands of objects took a third of the reading time.
        """
        width = len(self.header)
        with self._reading() as reader, _cyclic_gc_paused():
            next(row for row in reader if row)  # the header
            line = 2
            rows = filter(None, reader)  # blank lines are no rows
            while chunk := list(itertools.islice(rows, _READ_ROWS)):
                if set(map(len, chunk)) != {width}:
                    offset, row = next(
                        (i, r) for i, r in enumerate(chunk) if len(r) != width
                    )
                    raise CommandLineError(
                        f"{self.path}, row {line + offset}: {len(row)} "
                        f"fields, but the header has {width}"
                    )
                yield line, list(zip(*chunk))
                line += len(chunk)


@contextlib.contextmanager
def _cyclic_gc_paused():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_numbers(cells):
    """A chunk of one column's cells as floats, or None if one holds text.

    Returns ``(numbers, empty)``: ``empty`` marks the empty cells (their
    number is NaN), or is None if there are none. Cells such as ``nan``,
    ``inf`` or ``1e400`` (which ``float`` reads as infinity) stay NaN or
    infinite; the caller refuses both.
    """
    try:
        return np.fromiter(map(float, cells), dtype=float, count=len(cells)), None
    except ValueError:
        pass
    numbers = np.empty(len(cells))
    empty = np.zeros(len(cells), dtype=bool)
    for position, text in enumerate(cells):
        if not text.strip():
            numbers[position] = np.nan
            empty[position] = True
            continue
        try:
            numbers[position] = float(text)
        except ValueError:
            return None, None
    return numbers, empty


class _Column:
    """One column: what the options say of it, then what the first pass saw.

    The pass keeps the synthesizers' bounded summary of the column
    (:class:`~skdp.synthesis._schema.ColumnSummary`), never the values: for
    a numeric column its smallest and largest value and whether any cell
    was empty or not finite; for a column that may hold text, its distinct
    values up to ``max_categories + 1``; for a declared list, whether a
    value is missing from it. A column whose domain the options give
    (``--categories``, or ``--bounds``) is also encoded in that pass.
    """

    def __init__(self, name, *, categorical, categories, bounds, integer, cap):
        self.name = name
        self.categories = categories  # declared list, or None
        self.bounds = bounds  # declared Bounds, or None
        self.integer = integer  # --integer given
        # "categorical" (named so), "numeric" (given a range or --integer),
        # or "auto": text or numbers, as the file says.
        if categorical or categories is not None:
            self.role = "categorical"
        elif bounds is not None or integer:
            self.role = "numeric"
        else:
            self.role = "auto"
        self.cap = cap
        # Empty cells of a numeric column are its missing values.
        self.summary = ColumnSummary()
        self.text = False  # a cell is not a number
        self.domain = None  # its ColumnDomain, when the options give it

    def observe(self, cells, codes):
        """Update the summary with a chunk of cells; encode them if declared."""
        summary = self.summary
        if self.role == "categorical" and self.categories is not None:
            listed = summary.observe_listed(cells, self.domain, refuse_unknown=True)
            codes[:] = np.maximum(listed, 0)  # an unlisted value is refused
            return
        if self.role != "numeric":
            summary.observe_distinct(cells, self.cap)
        if self.role == "categorical" or self.text:
            return
        numbers, empty = _parse_numbers(cells)
        if numbers is None:
            self.text = True
            return
        if empty is not None:
            summary.missing = True
            numbers = numbers[~empty]
        summary.observe_numbers(numbers)
        if self.domain is not None and empty is None and np.isfinite(numbers).all():
            codes[:] = self.domain.encode(numbers)  # else refused after the pass

    @property
    def is_text(self):
        """Text: a cell is not a number, or every cell is empty."""
        if self.role == "categorical":
            return True
        return self.text or self.summary.n_numbers == 0


def _columns(header, *, categorical, categories, bounds, integer, max_categories):
    """One :class:`_Column` per header name; option errors from the names only."""
    known = set(header)
    declared_categories = dict(categories)
    declared_bounds = {
        name: _as_bounds(name, value) for name, value in dict(bounds).items()
    }
    categorical, integer = list(categorical), list(integer)
    for option, names in [
        ("--categorical", categorical),
        ("--categories", declared_categories),
        ("--bounds", declared_bounds),
        ("--integer", integer),
    ]:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise CommandLineError(
                f"{option} names unknown column(s) {unknown}; the columns are {header}"
            )
    categorical_names = set(categorical) | set(declared_categories)
    for option, names in [("--bounds", declared_bounds), ("--integer", integer)]:
        both = sorted(set(names) & categorical_names)
        if both:
            raise CommandLineError(
                f"column(s) {both} are given both {option} and categories"
            )
    return [
        _Column(
            name,
            categorical=name in categorical,
            categories=declared_categories.get(name),
            bounds=declared_bounds.get(name),
            integer=name in integer,
            cap=max_categories,
        )
        for name in header
    ]


def _declare_domains(columns, n_bins):
    """Give each column whose domain the options fix its ColumnDomain.

    Returns the dtype of the first pass's codes: the narrowest that holds
    the declared domains and ``n_bins`` (public values only); a longer list
    read from the data widens it after the pass.
    """
    declared = []
    for column in columns:
        if column.categories is not None:
            declared.append(_Domain(column.name, categories=column.categories))
        elif column.bounds is not None:
            whole = _writes_whole_numbers(column.integer, column.bounds)
            declared.append(_Domain(column.name, bounds=column.bounds, integer=whole))
    built = iter(_column_domains(declared, n_bins))
    largest = 1
    for column in columns:
        if column.categories is not None or column.bounds is not None:
            column.domain = next(built)
            largest = max(largest, column.domain.size)
        else:
            largest = max(largest, n_bins)
    return np.min_scalar_type(largest - 1)


def _scan(csv_file, columns, dtype):
    """First pass: every column's summary and the codes of the declared ones.

    The codes of the other columns are filled by :func:`_encode_file` once
    their domain is known. Chunks of codes are joined at the end (for a
    moment, twice the codes' memory).
    """
    blocks = []
    try:
        for _, cells in csv_file.chunks():
            block = np.zeros((len(cells[0]), len(columns)), dtype=dtype)
            for j, (column, column_cells) in enumerate(zip(columns, cells)):
                column.observe(column_cells, block[:, j])
            blocks.append(block)
        return np.concatenate(blocks)
    except MemoryError:
        blocks.clear()
        raise CommandLineError(
            f"{csv_file.path} has too many rows for this machine's memory "
            f"({len(columns)} byte(s) a row or more); nothing was spent: "
            "synthesize from a sample of the rows"
        ) from None


# -- the public domain of each column ------------------------------------------
class _Domain(NamedTuple):
    """What a column becomes: its categories, or its range and format."""

    name: str
    categories: list | None = None
    bounds: Bounds | None = None
    integer: bool = False
    read_from_data: bool = False


def _domains(columns, *, strict):
    """Decide every column's domain from the options and the first pass.

    Every decision that shapes the output file (categorical or numeric,
    whole numbers or decimals) is taken here, before the fit; the output
    format of a numeric column comes from the options only (see
    :func:`_writes_whole_numbers`), never from its values. A list or a
    range not given is read from the pass's summary (warned about by
    :func:`_warn_read_from_data`).
    """
    domains, missing = [], []
    for column in columns:
        name = column.name
        if column.is_text:
            if column.role == "numeric":
                option = "--bounds" if column.bounds is not None else "--integer"
                raise CommandLineError(
                    f"{option} given for column {name!r}, which holds text; "
                    f"give --categories {name}=... instead"
                )
            domains.append(_Domain(name, categories=column.categories))
            if column.categories is None:
                missing.append(f"--categories {name}=...")
            continue
        if column.summary.missing:
            raise CommandLineError(
                f"column {name!r} has empty cells in a numeric column; the "
                "synthesizer does not take missing values: fill them or declare "
                f"the column categorical with --categories {name}=...,"
            )
        if column.summary.infinite:
            raise CommandLineError(
                f"column {name!r} holds numbers and also cells that are not "
                "finite numbers (nan, inf, or beyond the floating-point range); "
                "fix those cells or declare the column categorical with "
                f"--categories {name}=..."
            )
        whole = _writes_whole_numbers(column.integer, column.bounds)
        domains.append(_Domain(name, bounds=column.bounds, integer=whole))
        if column.bounds is None:
            missing.append(f"--bounds {name}=LOW:HIGH")
    if strict and missing:
        raise CommandLineError("--strict: no public domain for " + ", ".join(missing))
    for column in columns:
        # Categories read from the data are the raw values: for a column
        # with many of them the synthetic rows would copy values that only
        # a few people have. Only the comparison with the public cap is
        # data-dependent, and it is reported before any budget is spent.
        too_many = column.summary.distinct is None
        if column.is_text and column.categories is None and too_many:
            name = column.name
            raise CommandLineError(
                f"column {name!r} has more than {column.cap} distinct "
                "values and no public list of them; categories read from the "
                "data would copy its values into the synthetic rows. Give the "
                f"public list with --categories {name}=A,B,..., or, for a "
                f"numeric column, its public range with --bounds "
                f"{name}=LOW:HIGH (and without --categorical {name}); "
                "--max-categories N raises the limit"
            )
    for column in columns:
        if column.summary.unlisted:
            # Neither the values nor their number: both are private.
            raise CommandLineError(
                f"column {column.name!r} holds values that --categories does not "
                f"list; add them to --categories {column.name}=... or clean the file"
            )
    return [_read_from_data(domain, column) for domain, column in zip(domains, columns)]


def _read_from_data(domain, column):
    """The domain, with a list or range not given read from the summary by
    the synthesizers' inference."""
    if domain.categories is None and domain.bounds is None:
        if column.is_text:
            categories = list(infer_categories(column.summary))
            return domain._replace(categories=categories, read_from_data=True)
        low, high = infer_bounds(column.summary, integer=domain.integer)
        return domain._replace(bounds=Bounds(low, high, False), read_from_data=True)
    return domain


def _warn_read_from_data(domains):
    """One PrivacyLeakWarning per list or range read from the data."""
    for domain in domains:
        if not domain.read_from_data:
            continue
        name = domain.name
        if domain.categories is not None:
            what = f"--categories {name}=..."
            fix = f"pass --categories {name}=A,B,... with the public list"
            warn_read_from_data("categories", what, fix, stacklevel=4)
        else:
            what = f"--bounds {name}=LOW:HIGH"
            fix = f"pass --bounds {name}=LOW:HIGH from public knowledge"
            warn_read_from_data("bounds", what, fix, stacklevel=4)


def _writes_whole_numbers(integer, bounds):
    """Whether a numeric column is written as whole numbers; options only.

    Yes if the column is named in ``--integer``, or if its ``--bounds`` are
    both written as whole numbers (``age=0:120``); otherwise, and always
    when the range is read from the data, decimals. The values never
    decide: one value written ``30.5`` instead of ``30`` would otherwise
    change the format of the whole synthetic column.
    """
    return integer or (bounds is not None and bounds.whole)


def _check_whole_numbers_fit(columns):
    """An ``--integer`` column needs a whole number within its ``--bounds``."""
    for column in columns:
        bounds = column.bounds
        if _writes_whole_numbers(column.integer, bounds) and bounds is not None:
            if math.ceil(bounds.low) > math.floor(bounds.high):
                raise CommandLineError(
                    f"--integer {column.name}: no whole number within --bounds "
                    f"{column.name}={bounds.low:g}:{bounds.high:g}"
                )


def _column_domains(domains, n_bins):
    """The synthesizer's :class:`~skdp.synthesis._schema.ColumnDomain` of each.

    Built by the synthesizers' schema from the resolved lists and ranges (so
    it never reads data here): categories in the given order, ``n_bins``
    equal-width bins over a range, and whole-number columns decoded as
    rounded values within ``ceil(LOW)..floor(HIGH)``. A range read from the
    data that cannot be binned is refused without showing it (it is
    private); a declared one is shown.
    """
    built = []
    for domain in domains:
        name = domain.name
        try:
            if domain.categories is not None:
                what = f"categories of column {name!r}"
                categories = check_categories(domain.categories, what)
                column_domain = ColumnDomain(name, categories=categories)
            else:
                low, high = (float(b) for b in domain.bounds[:2])
                dtype = np.dtype(np.int64) if domain.integer else None
                column_domain = binned_domain(name, low, high, n_bins, dtype=dtype)
        except ValueError as error:
            if not domain.read_from_data:
                raise CommandLineError(str(error)) from None
            raise CommandLineError(
                f"column {domain.name!r}: the range read from the data cannot "
                f"be cut into {n_bins} bins of whole or floating-point numbers; "
                f"give its public range with --bounds {domain.name}=LOW:HIGH"
            ) from None
        built.append(column_domain)
    return built


def _file_schema(csv_file, columns, n_bins, *, strict, progress=None):
    """The first pass and every column's domain.

    Returns ``(codes, domains, column_domains)``: the first pass's codes
    (of the columns the options declare), each column's resolved
    :class:`_Domain` and its :class:`~skdp.synthesis._schema.ColumnDomain`.
    """
    dtype = _declare_domains(columns, n_bins)
    codes = _scan(csv_file, columns, dtype)
    rows = f"{len(codes):,} rows, {len(columns)} columns"
    _say(progress, f"read {csv_file.path}: {rows}")
    domains = _domains(columns, strict=strict)
    read = iter(_column_domains([d for d in domains if d.read_from_data], n_bins))
    return codes, domains, [column.domain or next(read) for column in columns]


# -- encoding ----------------------------------------------------------------
def _encode_file(csv_file, codes, column_domains, columns):
    """Second pass: the codes of the columns whose domain came from the data.

    Skipped when the options give every domain. The first pass checked
    every cell; a file that no longer agrees with it (changed since) is
    refused, still before anything is spent.
    """
    todo = [j for j, column in enumerate(columns) if column.domain is None]
    if not todo:
        return
    n_rows, row = len(codes), 0
    for _, cells in csv_file.chunks():
        stop = row + len(cells[0])
        if stop > n_rows:
            raise _changed(csv_file)
        for j in todo:
            domain, column_cells = column_domains[j], cells[j]
            if domain.categories is not None:
                column_codes = domain.encode(column_cells, unknown=-1)
                if (column_codes < 0).any():  # a value the first pass did not see
                    raise _changed(csv_file)
                codes[row:stop, j] = column_codes
                continue
            numbers, empty = _parse_numbers(column_cells)
            if numbers is None or empty is not None or not np.isfinite(numbers).all():
                raise _changed(csv_file)
            codes[row:stop, j] = domain.encode(numbers)
        row = stop
    if row != n_rows:
        raise _changed(csv_file)


def _check_fit_memory(codes):
    """Refuse rows too many for the fit's memory, before it is charged.

    The synthesizer copies the codes and counts each marginal through an
    index of 8 bytes a row (and a few more for its counting).
    """
    from .utils._feasibility import check_memory

    n_rows, n_columns = codes.shape
    try:
        check_memory(
            n_rows * (n_columns * codes.dtype.itemsize + 24),
            f"fitting the synthesizer on {n_rows:,} rows",
            "synthesize from a sample of the rows",
        )
    except MemoryError as error:
        raise CommandLineError(str(error)) from None


def _changed(csv_file):
    return CommandLineError(
        f"{csv_file.path} changed while it was being read; nothing was spent: "
        "run the command again once it is complete"
    )


def _check_marginal_size(column_domains):
    """Refuse domains whose largest marginal would not fit in memory."""
    sizes = sorted((domain.size, domain.name) for domain in column_domains)[-3:]
    cells = math.prod(size for size, _ in sizes)
    if cells > MAX_MARGINAL_CELLS:
        shown = ", ".join(f"{name!r}: {size:,}" for size, name in sizes)
        raise CommandLineError(
            f"the largest marginals would have {cells:,} cells (values or bins "
            f"of the largest columns: {shown}); the command allows at most "
            f"{MAX_MARGINAL_CELLS:,}: lower --n-bins or declare shorter "
            "--categories lists"
        )


# -- writing -----------------------------------------------------------------
class _CellWriter:
    """The text of one synthetic column, from its codes; format fixed before the fit.

    A category is written as the CSV module writes it (quoted when it holds
    a comma, a quote or a line break), prepared once per category; a
    whole-number column as an integer, from a prepared table when its range
    is short; any other numeric column with six significant digits.
    """

    _TABLE_MAX = 2**20

    def __init__(self, domain, only_column):
        self.domain = domain
        self.table = self.low = None
        if domain.categories is not None:
            self.table = np.empty(domain.size, dtype=object)
            for code, category in enumerate(domain.categories):
                self.table[code] = _csv_field(category, only_column)
        elif domain.integer:
            low, high = math.ceil(domain.edges[0]), math.floor(domain.edges[-1])
            if high - low < self._TABLE_MAX:
                self.low = low
                self.table = np.array(
                    [str(v) for v in range(low, high + 1)], dtype=object
                )

    def cells(self, codes, rng):
        if self.domain.categories is not None:
            return self.table[codes]
        values = self.domain.decode(codes, rng)
        if not self.domain.integer:
            return list(map("{:.6g}".format, values.tolist()))
        whole = values.astype(np.int64)
        if self.table is not None:
            return self.table[whole - self.low]
        return list(map(str, whole.tolist()))

    def width(self):
        """Most bytes one cell can take."""
        if self.domain.categories is not None:
            return max(len(text.encode("utf-8")) for text in self.table)
        if self.domain.integer:
            edges = self.domain.edges
            low, high = math.ceil(edges[0]), math.floor(edges[-1])
            return max(len(str(low)), len(str(high)))
        return 13  # the longest ".6g" text, such as "-1.23457e-308"


def _csv_field(text, only_column):
    """``text`` as :func:`csv.writer` writes it in a row of one or more fields."""
    buffer = io.StringIO()
    csv.writer(buffer).writerow([text] if only_column else [text, ""])
    line = buffer.getvalue()[: -len("\r\n")]
    return line if only_column else line[: -len(",")]


def _check_space(target, header, writers, n_samples, out_path):
    """Refuse before the fit an output the disk cannot hold."""
    row = sum(writer.width() for writer in writers) + len(writers) + 1
    size = row * (n_samples + 1) + sum(len(n) for n in header)
    try:
        free = shutil.disk_usage(target.resolve().parent).free
    except OSError:
        return
    if size > free:
        raise CommandLineError(
            f"--out {out_path}: the synthetic file can take up to "
            f"{size / 1e6:,.1f} MB but only {free / 1e6:,.1f} MB are free there; "
            "lower --n-samples or free some space"
        )


def _open_output(target, out_path):
    """The temporary file next to --out, opened before the fit."""
    try:
        return tempfile.NamedTemporaryFile(
            "w",
            encoding="utf-8",
            newline="",
            dir=target.resolve().parent,
            prefix=f".{target.name}.",
            suffix=".tmp",
            delete=False,
        )
    except OSError as error:
        raise CommandLineError(
            f"--out {out_path}: cannot write in its directory: {error.strerror}"
        ) from None


def _write_synthetic(handle, header, writers, model, n_samples, seed):
    """Sample, decode and write ``n_samples`` rows, a bounded chunk at a time."""
    from .utils._random import check_random_source

    csv.writer(handle).writerow(header)
    # One generator for all chunks, so that seeded chunks differ; without a
    # seed it is seeded from the operating system (sampling is
    # post-processing: its randomness protects nothing).
    rng = check_random_source(seed).numpy_generator()
    chunk = max(1, _CHUNK_CELLS // len(header))
    for start in range(0, n_samples, chunk):
        codes = model.sample(min(chunk, n_samples - start), random_state=rng)
        codes = codes.astype(np.intp)
        cells = [writer.cells(codes[:, j], rng) for j, writer in enumerate(writers)]
        handle.write("\r\n".join(map(",".join, zip(*cells))) + "\r\n")


# -- the command -------------------------------------------------------------
def _check_paths(input_path, out_path, overwrite):
    source = Path(input_path)
    target = Path(out_path)
    if not source.is_file():
        raise CommandLineError(f"cannot read {input_path}: no such file")
    same = source.resolve() == target.resolve()
    if not same and target.exists():
        try:
            same = os.path.samefile(source, target)
        except OSError:
            same = False
    if same:
        raise CommandLineError(
            f"--out {out_path} is the input file; refusing to overwrite the input"
        )
    if target.is_dir():
        raise CommandLineError(f"--out {out_path} is a directory")
    if target.exists() and not overwrite:
        raise CommandLineError(
            f"--out {out_path} exists; pass --overwrite to replace it"
        )
    if not target.resolve().parent.is_dir():
        raise CommandLineError(f"--out {out_path}: no such directory")
    return source, target


def synthesize_csv(
    input_path,
    out_path,
    *,
    epsilon,
    delta=None,
    n_samples=None,
    categorical=(),
    categories=(),
    bounds=(),
    integer=(),
    max_categories=DEFAULT_MAX_CATEGORIES,
    n_bins=None,
    n_rounds=None,
    seed=None,
    overwrite=False,
    strict=False,
    progress=None,
):
    """Write a differentially private synthetic copy of a CSV file.

    Parameters are those of ``python -m skdp synthesize`` (see ``--help``);
    ``categories`` and ``bounds`` are lists of ``(column, value)`` pairs,
    a bound being ``(low, high)`` (whole numbers if both are ints) or a
    :class:`Bounds`.

    The file is read twice, a chunk of rows at a time, and never held in
    memory: a first pass checks every cell and summarises each column (its
    range, or its distinct values up to ``max_categories``), a second
    encodes every cell to its integer code in the column's public domain;
    the synthesizer is fitted on those codes (one byte a cell for domains
    of at most 256 values) and the synthetic rows are sampled, decoded and
    written a chunk at a time.

    Every problem with the file or the options is found before the fit,
    the only step that reads the data under the privacy guarantee; after
    it, the output depends on the data only through the synthesizer's
    noisy model.

    Returns
    -------
    model : PMWSynthesizer
        The fitted synthesizer, on the columns' integer codes (its
        ``epsilon_`` and ``delta_`` are what the fit spent).

    Raises
    ------
    CommandLineError
        For a bad file or option; nothing has been spent or written then.
    OutputError
        If writing the file failed after the fit; the budget was spent,
        nothing was written.
    """
    from .accounting import PrivacyBudget
    from .exceptions import BudgetExceededError
    from .synthesis import PMWSynthesizer

    _check_options(
        epsilon=epsilon,
        delta=delta,
        n_samples=n_samples,
        n_bins=n_bins,
        n_rounds=n_rounds,
        seed=seed,
        max_categories=max_categories,
    )
    source, target = _check_paths(input_path, out_path, overwrite)
    csv_file = _CsvFile(source)
    header = csv_file.header
    columns = _columns(
        header,
        categorical=categorical,
        categories=categories,
        bounds=bounds,
        integer=integer,
        max_categories=max_categories,
    )
    _check_whole_numbers_fit(columns)
    defaults = PMWSynthesizer().get_params()
    n_bins = defaults["n_bins"] if n_bins is None else n_bins
    codes, domains, column_domains = _file_schema(
        csv_file, columns, n_bins, strict=strict, progress=progress
    )
    n_rows = len(codes)
    _check_marginal_size(column_domains)
    if code_dtype(column_domains).itemsize > codes.dtype.itemsize:
        codes = codes.astype(code_dtype(column_domains))  # a longer list read
    _check_fit_memory(codes)
    n_samples = n_rows if n_samples is None else n_samples
    writers = [_CellWriter(domain, len(header) == 1) for domain in column_domains]
    _check_space(target, header, writers, n_samples, out_path)
    _warn_read_from_data(domains)
    _encode_file(csv_file, codes, column_domains, columns)
    sizes = [domain.size for domain in column_domains]
    params = {"epsilon": epsilon, "categories": [list(range(k)) for k in sizes]}
    for name, value in [("delta", delta), ("n_rounds", n_rounds)]:
        if value is not None:
            params[name] = value
    delta = defaults["delta"] if delta is None else delta
    # A budget of exactly (epsilon, delta): the fit cannot spend more than
    # the command was given, whatever its plan (it is refused at the charge,
    # before any noise is drawn).
    budget = PrivacyBudget(epsilon, delta)
    model = PMWSynthesizer(random_state=seed, budget=budget, **params)
    whole = [d.name for d in domains if d.categories is None and d.integer]
    if whole:
        _say(progress, "whole numbers in: " + ", ".join(whole))
    handle = _open_output(target, out_path)
    try:
        _say(progress, f"fitting PMWSynthesizer(epsilon={epsilon:g}) ...")
        try:
            model.fit(codes)  # the charge
        except BudgetExceededError:
            raise CommandLineError(
                f"the synthesizer's plan for {len(header)} columns would spend "
                f"more than --epsilon {epsilon:g} with delta={delta:g}; nothing "
                "was spent. Raise --epsilon or --delta, or lower --n-rounds"
            ) from None
        except (ValueError, TypeError, MemoryError) as error:
            if hasattr(model, "privacy_event_"):
                raise  # after the charge: a bug, not a usage error
            raise CommandLineError(f"the synthesizer refused: {error}") from None
        del codes
        try:
            _write_synthetic(handle, header, writers, model, n_samples, seed)
            handle.close()
            os.replace(handle.name, target)
        except OSError as error:
            raise OutputError(
                f"writing --out {out_path} failed after the privacy budget was "
                f"spent (epsilon={model.epsilon_:.6g}, delta={model.delta_:.3g}): "
                f"{error.strerror or error}; nothing was written, and a new run "
                "spends again"
            ) from None
    finally:
        handle.close()
        Path(handle.name).unlink(missing_ok=True)
    _say(
        progress,
        f"wrote {target}: {n_samples:,} synthetic rows; spent "
        f"epsilon={model.epsilon_:.6g}, delta={model.delta_:.3g}",
    )
    return model


def _say(stream, message):
    if stream is not None:
        print(message, file=stream, flush=True)
