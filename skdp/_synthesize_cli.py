"""``python -m skdp synthesize``: a private synthetic copy of a CSV file.

The file is read with the standard library (pandas is not needed). Text
columns, and columns named with ``--categorical``, are categorical: they are
encoded as integer codes over their public list of values (``--categories``)
before the synthesizer sees them, and decoded afterwards. Numeric columns
are passed with their public range (``--bounds``). Where a list or a range
is not given, it is read from the data with a
:class:`~skdp.exceptions.PrivacyLeakWarning`, or refused with ``--strict``.

The command releases nothing but the noise: every problem with the file or
the options is found before ``PMWSynthesizer.fit`` charges the budget, and
what leaves the run after it (the file, its format, messages) depends on
the data only through the fitted, noisy model. The output format of each
column is fixed from the options before the fit, never from the values.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import tempfile
from numbers import Integral, Real
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .utils import warn_data_derived

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
# The three largest columns' domain sizes multiplied: the cells of the
# largest marginal that the synthesizer counts (8 bytes each, twice).
MAX_MARGINAL_CELLS = 10**7
# Synthetic cells sampled, decoded and written at a time: memory stays
# bounded whatever --n-samples is.
_CHUNK_CELLS = 10**6


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
        ("--max-categories", max_categories, 1, None, ""),
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
    except MemoryError:
        raise CommandLineError(f"{path} is too large to read into memory") from None
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


def _check_marginal_size(plan, n_bins):
    """Refuse domains whose largest marginal would not fit in memory."""
    sizes = sorted(
        (
            len(column["categories"]) if column["kind"] == "categorical" else n_bins,
            column["name"],
        )
        for column in plan
    )[-3:]
    cells = math.prod(size for size, _ in sizes)
    if cells > MAX_MARGINAL_CELLS:
        shown = ", ".join(f"{name!r}: {size:,}" for size, name in sizes)
        raise CommandLineError(
            f"the largest marginals would have {cells:,} cells (values or bins "
            f"of the largest columns: {shown}); the command allows at most "
            f"{MAX_MARGINAL_CELLS:,}: lower --n-bins or declare shorter "
            "--categories lists"
        )


def _row_width(plan):
    """Most bytes one synthetic row can take in the CSV file (with CRLF)."""
    width = len(plan) + 1  # separators and line end
    for column in plan:
        if column["kind"] == "categorical":
            # Quoted, with every character a doubled quote at worst.
            width += max(2 * len(v.encode("utf-8")) + 2 for v in column["categories"])
        elif column["integer"]:
            low, high = column["bounds"].low, column["bounds"].high
            width += max(len(str(math.ceil(low))), len(str(math.floor(high))))
        else:
            width += 13  # the longest ".6g" text, such as "-1.23457e-308"
    return width


def _check_space(target, header, plan, n_samples, out_path):
    """Refuse before the fit an output the disk cannot hold."""
    size = _row_width(plan) * (n_samples + 1) + sum(len(n) for n in header)
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


def _write_synthetic(handle, header, plan, model, n_samples, seed):
    """Sample, decode and write ``n_samples`` rows, a bounded chunk at a time."""
    writer = csv.writer(handle)
    writer.writerow(header)
    # One generator for all chunks, so that seeded chunks differ.
    random_state = None if seed is None else np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // len(header))
    for start in range(0, n_samples, chunk):
        rows = model.sample(min(chunk, n_samples - start), random_state=random_state)
        writer.writerows(_decode(plan, rows))


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

    Every problem with the file or the options is found before the fit,
    the only step that reads the data under the privacy guarantee; after
    it, the output depends on the data only through the synthesizer's
    noisy model.

    Returns
    -------
    model : PMWSynthesizer
        The fitted synthesizer (its ``epsilon_`` and ``delta_`` are what the
        fit spent).

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
    defaults = PMWSynthesizer().get_params()
    delta = defaults["delta"] if delta is None else delta
    _check_marginal_size(plan, defaults["n_bins"] if n_bins is None else n_bins)
    n_samples = len(X) if n_samples is None else n_samples
    _check_space(target, header, plan, n_samples, out_path)
    # A budget of exactly (epsilon, delta): the fit cannot spend more than
    # the command was given, whatever its plan (it is refused at the charge,
    # before any noise is drawn).
    budget = PrivacyBudget(epsilon, delta)
    model = PMWSynthesizer(random_state=seed, budget=budget, **params)
    whole = [c["name"] for c in plan if c["kind"] == "numeric" and c["integer"]]
    if whole:
        _say(progress, "whole numbers in: " + ", ".join(whole))
    handle = _open_output(target, out_path)
    try:
        _say(progress, f"fitting PMWSynthesizer(epsilon={epsilon:g}) ...")
        try:
            model.fit(X)  # the charge
        except BudgetExceededError:
            raise CommandLineError(
                f"the synthesizer's plan for {len(header)} columns would spend "
                f"more than --epsilon {epsilon:g} with delta={delta:g}; nothing "
                "was spent. Raise --epsilon or --delta, or lower --n-rounds"
            ) from None
        except (ValueError, TypeError) as error:
            if hasattr(model, "privacy_event_"):
                raise  # after the charge: a bug, not a usage error
            raise CommandLineError(f"the synthesizer refused: {error}") from None
        try:
            _write_synthetic(handle, header, plan, model, n_samples, seed)
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
