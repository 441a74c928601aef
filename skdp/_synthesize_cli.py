"""``python -m skdp synthesize``: a private synthetic copy of a CSV file.

The file is read with the standard library (pandas is not needed). Text
columns, and columns named with ``--categorical``, are categorical: they are
encoded as integer codes over their public list of values (``--categories``)
before the synthesizer sees them, and decoded afterwards. Numeric columns
are passed with their public range (``--bounds``). Where a list or a range
is not given, it is read from the data with a
:class:`~skdp.exceptions.PrivacyLeakWarning`, or refused with ``--strict``.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import tempfile
from numbers import Integral
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .utils import warn_data_derived

__all__ = [
    "Bounds",
    "CommandLineError",
    "integer_in",
    "parse_bounds",
    "parse_categories",
    "positive_float",
    "synthesize_csv",
]


class CommandLineError(Exception):
    """A problem with the command's input, reported as a usage error."""


# -- argument types ----------------------------------------------------------
def positive_float(text):
    """``argparse`` type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def integer_in(low, high=None):
    """``argparse`` type factory: an integer from ``low`` to ``high``."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        return _check_integer(value, low, high, argparse.ArgumentTypeError)

    return parse


def _check_integer(value, low, high, error):
    if value < low:
        raise error(f"must be at least {low:,}, got {value}")
    if high is not None and value > high:
        raise error(f"must be at most {high:,}, got {value}")
    return value


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
        low, high = value
        whole = all(isinstance(v, Integral) and not isinstance(v, bool) for v in value)
        bounds = Bounds(float(low), float(high), whole)
    if not _valid_range(bounds):
        raise CommandLineError(
            f"bounds of column {column!r} must be finite with LOW < HIGH, got {value}"
        )
    return bounds


# -- reading -----------------------------------------------------------------
def _read_csv(path):
    # utf-8-sig: spreadsheet programs often start the file with a byte order
    # mark, which would otherwise become part of the first column's name.
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError:
        raise CommandLineError(f"{path} is not a UTF-8 text file") from None
    except csv.Error as error:
        raise CommandLineError(f"{path} is not a valid CSV file: {error}") from None
    except OSError as error:
        raise CommandLineError(f"cannot read {path}: {error.strerror}") from None
    rows = [row for row in rows if row]  # blank lines
    if not rows:
        raise CommandLineError(f"{path} is empty: expected a header row and data")
    header, data = rows[0], rows[1:]
    if any(not name.strip() for name in header):
        raise CommandLineError(f"{path}: the header row has an empty column name")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise CommandLineError(f"{path}: repeated column names {repeated}")
    if not data:
        raise CommandLineError(f"{path} has a header but no data rows")
    for line, row in enumerate(data, start=2):
        if len(row) != len(header):
            raise CommandLineError(
                f"{path}, row {line}: {len(row)} fields, but the header has "
                f"{len(header)}"
            )
    columns = [list(column) for column in zip(*data)]
    return header, columns


def _read_numbers(values):
    """A column's cells as floats, or None if it holds text.

    A column holds text if a non-empty cell is not a number, or if every
    cell is empty. Empty cells become NaN, and ``has_empty`` says whether
    there were any; cells such as ``nan``, ``inf`` or ``1e400`` (which
    ``float`` reads as infinity) stay NaN or infinite. The caller refuses
    both: the synthesizer takes finite numbers only.
    """
    numbers = np.empty(len(values))
    has_empty = False
    for position, text in enumerate(values):
        if not text.strip():
            numbers[position] = np.nan
            has_empty = True
            continue
        try:
            numbers[position] = float(text)
        except ValueError:
            return None
    if has_empty and np.all(np.isnan(numbers)):
        return None
    return numbers, has_empty


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


