"""The command line: ``python -m skdp demo`` and ``python -m skdp synthesize``.

:func:`main` parses the arguments and runs the command: the demo on the
bundled Adult data, or a private synthetic copy of a CSV file. The ``skdp``
console script and ``python -m skdp`` both call it.
"""

from ._main import main

__all__ = ["main"]
