"""The argument parser of ``python -m skdp`` and the dispatch to its commands."""

from __future__ import annotations

import argparse
import sys
import warnings

from ..accounting._delta import DEFAULT_DELTA
from . import _options

__all__ = ["build_parser", "main"]

_SEED_HELP = (
    "seed the noise: reproducible, for testing only; the default draws from "
    "the operating system's secure generator"
)


def _demo(args, parser) -> int:
    from ._demo import run_demo

    run_demo(
        quick=args.quick,
        seed=args.seed,
        plot=None if args.no_plot else args.plot,
    )
    return 0


def _synthesize(args, parser) -> int:
    from ._options import CommandLineError, OutputError
    from ._synthesize import synthesize_csv

    try:
        synthesize_csv(
            args.input,
            args.out,
            epsilon=args.epsilon,
            delta=args.delta,
            n_samples=args.n_samples,
            categorical=args.categorical,
            categories=args.categories,
            bounds=args.bounds,
            integer=args.integer,
            max_categories=args.max_categories,
            n_bins=args.n_bins,
            n_rounds=args.n_rounds,
            seed=args.seed,
            overwrite=args.overwrite,
            strict=args.strict,
            progress=sys.stderr,
        )
    except CommandLineError as error:
        parser.error(str(error))  # exit status 2; nothing was spent
    except OutputError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    return 0


