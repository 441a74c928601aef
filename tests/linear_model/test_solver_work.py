"""The exact solver's work: many classes converge, and a public bound holds.

Issue 26: ``method='output'`` with far more classes than rows ran for minutes
after the charge (10^4 classes 0.4 s, 2*10^4 56 s, 10^5 more than 10
minutes on 40 rows): the value's rounding error outgrew the decrease of a
Newton step, the line search halved every step ~28 times, and Newton ran
out of steps into the fallback. The plan now also bounds the solve's work
and refuses, before the charge, a bound beyond ``SKDP_MAX_WORK``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from skdp import PrivacyBudget
from skdp.linear_model import DPLinearSVC, DPLogisticRegression, _newton
from skdp.linear_model._newton import solve_rows
from skdp.utils._feasibility import MAX_WORK, max_work


def _rows(n=40, d=3, seed=0):
    """Rows of norm at most 1 and two classes (the hostile suite's data)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] > 0).astype(int)
    y[:2] = [0, 1]
    return X, y


class _Recorder:
    """Wraps the fallback to record whether it ran."""

    def __init__(self, fallback):
        self.fallback, self.calls = fallback, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fallback(*args, **kwargs)


def test_thirty_thousand_classes_certify_without_the_fallback(monkeypatch):
    # 30,000 classes on 40 rows: 120,000 coefficients, all but 8 of them
    # equal and tiny at the optimum. Their squares, added to ||W||**2 by
    # BLAS, round alike: the value erred by 7e-11 where a Newton step
    # lowered it by 9e-13, so no full step passed the Armijo test. With 10
    # Newton steps Newton certified nothing and the fallback ran (on main:
    # ~300 value passes, then 209 fallback steps). Now the gradient decides
    # between values equal within their rounding, and 8 steps certify.
    recorder = _Recorder(_newton._accelerated_gradient)
    monkeypatch.setattr(_newton, "_accelerated_gradient", recorder)
    X, y = _rows()
    budget = PrivacyBudget(math.inf, 0.5)
    clf = DPLogisticRegression(
        method="output",
        classes=range(30_000),
        data_norm=1.0,
        max_iter=10,
        budget=budget,
        random_state=0,
    )
    clf.fit(X, y)
    assert recorder.calls == 0, "Newton did not certify in 10 steps"
    assert clf.coef_.shape == (30_000, 3) and np.all(np.isfinite(clf.coef_))


def test_values_equal_within_rounding_let_the_gradient_decide():
    # A quadratic whose computed value carries an error within the bound of
    # its m-term sums but larger than a Newton step's decrease: the full
    # Newton step (which zeroes the gradient) is taken, not halved away.
    class NoisyQuadratic:
        shape = (1000,)

        class rows:
            n_samples = 10

        def __init__(self):
            self.target = np.full(1000, 1e-7)
            self.calls = 0

        def value(self, w):
            self.calls += 1
            exact = 0.5 * float((w - self.target) @ (w - self.target))
            magnitude = 1000.0
            # + 2e-11 a call: above the full step's decrease (5e-12 to 0)
            # and the Armijo slack (3.6e-13), within the rounding bound of
            # sums of m = 1010 terms of magnitude 1000 (1.1e-10).
            return exact + 2e-11 * self.calls + 500.0, magnitude, None

        def gradient(self, w, cache):
            return w - self.target

    problem = NoisyQuadratic()
    w = np.zeros(1000)
    value, magnitude, _ = problem.value(w)
    gradient = problem.gradient(w, None)
    step = -gradient
    accepted = _newton._line_search(
        problem,
        w,
        value,
        magnitude,
        step,
        gradient @ step,
        float(np.linalg.norm(gradient)),
        _newton._Passes(math.inf),
    )
    assert accepted is not None
    np.testing.assert_array_equal(accepted[0], problem.target)


def _counted_solve(monkeypatch, clf, X, y, **changes):
    """Run the planned solve with ``changes`` to its plan; count its work."""
    prepared, plan = clf._plan_with_input(X, y)
    solver = replace(plan.settings["method"].solver, **changes)
    work = {"passes": 0, "products": 0.0}
    rows, n = prepared.rows, prepared.rows.n_samples
    block_sum = rows.block_sum

    def counted(func, *args):
        coefficients = solver.n_coef
        if "hessian" in func.__name__:  # n * n_coef**2 products, then a factor
            work["products"] += n * coefficients**2 + coefficients**3 / 3.0
        else:
            work["passes"] += 1
            work["products"] += n * coefficients
        return block_sum(func, *args)

    monkeypatch.setattr(rows, "block_sum", counted)
    solve_rows(rows, prepared.spec, solver, loss=plan.settings["method"].loss)
    return solver, work


@pytest.mark.parametrize("hessian_free", [False, True], ids=["dense", "newton-cg"])
@pytest.mark.parametrize("max_passes", [5, 2000])
def test_the_work_bound_holds_when_nothing_certifies(
    monkeypatch, hessian_free, max_passes
):
    # Threshold 0: no point certifies, so Newton runs until its pass budget
    # or the optimum stops it and the fallback takes every planned step. The
    # work counted is within the plan's bound, and Newton's passes within
    # its budget.
    X, y = _rows(n=200, d=4, seed=1)
    clf = DPLogisticRegression(
        method="output", classes=[0, 1], data_norm=1.0, random_state=0
    )
    solver, work = _counted_solve(
        monkeypatch,
        clf,
        X,
        y,
        threshold=0.0,
        hessian_free=hessian_free,
        max_passes=max_passes,
    )
    fallback = 2 * solver.fallback_steps(0.0)
    assert work["passes"] > fallback  # the fallback ran to its end
    assert work["passes"] - fallback <= max_passes
    assert work["products"] <= solver.work_bound(0.0)


def test_one_vs_rest_work_is_counted_per_model(monkeypatch):
    X, y = _rows(n=60, d=3, seed=2)
    y = np.arange(60) % 3
    clf = DPLinearSVC(method="output", classes=[0, 1, 2], data_norm=1.0)
    solver, work = _counted_solve(monkeypatch, clf, X, y, threshold=0.0)
    assert work["products"] <= 3 * solver.work_bound(0.0)


def test_a_plan_beyond_the_work_limit_is_refused_before_the_charge(monkeypatch):
    # The limit and how to raise it are in the message; nothing is spent.
    X, y = _rows(n=40, d=3)
    budget = PrivacyBudget(1.0, 1e-6)
    for method in ("output", "objective"):
        clf = DPLogisticRegression(
            method=method, classes=range(100), data_norm=1.0, budget=budget
        )
        monkeypatch.setenv("SKDP_MAX_WORK", "1e6")
        with pytest.raises(ValueError, match=r"more than the 1e\+06.*SKDP_MAX_WORK"):
            clf.fit(X, y)
        assert len(budget.ledger) == 0
        monkeypatch.setenv("SKDP_MAX_WORK", "1e12")
        clf.plan_fit(X, y)  # within the raised limit


def test_the_work_limit_reads_the_environment(monkeypatch):
    monkeypatch.delenv("SKDP_MAX_WORK", raising=False)
    assert max_work() == MAX_WORK
    monkeypatch.setenv("SKDP_MAX_WORK", "2.5e15")
    assert max_work() == 2_500_000_000_000_000
    for bad in ("0", "-3", "many", "inf"):
        monkeypatch.setenv("SKDP_MAX_WORK", bad)
        with pytest.raises(ValueError, match="SKDP_MAX_WORK must be a positive"):
            max_work()


@pytest.mark.parametrize("method", ["output", "objective"])
def test_the_default_limit_admits_the_benchmarks_largest_exact_fit(method):
    # benchmarks/dask_scale.py fits 20 million rows of 50 features by both
    # exact methods: its worst-case bound (4.6e14) is within the default.
    from skdp.linear_model._objective import plan_objective
    from skdp.linear_model._output import plan_output

    planner = plan_output if method == "output" else plan_objective
    common = dict(
        epsilon=1.0,
        C=1.0,
        row_norm=math.sqrt(5.0),
        n_samples=20_000_000,
        n_features=51,
        n_classes=2,
        tol=1e-12,
        max_iter=100,
    )
    if method == "output":
        common["delta"] = 0.0
    planner(**common)  # does not raise


class _Quadratic:
    """``J(w) = w.A.w / 2 - b.w``: the interface the two Newton loops read."""

    shape = (3,)

    def __init__(self):
        self.A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
        self.b = np.array([1.0, -2.0, 0.5])
        self.rows = type("Rows", (), {"n_samples": 10})()
        self.calls = 0

    def value(self, w):
        terms = 0.5 * w @ self.A @ w, self.b @ w
        return terms[0] - terms[1], abs(terms[0]) + abs(terms[1]), None

    def gradient(self, w, cache):
        # Rounding-sized errors, as a long sum's: the computed gradient of a
        # point near the optimum is never exactly zero, so the step never
        # vanishes.
        self.calls += 1
        return self.A @ w - self.b + 1e-12 * np.sin(self.calls + np.arange(3))

    def hessian(self, w, cache):
        return self.A

    def curvature(self, w, cache):
        return None

    def hessian_diagonal(self, curvature):
        return np.diag(self.A).copy()

    def hessian_product(self, curvature, v):
        return self.A @ v


@pytest.mark.parametrize("loop", ["damped", "cg"])
def test_newton_hands_over_once_its_certificate_cannot_pass(loop):
    # The certificate (SolverPlan.gradient_error at ||w||) reads only ||w||,
    # which no step moves once the computed gradient is below the
    # threshold: when it fails there, more Newton steps cannot make it pass
    # (a 1333 x 586 Adult fit ran all 100 of them, 2.6 CPU s, then the
    # fallback). Newton now hands over to the fallback at once.
    problem = _Quadratic()
    never = lambda w, gradient_norm: False  # noqa: E731
    if loop == "damped":
        result = _newton._damped_newton(problem, 1e-8, 100, never)
    else:
        result = _newton._newton_cg(problem, 1e-8, 100, 10, never)
    assert not result.converged
    assert result.gradient_norm <= 1e-8
    assert result.n_iter <= 5  # a quadratic: one or two Newton steps
