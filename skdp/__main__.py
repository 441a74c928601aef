"""``python -m skdp``: the command line (:mod:`skdp.cli`)."""

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