def _version_line() -> str:
    """skdp's version and those of the libraries its results depend on."""
    import numpy
    import scipy
    import sklearn

    from .. import __version__

    return (
        f"skdp {__version__} (Python {sys.version.split()[0]}, scikit-learn "
        f"{sklearn.__version__}, numpy {numpy.__version__}, scipy {scipy.__version__})"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m skdp``."""
    parser = argparse.ArgumentParser(
        prog="python -m skdp",
        description="skdp: differential privacy that drops into scikit-learn.",
    )
    parser.add_argument("--version", action="version", version=_version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    _add_demo(sub)
    _add_synthesize(sub)
    return parser


def _add_demo(sub) -> None:
    demo = sub.add_parser(
        "demo",
        help="private models and synthetic data on the bundled Adult data",
        description=(
            "Fit DPLogisticRegression with the three methods at several "
            "epsilons and a PMWSynthesizer on the bundled UCI Adult data; print "
            "a privacy-utility table and the budget's ledger; write a plot if "
            "matplotlib is installed."
        ),
    )
    demo.add_argument("--seed", type=int, default=None, help=_SEED_HELP)
    demo.add_argument(
        "--quick",
        action="store_true",
        help="a reduced run (fewer epsilons, fewer rows) that takes seconds",
    )
    demo.add_argument(
        "--plot",
        default="skdp-demo.png",
        metavar="PATH",
        help="where to write the plot (default: %(default)s)",
    )
    demo.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    demo.set_defaults(func=_demo, subparser=demo)


def _add_synthesize(sub) -> None:
    synth = sub.add_parser(
        "synthesize",
        help="a differentially private synthetic copy of a CSV file",
        description=(
            "Read a CSV file with a header row, fit a PMWSynthesizer (MWEM) "
            "with the given privacy budget and write synthetic rows with the "
            "same columns to --out. Column names, which columns hold numbers "
            "and which text, the number of rows and the declared categories "
            "and bounds are treated as public; everything else is protected by "
            "(epsilon, delta)-differential privacy under the replacement of "
            "one row. A bound or category list that you do not give is read "
            "from the data, with a PrivacyLeakWarning. A numeric column is "
            "written as whole numbers if it is named in --integer or if both "
            "ends of its --bounds are written as whole numbers (age=0:120); "
            "otherwise, and whenever its range is read from the data, as "
            "decimals: the values never decide the format. Every problem with "
            "the file or the options is a usage error (exit status 2) before "
            "anything is spent; empty cells in a numeric column are refused. "
            "The file is read a chunk of rows at a time, never whole: once to "
            "check it, read any list or range not given and encode the "
            "declared columns, and a second time only if some list or range "
            "was read from the data; the fit then holds one byte a cell (for "
            "columns of at most 256 values or bins)."
        ),
        epilog=(
            "example: python -m skdp synthesize data.csv --epsilon 1 --out "
            "synth.csv --bounds age=0:100 --categories sex=Female,Male"
        ),
    )
    synth.add_argument("input", help="the CSV file to synthesize (first row: names)")
    synth.add_argument(
        "--epsilon",
        type=_options.number,
        required=True,
        help=f"privacy budget, from {_options.MIN_EPSILON:g} to "
        f"{_options.MAX_EPSILON:g}",
    )
    synth.add_argument(
        "--out", required=True, metavar="PATH", help="where to write the synthetic CSV"
    )
    synth.add_argument(
        "--delta",
        type=_options.number,
        default=None,
        help="delta, in (0, 1) (default: skdp's default delta, "
        f"{DEFAULT_DELTA:g}; choose one well below 1 / the number of rows)",
    )
    synth.add_argument(
        "--n-samples",
        type=_options.whole_number,
        default=None,
        metavar="N",
        help="number of synthetic rows, at most "
        f"{_options.MAX_SAMPLES:,} (default: as many as the input)",
    )
    synth.add_argument(
        "--categorical",
        nargs="+",
        default=[],
        metavar="COLUMN",
        help="treat these columns as categorical even if they hold numbers",
    )
    synth.add_argument(
        "--categories",
        action="append",
        type=_options.parse_categories,
        default=[],
        metavar="COLUMN=A,B,...",
        help="the public list of values of a categorical column (repeatable)",
    )
    synth.add_argument(
        "--bounds",
        action="append",
        type=_options.parse_bounds,
        default=[],
        metavar="COLUMN=LOW:HIGH",
        help="the public range of a numeric column (repeatable); values "
        "outside are clipped. Whole-number ends (age=0:120) make whole-number "
        "output; write age=0.0:120 for decimals",
    )
    synth.add_argument(
        "--integer",
        nargs="+",
        default=[],
        metavar="COLUMN",
        help="write these numeric columns as whole numbers, rounded and clipped "
        "into ceil(LOW)..floor(HIGH) of their range",
    )
    synth.add_argument(
        "--max-categories",
        type=_options.whole_number,
        default=_options.DEFAULT_MAX_CATEGORIES,
        metavar="N",
        help="refuse to read the list of values of a categorical column from "
        "the data when it has more than N distinct values: the synthetic rows "
        "would copy them (default: %(default)s, at most "
        f"{_options.MAX_CATEGORIES:,})",
    )
    synth.add_argument(
        "--n-bins",
        type=_options.whole_number,
        default=None,
        metavar="N",
        help=f"bins per numeric column, at most {_options.MAX_BINS:,} (default: the "
        "synthesizer's default); the three largest columns' bins or values "
        f"multiplied must stay within {_options.MAX_MARGINAL_CELLS:,}",
    )
    synth.add_argument(
        "--n-rounds",
        type=_options.whole_number,
        default=None,
        metavar="N",
        help=f"MWEM rounds, at most {_options.MAX_ROUNDS:,} (default: the "
        "synthesizer's default)",
    )
    synth.add_argument(
        "--seed", type=_options.whole_number, default=None, help=_SEED_HELP
    )
    synth.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --out if it exists (the input is never overwritten)",
    )
    synth.add_argument(
        "--strict",
        action="store_true",
        help="refuse to read any bound or category list from the data",
    )
    synth.set_defaults(func=_synthesize, subparser=synth)


def main(argv=None) -> int:
    """Run ``python -m skdp`` with ``argv`` (default: ``sys.argv[1:]``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return args.func(args, args.subparser)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Warnings as one line each on stderr, without a source line."""
    print(f"{category.__name__}: {message}", file=sys.stderr if file is None else file)
