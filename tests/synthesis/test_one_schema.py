"""One schema: PMWSynthesizer, OnlinePMW and ``python -m skdp synthesize``
read the same columns into the same domains, through the same functions of
skdp/synthesis/_schema.py."""

import warnings

import numpy as np
import pytest

from skdp import PMWSynthesizer, PrivacyLeakWarning
from skdp.cli._columns import _columns, _file_schema
from skdp.cli._csv import _CsvFile
from skdp.cli._options import DEFAULT_MAX_CATEGORIES
from skdp.synthesis import OnlinePMW, _schema

pd = pytest.importorskip("pandas")

# Text whose natural (alphabetical) order is not the order of its repr: a
# schema of its own that sorted by repr (PMWSynthesizer's, before) would put
# "it's" first (its repr starts with a double quote).
WORDS = ["it's", '"quoted"', "Zebra", "apple"]
NATURAL = ['"quoted"', "Zebra", "apple", "it's"]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {
            "word": rng.choice(WORDS, size=n),
            "count": rng.integers(3, 40, size=n),
        }
    )
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    return path


def _pmw_domains(path):
    with pytest.warns(PrivacyLeakWarning):
        synth = PMWSynthesizer(n_rounds=1, random_state=0).fit(pd.read_csv(path))
    return synth.domains_


def _online_domain(path):
    with pytest.warns(PrivacyLeakWarning, match="domain"):
        pmw = OnlinePMW(max_updates=1, random_state=0).fit(pd.read_csv(path))
    return pmw.domain_


def _cli_domains(path, n_bins):
    csv_file = _CsvFile(path)
    columns = _columns(
        csv_file.header,
        categorical=[],
        categories=[],
        bounds=[],
        integer=[],
        max_categories=DEFAULT_MAX_CATEGORIES,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        _, _, column_domains = _file_schema(csv_file, columns, n_bins, strict=False)
    return column_domains


def test_the_same_csv_gives_the_same_domains_through_all_three(table):
    frame = pd.read_csv(table)
    pmw = _pmw_domains(table)
    online = _online_domain(table)
    command = _cli_domains(table, n_bins=10)
    # Categories read from the data: the same values in the same order.
    assert pmw[0].categories == online[0] == command[0].categories == tuple(NATURAL)
    # Bounds read from the data: the same bins (the smallest and largest
    # value, cut into n_bins); OnlinePMW takes the values themselves.
    low, high = frame["count"].min(), frame["count"].max()
    np.testing.assert_array_equal(pmw[1].edges, command[1].edges)
    np.testing.assert_array_equal(pmw[1].edges, np.linspace(low, high, 11))
    assert online[1] == tuple(sorted(set(frame["count"])))


def test_all_three_read_categories_with_the_schemas_inference(table, monkeypatch):
    # Reverse the schema's order of categories read from the data: a front
    # end with an inference of its own would keep the natural order.
    monkeypatch.setattr(
        _schema, "sorted_categories", lambda values: tuple(sorted(values))[::-1]
    )
    reverse = tuple(NATURAL[::-1])
    assert _pmw_domains(table)[0].categories == reverse
    assert _online_domain(table)[0] == reverse
    assert _cli_domains(table, n_bins=10)[0].categories == reverse


def test_all_three_summarise_values_with_the_schema(table, monkeypatch):
    # Every front end summarises the values it reads (for the checks and
    # the inference) with the schema's ColumnSummary.
    calls = []
    observe = _schema.ColumnSummary.observe_distinct

    def spy(self, values, cap):
        calls.append(len(values))
        return observe(self, values, cap)

    monkeypatch.setattr(_schema.ColumnSummary, "observe_distinct", spy)
    for read in (_pmw_domains, _online_domain, lambda t: _cli_domains(t, n_bins=10)):
        calls.clear()
        read(table)
        assert sum(calls) >= 400  # every row of the text column
