"""``python -m skdp demo`` and ``python -m skdp synthesize``."""

import csv
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skdp.cli import main
from skdp.exceptions import PrivacyLeakWarning

pytestmark = pytest.mark.slow  # the command line in subprocesses

ROOT = Path(__file__).resolve().parents[1]


# -- demo ---------------------------------------------------------------------
def test_quick_demo_prints_the_table_the_ledger_and_draws_the_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from skdp.cli._demo import EPSILONS, METHODS, MODELS, QUICK_EPSILONS, run_demo

    out, progress = io.StringIO(), io.StringIO()
    plot = tmp_path / "demo.png"
    result = run_demo(quick=True, seed=0, plot=str(plot), out=out, progress=progress)
    text = out.getvalue()

    names = [name for name, _, _ in MODELS]
    assert set(result.accuracy) == {(m, e) for m in names for e in QUICK_EPSILONS}
    assert set(QUICK_EPSILONS) <= set(EPSILONS)
    assert {method for _, method, _ in MODELS} == set(METHODS)
    # One entry per fit and the synthesizer; none for the refused fit.
    # Two entries per pipeline fit (the private scaler and the model) and the
    # synthesizer; none for the refused fit.
    assert len(result.budget.ledger) == 2 * len(MODELS) * len(QUICK_EPSILONS) + 1
    labels = [entry.label for entry in result.budget.ledger]
    assert sum(label.startswith("DPStandardScaler(") for label in labels) == len(
        MODELS
    ) * len(QUICK_EPSILONS)
    assert "private: yes" in text and "columntransformer__scale" in text
    assert "BudgetExceededError" in text and result.refused
    for method in METHODS:
        assert method in text
    assert "PMWSynthesizer" in text and "spent (adaptive, basic-composition" in text
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
    from skdp.cli import _demo

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
        (["--epsilon", "0"], "--epsilon must be at least 0.001"),
        (["--epsilon", "abc"], "not a number"),
        (["--epsilon", "1", "--bounds", "age"], "expected COLUMN=LOW:HIGH"),
        (["--epsilon", "1", "--bounds", "age=5:1"], "LOW < HIGH"),
        (["--epsilon", "1", "--bounds", "height=0:1"], "unknown column(s) ['height']"),
        (["--epsilon", "1", "--categories", "sex"], "expected COLUMN=A,B,..."),
        (["--epsilon", "1", "--bounds", "sex=0:1"], "holds text"),
        (["--epsilon", "1", "--categories", "sex=Female"], "does not list;"),
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


# -- release nothing but the noise (issue 18) ----------------------------------
# Whatever leaves a run after the budget is charged (the output file, its
# format, warnings, errors) may depend on the private data only through the
# synthesizer's noisy output; every problem is found before the fit.
@pytest.fixture
def fit_calls(monkeypatch):
    """Record every PMWSynthesizer.fit: an empty list means nothing was spent."""
    from skdp.synthesis import PMWSynthesizer

    calls = []
    original = PMWSynthesizer.fit

    def fit(self, X, y=None):
        calls.append(self.get_params()["epsilon"])
        return original(self, X, y)

    monkeypatch.setattr(PMWSynthesizer, "fit", fit)
    return calls


def _write_rows(path, header, rows, encoding="utf-8"):
    with open(path, "w", newline="", encoding=encoding) as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _is_integer_text(cell):
    return cell.lstrip("+-").isdigit()


def _integer_flags(path):
    """For each column of a CSV file, whether every cell is a whole number."""
    header, rows = _read(path)
    return {
        name: all(_is_integer_text(row[j]) for row in rows)
        for j, name in enumerate(header)
    }


def _ages_table(path, first_age, n_rows=200):
    rng = np.random.default_rng(3)
    rows = [
        [str(int(rng.integers(18, 90))), rng.choice(["Female", "Male"])]
        for _ in range(n_rows)
    ]
    rows[0][0] = first_age
    return _write_rows(path, ["age", "sex"], rows)


