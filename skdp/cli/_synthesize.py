"""``python -m skdp synthesize``: a private synthetic copy of a CSV file.

The command checks its options (:mod:`._options`), reads the file a chunk
of rows at a time (:mod:`._csv`), turns its columns into the synthesizers'
schema (:mod:`._columns`), fits a :class:`~skdp.PMWSynthesizer` on the
cells' integer codes and writes the synthetic rows.

The file is never held in memory: it is read once to check every cell,
summarise each column (its range, or its distinct values up to
``--max-categories``) and encode the columns whose domain the options give,
and a second time, only if a list or range was read from the data, to
encode the other columns. The synthesizer is fitted on the cells' integer
codes (one byte a cell for domains of at most 256 values or bins), and the
synthetic rows are sampled, decoded and written a chunk at a time.

The command releases nothing but the noise: every problem with the file or
the options is found before ``PMWSynthesizer.fit`` charges the budget, and
what leaves the run after it (the file, its format, messages) depends on
the data only through the fitted, noisy model. The output format of each
column is fixed from the options before the fit, never from the values.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..accounting import PrivacyBudget
from ..accounting._delta import resolve_delta
from ..exceptions import BudgetExceededError
from ..synthesis import PMWSynthesizer
from ..synthesis._schema import code_dtype
from ..utils._feasibility import check_memory
from ._columns import (
    _check_whole_numbers_fit,
    _columns,
    _encode_file,
    _file_schema,
    _warn_read_from_data,
)
from ._csv import (
    _CellWriter,
    _check_space,
    _CsvFile,
    _open_output,
    _say,
    _write_synthetic,
)
from ._options import (
    DEFAULT_MAX_CATEGORIES,
    MAX_MARGINAL_CELLS,
    CommandLineError,
    OutputError,
    _check_options,
)

__all__ = ["synthesize_csv"]


def _check_fit_memory(codes):
    """Refuse rows too many for the fit's memory, before it is charged.

    The synthesizer copies the codes and counts each marginal through an
    index of 8 bytes a row (and a few more for its counting).
    """
    n_rows, n_columns = codes.shape
    try:
        check_memory(
            n_rows * (n_columns * codes.dtype.itemsize + 24),
            f"fitting the synthesizer on {n_rows:,} rows",
            "synthesize from a sample of the rows",
        )
    except MemoryError as error:
        raise CommandLineError(str(error)) from None


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
    delta = resolve_delta(delta, needs_delta=True)  # Gaussian measurements
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
