"""Every script in examples/ runs (shrunk), and so does the README's example."""

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from skdp import UtilityWarning

pytestmark = pytest.mark.slow  # runs every example script

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SKDP_EXAMPLES_FAST="1",
        MPLBACKEND="Agg",
    )
    completed = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_readme_python_example_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 10
    printed = []
    namespace = {"print": lambda *args, **kwargs: printed.extend(args)}
    with warnings.catch_warnings():
        # Its utility is fine (accuracy 0.84): no forecast may say otherwise.
        warnings.simplefilter("error", UtilityWarning)
        exec(compile(code, "README.md", "exec"), namespace)
    # A fully private pipeline: the scaler and the model charge the budget.
    labels = [entry.label for entry in namespace["budget"].ledger]
    assert [label.split("(")[0] for label in labels] == [
        "DPStandardScaler",
        "DPLogisticRegression",
    ]
    assert printed[0] > 0.78  # test accuracy about 0.84; majority 0.75
    assert printed[1].is_private
