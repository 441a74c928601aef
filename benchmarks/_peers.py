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


def run_peer_script(python: str, script: str, data: dict, *args) -> list | None:
    """Run ``script`` (a ``python -c`` program) in a peer's interpreter.

    ``data`` (arrays) is handed over as an ``.npz`` file whose path is the
    script's first argument, followed by ``args`` as JSON; the script
    prints its results as one JSON document. Returns them, or None (with a
    message) when the interpreter is absent or the script fails.
    """
    import json
    import subprocess
    import tempfile

    import numpy as np

    if not Path(python).exists():
        print(f"peer skipped: {python} not found (see the module docstring).")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, **data)
        proc = subprocess.run(
            [python, "-c", script, path, *(json.dumps(a) for a in args)],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        print("peer failed:\n" + proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout)
