"""Sparse (CSR) input for the private linear models.

CSR goes through every method without being densified: rows are clipped
from their stored values, DP-SGD reads sparse batches, and beyond
``MAX_DENSE_HESSIAN`` coefficients the exact methods' solver is the
Hessian-free Newton-CG one, under the same certificate.
"""

import tracemalloc
import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import (
    check_estimator_sparse_array,
    check_estimator_sparse_matrix,
)

from skdp import BudgetExceededError, PrivacyBudget, PrivacyLeakWarning
from skdp.linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from skdp.linear_model._losses import HuberHingeLoss, LogisticLoss
from skdp.linear_model._newton import MAX_DENSE_HESSIAN, solve
from skdp.linear_model._problems import MarginProblem, SoftmaxProblem
from skdp.linear_model._rows import RowSpec, row_norms, row_terms, scale_rows
from skdp.utils._row_source import row_source

ESTIMATORS = [DPLogisticRegression, DPLinearSVC, DPLinearRegression]


def _tfidf_like(n, d, seed=0, words=30, informative=40):
    """Unit-norm rows of ``words`` Zipf-distributed columns; 2 classes.

    Class 1 documents use the first ``informative`` columns' twins
    (shifted by ``informative``) more often: a TF-IDF-like problem.
    """
    rng = np.random.default_rng(seed)
    informative = max(1, min(informative, d // 4))
    y = rng.integers(0, 2, n)
    cols = np.minimum(rng.zipf(1.3, size=(n, words)) - 1, d - 1)
    topical = (cols < informative) & (y[:, None] == 1)
    cols = np.where(topical, cols + informative, cols)
    rows = np.repeat(np.arange(n), words)
    X = sp.csr_matrix((np.ones(n * words), (rows, cols.ravel())), shape=(n, d))
    X.sum_duplicates()
    X.data = np.log1p(X.data)
    X = sp.csr_matrix(X.multiply(1.0 / row_norms(X)[:, None]))
    return X, y


def _params(estimator, method, **extra):
    params = dict(method=method, data_norm=1.0, random_state=0, **extra)
    if estimator is DPLinearRegression:
        params["y_bounds"] = (-1.0, 2.0)
    else:
        params["classes"] = [0, 1, 2] if extra.pop("multiclass", False) else [0, 1]
    params.pop("multiclass", None)
    return params


def _methods(estimator):
    base = ["objective", "output", "gradient"]
    return base + (["adassp"] if estimator is DPLinearRegression else [])


# -- CSR gives the dense fit -------------------------------------------------


@pytest.mark.parametrize(
    "estimator, method, n_classes",
    [
        (est, method, k)
        for est in ESTIMATORS
        for method in _methods(est)
        for k in ((2,) if est is DPLinearRegression else (2, 3))
    ],
)
def test_csr_fit_equals_dense_fit(estimator, method, n_classes):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6)) * (rng.random((200, 6)) < 0.4)
    X[0] *= 10  # a row the clipping scales down
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    if n_classes == 3:
        y = np.digitize(X[:, 0] + X[:, 2], [-0.3, 0.3])
    if estimator is DPLinearRegression:
        y = X[:, 0] + 0.5
    params = _params(estimator, method, multiclass=n_classes == 3)
    dense = estimator(epsilon=5.0, **params).fit(X, y)
    sparse = estimator(epsilon=5.0, **params).fit(sp.csr_matrix(X), y)
    # The same noise draws; the solvers differ only in summation order.
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, atol=1e-10)
    assert isinstance(sparse.coef_, np.ndarray)  # the released model is dense
    X_test = rng.normal(size=(50, 6)) * (rng.random((50, 6)) < 0.4)
    if estimator is DPLinearRegression:
        np.testing.assert_allclose(
            sparse.predict(sp.csr_matrix(X_test)), dense.predict(X_test), atol=1e-9
        )
    else:
        np.testing.assert_array_equal(
            sparse.predict(sp.csr_matrix(X_test)), dense.predict(X_test)
        )
        np.testing.assert_allclose(
            sparse.decision_function(sp.csr_matrix(X_test)),
            dense.decision_function(X_test),
            atol=1e-9,
        )


@pytest.mark.parametrize(
    "to_sparse",
    [sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.lil_matrix],
    ids=["csc", "coo", "csr_array", "lil"],
)
def test_other_sparse_formats_are_converted(to_sparse):
    X, y = _tfidf_like(150, 30)
    params = _params(DPLogisticRegression, "objective")
    reference = DPLogisticRegression(**params).fit(X, y)
    other = DPLogisticRegression(**params).fit(to_sparse(X), y)
    np.testing.assert_allclose(other.coef_, reference.coef_, atol=1e-12)
    np.testing.assert_array_equal(other.predict(to_sparse(X)), reference.predict(X))


