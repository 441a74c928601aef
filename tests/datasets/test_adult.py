"""Tests for skdp.datasets.load_adult."""

import sys

import numpy as np
import pytest

from skdp.datasets import ADULT_SYNTHESIS_COLUMNS, load_adult

pd = pytest.importorskip("pandas")

N_RAW = 30162
N_DISCRETIZED = 48842
RAW_FEATURES = [
    "age",
    "type_employer",
    "fnlwgt",
    "education",
    "education_num",
    "marital",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hr_per_week",
    "country",
]
RAW_NUMERIC = [
    "age",
    "fnlwgt",
    "education_num",
    "capital_gain",
    "capital_loss",
    "hr_per_week",
]
RAW_CATEGORICAL = [name for name in RAW_FEATURES if name not in RAW_NUMERIC]


@pytest.fixture(scope="module")
def raw_frame():
    return load_adult(as_frame=True)


@pytest.fixture(scope="module")
def raw_array():
    return load_adult(as_frame=False)


@pytest.fixture(scope="module")
def discretized_frame():
    return load_adult(discretized=True, as_frame=True)


@pytest.fixture(scope="module")
def discretized_array():
    return load_adult(discretized=True, as_frame=False)


def test_raw_frame_shape_and_names(raw_frame):
    assert raw_frame.data.shape == (N_RAW, 14)
    assert raw_frame.target.shape == (N_RAW,)
    assert raw_frame.frame.shape == (N_RAW, 15)
    assert raw_frame.feature_names == RAW_FEATURES
    assert list(raw_frame.data.columns) == RAW_FEATURES
    assert raw_frame.target.name == "income>50K"
    assert list(raw_frame.frame.columns) == RAW_FEATURES + ["income>50K"]
    assert raw_frame.target_names.tolist() == ["<=50K", ">50K"]
    assert "CC BY 4.0" in raw_frame.DESCR
    assert "10.24432/C5XW20" in raw_frame.DESCR


def test_raw_frame_dtypes(raw_frame):
    for name in RAW_NUMERIC:
        assert raw_frame.data[name].dtype == np.int64, name
    for name in RAW_CATEGORICAL:
        column = raw_frame.data[name]
        assert isinstance(column.dtype, pd.CategoricalDtype), name
        categories = column.cat.categories.tolist()
        # Categories: the sorted set of values present, no unused category.
        assert categories == sorted(set(column.astype(str))), name
        assert categories == raw_frame.categories[name], name
    assert raw_frame.target.dtype == np.int64
    assert raw_frame.frame.isna().sum().sum() == 0


def test_raw_known_categories(raw_frame):
    assert raw_frame.categories["sex"] == ["Female", "Male"]
    assert len(raw_frame.categories["education"]) == 16
    assert len(raw_frame.categories["country"]) == 41


def test_raw_target_balance(raw_frame):
    # 7,508 of the 30,162 rows earn more than 50K: 0.2489.
    assert set(np.unique(raw_frame.target)) == {0, 1}
    assert raw_frame.target.mean() == pytest.approx(0.249, abs=5e-4)


def test_raw_array_dtypes(raw_array):
    assert raw_array.frame is None
    assert isinstance(raw_array.data, np.ndarray)
    assert raw_array.data.dtype == np.float64
    assert raw_array.data.shape == (N_RAW, 14)
    assert isinstance(raw_array.target, np.ndarray)
    assert raw_array.target.dtype == np.int64
    # Integer-valued, so float64 loses nothing.
    np.testing.assert_array_equal(raw_array.data, np.round(raw_array.data))
    for index, name in enumerate(RAW_FEATURES):
        if name in RAW_CATEGORICAL:
            codes = raw_array.data[:, index]
            assert codes.min() == 0, name
            assert codes.max() == len(raw_array.categories[name]) - 1, name


def test_raw_frame_and_array_agree(raw_frame, raw_array):
    assert raw_array.feature_names == raw_frame.feature_names
    assert raw_array.categories == raw_frame.categories
    np.testing.assert_array_equal(raw_array.target, raw_frame.target.to_numpy())
    for index, name in enumerate(RAW_FEATURES):
        column = raw_frame.data[name]
        if name in RAW_CATEGORICAL:
            expected = column.cat.codes.to_numpy()
            labels = np.asarray(raw_array.categories[name], dtype=object)
            decoded = labels[raw_array.data[:, index].astype(np.int64)]
            np.testing.assert_array_equal(decoded, column.astype(str).to_numpy())
        else:
            expected = column.to_numpy()
        np.testing.assert_array_equal(raw_array.data[:, index], expected)


def test_raw_first_row_matches_source(raw_frame):
    # First line of adult_clean.csv.
    first = raw_frame.frame.iloc[0]
    assert first["age"] == 45
    assert first["type_employer"] == "Self-emp-not-inc"
    assert first["fnlwgt"] == 183710
    assert first["country"] == "United-States"
    assert first["income>50K"] == 0