@pytest.mark.parametrize(
    "options, age_is_integer",
    [
        ([], False),  # bounds read from the data: always decimals
        (["--bounds", "age=0:100"], True),  # whole-number ends in the option
        (["--bounds", "age=0.0:100"], False),
        (["--integer", "age"], True),
        (["--integer", "age", "--bounds", "age=0.5:99.5"], True),
    ],
)
def test_output_format_depends_on_the_options_not_the_values(
    tmp_path, capsys, options, age_is_integer
):
    # Finding 3: one age written as 30.5 instead of 30 switched the whole
    # synthetic column from integers to decimals, so one output file told
    # the two neighbouring data sets apart.
    flags = []
    for first_age in ["30", "30.5"]:
        data = _ages_table(tmp_path / f"data-{first_age}.csv", first_age)
        out = tmp_path / f"synth-{first_age}.csv"
        argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
        argv += ["--seed", "0", "--categories", "sex=Female,Male"] + options
        assert main(argv) == 0
        warned = "PrivacyLeakWarning: --bounds age" in capsys.readouterr().err
        assert warned is ("--bounds" not in options)
        flags.append(_integer_flags(out))
    assert flags[0] == flags[1]
    assert flags[0]["age"] is age_is_integer


def test_integer_format_decision_reads_only_the_options():
    from skdp.cli._columns import _columns, _domains
    from skdp.cli._options import parse_bounds

    def integer(values, **options):
        options = {
            "categorical": [],
            "categories": [],
            "bounds": [],
            "integer": [],
            "max_categories": 100,
            **options,
        }
        (column,) = _columns(["age"], **options)
        column.observe(tuple(values), np.zeros(len(values), dtype=np.uint8))
        (domain,) = _domains([column], strict=False)
        return domain.integer

    for values in (["30", "41"], ["30.5", "41"], ["30.0", "41.25"]):
        assert integer(values) is False
        assert integer(values, integer=["age"]) is True
        assert integer(values, bounds=[parse_bounds("age=0:100")]) is True
        assert integer(values, bounds=[parse_bounds("age=0:1e2")]) is False
        assert integer(values, bounds=[parse_bounds("age=0.0:100")]) is False


def test_integer_column_without_a_whole_number_in_its_bounds_is_refused(
    tmp_path, capsys, fit_calls
):
    data = _ages_table(tmp_path / "data.csv", "30")
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    err = _usage_error(capsys, argv + ["--integer", "age", "--bounds", "age=0.2:0.8"])
    assert "--integer age: no whole number within --bounds" in err
    err = _usage_error(capsys, argv + ["--integer", "sex"])
    assert "--integer given for column 'sex', which holds text" in err
    err = _usage_error(
        capsys, argv + ["--integer", "sex", "--categories", "sex=Female,Male"]
    )
    assert "['sex'] are given both --integer and categories" in err
    assert fit_calls == [] and not out.exists()


def _incomes(path, n_rows=500, blank=0):
    rng = np.random.default_rng(5)
    rows = [[f"{rng.uniform(1e4, 2e5):.2f}"] for _ in range(n_rows)]
    rows[blank][0] = ""
    return _write_rows(path, ["income"], rows)


@pytest.mark.parametrize("options", [[], ["--bounds", "income=0:300000"]])
def test_numeric_column_with_an_empty_cell_is_refused_before_the_fit(
    tmp_path, capsys, fit_calls, options
):
    # Finding 9: one empty cell made the income column categorical over its
    # raw values, and all 500 synthetic incomes were copied from the input.
    data = _incomes(tmp_path / "data.csv")
    out = tmp_path / "synth.csv"
    err = _usage_error(
        capsys,
        ["synthesize", str(data), "--epsilon", "1", "--out", str(out)] + options,
    )
    assert "column 'income' has empty cells in a numeric column" in err
    assert "--categories income=" in err
    assert fit_calls == [] and not out.exists()


def test_empty_cells_are_a_category_of_a_declared_categorical_column(tmp_path):
    rows = [["a"], [""], ["b"], ["a"]] * 10
    data = _write_rows(tmp_path / "data.csv", ["grade"], rows)
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    assert main(argv + ["--seed", "0", "--categories", "grade=a,b,"]) == 0
    assert {row[0] for row in _read(out)[1]} <= {"a", "b", ""}


