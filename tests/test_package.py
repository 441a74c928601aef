"""What ships with the package: version, license, type information."""

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy
import sklearn

import skdp

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_one_in_pyproject():
    # (tomllib is Python >= 3.11; the [project] lines are simple enough.)
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(skdp.__version__)}"$', text, re.M)
    assert re.search(r'^license = "BSD-3-Clause"$', text, re.M)
    assert re.search(r'^license-files = \["LICENSE"\]$', text, re.M)


def test_python_dash_m_skdp_version():
    proc = subprocess.run(
        [sys.executable, "-m", "skdp", "--version"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith(f"skdp {skdp.__version__} (Python ")
    assert f"scikit-learn {sklearn.__version__}" in line
    assert f"numpy {numpy.__version__}" in line


def test_license_text_and_type_marker_ship():
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()
    assert resources.files("skdp").joinpath("py.typed").is_file()
