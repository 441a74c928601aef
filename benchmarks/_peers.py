"""Where the benchmarks find their peers' virtualenvs and the shared data.

Nothing here is an absolute path of one machine: each location comes from
an environment variable, with a default relative to the repository (its
parent directory holds ``venvs/`` and ``shared/`` in the layout the
benchmarks' docstrings describe).

* ``SKDP_DIFFPRIVLIB_PYTHON``: diffprivlib 0.6.6's interpreter (default
  ``../venvs/diffprivlib/bin/python``);
* ``SKDP_SMARTNOISE_PYTHON``: smartnoise-synth's interpreter (default
  ``../venvs/smartnoise/bin/python``);
* ``SKDP_ADULT_DIR``: the UCI Adult folder (default ``../shared/data/adult``).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peer_python(name: str) -> str:
    """The interpreter of the peer library ``name`` ('diffprivlib', ...)."""
    variable = f"SKDP_{name.upper()}_PYTHON"
    default = ROOT.parent / "venvs" / name / "bin" / "python"
    return os.environ.get(variable, str(default))


def adult_dir() -> Path:
    """The folder of the shared UCI Adult files."""
    default = ROOT.parent / "shared" / "data" / "adult"
    return Path(os.environ.get("SKDP_ADULT_DIR", str(default)))