def test_high_cardinality_column_without_a_public_list_is_refused(
    tmp_path, capsys, fit_calls
):
    # Categories read from the data are the raw values: for a column with
    # many distinct values the synthetic rows would copy them, rare ones too.
    rows = [[f"id{i:04d}", str(i % 7)] for i in range(500)]
    data = _write_rows(tmp_path / "data.csv", ["customer", "weekday"], rows)
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    argv += ["--categories", "weekday=0,1,2,3,4,5,6", "--seed", "0"]
    err = _usage_error(capsys, argv)
    assert "column 'customer' has more than 100 distinct values" in err
    for fix in ("--categories customer=", "--bounds customer=LOW:HIGH"):
        assert fix in err
    assert "--max-categories" in err
    assert "id0" not in err
    assert fit_calls == [] and not out.exists()
    # A numbers-only column named --categorical falls under the same cap.
    err = _usage_error(capsys, argv + ["--max-categories", "5"] + ["--categorical"])
    assert "expected at least one argument" in err
    rows = [[str(i)] for i in range(300)]
    numbers = _write_rows(tmp_path / "numbers.csv", ["code"], rows)
    err = _usage_error(
        capsys,
        ["synthesize", str(numbers), "--epsilon", "1", "--out", str(out)]
        + ["--categorical", "code"],
    )
    assert "column 'code' has more than 100 distinct values" in err
    assert fit_calls == [] and not out.exists()
    # A public cap raised on purpose reads the list from the data, with a
    # warning.
    assert main(argv + ["--max-categories", "500"]) == 0
    assert "PrivacyLeakWarning: --categories customer=" in capsys.readouterr().err
    assert len(_read(out)[1]) == 500


def test_category_errors_do_not_echo_private_values(tmp_path, capsys, fit_calls):
    # Finding 10: the error listed the private values missing from the list.
    rows = [["Zyzzyx"], ["Female"], ["Male"]] * 10
    data = _write_rows(tmp_path / "data.csv", ["sex"], rows)
    out = tmp_path / "synth.csv"
    err = _usage_error(
        capsys,
        ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
        + ["--categories", "sex=Female,Male"],
    )
    assert "column 'sex' holds values that --categories does not list" in err
    assert "Zyzzyx" not in err
    assert fit_calls == [] and not out.exists()


def _is_before_any_work(monkeypatch):
    from skdp.cli import _synthesize

    reads = []
    monkeypatch.setattr(_synthesize, "_CsvFile", lambda *a: reads.append(a) or 1 / 0)
    return reads


@pytest.mark.parametrize(
    "options, message",
    [
        (["--epsilon", "1e308"], "--epsilon must be at most 1e+06"),
        (["--epsilon", "1e7"], "no privacy"),
        (["--epsilon", "1e-300"], "--epsilon must be at least 0.001"),
        (["--epsilon", "inf"], "must be a finite number"),
        (["--epsilon", "nan"], "must be a finite number"),
        (["--epsilon", "1", "--n-samples", str(10**12)], "at most 100,000,000"),
        (["--epsilon", "1", "--n-samples", "-1"], "at least 1"),
        (["--epsilon", "1", "--n-bins", str(10**9)], "at most 1,000"),
        (["--epsilon", "1", "--n-bins", "0"], "at least 1"),
        (["--epsilon", "1", "--n-rounds", str(10**9)], "at most 10,000"),
        (["--epsilon", "1", "--delta", "0"], "--delta must be > 0"),
        (["--epsilon", "1", "--delta", "nan"], "--delta must be"),
        (["--epsilon", "1", "--delta", "1"], "--delta must be"),
        (["--epsilon", "1", "--seed", "-1"], "at least 0"),
        (["--epsilon", "1", "--max-categories", "0"], "at least 1"),
        (["--epsilon", "1", "--max-categories", str(10**12)], "at most 100,000"),
    ],
)
def test_absurd_sizes_are_usage_errors_before_any_work(
    tmp_path, capsys, monkeypatch, fit_calls, options, message
):
    # From the adoption issue: --n-samples 10**12 and --epsilon 1e308 ended
    # in tracebacks (after the fit, for --n-samples).
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    out = tmp_path / "synth.csv"
    reads = _is_before_any_work(monkeypatch)
    err = _usage_error(capsys, ["synthesize", str(data), "--out", str(out)] + options)
    assert message in err
    assert "Traceback" not in err
    assert reads == [] and fit_calls == [] and not out.exists()


def test_marginals_too_large_for_memory_are_refused_before_the_fit(
    tmp_path, capsys, fit_calls
):
    # Three numeric columns at 1,000 bins: a three-way marginal of 10**9
    # cells, which the synthesizer ran out of memory counting, after the
    # charge.
    rng = np.random.default_rng(0)
    rows = rng.uniform(0, 1, size=(40, 3)).round(3).astype(str).tolist()
    data = _write_rows(tmp_path / "data.csv", ["a", "b", "c"], rows)
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    argv += ["--bounds", "a=0:1", "--bounds", "b=0:1", "--bounds", "c=0:1"]
    err = _usage_error(capsys, argv + ["--n-bins", "1000"])
    assert "10,000,000" in err and "--n-bins" in err
    assert fit_calls == [] and not out.exists()


