import numpy as np
import pytest

from skdp import PrivacyLeakWarning
from skdp.synthesis._schema import (
    ColumnDomain,
    declare_columns,
    encode_rows,
    inspect_rows,
    resolve_domains,
)
from skdp.utils._row_source import row_source


def build_domains(columns, names, *, n_bins, **params):
    """The domains of a table given as columns (of the dtypes they have)."""
    block = np.empty((len(columns[0]), len(columns)), dtype=object)
    for j, values in enumerate(columns):
        block[:, j] = values
    specs = declare_columns(
        names, [values.dtype for values in columns], n_bins=n_bins, **params
    )
    return resolve_domains(specs, inspect_rows(row_source(block), specs), n_bins=n_bins)


def test_bins_clip_values_outside_the_bounds():
    domain = ColumnDomain("x", edges=np.linspace(0.0, 10.0, 6))
    codes = domain.encode(np.array([-5.0, 0.0, 1.99, 2.0, 9.99, 10.0, 1e9]))
    assert codes.tolist() == [0, 0, 0, 1, 4, 4, 4]


def test_unknown_categories_go_to_the_first_category():
    domain = ColumnDomain("c", categories=("a", "b", "c"))
    assert domain.encode(np.array(["b", "zzz", "c", None], dtype=object)).tolist() == [
        1,
        0,
        2,
        0,
    ]


def test_numpy_and_python_scalars_encode_alike():
    domain = ColumnDomain("c", categories=(0, 1, 2))
    assert domain.encode(np.array([2, 1, 0])).tolist() == [2, 1, 0]
    assert domain.encode(np.array([2.0, 1.0])).tolist() == [2, 1]


def test_decoded_numbers_lie_inside_their_bin():
    domain = ColumnDomain("x", edges=np.linspace(-1.0, 1.0, 5))
    codes = np.repeat(np.arange(4), 250)
    values = domain.decode(codes, np.random.default_rng(0))
    assert np.all(values >= domain.edges[codes])
    assert np.all(values <= domain.edges[codes + 1])
    assert domain.encode(values).tolist() == codes.tolist()


def test_public_domains_do_not_warn(recwarn):
    columns = [np.array([1.0, 2.0]), np.array(["a", "b"], dtype=object)]
    domains = build_domains(
        columns,
        ["x", "c"],
        categories={"c": ["a", "b", "c"]},
        bounds={"x": (0, 5)},
        n_bins=5,
    )
    assert [d.size for d in domains] == [5, 3]
    assert not [w for w in recwarn if issubclass(w.category, PrivacyLeakWarning)]


def test_missing_domains_fall_back_to_the_data_with_a_warning():
    columns = [np.array([1.0, 3.0]), np.array(["b", "a"], dtype=object)]
    with pytest.warns(PrivacyLeakWarning) as record:
        domains = build_domains(columns, [0, 1], categories=None, bounds=None, n_bins=4)
    messages = [str(w.message) for w in record]
    assert any("bounds of column 0" in m for m in messages)
    assert any("categories of column 1" in m for m in messages)
    assert domains[0].edges[0] == 1.0 and domains[0].edges[-1] == 3.0
    assert domains[1].categories == ("a", "b")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bounds": {0: (3, 1)}}, "low < high"),
        ({"bounds": {0: (0, np.inf)}}, "finite"),
        ({"bounds": [(0, 1), (0, 1), (0, 1)]}, "one entry per column"),
        ({"categories": {0: [1, 1]}}, "distinct"),
        ({"categories": {0: []}}, "non-empty"),
    ],
)
def test_invalid_domains_are_rejected(kwargs, match):
    params = {"categories": None, "bounds": None, **kwargs}
    with pytest.raises(ValueError, match=match):
        build_domains([np.array([1.0])], [0], n_bins=3, **params)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint32, np.int64])
def test_integer_categories_are_encoded_vectorized_as_by_lookup(dtype):
    # Integer arrays over integer categories take a vectorized search; it
    # must give the codes of the value-by-value look-up, unknowns included.
    domain = ColumnDomain("c", categories=(7, 3, 100, 0, 5))
    values = np.array([3, 7, 1, 0, 100, 5, 5, 99, 3], dtype=dtype)
    assert domain.vectorized(values)
    lookup = {c: code for code, c in enumerate(domain.categories)}
    expected = [lookup.get(int(v), 0) for v in values]
    assert domain.encode(values).tolist() == expected
    # Floats, objects and bool categories keep the look-up.
    assert not domain.vectorized(values.astype(float))
    assert not ColumnDomain("b", categories=(False, True)).vectorized(values)


def test_categories_decode_to_their_values_even_tuples():
    domain = ColumnDomain("c", categories=("a", (1, 2), 3))
    decoded = domain.decode(np.array([2, 0, 1, 1]), np.random.default_rng(0))
    assert decoded.dtype == object
    assert decoded.tolist() == [3, "a", (1, 2), (1, 2)]


def test_codes_take_the_narrowest_unsigned_type():
    x = np.linspace(0.0, 1.0, 10)
    small = [
        ColumnDomain("x", edges=np.linspace(0, 1, 11)),
        ColumnDomain("c", categories=(0, 1)),
    ]
    codes = encode_rows(np.column_stack([x, x > 0.5]), small)
    assert codes.dtype == np.uint8
    assert codes[:, 0].tolist() == small[0].encode(x).tolist()
    assert codes[:, 1].tolist() == [0] * 5 + [1] * 5
    wide = ColumnDomain("y", edges=np.linspace(0, 1, 1001))
    assert encode_rows(x[:, None], [wide]).dtype == np.uint16


def test_missing_values_are_found_among_objects_of_any_type():
    from skdp.synthesis._schema import is_missing

    assert not is_missing(np.array(["a", 1, (2, 3)], dtype=object)).any()
    values = np.array(["a", None, np.float64("nan"), 2.5, 3], dtype=object)
    assert is_missing(values).tolist() == [False, True, True, False, False]
    pd = pytest.importorskip("pandas")
    assert is_missing(np.array([pd.NA, pd.NaT, "x"], dtype=object)).tolist() == [
        True,
        True,
        False,
    ]


def test_object_blocks_of_a_frame_are_encoded_in_their_columns_dtypes():
    # A mixed DataFrame's blocks are objects; a column of a plain numpy
    # dtype is read back in it (same codes as its own array).
    frame_block = np.array([[1.5, "u"], [2.5, "v"], [np.nan, "u"]], dtype=object)
    domains = [
        ColumnDomain(
            "x", edges=np.linspace(0, 3, 4), dtype=np.dtype(float), missing=True
        ),
        ColumnDomain("c", categories=("u", "v")),
    ]
    codes = encode_rows(frame_block, domains)
    assert codes.tolist() == [[1, 0], [2, 1], [3, 0]]