# -- rows bounded without densifying ----------------------------------------


def test_row_norms_of_csr_match_dense_without_overflow():
    X = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1e200, 0.0, -1e200]])
    np.testing.assert_allclose(row_norms(sp.csr_matrix(X)), row_norms(X))
    assert np.isfinite(row_norms(sp.csr_matrix(X))).all()
    # Duplicate stored entries count as their sum, as in the matrix.
    dup = sp.csr_matrix(([1.0, 2.0, 4.0], ([0, 0, 0], [1, 1, 2])), shape=(1, 3))
    assert row_norms(dup)[0] == pytest.approx(5.0)
    assert row_terms(sp.csr_matrix(X)) == 2 and row_terms(X) == 3


def test_csr_rows_are_clipped_to_data_norm_and_the_input_untouched():
    X, y = _tfidf_like(100, 20)
    X = sp.csr_matrix(X.multiply(np.linspace(0.5, 3.0, 100)[:, None]))
    before = X.copy()
    clf = DPLogisticRegression(**_params(DPLogisticRegression, "output"))
    prepared, _ = clf._plan_with_input(X, y)
    assert prepared.rows.is_sparse and sp.issparse(prepared.Z)
    norms = row_norms(prepared.Z[:, :-1])  # without the intercept column
    assert norms.max() <= 1.0 + 1e-12
    big = row_norms(X) > 1.0
    np.testing.assert_allclose(norms[big], 1.0)
    np.testing.assert_allclose(norms[~big], row_norms(X)[~big])
    assert (X != before).nnz == 0  # the caller's matrix is not modified
    scaled = scale_rows(X, np.full(100, 2.0))
    np.testing.assert_allclose(scaled.toarray(), 2.0 * X.toarray())


# -- the Hessian-free solver -------------------------------------------------


@pytest.mark.parametrize("kind", ["logistic", "huber_hinge", "softmax"])
@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_products_and_diagonal_match_the_hessian(kind, sparse):
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(40, 5)) * (rng.random((40, 5)) < 0.6)
    Zs = sp.csr_matrix(Z) if sparse else Z
    spec = RowSpec(n_features=5)  # the rows and targets as they are
    if kind == "softmax":
        Y = np.eye(3)[rng.integers(0, 3, 40)]
        rows = row_source(Zs, Y, block_rows=16)  # three blocks
        problem = SoftmaxProblem(
            rows, spec, 1.5, 2.0, np.zeros((3, 5)), 3, single=False
        )
    else:
        loss = LogisticLoss() if kind == "logistic" else HuberHingeLoss(0.5)
        t = np.where(rng.random(40) < 0.5, 1.0, -1.0)
        rows = row_source(Zs, t, block_rows=16)
        problem = MarginProblem(rows, spec, loss, 1.5, 2.0, np.zeros(5), single=False)
    w = rng.normal(size=int(np.prod(problem.shape)))
    _, _, cache = problem.value(w)
    hessian = problem.hessian(w, cache)
    curvature = problem.curvature(w, cache)
    v = rng.normal(size=w.size)
    np.testing.assert_allclose(problem.hessian_product(curvature, v), hessian @ v)
    np.testing.assert_allclose(problem.hessian_diagonal(curvature), np.diag(hessian))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("loss", [None, HuberHingeLoss(0.5)], ids=["default", "huber"])
def test_newton_cg_lands_within_the_certified_radius(n_classes, loss):
    """Either solver's point is within r of the exact minimiser, so within 2r."""
    X, y = _tfidf_like(300, 60, seed=4)
    if n_classes == 3:
        y = np.where(np.arange(300) % 3 == 0, 2, y)
    estimator = DPLogisticRegression if loss is None else DPLinearSVC
    params = _params(estimator, "objective", multiclass=n_classes == 3, C=5.0)
    prepared, plan = estimator(**params)._plan_with_input(X, y)
    solver = plan.settings["method"].solver
    assert not solver.hessian_free  # 61 or 183 coefficients: dense Hessian
    free = replace(solver, hessian_free=True)
    linear = np.random.default_rng(0).normal(size=(prepared.Y.shape[1], 61))
    if loss is None and n_classes == 3:
        linear -= linear.mean(axis=0)  # the softmax noise lies in 1^T W = 0
    args = (prepared.Z, prepared.Y)
    newton = solve(*args, solver, linear=linear, loss=loss)
    newton_cg = solve(*args, free, linear=linear, loss=loss)
    newton_cg_dense = solve(prepared.Z.toarray(), prepared.Y, free, linear, loss)
    assert np.linalg.norm(newton_cg - newton) <= 2 * solver.residual
    assert np.linalg.norm(newton_cg_dense - newton) <= 2 * solver.residual