def test_discretized_shapes_and_dtypes(discretized_frame, discretized_array):
    domain = discretized_frame.domain
    assert discretized_frame.frame.shape == (N_DISCRETIZED, 14)
    assert discretized_frame.data.shape == (N_DISCRETIZED, 13)
    assert discretized_frame.target.name == "income>50K"
    assert discretized_frame.feature_names == [
        name for name in domain if name != "income>50K"
    ]
    assert list(discretized_frame.frame.columns) == list(domain)
    # Every column's dtype carries its whole published domain.
    for name, size in domain.items():
        column = discretized_frame.frame[name]
        assert column.dtype == "category", name
        assert column.cat.categories.tolist() == list(range(size)), name
    assert discretized_frame.target.dtype == np.int64
    assert discretized_array.categories == {
        name: list(range(size)) for name, size in domain.items()
    }
    assert discretized_array.frame is None
    assert discretized_array.data.dtype == np.int64
    assert discretized_array.target.dtype == np.int64
    assert discretized_array.data.shape == (N_DISCRETIZED, 13)


def test_discretized_domain_respected(discretized_frame):
    domain = discretized_frame.domain
    assert domain["income>50K"] == 2
    assert domain["age"] == 85
    assert all(isinstance(size, int) for size in domain.values())
    codes = discretized_frame.frame
    for name, size in domain.items():
        values = codes[name].astype(np.int64)
        assert values.min() >= 0, name
        assert values.max() < size, name


def test_discretized_target_balance(discretized_frame):
    # 11,687 of the 48,842 rows earn more than 50K: 0.2393.
    assert discretized_frame.target.mean() == pytest.approx(0.2393, abs=5e-4)


def test_discretized_frame_and_array_agree(discretized_frame, discretized_array):
    assert discretized_array.domain == discretized_frame.domain
    assert discretized_array.feature_names == discretized_frame.feature_names
    np.testing.assert_array_equal(
        discretized_array.data, discretized_frame.data.to_numpy()
    )
    np.testing.assert_array_equal(
        discretized_array.target, discretized_frame.target.to_numpy()
    )


@pytest.mark.parametrize("discretized", [False, True])
@pytest.mark.parametrize("as_frame", [False, True])
def test_return_X_y(discretized, as_frame):
    bunch = load_adult(discretized=discretized, as_frame=as_frame)
    X, y = load_adult(discretized=discretized, as_frame=as_frame, return_X_y=True)
    assert type(X) is type(bunch.data)
    assert type(y) is type(bunch.target)
    np.testing.assert_array_equal(np.asarray(X), np.asarray(bunch.data))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(bunch.target))


def test_calls_return_independent_copies():
    first = load_adult(as_frame=False)
    first.data[:] = -1
    second = load_adult(as_frame=False)
    assert second.data.min() >= 0


def test_as_frame_without_pandas_raises(monkeypatch):
    # A None entry in sys.modules makes ``import pandas`` raise ImportError.
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="requires pandas"):
        load_adult(as_frame=True)
    with pytest.raises(ImportError, match="requires pandas"):
        load_adult(discretized=True, as_frame=True)
    # The default needs no pandas.
    assert load_adult().data.shape == (N_RAW, 14)
    assert load_adult(discretized=True).data.shape == (N_DISCRETIZED, 13)


@pytest.mark.parametrize("name", ["as_frame", "discretized", "return_X_y"])
def test_non_boolean_parameter_raises(name):
    with pytest.raises(TypeError, match=f"'{name}' parameter of load_adult"):
        load_adult(**{name: "yes"})


def test_synthesis_columns_are_discretized_columns():
    domain = load_adult(discretized=True, as_frame=False).domain
    assert len(set(ADULT_SYNTHESIS_COLUMNS)) == 8
    assert set(ADULT_SYNTHESIS_COLUMNS) <= set(domain)
    assert "income>50K" in ADULT_SYNTHESIS_COLUMNS


def test_synthesizer_takes_the_published_domain_from_the_frame(discretized_frame):
    import warnings

    from skdp import PMWSynthesizer
    from skdp.exceptions import PrivacyLeakWarning

    columns = ["age", "sex", "income>50K"]
    table = discretized_frame.frame[columns].iloc[:2000]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing read
        synth = PMWSynthesizer(n_rounds=2, random_state=0).fit(table)
    sample = synth.sample(50)
    assert sample["age"].cat.categories.tolist() == list(range(85))
    # The arrays' categories do the same for the NumPy version.
    array = load_adult(discretized=True)
    index = [array.feature_names.index(c) for c in columns[:2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        PMWSynthesizer(
            n_rounds=2,
            categories=[array.categories[c] for c in columns[:2]],
            random_state=0,
        ).fit(array.data[:2000, index])
