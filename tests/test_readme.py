"""The README's first-screen commands are the ones CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_has_a_demo_and_a_test_command():
    demo, tests = _readme_commands()[:2]
    assert "skdp demo" in demo
    assert "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    test_command = _readme_commands()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines
