"""A CSV file's columns as the synthesizers' schema.

Text columns, and columns named with ``--categorical``, are categorical:
they are encoded as integer codes over their public list of values
(``--categories``) before the synthesizer sees them, and decoded afterwards.
Numeric columns are passed with their public range (``--bounds``). Where a
list or a range is not given, it is read from the data with a
:class:`~skdp.exceptions.PrivacyLeakWarning`, or refused with ``--strict``.

Each column's summary, the lists and ranges read from the data, the
encoding of cells and the decoding of codes are the synthesizers' own
schema (:mod:`skdp.synthesis._schema`); what is specific to a CSV file
(which columns hold numbers, empty cells, the text of a cell) is here.
The output format of each column is fixed from the options, never from the
values.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..synthesis._schema import (
    ColumnDomain,
    ColumnSummary,
    binned_domain,
    check_categories,
    infer_bounds,
    infer_categories,
    warn_read_from_data,
)
from ._csv import _parse_numbers, _say
from ._options import Bounds, CommandLineError, _as_bounds


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


def _changed(csv_file):
    return CommandLineError(
        f"{csv_file.path} changed while it was being read; nothing was spent: "
        "run the command again once it is complete"
    )
