"""The certified gradient's blocked sum and its rounding bound (issue 15).

The gradient is a row source's block sum (skdp/utils/_row_source.py): row
blocks of ``B`` rows, each one product, added by a tree of fan-in 8, the
same in memory and on dask. ``summation_terms`` counts the roundings of
exactly that structure; these tests check the bound on sums built to round
badly, computed exactly with fractions.
"""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from skdp.linear_model._newton import _UNIT_ROUNDOFF, plan_solver, summation_terms
from skdp.linear_model._objective import plan_objective
from skdp.utils._row_source import TREE_FAN_IN, canonical_block_rows, row_source


def _gamma(terms):
    u = _UNIT_ROUNDOFF
    return terms * u / (1 - terms * u)


def _adversarial(n, seed=0):
    """Rows whose sum cancels and rounds badly under recursive summation.

    Column 0: a leading 1 then ``n - 1`` terms of ``0.6 u`` (each lost when
    added to a running sum near 1). Column 1: large terms of both signs that
    cancel, and small ones. Column 2: random of mixed magnitudes.
    """
    rng = np.random.default_rng(seed)
    Z = np.empty((n, 3))
    Z[:, 0] = 0.6 * _UNIT_ROUNDOFF
    Z[0, 0] = 1.0
    Z[:, 1] = np.where(np.arange(n) % 2 == 0, 1e8, -1e8) + rng.standard_normal(n)
    Z[:, 2] = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    s = 1.0 + rng.random(n) * 1e-3
    s[0] = 1.0
    return Z, s


def _exact_errors(Z, s, computed):
    """``|computed - exact|`` and ``sum_i |z_ij s_i|`` per column, exactly."""
    errors, magnitudes = [], []
    s_exact = [Fraction(v) for v in s]
    for j in range(Z.shape[1]):
        column = [Fraction(v) for v in Z[:, j]]
        exact = sum(z * w for z, w in zip(column, s_exact))
        errors.append(abs(Fraction(float(computed[j])) - exact))
        magnitudes.append(sum(abs(z * w) for z, w in zip(column, s_exact)))
    return errors, magnitudes


def _product(Zb, sb):
    return Zb.T @ sb


def _levels(n_parts):
    """Levels of the row source's tree over ``n_parts`` block results."""
    levels = 0
    while n_parts > 1:
        n_parts = -(-n_parts // TREE_FAN_IN)
        levels += 1
    return levels


@pytest.mark.parametrize("block", [16, 100, 1500])
def test_row_source_sum_within_its_bound(block):
    n = 1500
    Z, s = _adversarial(n)
    rows = row_source(Z, s, block_rows=block)
    computed = rows.block_sum(_product)
    errors, magnitudes = _exact_errors(Z, s, computed)
    # Exactly the structure: a product over at most `block` rows, then the
    # tree's levels of at most 7 additions each.
    terms = min(block, n) + (TREE_FAN_IN - 1) * _levels(rows.n_blocks)
    assert terms == summation_terms(n, block)
    bound = Fraction(_gamma(terms))
    for error, magnitude in zip(errors, magnitudes):
        assert error <= bound * magnitude
    if block >= n:
        return  # one block: T = n, the bound of any order of summation
    # The bound is not vacuous here: recursive summation, row by row, breaks
    # it on column 0 (it loses all n - 1 tiny terms, about 0.6 (n - 1) u).
    naive = 0.0
    for value in Z[:, 0] * s:
        naive += value
    naive_errors, _ = _exact_errors(Z[:, :1], s, [naive])
    assert naive_errors[0] > bound * magnitudes[0]


@pytest.mark.parametrize("chunk", [85, 16, 1500])
def test_dask_sum_is_the_memory_sum_and_within_the_bound(chunk):
    da = pytest.importorskip("dask.array")
    import dask

    n, block = 1500, 16  # 94 blocks: a 3-level tree of fan-in 8
    Z, s = _adversarial(n, seed=1)
    with dask.config.set(scheduler="synchronous"):
        rows = row_source(
            da.from_array(Z, chunks=(chunk, 3)),
            da.from_array(s, chunks=chunk),
            block_rows=block,
        )
        computed = rows.block_sum(_product)
    assert rows.is_dask and _levels(rows.n_blocks) == 3
    assert np.array_equal(
        computed, row_source(Z, s, block_rows=block).block_sum(_product)
    )
    errors, magnitudes = _exact_errors(Z, s, computed)
    bound = Fraction(_gamma(summation_terms(n, block)))
    for error, magnitude in zip(errors, magnitudes):
        assert error <= bound * magnitude


def test_summation_terms():
    assert canonical_block_rows(10) == 1024
    assert canonical_block_rows(2_000_000) == 1415  # ceil(sqrt(2e6))
    assert canonical_block_rows(1024**2 + 1) == 1025
    # Never above n (any order of summation meets at most n roundings).
    for n in (1, 2, 9, 1000, 1024, 1025, 5000):
        assert 1 <= summation_terms(n) <= n
    # 2e6 rows: 1415 rows a block, 1414 blocks, 4 tree levels of fan-in 8.
    assert summation_terms(2_000_000) == 1415 + 7 * 4
    assert summation_terms(20_000_000) < 10_000
    # The count follows the tree: one level more every factor of 8 blocks.
    assert summation_terms(1024 * 8, 1024) == 1024 + 7
    assert summation_terms(1024 * 8 + 1, 1024) == 1024 + 14


def _old_residual(solver, tol):
    """The residual the plan had with the recursive-summation bound ``gamma_n``."""
    old = replace(solver, summation_terms=0)
    w_norm = math.sqrt(2.0 * solver.C * solver.n_samples * solver.zero_value)
    w_norm /= math.sqrt(solver.alpha)
    data = solver.C * solver.n_samples * solver.row_gradient * solver.row_norm
    threshold = max(tol * (solver.alpha + data), 4.0 * old.gradient_error(w_norm, 0))
    return 2.0 * threshold / solver.alpha


def test_planned_residual_at_two_million_rows():
    plan = plan_objective(
        epsilon=1.0,
        C=1.0,
        row_norm=1.5,
        n_samples=2_000_000,
        n_features=51,
        n_classes=2,
        tol=1e-12,
        max_iter=100,
    )
    solver = plan.solver
    assert solver.summation_terms == summation_terms(2_000_000)
    assert solver.block_size == canonical_block_rows(2_000_000)
    assert 100 * solver.residual <= _old_residual(solver, 1e-12)
    # The old bound with T = n reproduces the earlier planned residual (order
    # 1e-3 here), so the comparison is against the real earlier value.
    assert _old_residual(solver, 1e-12) > 1e-4


def test_small_problems_unchanged_or_tighter():
    for n in (10, 500, 1024):
        kwargs = dict(
            n_samples=n, n_features=3, n_classes=2, row_norm=1.0, C=1.0, alpha=1.0
        )
        solver = plan_solver(**kwargs, tol=1e-12, max_iter=100)
        assert solver.summation_terms == n
        assert solver.residual == pytest.approx(_old_residual(solver, 1e-12))