def test_an_unconverged_newton_cg_falls_back_within_the_radius():
    """One Newton-CG step is not enough: the public fallback still gets r."""
    X, y = _tfidf_like(300, 60, seed=4)
    params = _params(DPLogisticRegression, "output", C=5.0)
    prepared, plan = DPLogisticRegression(**params)._plan_with_input(X, y)
    solver = plan.settings["method"].solver
    one_step = replace(solver, hessian_free=True, max_iter=1)
    reference = solve(prepared.Z, prepared.Y, solver)
    point = solve(prepared.Z, prepared.Y, one_step)
    assert np.linalg.norm(point - reference) <= 2 * solver.residual


def test_the_certificate_bounds_the_rounding_of_a_sparse_gradient():
    """The computed CSR gradient is within the bound the certificate uses."""
    X, y = _tfidf_like(500, 80, seed=5)
    clf = DPLogisticRegression(**_params(DPLogisticRegression, "output", C=3.0))
    prepared, plan = clf._plan_with_input(X, y)
    solver = plan.settings["method"].solver
    t = prepared.Y[:, 0]
    w = np.random.default_rng(1).normal(scale=3.0, size=prepared.n_coef)
    # The fit's own problem: rows bounded in the block functions.
    problem = MarginProblem(
        prepared.rows,
        prepared.spec,
        LogisticLoss(),
        1.0,
        3.0,
        np.zeros(81),
        single=False,
    )
    computed = problem.gradient(w, problem.value(w)[2])
    # The same gradient in extended precision (64-bit mantissa on x86) from
    # the dense matrix: a reference about 2**11 times more accurate.
    Z = prepared.Z.toarray().astype(np.longdouble)
    wl = w.astype(np.longdouble)
    slope = -t / (1 + np.exp(t * (Z @ wl)))
    exact = wl + 3 * (Z.T @ slope)
    error = float(np.linalg.norm((computed - exact).astype(float)))
    bound = solver.gradient_error(float(np.linalg.norm(w)), 0.0, row_terms(prepared.Z))
    assert error <= bound


def test_the_plan_picks_the_hessian_free_solver_for_100000_columns():
    """A dense Hessian of 100,000 coefficients (80 GB) is never planned."""
    n, d = 2000, 100_000
    X, y = _tfidf_like(n, d)
    for method in ("objective", "output"):
        clf = DPLogisticRegression(**_params(DPLogisticRegression, method))
        solver = clf.privacy_plan(X, y).settings["method"].solver
        assert solver.hessian_free and solver.n_coef == d + 1 > MAX_DENSE_HESSIAN


@pytest.mark.parametrize("method", ["objective", "output", "gradient"])
def test_a_100000_column_tfidf_fit_stays_sparse(method):
    """Each method fits 100,000 TF-IDF-like columns in far less than n * d."""
    n, d = 1000, 100_000
    X, y = _tfidf_like(n, d, seed=6)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-4)
    clf = DPLogisticRegression(
        **_params(DPLogisticRegression, method),
        epsilon=1.0,
        budget=budget,
        batch_size=n,
        epochs=1,  # one full-batch DP-SGD step: 100,000 discrete Gaussians
    )
    tracemalloc.start()
    try:
        clf.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    dense_bytes = 8 * n * d  # 800 MB
    assert peak < dense_bytes / 20, peak
    assert clf.coef_.shape == (1, d) and np.all(np.isfinite(clf.coef_))
    assert len(budget.ledger) == 1
    assert clf.predict(X[:10]).shape == (10,)


def test_adassp_refuses_100000_sparse_columns_before_the_charge():
    X, _ = _tfidf_like(50, 100_000)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-3)
    reg = DPLinearRegression(
        method="adassp", data_norm=1.0, y_bounds=(0, 1), budget=budget
    )
    with pytest.raises(MemoryError, match="Gram matrix.*nothing was charged"):
        reg.fit(X, np.zeros(50))
    assert budget.ledger == [] and not hasattr(reg, "coef_")


# -- the release contract on sparse input -----------------------------------


def test_noise_of_output_perturbation_on_csr_is_calibrated():
    """The released CSR model minus the exact one has the planned noise norm."""
    X, y = _tfidf_like(200, 8, seed=7)
    clf = DPLogisticRegression(**_params(DPLogisticRegression, "output"))
    prepared, plan = clf._plan_with_input(X, y)
    method_plan = plan.settings["method"]
    point = solve(prepared.Z, prepared.Y, method_plan.solver).ravel()
    runs = 200
    norms = []
    for seed in range(runs):
        fitted = clf.set_params(random_state=seed).fit(X, y)
        # The intercept is the last coefficient times intercept_scaling.
        intercept = fitted.intercept_ / prepared.intercept
        released = np.append(fitted.coef_.ravel(), intercept)
        norms.append(np.linalg.norm(released - point))
    noise = method_plan.noise
    # The noise norm is Gamma(size, scale) in grid steps of gamma: mean
    # size * scale * gamma, standard deviation sqrt(size) * scale * gamma.
    # Rounding the point to the grid moves it by at most sqrt(size) gamma / 2.
    mean = noise.size * noise.scale * noise.gamma
    sd_of_mean = np.sqrt(noise.size) * noise.scale * noise.gamma / np.sqrt(runs)
    assert abs(np.mean(norms) - mean) <= 5 * sd_of_mean  # 5 sd: never flakes