def _column_plan(
    header, columns, *, categorical, categories, bounds, integer, strict, max_categories
):
    """Decide, for each column, how it is encoded and with which public domain.

    Every decision that shapes the output file (categorical or numeric,
    whole numbers or decimals) is taken here, before the fit; the output
    format of a numeric column comes from the options only (see
    :func:`_writes_whole_numbers`), never from its values.
    """
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
    numeric_options = [("--bounds", declared_bounds), ("--integer", integer)]
    for option, names in numeric_options:
        both = sorted(set(names) & categorical_names)
        if both:
            raise CommandLineError(
                f"column(s) {both} are given both {option} and categories"
            )

    plan = []
    missing = []
    for name, values in zip(header, columns):
        parsed = None
        if name not in categorical_names:
            parsed = _read_numbers(values)
        if parsed is None:
            for option, names in numeric_options:
                if name in names:
                    raise CommandLineError(
                        f"{option} given for column {name!r}, which holds text; "
                        f"give --categories {name}=... instead"
                    )
            plan.append(
                {
                    "name": name,
                    "kind": "categorical",
                    "categories": declared_categories.get(name),
                }
            )
            if name not in declared_categories:
                missing.append(f"--categories {name}=...")
            continue
        numbers, has_empty = parsed
        if has_empty:
            raise CommandLineError(
                f"column {name!r} has empty cells in a numeric column; the "
                "synthesizer does not take missing values: fill them or declare "
                f"the column categorical with --categories {name}=...,"
            )
        if not np.all(np.isfinite(numbers)):
            raise CommandLineError(
                f"column {name!r} holds numbers and also cells that are not "
                "finite numbers (nan, inf, or beyond the floating-point range); "
                "fix those cells or declare the column categorical with "
                f"--categories {name}=..."
            )
        column_bounds = declared_bounds.get(name)
        whole = _writes_whole_numbers(name, integer, column_bounds)
        if whole and column_bounds is not None:
            if math.ceil(column_bounds.low) > math.floor(column_bounds.high):
                raise CommandLineError(
                    f"--integer {name}: no whole number within --bounds "
                    f"{name}={column_bounds.low:g}:{column_bounds.high:g}"
                )
        plan.append(
            {
                "name": name,
                "kind": "numeric",
                "values": numbers,
                "integer": whole,
                "bounds": column_bounds,
            }
        )
        if column_bounds is None:
            missing.append(f"--bounds {name}=LOW:HIGH")
    if strict and missing:
        raise CommandLineError("--strict: no public domain for " + ", ".join(missing))
    for column, values in zip(plan, columns):
        # Categories read from the data are the raw values: for a column
        # with many of them the synthetic rows would copy values that only
        # a few people have. Only the comparison with the public cap is
        # data-dependent, and it is reported before any budget is spent.
        if column["kind"] == "categorical" and column["categories"] is None:
            if len(set(values)) > max_categories:
                name = column["name"]
                raise CommandLineError(
                    f"column {name!r} has more than {max_categories} distinct "
                    "values and no public list of them; categories read from the "
                    "data would copy its values into the synthetic rows. Give the "
                    f"public list with --categories {name}=A,B,..., or, for a "
                    f"numeric column, its public range with --bounds "
                    f"{name}=LOW:HIGH (and without --categorical {name}); "
                    "--max-categories N raises the limit"
                )
    return plan


def _writes_whole_numbers(name, integer, bounds):
    """Whether a numeric column is written as whole numbers; options only.

    Yes if the column is named in ``--integer``, or if its ``--bounds`` are
    both written as whole numbers (``age=0:120``); otherwise, and always
    when the range is read from the data, decimals. The values never
    decide: one value written ``30.5`` instead of ``30`` would otherwise
    change the format of the whole synthetic column.
    """
    return name in integer or (bounds is not None and bounds.whole)


