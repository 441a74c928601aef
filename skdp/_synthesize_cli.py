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
from pathlib import Path

import numpy as np

from .utils import warn_data_derived

__all__ = [
    "CommandLineError",
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


def parse_bounds(text):
    """``argparse`` type: ``COLUMN=LOW:HIGH`` -> ``(column, (low, high))``."""
    column, sep, values = text.rpartition("=")
    low, colon, high = values.partition(":")
    try:
        if not (sep and column and colon):
            raise ValueError
        low, high = float(low), float(high)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected COLUMN=LOW:HIGH (for example age=0:100), got {text!r}"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise argparse.ArgumentTypeError(
            f"bounds must be finite with LOW < HIGH, got {text!r}"
        )
    return column, (low, high)


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


def _parse_numeric(values):
    """Floats and whether all are integers, or None if a value is not a number."""
    try:
        numbers = np.array([float(v) for v in values])
    except ValueError:
        return None
    if not np.all(np.isfinite(numbers)):
        return None
    integer = all(_is_integer_text(v) for v in values)
    return numbers, integer


def _is_integer_text(text):
    text = text.strip()
    return text.lstrip("+-").isdigit()


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


def _column_plan(header, columns, categorical, categories, bounds, strict):
    """Decide, for each column, how it is encoded and with which public domain."""
    known = set(header)
    declared_categories = dict(categories)
    declared_bounds = dict(bounds)
    for option, names in [
        ("--categorical", categorical),
        ("--categories", declared_categories),
        ("--bounds", declared_bounds),
    ]:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise CommandLineError(
                f"{option} names unknown column(s) {unknown}; the columns are {header}"
            )
    both = sorted(set(declared_bounds) & (set(categorical) | set(declared_categories)))
    if both:
        raise CommandLineError(
            f"column(s) {both} are given both --bounds and categories"
        )

    plan = []
    missing = []
    for name, values in zip(header, columns):
        parsed = None
        if name not in categorical and name not in declared_categories:
            parsed = _parse_numeric(values)
        if parsed is None:
            if name in declared_bounds:
                raise CommandLineError(
                    f"--bounds given for column {name!r}, which holds text; "
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
        else:
            numbers, integer = parsed
            plan.append(
                {
                    "name": name,
                    "kind": "numeric",
                    "values": numbers,
                    "integer": integer,
                    "bounds": declared_bounds.get(name),
                }
            )
            if name not in declared_bounds:
                missing.append(f"--bounds {name}=LOW:HIGH")
    if strict and missing:
        raise CommandLineError("--strict: no public domain for " + ", ".join(missing))
    return plan


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
            unknown = sorted(set(values) - set(index))
            if unknown:
                shown = ", ".join(repr(v) for v in unknown[:5])
                raise CommandLineError(
                    f"column {name!r} holds values that --categories does not list "
                    f"({shown}{', ...' if len(unknown) > 5 else ''}); add them to "
                    "the list or clean the file"
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
                if not high > low:
                    low, high = low - 0.5, high + 0.5
                column["bounds"] = (low, high)
            encoded.append(column["values"])
            bounds[position] = column["bounds"]
    return np.column_stack(encoded), categories, bounds


def _decode(plan, synthetic):
    out = []
    for column, values in zip(plan, np.asarray(synthetic, dtype=float).T):
        if column["kind"] == "categorical":
            labels = column["categories"]
            codes = np.clip(np.rint(values).astype(np.intp), 0, len(labels) - 1)
            out.append([labels[code] for code in codes])
        elif column["integer"]:
            low, high = column["bounds"]
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
    plan = _column_plan(header, columns, list(categorical), categories, bounds, strict)
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
