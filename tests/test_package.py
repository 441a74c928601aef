"""What ships with the package: version, license, type information."""

import re
import subprocess
import sys
import tarfile
from importlib import resources
from pathlib import Path

import numpy
import pytest
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


@pytest.mark.slow
def test_the_sdist_ships_the_package_and_no_partial_test_suite(tmp_path):
    # It shipped tests/test_*.py without conftest.py or the subfolders
    # (issue 27): the suite reads doc/, examples/ and .ci/ too, so it ships
    # whole with the repository and not at all in the sdist.
    pytest.importorskip("build")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--sdist",
            "--no-isolation",
            "--skip-dependency-check",
        ]
        + ["--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (sdist,) = tmp_path.glob("skdp-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
        info = archive.extractfile(archive.getmember(f"{sdist.name[:-7]}/PKG-INFO"))
        metadata = info.read().decode()
    assert not [name for name in names if name.startswith("tests")]
    assert "skdp/datasets/data/adult_clean.csv.gz" in names
    assert {"README.md", "LICENSE", "CHANGELOG.md", "skdp/py.typed"} <= set(names)
    assert "Classifier: Topic :: Security" in metadata
