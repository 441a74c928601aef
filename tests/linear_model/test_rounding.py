"""The certified gradient's blocked sum and its rounding bound (issue 15)."""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from skdp.linear_model._newton import (
    _UNIT_ROUNDOFF,
    blocked_row_sum,
    gradient_block_size,
    plan_solver,
    summation_terms,
)
from skdp.linear_model._objective import plan_objective
from skdp.utils._dask import sum_over_row_blocks


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


@pytest.mark.parametrize("block", [16, 100])
def test_blocked_sum_within_its_bound(block):
    n = 1500
    Z, s = _adversarial(n)
    computed = blocked_row_sum(lambda rows: Z[rows].T @ s[rows], n, block)
    errors, magnitudes = _exact_errors(Z, s, computed)
    # In memory: no tree; the planned T (with the tree allowance) is larger.
    terms = min(block, n) + math.ceil(n / block) - 1
    assert terms <= summation_terms(n, block)
    bound = Fraction(_gamma(terms))
    for error, magnitude in zip(errors, magnitudes):
        assert error <= bound * magnitude
    # The bound is not vacuous here: recursive summation, row by row, breaks
    # it on column 0 (it loses all n - 1 tiny terms, about 0.6 (n - 1) u).
    naive = 0.0
    for value in Z[:, 0] * s:
        naive += value
    naive_errors, _ = _exact_errors(Z[:, :1], s, [naive])
    assert naive_errors[0] > bound * magnitudes[0]


def test_dask_blocked_tree_sum_within_its_bound():
    da = pytest.importorskip("dask.array")
    import dask

    n, block, chunk = 1500, 16, 85  # 18 chunks: a 3-level tree of fan-in 3
    Z, s = _adversarial(n, seed=1)

    def part(Zb, sb, size):
        return blocked_row_sum(lambda rows: Zb[rows].T @ sb[rows], len(Zb), size)

    with dask.config.set(scheduler="synchronous"):
        computed = sum_over_row_blocks(
            part,
            da.from_array(Z, chunks=(chunk, 3)),
            da.from_array(s, chunks=chunk),
            block,
            split_every=3,
        )
    errors, magnitudes = _exact_errors(Z, s, computed)
    bound = Fraction(_gamma(summation_terms(n, block, fan_in=3)))
    for error, magnitude in zip(errors, magnitudes):
        assert error <= bound * magnitude


def test_summation_terms():
    assert gradient_block_size(10) == 1024
    assert gradient_block_size(2_000_000) == 1415  # ceil(sqrt(2e6))
    assert gradient_block_size(1024**2 + 1) == 1025
    # Never above n (any order of summation meets at most n roundings).
    for n in (1, 2, 9, 1000, 1024, 1025, 5000):
        assert 1 <= summation_terms(n) <= n
    # 2e6 rows: 1415 rows a block, 1414 blocks, 7 tree levels of fan-in 8.
    assert summation_terms(2_000_000) == 1415 + 1414 - 1 + 7 * 7
    assert summation_terms(20_000_000) < 10_000


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
    assert solver.block_size == gradient_block_size(2_000_000)
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


def test_dask_fit_drops_empty_row_blocks():
    # The tree sum's bound counts at most n leaves: empty blocks are dropped
    # before the charge (chunk sizes are public).
    da = pytest.importorskip("dask.array")
    from skdp.linear_model import DPLogisticRegression
    from skdp.linear_model._dask import _as_dask_pair

    X = da.from_array(np.ones((7, 2)), chunks=((2, 2, 0, 3), (2,)))
    y = da.from_array(np.array([0, 1] * 3 + [0]), chunks=X.chunks[0])
    assert 0 in X.chunks[0]
    X2, y2, _ = _as_dask_pair(DPLogisticRegression(), X, y)
    assert X2.chunks[0] == (2, 2, 3) and y2.chunks[0] == (2, 2, 3)
