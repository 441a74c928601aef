"""``python -m skdp demo`` and ``python -m skdp synthesize``."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skdp.__main__ import main
from skdp.exceptions import PrivacyLeakWarning

ROOT = Path(__file__).resolve().parents[1]


# -- demo ---------------------------------------------------------------------
def test_quick_demo_prints_the_table_the_ledger_and_draws_the_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from skdp._demo import EPSILONS, METHODS, MODELS, QUICK_EPSILONS, run_demo

    out, progress = io.StringIO(), io.StringIO()
    plot = tmp_path / "demo.png"
    result = run_demo(quick=True, seed=0, plot=str(plot), out=out, progress=progress)
    text = out.getvalue()

    names = [name for name, _, _ in MODELS]
    assert set(result.accuracy) == {(m, e) for m in names for e in QUICK_EPSILONS}
    assert set(QUICK_EPSILONS) <= set(EPSILONS)
    assert {method for _, method, _ in MODELS} == set(METHODS)
    # One entry per fit and the synthesizer; none for the refused fit.
    assert len(result.budget.ledger) == len(MODELS) * len(QUICK_EPSILONS) + 1
    assert "BudgetExceededError" in text and result.refused
    for method in METHODS:
        assert method in text
    assert "PMWSynthesizer" in text and "spent: epsilon=" in text
    assert plot.stat().st_size > 0 and f"Plot written to {plot}" in text
    # Progress goes to its own stream, one line per step.
    assert (
        "[ 1/" in progress.getvalue() and "DPLogisticRegression" in progress.getvalue()
    )
    # Accuracies are proportions; the largest epsilon beats always predicting
    # the majority class (about 0.75) - a loose sanity check, not a benchmark.
    accuracy = np.array(list(result.accuracy.values()))
    assert np.all((accuracy >= 0) & (accuracy <= 1))
    best = max(result.accuracy[m, max(QUICK_EPSILONS)] for m in names)
    assert best > result.references["majority class"]
    errors = result.marginal_error
    assert 0 <= errors["PMWSynthesizer"] <= 2


def test_demo_without_matplotlib_prints_the_table_only(monkeypatch):
    from skdp import _demo

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    result = _demo.DemoResult(budget=None)
    assert _demo._plot(result, (1.0,), "never-written.png") is None
    assert not Path("never-written.png").exists()


def test_demo_help_lists_its_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for option in ("--quick", "--seed", "--plot", "--no-plot"):
        assert option in help_text


# -- synthesize ---------------------------------------------------------------
def _write_table(path, n_rows=300, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "sex", "income", "score"])
        for _ in range(n_rows):
            writer.writerow(
                [
                    int(rng.integers(18, 90)),
                    rng.choice(["Female", "Male"]),
                    rng.choice(["low", "high"]),
                    round(float(rng.uniform(0, 10)), 3),
                ]
            )
    return path


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


PUBLIC = [
    "--bounds",
    "age=0:100",
    "--bounds",
    "score=0:10",
    "--categories",
    "sex=Female,Male",
    "--categories",
    "income=low,high",
]


def test_synthesize_writes_a_table_with_the_same_columns(tmp_path, capsys):
    data = _write_table(tmp_path / "data.csv")
    before = data.read_bytes()
    out = tmp_path / "synth.csv"
    code = main(
        ["synthesize", str(data), "--epsilon", "1", "--out", str(out), "--seed", "0"]
        + PUBLIC
    )
    assert code == 0
    header, rows = _read(out)
    assert header == ["age", "sex", "income", "score"]
    assert len(rows) == 300
    ages = np.array([int(r[0]) for r in rows])
    scores = np.array([float(r[3]) for r in rows])
    assert ages.min() >= 0 and ages.max() <= 100
    assert scores.min() >= 0 and scores.max() <= 10
    assert {r[1] for r in rows} <= {"Female", "Male"}
    assert {r[2] for r in rows} <= {"low", "high"}
    assert data.read_bytes() == before
    assert "spent epsilon=1" in capsys.readouterr().err


def test_synthesize_n_samples_and_no_leak_warning_with_public_domains(tmp_path):
    data = _write_table(tmp_path / "data.csv")
    out = tmp_path / "synth.csv"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        main(
            ["synthesize", str(data), "--epsilon", "2", "--out", str(out)]
            + ["--n-samples", "50", "--seed", "1"]
            + PUBLIC
        )
    assert len(_read(out)[1]) == 50


def test_synthesize_warns_for_bounds_read_from_the_data(tmp_path, capsys):
    data = _write_table(tmp_path / "data.csv")
    out = tmp_path / "synth.csv"
    main(["synthesize", str(data), "--epsilon", "1", "--out", str(out), "--seed", "0"])
    err = capsys.readouterr().err
    assert "PrivacyLeakWarning: --bounds age=LOW:HIGH was not given" in err
    assert "--categories sex=..." in err
    assert out.exists()


def _usage_error(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_synthesize_never_overwrites_its_input(tmp_path, capsys, monkeypatch):
    data = _write_table(tmp_path / "data.csv")
    before = data.read_bytes()
    monkeypatch.chdir(tmp_path)
    for out in [
        str(data),
        "data.csv",
        "./data.csv",
        "../" + tmp_path.name + "/data.csv",
    ]:
        err = _usage_error(
            capsys,
            ["synthesize", "data.csv", "--epsilon", "1", "--out", out, "--overwrite"],
        )
        assert "refusing to overwrite the input" in err
    link = tmp_path / "link.csv"
    os.symlink(data, link)
    err = _usage_error(
        capsys,
        ["synthesize", str(link), "--epsilon", "1", "--out", str(data), "--overwrite"],
    )
    assert "refusing to overwrite the input" in err
    assert data.read_bytes() == before


@pytest.mark.parametrize(
    "options, message",
    [
        (["--epsilon", "0"], "must be a finite number > 0"),
        (["--epsilon", "abc"], "not a number"),
        (["--epsilon", "1", "--bounds", "age"], "expected COLUMN=LOW:HIGH"),
        (["--epsilon", "1", "--bounds", "age=5:1"], "LOW < HIGH"),
        (["--epsilon", "1", "--bounds", "height=0:1"], "unknown column(s) ['height']"),
        (["--epsilon", "1", "--categories", "sex"], "expected COLUMN=A,B,..."),
        (["--epsilon", "1", "--bounds", "sex=0:1"], "holds text"),
        (["--epsilon", "1", "--categories", "sex=Female"], "does not list ('Male')"),
        (["--epsilon", "1", "--strict"], "--strict: no public domain for --bounds age"),
        (["--epsilon", "1", "--n-samples", "0"], "--n-samples must be at least 1"),
        (["--epsilon", "1", "--delta", "2"], "delta"),
    ],
)
def test_synthesize_bad_options_are_usage_errors(tmp_path, capsys, options, message):
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    out = tmp_path / "synth.csv"
    err = _usage_error(capsys, ["synthesize", str(data), "--out", str(out)] + options)
    assert message in err
    assert "usage: python -m skdp synthesize" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty"),
        (b"a,b\n", "no data rows"),
        (b"a,b\n1,2\n3\n", "row 3: 1 fields, but the header has 2"),
        (b"a,a\n1,2\n", "repeated column names ['a']"),
        (b"a,b\n\xff\xfe,1\n", "not a UTF-8 text file"),
    ],
)
def test_synthesize_bad_files_are_usage_errors(tmp_path, capsys, content, message):
    data = tmp_path / "bad.csv"
    data.write_bytes(content)
    out = tmp_path / "synth.csv"
    err = _usage_error(
        capsys, ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    )
    assert message in err
    assert not out.exists()


def test_synthesize_missing_file_and_existing_output(tmp_path, capsys):
    out = tmp_path / "synth.csv"
    err = _usage_error(
        capsys,
        ["synthesize", str(tmp_path / "nope.csv"), "--epsilon", "1", "--out", str(out)],
    )
    assert "no such file" in err
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    out.write_text("keep me")
    err = _usage_error(
        capsys, ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    )
    assert "pass --overwrite" in err
    assert out.read_text() == "keep me"
    err = _usage_error(
        capsys,
        [
            "synthesize",
            str(data),
            "--epsilon",
            "1",
            "--out",
            str(tmp_path / "x" / "y.csv"),
        ],
    )
    assert "no such directory" in err


def test_python_dash_m_skdp_runs_the_command(tmp_path):
    data = _write_table(tmp_path / "data.csv", n_rows=100)
    out = tmp_path / "synth.csv"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "skdp", "synthesize", str(data)]
    command += ["--epsilon", "1", "--out", str(out), "--seed", "0"] + PUBLIC
    completed = subprocess.run(command, capture_output=True, text=True, env=env)
    assert completed.returncode == 0, completed.stderr
    assert len(_read(out)[1]) == 100
    bad = subprocess.run(
        [sys.executable, "-m", "skdp", "synthesize", str(data), "--out", str(data)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 2
    assert "--epsilon" in bad.stderr


def test_a_byte_order_mark_does_not_change_the_first_column_name(tmp_path):
    # Files saved by spreadsheet programs often start with a UTF-8 BOM.
    data = _write_table(tmp_path / "plain.csv")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + data.read_bytes())
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(bom), "--epsilon", "1", "--out", str(out)]
    assert main(argv + ["--seed", "0"] + PUBLIC) == 0
    assert _read(out)[0] == ["age", "sex", "income", "score"]
    assert not out.read_bytes().startswith(b"\xef\xbb\xbf")