@pytest.mark.parametrize("method", ["objective", "output", "gradient"])
def test_a_sparse_fit_charges_once_and_a_refusal_leaves_nothing(method):
    X, y = _tfidf_like(200, 50)
    budget = PrivacyBudget(epsilon=1.5, delta=1e-4)
    clf = DPLogisticRegression(**_params(DPLogisticRegression, method), budget=budget)
    plan = clf.privacy_plan(X, y)
    clf.fit(X, y)
    assert len(budget.ledger) == 1 and budget.ledger[0] == clf.budget_entry_
    assert clf.privacy_event_.with_label("") == plan.event.with_label("")
    with pytest.raises(BudgetExceededError):
        clf.set_params(epsilon=2.0).fit(X, y)  # more than the budget alone
    assert len(budget.ledger) == 1 and not hasattr(clf, "coef_")


def test_non_finite_sparse_input_is_refused_before_the_charge():
    X, y = _tfidf_like(100, 20)
    X.data[3] = np.nan
    budget = PrivacyBudget(epsilon=10.0)
    clf = DPLogisticRegression(**_params(DPLogisticRegression, "objective"))
    with pytest.raises(ValueError, match="NaN"):
        clf.set_params(budget=budget).fit(X, y)
    assert budget.ledger == []


def test_sparse_data_norm_warning_only_when_omitted():
    X, y = _tfidf_like(100, 20)
    params = _params(DPLogisticRegression, "objective")
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        DPLogisticRegression(**{**params, "data_norm": None}).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPLogisticRegression(**params).fit(X, y)


@pytest.mark.parametrize("method", ["objective", "output", "gradient"])
def test_sparse_fits_are_reproducible_with_a_seed(method):
    X, y = _tfidf_like(200, 50)
    params = _params(DPLogisticRegression, method)
    first = DPLogisticRegression(**params).fit(X, y).coef_
    again = DPLogisticRegression(**params).fit(X, y).coef_
    other = DPLogisticRegression(**{**params, "random_state": 1}).fit(X, y).coef_
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("method", ["objective", "output", "gradient"])
def test_sparse_accuracy_near_sklearn_at_large_epsilon(method):
    X, y = _tfidf_like(2000, 200, seed=8)
    flip = np.random.default_rng(9).random(2000) < 0.1  # 10% label noise
    y = np.where(flip, 1 - y, y)
    X_train, y_train, X_test, y_test = X[:1500], y[:1500], X[1500:], y[1500:]
    reference = LogisticRegression(C=1.0).fit(X_train, y_train).score(X_test, y_test)
    # DP-SGD full batch (its noise calibration is slow for small rates).
    extra = {"epsilon": 20.0, "batch_size": 1500, "epochs": 30}
    if method != "gradient":
        extra = {"epsilon": 1e4}
    clf = DPLogisticRegression(**_params(DPLogisticRegression, method), **extra)
    score = clf.fit(X_train, y_train).score(X_test, y_test)
    assert 0.8 < reference < 0.95 and score >= reference - 0.03


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_sklearn_sparse_checks_pass(estimator):
    est = estimator(random_state=0)
    assert est.__sklearn_tags__().input_tags.sparse
    # At default parameters bounds and classes come from the data, with a
    # warning (the common checks run there too).
    with pytest.warns(PrivacyLeakWarning):
        check_estimator_sparse_array(estimator.__name__, est)
    with pytest.warns(PrivacyLeakWarning):
        check_estimator_sparse_matrix(estimator.__name__, est)


def test_memory_plans_respect_the_address_space_limit(monkeypatch):
    """Under ``ulimit -v`` a plan beyond the limit is refused before the charge."""
    import resource

    X, _ = _tfidf_like(50, 5000)
    reg = DPLinearRegression(method="adassp", data_norm=1.0, y_bounds=(0, 1))
    reg.privacy_plan(X, np.zeros(50))  # 48 * 5000**2 bytes: 1.2 GB, fits here
    limit = (2**30, resource.RLIM_INFINITY)  # a 1 GiB address space
    monkeypatch.setattr(resource, "getrlimit", lambda which: limit)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-3)
    with pytest.raises(MemoryError, match="address-space limit"):
        reg.set_params(budget=budget).fit(X, np.zeros(50))
    assert budget.ledger == []
