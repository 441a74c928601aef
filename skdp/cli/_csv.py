"""The CSV file: read a chunk of rows at a time, written a chunk at a time.

The file is read with the standard library (pandas is not needed) and never
held whole: :class:`_CsvFile` hands out chunks of cells, column by column.
The synthetic rows are sampled, decoded to text and written a chunk at a
time into a temporary file next to ``--out``, each column in a format fixed
before the fit (:class:`_CellWriter`).
"""

from __future__ import annotations

import contextlib
import csv
import gc
import io
import itertools
import math
import shutil
import tempfile

import numpy as np

from ..utils._random import check_random_source
from ._options import CommandLineError

# Synthetic cells sampled, decoded and written at a time: memory stays
# bounded whatever --n-samples is.
_CHUNK_CELLS = 10**6
# Rows of the input read, checked and encoded at a time: the text of one
# chunk is all the command holds of the file's text.
_READ_ROWS = 2**16


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


def _say(stream, message):
    """One line of progress on ``stream`` (``None``: silent)."""
    if stream is not None:
        print(message, file=stream, flush=True)