def test_an_epsilon_the_synthesizer_cannot_honour_is_refused_at_the_charge(
    tmp_path, capsys, monkeypatch, fit_calls
):
    # Below about 3e-5 the synthesizer's plan spent more than it was given
    # (epsilon_ = 3.3e-5 for epsilon=1e-10). Its plan now refuses such an
    # epsilon before the charge; the command also gives the fit a budget of
    # exactly --epsilon and --delta, so no plan could overspend it.
    from skdp.cli import _options

    monkeypatch.setattr(_options, "MIN_EPSILON", 1e-12)
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    out = tmp_path / "synth.csv"
    err = _usage_error(
        capsys,
        ["synthesize", str(data), "--epsilon", "1e-10", "--out", str(out)] + PUBLIC,
    )
    # The adaptive schedule plans its noisiest round over every measurement
    # it may make (the count depends on the public schedule, not the data).
    assert re.search(r"too small to split over \d+ measurements", err)
    assert len(fit_calls) == 1 and not out.exists()
    assert not list(tmp_path.glob(".synth.csv.*"))


def test_many_samples_are_written_in_chunks(tmp_path, monkeypatch):
    from skdp.cli import _csv

    monkeypatch.setattr(_csv, "_CHUNK_CELLS", 28)  # 7 rows of 4
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    for out in outs:
        main(
            ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
            + ["--seed", "4", "--n-samples", "50"]
            + PUBLIC
        )
    header, rows = _read(outs[0])
    assert len(rows) == 50 and len({tuple(r) for r in rows}) > 7
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_an_output_larger_than_the_free_disk_space_is_refused_before_the_fit(
    tmp_path, capsys, monkeypatch, fit_calls
):
    import shutil

    from skdp.cli import _csv

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(
        _csv.shutil,
        "disk_usage",
        lambda path: usage._replace(free=1000),
    )
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    out = tmp_path / "synth.csv"
    err = _usage_error(
        capsys,
        ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
        + ["--n-samples", "100000"]
        + PUBLIC,
    )
    assert "free" in err and "--n-samples" in err
    assert fit_calls == [] and not out.exists()


