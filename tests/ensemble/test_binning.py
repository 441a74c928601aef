"""The ensembles' bins (skdp/ensemble/_binning.py): schema, fine grid, codes.

Everything here is deterministic: the fine grid and the codes are public
functions of the declared schema, and the edges are post-processing of
(noisy) counts handed in by the caller.
"""

import warnings

import numpy as np
import pytest

from skdp.accounting import PrivacyBudget
from skdp.ensemble import DPHistGradientBoostingClassifier
from skdp.ensemble._binning import (
    FINE_CELLS,
    FeatureSchema,
    auto_bins,
    edges_from_counts,
    encode_block,
    fine_cells,
    fine_counts_block,
    resolve_schema,
)
from skdp.ensemble._inputs import label_columns
from skdp.exceptions import PrivacyLeakWarning


def _schema(n_bins=4, categories=("a", "b")):
    """Two numeric features on (0, 1) and (-2, 2), one categorical."""
    return FeatureSchema(
        (False, False, True),
        (None, None, np.array(categories, dtype=object)),
        np.array([0.0, -2.0, np.nan]),
        np.array([1.0, 2.0, np.nan]),
        n_bins,
    )


def _estimator(**params):
    return DPHistGradientBoostingClassifier(**params)


# ------------------------------------------------------------- the fine grid
def test_fine_cells_cover_the_declared_range_and_nan_has_its_own_cell():
    width = 1.0 / FINE_CELLS
    values = np.array([0.0, width / 2, width, 0.5, 1 - width / 2, np.nan])
    expected = [0, 0, 1, FINE_CELLS // 2, FINE_CELLS - 1, FINE_CELLS]
    np.testing.assert_array_equal(fine_cells(values, 0.0, 1.0), expected)


def test_values_at_or_beyond_the_bounds_are_in_the_edge_cells_not_missing():
    # The upper bound itself and everything clipped to it belong to the last
    # cell of the range; only NaN is missing (cell FINE_CELLS).
    values = np.array([-5.0, 0.0, 1.0, 1.0 + 1e-9, 7.0, np.inf, -np.inf])
    cells = fine_cells(values, 0.0, 1.0)
    np.testing.assert_array_equal(cells, [0, 0, 127, 127, 127, 127, 0])
    assert FINE_CELLS == 128


def test_fine_counts_put_every_row_in_one_cell_per_numeric_feature():
    rng = np.random.default_rng(0)
    X = np.empty((500, 3), dtype=object)
    X[:, 0] = rng.uniform(-0.5, 1.5, size=500)  # some outside the bounds
    X[:, 1] = rng.normal(size=500)
    X[:, 1][rng.uniform(size=500) < 0.1] = np.nan
    X[:, 2] = rng.choice(["a", "b", "c"], size=500)
    counts = fine_counts_block(X, None, _schema())
    assert counts.dtype == np.int64 and counts.shape == (2 * (FINE_CELLS + 1),)
    per_feature = counts.reshape(2, FINE_CELLS + 1)
    np.testing.assert_array_equal(per_feature.sum(axis=1), [500, 500])
    n_missing = int(np.sum(np.isnan(X[:, 1].astype(float))))
    assert per_feature[0, -1] == 0 and per_feature[1, -1] == n_missing


# ------------------------------------------------------------------ edges
def test_edges_split_the_mass_into_equal_shares():
    np.testing.assert_array_equal(
        edges_from_counts(np.ones(FINE_CELLS), 4), [32, 64, 96]
    )
    counts = np.zeros(FINE_CELLS)
    counts[[10, 100]] = 5.0  # half the mass in cell 10, half in cell 100
    # Two bins: the first ends after cell 10. Four: the repeated boundary
    # (the first and second quarter both end at cell 10) merges two bins.
    np.testing.assert_array_equal(edges_from_counts(counts, 2), [11])
    np.testing.assert_array_equal(edges_from_counts(counts, 4), [11, 101])


def test_edges_of_counts_without_mass_are_equal_width():
    for counts in (np.zeros(FINE_CELLS), -np.ones(FINE_CELLS)):
        np.testing.assert_array_equal(edges_from_counts(counts, 4), [32, 64, 96])


@pytest.mark.parametrize("n_bins", [2, 3, 16, 32, 200])
def test_edges_are_sorted_interior_cells_and_at_most_n_bins_minus_one(n_bins):
    rng = np.random.default_rng(n_bins)
    for _ in range(20):
        noisy = rng.normal(scale=50.0, size=FINE_CELLS) + rng.exponential(
            10.0, size=FINE_CELLS
        )
        cuts = edges_from_counts(noisy, n_bins)
        assert cuts.size <= min(n_bins - 1, FINE_CELLS - 1)
        assert np.all(np.diff(cuts) > 0)
        assert np.all((cuts >= 1) & (cuts <= FINE_CELLS - 1))


# ------------------------------------------------------------------ codes
def test_numeric_codes_count_the_boundaries_and_nan_is_the_missing_bin():
    schema = _schema(n_bins=4)
    cuts = (np.array([32, 64, 96]), np.array([64]), np.zeros(0, dtype=np.int64))
    X = np.array(
        [
            [0.0, -2.0, "a"],
            [0.25, -0.01, "b"],  # cell 32 starts bin 1; -0.01 is below 0
            [0.7, 0.0, "a"],
            [0.99, 1.9, "a"],
            [1.0, 5.0, "a"],  # the upper bound and beyond: the last bin
            [np.nan, np.nan, "a"],
        ],
        dtype=object,
    )
    codes = encode_block(X, None, schema, cuts)
    assert codes.dtype == np.int16
    np.testing.assert_array_equal(codes[:, 0], [0, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(codes[:, 1], [0, 0, 1, 1, 1, 4])


def test_categorical_codes_index_the_declared_categories_else_missing():
    schema = _schema(categories=("a", "b"))
    cuts = (np.zeros(0, dtype=np.int64),) * 3
    column = ["b", "a", None, np.nan, "zzz", ["unhashable"], 3.0]
    X = np.empty((len(column), 3), dtype=object)
    X[:, :2] = 0.5
    for i, value in enumerate(column):
        X[i, 2] = value
    np.testing.assert_array_equal(
        encode_block(X, None, schema, cuts)[:, 2], [1, 0, 2, 2, 2, 2, 2]
    )


def test_numeric_categories_match_float_columns_exactly():
    schema = FeatureSchema(
        (True,), (np.array([0, 1, 2]),), np.array([np.nan]), np.array([np.nan]), 4
    )
    X = np.array([[1.0], [2.0], [np.nan], [3.5], [0.0], [1.5]])
    codes = encode_block(X, None, schema, (np.zeros(0, dtype=np.int64),))
    np.testing.assert_array_equal(codes[:, 0], [1, 2, 3, 3, 0, 3])


# ----------------------------------------------------------------- schema
def test_declared_string_columns_are_categorical_and_do_not_warn():
    X = np.array([[0.1, "x"], [0.9, "y"]], dtype=object)
    estimator = _estimator(
        bounds=(0, 1), categorical_features=[1], categories=[["y", "x"]]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema = resolve_schema(estimator, X, 8)
    assert schema.categorical == (False, True)
    np.testing.assert_array_equal(schema.categories[1], ["x", "y"])  # sorted
    assert schema.max_codes(0) == 9 and schema.max_codes(1) == 3
    assert schema.numeric == [0] and schema.n_features == 2
    np.testing.assert_array_equal(schema.lower, [0.0, np.nan])


def test_which_features_are_categorical_is_never_guessed_from_the_values():
    # An array's undeclared column holding a string is refused (before any
    # charge) with a message that shows no value; whether a column is
    # categorical never depends on the rows.
    X = np.array([[0.1, "secret-value"], [0.9, 0.5]], dtype=object)
    with pytest.raises(ValueError, match="not numbers") as error:
        resolve_schema(_estimator(bounds=(0, 1)), X, 8)
    assert "secret" not in str(error.value)
    # A DataFrame's dtypes are its public schema: object columns are labels.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [0.1, 0.9], "b": ["x", "y"], "c": [1, 2]})
    assert label_columns(frame).tolist() == [False, True, False]
    assert label_columns(np.zeros((2, 3))) is None


@pytest.mark.parametrize("backend", ["memory", "dask"])
def test_a_cell_that_is_neither_string_nor_number_is_a_type_error(backend):
    # scikit-learn's convention (check_dtype_object): a dict in a numeric
    # feature is a TypeError, a string that is no number a ValueError; both
    # refused before the charge on either backend, showing no value.
    X = np.array([[{"secret": 1}, 0.5], [0.9, 0.5], [0.2, 0.1]], dtype=object)
    y = np.array([0, 1, 0])
    if backend == "dask":
        da = pytest.importorskip("dask.array")
        X, y = da.from_array(X, chunks=2), da.from_array(y, chunks=2)
    budget = PrivacyBudget(2.0)
    model = DPHistGradientBoostingClassifier(
        epsilon=1.0, bounds=(0, 1), classes=[0, 1], budget=budget, random_state=0
    )
    with pytest.raises(TypeError, match="argument must be a string.* number") as e:
        model.fit(X, y)
    assert "secret" not in str(e.value)
    assert len(budget.ledger) == 0 and budget.spent() == (0.0, 0.0)


def test_categorical_features_as_indices_or_mask_agree():
    X = np.zeros((3, 3))
    by_index = resolve_schema(
        _estimator(bounds=(0, 1), categorical_features=[2], categories=[[0, 1]]), X, 4
    )
    by_mask = resolve_schema(
        _estimator(
            bounds=(0, 1),
            categorical_features=[False, False, True],
            categories=[[0, 1]],
        ),
        X,
        4,
    )
    assert by_index.categorical == by_mask.categorical == (False, False, True)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(categorical_features=[True, False]), "mask needs 3 entries"),
        (dict(categorical_features=[3]), "outside"),
        (dict(categorical_features=[-1]), "outside"),
        (dict(categorical_features=[0], categories=[[1], [2]]), "one list per"),
        (dict(categorical_features=[0], categories=[[]]), "declares no category"),
        (
            dict(categorical_features=[0], categories=[list(range(2**15))]),
            "more than",
        ),
        (dict(bounds=(1, 0)), "lower < upper"),
        (dict(bounds=(0, np.inf)), "finite"),
    ],
)
def test_malformed_schemas_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        resolve_schema(_estimator(**{"bounds": (0, 1), **params}), np.zeros((3, 3)), 4)


def test_schema_read_from_the_data_warns_for_each_part():
    X = np.array([[0.1, "x"], [0.9, None], [0.5, "y"]], dtype=object)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        schema = resolve_schema(_estimator(categorical_features=[1]), X, 4)
    messages = [str(w.message) for w in record]
    assert all(w.category is PrivacyLeakWarning for w in record)
    assert len(messages) == 2
    assert messages[0].startswith("categories was not given")
    assert messages[1].startswith("bounds was not given")
    np.testing.assert_array_equal(schema.categories[1], ["x", "y"])  # None is missing
    assert (schema.lower[0], schema.upper[0]) == (0.1, 0.9)


# -------------------------------------------------------------- auto bins
def test_auto_bins_follow_the_rule_between_two_and_the_cap():
    # ceil(2.5 sqrt(n mu / (F sqrt(rounds)))), independently of the code.
    for n, F, mu, rounds in [
        (24000, 14, 0.27, 5),
        (426, 30, 0.27, 5),
        (10, 50, 0.1, 8),
    ]:
        rule = int(np.ceil(2.5 * np.sqrt(n * mu / (F * np.sqrt(rounds)))))
        assert auto_bins(n, F, mu, rounds, 32) == min(max(rule, 2), 32)
    assert auto_bins(10, 50, 0.1, 8, 32) == 2
    assert auto_bins(10**9, 1, 10.0, 1, 32) == 32
    sizes = [auto_bins(n, 5, 0.3, 8, 1024) for n in (100, 1000, 10**4, 10**5)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
