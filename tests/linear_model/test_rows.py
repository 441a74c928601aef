"""Row bounding inside the block functions (skdp/linear_model/_rows.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp.linear_model._rows import (
    RowSpec,
    bound_rows,
    bounded_rows,
    largest,
    largest_row_norm,
    row_norms,
    scaled_rows,
    with_constant_column,
)
from skdp.utils._row_source import row_source


def _rows(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 4)) * 10.0 ** rng.integers(-3, 3, size=(300, 1))
    X[0] = [3e200, 4e200, 0.0, 0.0]  # squares overflow: the safe norms
    X[1] = 0.0
    return X


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [0.0, 0.5])
def test_bounded_rows_are_bound_rows_with_the_intercept_column(sparse, intercept):
    X = _rows()
    X = sp.csr_matrix(X) if sparse else X
    Z = bounded_rows(X, 2.0, intercept)
    expected, _ = bound_rows(X, 2.0)
    if intercept:
        expected = with_constant_column(expected, intercept)
    if sparse:
        Z, expected = Z.toarray(), expected.toarray()
    # The norms of the one-pass and the overflow-safe computations agree to
    # a few ulps, so do the scaled rows.
    np.testing.assert_allclose(Z, expected, rtol=1e-14, atol=0)
    assert row_norms(Z[:, :4]).max() <= 2.0 * (1 + 1e-15)
    np.testing.assert_allclose(Z[0, :2], [1.2, 1.6])


def test_bounding_is_row_wise():
    # A row's bounded form does not depend on the rows it is handed with:
    # block functions bound whatever subset of rows they get.
    X = _rows()
    Z = bounded_rows(X, 1.0, 0.5)
    chosen = np.array([0, 7, 8, 150, 299])
    assert np.array_equal(bounded_rows(X[chosen], 1.0, 0.5), Z[chosen])
    assert np.array_equal(bounded_rows(X[5:6], 1.0, 0.5), Z[5:6])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("data_norm", [2.0, None])
@pytest.mark.parametrize("intercept", [0.0, 0.5])
def test_gradient_rows_are_the_bounded_rows_less_the_intercept_column(
    sparse, data_norm, intercept
):
    # DP-SGD reads these instead of Z: the same rows without the intercept
    # column, and norms that are Z's (to a few ulps), row by row whatever
    # rows come with them.
    X = _rows()
    if data_norm is None:
        X = X[1:]  # the overflowing row has no readable bound
    X = sp.csr_matrix(X) if sparse else X
    spec = RowSpec(data_norm=data_norm, intercept=intercept, n_features=4)
    rows, norms = spec.gradient_rows(X)
    Z = bounded_rows(X, data_norm, intercept)
    if sparse:
        rows, Z = rows.toarray(), Z.toarray()
    assert np.array_equal(rows, Z[:, :4])
    np.testing.assert_allclose(norms, row_norms(Z), rtol=4e-16 * 8, atol=0)
    chosen = np.array([0, 7, 8, 150, 298])
    _, some = spec.gradient_rows(X[chosen])
    assert np.array_equal(some, norms[chosen])


def test_scaled_rows_copy_only_when_asked_not_to_overwrite():
    X = _rows()[1:]
    before = X.copy()
    rows, _ = scaled_rows(X, 2.0)
    assert np.array_equal(X, before) and not np.shares_memory(rows, X)
    rows, _ = scaled_rows(X, 2.0, overwrite=True)
    assert rows is X and row_norms(X).max() <= 2.0 * (1 + 1e-15)
    assert np.array_equal(X, bounded_rows(before, 2.0))
    within = np.ones((3, 2)) * 0.1  # no row beyond the bound: nothing copied
    assert scaled_rows(within, 1.0)[0] is within


def test_tiny_bounds_take_the_safe_norms():
    X = np.array([[3e-160, 4e-160], [1e-170, 0.0]])
    Z = bounded_rows(X, 1e-160)
    np.testing.assert_allclose(Z[0], [0.6e-160, 0.8e-160])
    np.testing.assert_array_equal(Z[1], X[1])


def test_row_spec_targets():
    spec = RowSpec(classes=np.array(["a", "b"]))
    np.testing.assert_array_equal(spec.targets(np.array(["b", "a"])), [[1], [-1]])
    three = RowSpec(classes=np.array([0, 1, 2]))
    np.testing.assert_array_equal(
        three.targets(np.array([2, 0])), [[-1, -1, 1], [1, -1, -1]]
    )
    regression = RowSpec(bounds=(0.0, 4.0))
    np.testing.assert_array_equal(
        regression.targets(np.array([-1.0, 1.0, 9.0])), [[-1.0], [-0.5], [1.0]]
    )
    given = RowSpec(n_features=2)
    np.testing.assert_array_equal(given.targets(np.array([1.0, -1.0])), [[1], [-1]])
    assert given.n_coef == 2 and RowSpec(intercept=0.5, n_features=2).n_coef == 3


@pytest.mark.parametrize("sparse", [False, True])
def test_the_largest_row_norm_read_block_by_block_is_the_whole_arrays(sparse):
    # 9 blocks: the tree's last node has a single input.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(9 * 1024, 5)) * 10.0 ** rng.integers(-150, 150, (9216, 1))
    X = sp.csr_matrix(X) if sparse else X
    found = row_source(X).block_reduce(largest_row_norm, largest)
    assert found == row_norms(X).max()