def test_a_write_failure_after_the_fit_is_reported_without_a_traceback(
    tmp_path, capsys, monkeypatch, fit_calls
):
    import errno

    from skdp.cli import _synthesize

    def full_disk(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_synthesize.os, "replace", full_disk)
    data = _write_table(tmp_path / "data.csv", n_rows=30)
    out = tmp_path / "synth.csv"
    code = main(
        ["synthesize", str(data), "--epsilon", "1", "--out", str(out), "--seed", "0"]
        + PUBLIC
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "the privacy budget was spent" in err and "No space left" in err
    assert len(fit_calls) == 1
    assert not out.exists() and not list(tmp_path.glob(".synth.csv.*"))


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


# One column of each kind (the options declare two of them); the hostile
# cell goes into row 3 of one of them.
_KINDS = {
    "declared numeric": ("age", ["--bounds", "age=0:100"]),
    "declared categorical": ("sex", ["--categories", "sex=Female,Male"]),
    "undeclared numeric": ("score", []),
    "undeclared text": ("income", []),
}
_HOSTILE = {
    "NaN": "NaN",
    "inf": "inf",
    "-inf": "-inf",
    "empty": "",
    "huge": "1e400",
    "not UTF-8": b"\xff\xfe",
    "out of domain": None,  # per kind, below
}
_OUT_OF_DOMAIN = {"age": "1000", "sex": "Zyzzyx", "score": "-5", "income": "Zyzzyx"}
# Which cases run to the end: an out-of-range number is clipped into the
# end bin (declared bounds) or widens the range read from the data, and a
# text column takes any text. A numeric column with NaN, an infinity or an
# empty cell, a value missing from --categories and a file that is not
# UTF-8 are usage errors.
_SUCCEEDS = {
    ("declared numeric", "out of domain"),
    ("undeclared numeric", "out of domain"),
} | {("undeclared text", cell) for cell in _HOSTILE if cell != "not UTF-8"}


@pytest.mark.parametrize("cell", list(_HOSTILE))
@pytest.mark.parametrize("kind", list(_KINDS))
def test_hostile_cells_end_in_a_usage_error_or_a_complete_file(
    tmp_path, capsys, fit_calls, kind, cell
):
    import warnings

    name = _KINDS[kind][0]
    options = [option for _, declared in _KINDS.values() for option in declared]
    value = _HOSTILE[cell] if _HOSTILE[cell] is not None else _OUT_OF_DOMAIN[name]
    plain = _write_table(tmp_path / "plain.csv", n_rows=30)
    lines = plain.read_bytes().split(b"\r\n")
    fields = lines[3].split(b",")
    position = ["age", "sex", "income", "score"].index(name)
    fields[position] = value if isinstance(value, bytes) else value.encode()
    lines[3] = b",".join(fields)
    data = tmp_path / "data.csv"
    data.write_bytes(b"\r\n".join(lines))
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        try:
            code = main(argv + ["--seed", "0"] + options)
        except SystemExit as exit_info:
            code = exit_info.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if (kind, cell) in _SUCCEEDS:
        assert code == 0
        header, rows = _read(out)
        assert header == ["age", "sex", "income", "score"] and len(rows) == 30
        assert all(0 <= int(row[0]) <= 100 for row in rows)  # clipped
        assert len(fit_calls) == 1
    else:
        assert code == 2
        assert "usage: python -m skdp synthesize" in err
        what = "not a UTF-8 text file" if cell == "not UTF-8" else f"column {name!r}"
        assert what in err
        # The offending private value is never echoed.
        assert "Zyzzyx" not in err and "1e400" not in err
        assert fit_calls == [] and not out.exists()
    assert not list(tmp_path.glob(".synth.csv.*"))


# -- streaming (issue 16) ------------------------------------------------------
# The command held the whole file as Python strings: 6.7 GB for a 200 MB
# file. It now reads a chunk of rows at a time and fits on one-byte codes.
def _large_table(path, n_rows, seed=0):
    """The four columns of _write_table, written without a Python row loop."""
    rng = np.random.default_rng(seed)
    columns = [
        rng.integers(18, 90, n_rows).astype(str),
        np.array(["Female", "Male"])[rng.integers(0, 2, n_rows)],
        np.array(["low", "high"])[rng.integers(0, 2, n_rows)],
        np.round(rng.uniform(0, 10, n_rows), 3).astype(str),
    ]
    lines = map(",".join, zip(*columns))
    path.write_text("age,sex,income,score\n" + "\n".join(lines) + "\n")
    return path


def test_a_byte_order_mark_and_bounds_on_the_first_column(tmp_path):
    # From the adoption issue: with a BOM the first column was named
    # "\ufeffage", so --bounds age=... named an unknown column.
    plain = _write_table(tmp_path / "plain.csv", n_rows=60)
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    outs = []
    for data in (plain, bom):
        out = tmp_path / f"synth-{data.stem}.csv"
        argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
        assert main(argv + ["--seed", "0", "--bounds", "age=0:100"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert outs[1].startswith(b"age,sex,income,score\r\n")


@pytest.mark.parametrize("declared", [True, False])
def test_reading_in_small_chunks_writes_the_same_file(tmp_path, monkeypatch, declared):
    # The chunk size is a memory knob, never a change of result: the same
    # seed gives the same file whether the input is read 65,536 rows at a
    # time or 7. Without declared domains both passes run (ranges and lists
    # read from the data over chunk boundaries).
    from skdp.cli import _csv

    data = _write_table(tmp_path / "data.csv", n_rows=200)
    outs = []
    for read_rows in (_csv._READ_ROWS, 7):
        monkeypatch.setattr(_csv, "_READ_ROWS", read_rows)
        out = tmp_path / f"synth-{read_rows}.csv"
        argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
        argv += ["--seed", "3", "--integer", "age"] + (PUBLIC if declared else [])
        assert main(argv) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_peak_memory_grows_by_a_few_bytes_a_row(tmp_path, monkeypatch):
    # Peak traced memory of the whole command at 10,000 and 100,000 rows,
    # read 1,000 rows at a time. What must grow with the rows: the codes
    # (4 columns x 1 byte, twice while the first pass joins its chunks),
    # the synthesizer's copy of them (4) and its counting index (8 bytes a
    # row, plus bincount's): about 30 bytes a row. Holding the cells as
    # strings, as before, cost about 300 bytes a row (4 strings of ~55
    # bytes, a list per row), so 64 bytes a row separates the two with a
    # wide margin either way. tracemalloc counts allocations exactly, so
    # the test cannot flake on timing or on other processes.
    import tracemalloc
    import warnings

    from skdp.cli import _csv, _synthesize

    monkeypatch.setattr(_csv, "_READ_ROWS", 1_000)
    monkeypatch.setattr(_csv, "_CHUNK_CELLS", 4_000)
    peaks = {}
    # The first run imports modules and fills caches: it is not measured.
    for n_rows, traced in [(10_000, False), (10_000, True), (100_000, True)]:
        data = _large_table(tmp_path / f"data-{n_rows}.csv", n_rows)
        out = tmp_path / f"synth-{n_rows}.csv"
        if traced:
            tracemalloc.start()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                _synthesize.synthesize_csv(
                    data,
                    out,
                    epsilon=1.0,
                    seed=0,
                    n_rounds=1,
                    n_samples=1_000,
                    bounds=[("age", (0, 100)), ("score", (0, 10))],
                    overwrite=True,
                )
            if traced:
                peaks[n_rows] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    per_row = (peaks[100_000] - peaks[10_000]) / 90_000
    print(f"peak traced memory: {peaks}, {per_row:.1f} bytes a row")
    assert per_row < 64, (per_row, peaks)


def test_a_file_changed_between_the_passes_is_refused_before_the_fit(
    tmp_path, capsys, monkeypatch, fit_calls
):
    from skdp.cli import _columns

    data = _write_table(tmp_path / "data.csv", n_rows=30)
    first_pass = _columns._scan

    def scan_then_append(*args):
        codes = first_pass(*args)
        with open(data, "a", newline="") as handle:
            handle.write("40,Male,low,1.5\r\n")
        return codes

    monkeypatch.setattr(_columns, "_scan", scan_then_append)
    out = tmp_path / "synth.csv"
    # --bounds age only: the other columns' domains come from the data, so
    # a second pass reads the file again.
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    err = _usage_error(capsys, argv + ["--bounds", "age=0:100"])
    assert "changed while it was being read; nothing was spent" in err
    assert fit_calls == [] and not out.exists()


def test_cells_with_commas_quotes_and_line_breaks_are_written_as_csv(tmp_path, capsys):
    # Rows are joined by hand from prepared cells: a category that needs
    # quoting must come back whole through a CSV reader.
    labels = ["plain", "a,b", 'say "hi"', "two\nlines", ""]
    rows = [[labels[i % len(labels)], str(i % 3)] for i in range(100)]
    data = _write_rows(tmp_path / "data.csv", ["label", "digit"], rows)
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "5", "--out", str(out)]
    argv += ["--seed", "0", "--categories", "digit=0,1,2"]
    assert main(argv) == 0
    assert "PrivacyLeakWarning: --categories label=" in capsys.readouterr().err
    header, synthetic = _read(out)
    assert header == ["label", "digit"] and len(synthetic) == 100
    assert all(len(row) == 2 and row[0] in labels for row in synthetic)
    assert {row[0] for row in synthetic} >= {"a,b", 'say "hi"', "two\nlines"}
    # One column: an empty category is written "" so that the row is not
    # a blank line (which readers skip).
    single = _write_rows(tmp_path / "single.csv", ["x"], [["a"], [""]] * 20)
    argv = ["synthesize", str(single), "--epsilon", "5", "--out", str(out)]
    assert main(argv + ["--seed", "0", "--categories", "x=a,", "--overwrite"]) == 0
    assert len(_read(out)[1]) == 40


def test_a_range_read_from_the_data_that_cannot_be_binned_is_not_shown(
    tmp_path, capsys, fit_calls
):
    # Its ends are private values: the message names the column only.
    rows = [["1e300", "a"], ["-1e300", "b"], ["5", "a"]] * 5
    data = _write_rows(tmp_path / "data.csv", ["x", "y"], rows)
    out = tmp_path / "synth.csv"
    argv = ["synthesize", str(data), "--epsilon", "1", "--out", str(out)]
    err = _usage_error(capsys, argv + ["--integer", "x"])
    assert "column 'x': the range read from the data cannot be cut" in err
    assert "e+300" not in err and "1e300" not in err
    assert fit_calls == [] and not out.exists()