def _encode(plan, columns):
    """Numeric matrix for the synthesizer, plus its categories and bounds."""
    encoded, categories, bounds = [], {}, {}
    for position, (column, values) in enumerate(zip(plan, columns)):
        name = column["name"]
        if column["kind"] == "categorical":
            if column["categories"] is None:
                warn_data_derived(
                    f"--categories {name}=...",
                    "which values occur in that column",
                    f"pass --categories {name}=A,B,... with the public list",
                    stacklevel=2,
                )
                column["categories"] = sorted(set(values))
            index = {value: code for code, value in enumerate(column["categories"])}
            if not set(values) <= set(index):
                # Neither the values nor their number: both are private.
                raise CommandLineError(
                    f"column {name!r} holds values that --categories does not "
                    f"list; add them to --categories {name}=... or clean the file"
                )
            encoded.append(np.array([index[v] for v in values], dtype=float))
            categories[position] = list(range(len(column["categories"])))
        else:
            if column["bounds"] is None:
                warn_data_derived(
                    f"--bounds {name}=LOW:HIGH",
                    "the smallest and largest value of that column",
                    f"pass --bounds {name}=LOW:HIGH from public knowledge",
                    stacklevel=2,
                )
                low, high = float(column["values"].min()), float(column["values"].max())
                if column["integer"]:
                    low, high = math.floor(low), math.ceil(high)
                if not high > low:
                    low, high = low - 0.5, high + 0.5
                column["bounds"] = Bounds(low, high, whole=False)
            encoded.append(column["values"])
            bounds[position] = (column["bounds"].low, column["bounds"].high)
    return np.column_stack(encoded), categories, bounds


def _decode(plan, synthetic):
    """Text cells of synthetic rows; each column's format is fixed by the plan."""
    out = []
    for column, values in zip(plan, np.asarray(synthetic, dtype=float).T):
        if column["kind"] == "categorical":
            labels = column["categories"]
            codes = np.clip(np.rint(values).astype(np.intp), 0, len(labels) - 1)
            out.append([labels[code] for code in codes])
        elif column["integer"]:
            low, high = column["bounds"].low, column["bounds"].high
            rounded = np.clip(np.rint(values), math.ceil(low), math.floor(high))
            out.append([str(int(v)) for v in rounded])
        else:
            out.append([format(v, ".6g") for v in values])
    return [list(row) for row in zip(*out)]


def _write_csv(target, header, rows):
    # Write next to the target, then rename: a failed run leaves no half file.
    handle = tempfile.NamedTemporaryFile(
        "w",
        encoding="utf-8",
        newline="",
        dir=target.resolve().parent,
        prefix=f".{target.name}.",
        suffix=".tmp",
        delete=False,
    )
    try:
        with handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


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
    max_categories=100,
    n_bins=None,
    n_rounds=None,
    seed=None,
    overwrite=False,
    strict=False,
    progress=None,
):
    """Write a differentially private synthetic copy of a CSV file.

    Parameters are those of ``python -m skdp synthesize`` (see ``--help``);
    ``categories`` and ``bounds`` are lists of ``(column, value)`` pairs.

    Returns
    -------
    model : PMWSynthesizer
        The fitted synthesizer (its ``epsilon_`` and ``delta_`` are what the
        fit spent).

    Raises
    ------
    CommandLineError
        For a bad file or option; nothing has been spent or written then.
    """
    from .synthesis import PMWSynthesizer

    source, target = _check_paths(input_path, out_path, overwrite)
    if n_samples is not None and n_samples < 1:
        raise CommandLineError(f"--n-samples must be at least 1, got {n_samples}")
    header, columns = _read_csv(source)
    _say(progress, f"read {source}: {len(columns[0]):,} rows, {len(header)} columns")
    plan = _column_plan(
        header,
        columns,
        categorical=categorical,
        categories=categories,
        bounds=bounds,
        integer=integer,
        strict=strict,
        max_categories=max_categories,
    )
    X, codes, ranges = _encode(plan, columns)

    params = {"epsilon": epsilon, "categories": codes, "bounds": ranges}
    for name, value in [("delta", delta), ("n_bins", n_bins), ("n_rounds", n_rounds)]:
        if value is not None:
            params[name] = value
    model = PMWSynthesizer(random_state=seed, **params)
    _say(progress, f"fitting PMWSynthesizer(epsilon={epsilon:g}) ...")
    try:
        model.fit(X)
    except (ValueError, TypeError) as error:
        raise CommandLineError(str(error)) from None
    n_samples = len(X) if n_samples is None else n_samples
    synthetic = model.sample(n_samples, random_state=seed)
    _write_csv(target, header, _decode(plan, synthetic))
    _say(
        progress,
        f"wrote {target}: {n_samples:,} synthetic rows; spent "
        f"epsilon={model.epsilon_:.6g}, delta={model.delta_:.3g}",
    )
    return model


def _say(stream, message):
    if stream is not None:
        print(message, file=stream, flush=True)
