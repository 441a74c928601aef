"""Command line: ``python -m skdp demo``."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _demo(args) -> int:
    from ._demo import run_demo

    run_demo(seed=args.seed, out=sys.stdout)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m skdp",
        description="skdp: differential privacy that drops into scikit-learn.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the demo on the bundled data")
    demo.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed the noise (reproducible, for testing only; default: OS randomness)",
    )
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
