"""DPLinearSVC: the Huber hinge on the private-ERM core, checked numerically."""

import math

import numpy as np
import pytest
from _data import sphere_rows
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from skdp import PrivacyBudget
from skdp.audit import audit_estimator
from skdp.linear_model import DPLinearSVC
from skdp.linear_model._losses import HuberHingeLoss
from skdp.linear_model._newton import plan_solver, solve
from skdp.linear_model._objective import objective_noise_scale


def test_huber_hinge_constants_hold_numerically():
    """|l'| <= 1 and 0 <= l'' <= 1/(2h), by finite differences."""
    for h in (0.1, 0.5, 2.0):
        loss = HuberHingeLoss(h)
        m = np.linspace(-4, 4, 20001)
        t = np.ones_like(m)
        slope = np.gradient(loss.value(m, t), m)
        np.testing.assert_allclose(slope, loss.slope(m, t), atol=2e-3)
        assert np.abs(loss.slope(m, t)).max() <= 1.0
        second = np.gradient(loss.slope(m, t), m)
        assert second.min() >= -1e-9 and second.max() <= 1 / (2 * h) + 1e-6
        assert loss.value(np.zeros(1), np.ones(1))[0] <= loss.zero_value + 1e-12


@pytest.mark.parametrize(
    "epsilon, C, R, h, K",
    [
        (1.0, 1.0, 1.0, 0.5, 2),
        (0.3, 5.0, 2.0, 0.1, 2),
        (1.0, 1.0, 1.5, 0.5, 3),
        (1.0, 1.0, 1.0, 2.0, 2),  # the default band
    ],
)
def test_objective_privacy_loss_is_at_most_epsilon(epsilon, C, R, h, K):
    """Density ratio of the output for neighbours (CMS 2011, Theorem 9).

    ``W`` (one row per model) determines the noise ``B(W) = -(alpha W + C
    sum_i l'(W z_i, t_i) z_i^T) / (C R)`` and the density is ``exp(-eps'
    ||B|| / Delta) det(alpha I + C H(W))`` with ``Delta = 2 L sqrt(m)``; the
    log ratio for neighbours must stay below epsilon (and not be vacuous).
    """
    loss = HuberHingeLoss(h)
    models = 1 if K == 2 else K
    rng = np.random.default_rng(3)
    d, n = 2, 12
    eps_noise, alpha = objective_noise_scale(epsilon, C, R, K, loss)
    delta = 2.0 * math.sqrt(models)

    def log_density(Z, T, W):
        M = Z @ W.T  # margins, one column per model
        B = -(alpha * W + C * loss.slope(M, T).T @ Z) / (C * R)
        logdet = 0.0
        for k in range(models):
            hessian = (
                alpha * np.eye(d)
                + C * (Z * loss.second(M[:, k], T[:, k])[:, None]).T @ Z
            )
            logdet += np.linalg.slogdet(hessian)[1]
        return -eps_noise * np.linalg.norm(B) / delta + logdet

    worst = -np.inf
    for _ in range(30):
        Z = sphere_rows(rng, n, d, R)
        labels = rng.integers(0, K, size=n)
        T = np.where(labels[:, None] == np.arange(models)[None, :], 1.0, -1.0)
        if K == 2:
            T = np.where(labels == 1, 1.0, -1.0)[:, None]
        Z2, T2 = Z.copy(), T.copy()
        Z2[0] = sphere_rows(rng, 1, d, R)[0]
        T2[0] = -T[0]
        for scale in (0.1, 1.0, 5.0):
            for W in rng.normal(size=(20, models, d)) * scale:
                gap = log_density(Z, T, W) - log_density(Z2, T2, W)
                worst = max(worst, abs(gap))
    assert worst <= epsilon + 1e-9
    assert worst >= epsilon / 10  # not vacuous


def test_output_sensitivity_bounds_the_change_of_the_minimiser():
    """||w(D) - w(D')|| <= 2 C L R with L = 1 (written out)."""
    rng = np.random.default_rng(5)
    d, n, h = 3, 10, 0.5
    loss = HuberHingeLoss(h)
    for C, R in [(1.0, 1.0), (5.0, 2.0)]:
        bound = 2 * C * 1.0 * R
        plan = plan_solver(
            n_samples=n,
            n_features=d,
            n_classes=2,
            row_norm=R,
            C=C,
            alpha=1.0,
            tol=1e-14,
            max_iter=200,
            loss=loss,
        )
        worst = 0.0
        for _ in range(40):
            Z = sphere_rows(rng, n, d, R)
            t = rng.choice([-1.0, 1.0], size=n)
            Z2, t2 = Z.copy(), t.copy()
            Z2[0] = -Z[0]
            w = solve(Z, t, plan, loss=loss)
            w2 = solve(Z2, t2, plan, loss=loss)
            worst = max(worst, np.linalg.norm(w - w2))
        assert worst <= bound + 2 * plan.residual
        assert worst >= bound / 10


def test_newton_on_the_huber_hinge_matches_a_fine_gradient_solve():
    rng = np.random.default_rng(6)
    Z = sphere_rows(rng, 300, 4, 1.0)
    t = np.where(Z[:, 0] + 0.3 * rng.normal(size=300) > 0, 1.0, -1.0)
    loss = HuberHingeLoss(0.5)
    plan = plan_solver(
        n_samples=300,
        n_features=4,
        n_classes=2,
        row_norm=1.0,
        C=2.0,
        alpha=1.0,
        tol=1e-13,
        max_iter=100,
        loss=loss,
    )
    w = solve(Z, t, plan, loss=loss)
    gradient = w + 2.0 * Z.T @ loss.slope(Z @ w, t)
    assert np.linalg.norm(gradient) <= 2 * plan.threshold


@pytest.mark.parametrize("method", ["objective", "output", "gradient"])
def test_fit_predicts_and_charges_once(method):
    rng = np.random.default_rng(0)
    X = sphere_rows(rng, 2000, 3, 1.0)
    y = (X[:, 0] > 0).astype(int)
    budget = PrivacyBudget(10.0, 1e-4)
    # Output perturbation's noise grows with C (sensitivity 2 C R): small C.
    svc = DPLinearSVC(
        epsilon=2.0,
        C=0.02 if method == "output" else 1.0,
        method=method,
        data_norm=1.0,
        classes=[0, 1],
        budget=budget,
        random_state=0,
    ).fit(X, y)
    assert len(budget.ledger) == 1 and svc.epsilon_ <= 2.0 + 1e-9
    assert svc.score(X, y) > 0.85
    assert not hasattr(svc, "predict_proba")


@pytest.mark.parametrize("method", ["objective", "output", "gradient"])
def test_multiclass_is_one_vs_rest_in_one_charge(method):
    rng = np.random.default_rng(1)
    X = sphere_rows(rng, 3000, 3, 1.0)
    y = np.argmax(X @ rng.normal(size=(3, 4)), axis=1)
    budget = PrivacyBudget(10.0, 1e-4)
    svc = DPLinearSVC(
        epsilon=3.0,
        C=0.02 if method == "output" else 1.0,
        method=method,
        data_norm=1.0,
        classes=[0, 1, 2, 3],
        budget=budget,
        random_state=0,
    ).fit(X, y)
    assert svc.coef_.shape == (4, 3) and svc.multi_class_ == "ovr"
    assert len(budget.ledger) == 1 and svc.epsilon_ <= 3.0 + 1e-9
    assert svc.score(X, y) > 0.5


def test_one_vs_rest_objective_noise_has_the_joint_constants():
    """Four models: sensitivity 2 sqrt(4) = 4, rank 4 in the Jacobian term."""
    rng = np.random.default_rng(2)
    X = sphere_rows(rng, 200, 3, 1.0)
    y = rng.integers(0, 4, 200)
    svc = DPLinearSVC(
        method="objective", huber_h=0.5, data_norm=1.0, classes=[0, 1, 2, 3]
    )
    plan = svc.privacy_plan(X, y).settings["method"]
    assert plan.noise.sensitivity == 4.0 and plan.noise.size == 4 * 4
    R = math.hypot(1.0, 0.5)
    c = 1.0 / (2 * 0.5)
    assert plan.epsilon_objective == pytest.approx(
        plan.epsilon_noise + 4 * math.log1p(c * 1.0 * R**2 / plan.alpha)
    )


WORST_X = np.zeros((10, 1))
WORST_X[0, 0] = 1.0
WORST_Y = np.arange(10) % 2
WORST_Y[0] = 1
WORST_Y2 = WORST_Y.copy()
WORST_Y2[0] = 0


@pytest.mark.parametrize(
    "method, params",
    [("objective", {"C": 0.3}), ("output", {"C": 0.3}), ("gradient", {"epochs": 1})],
)
@pytest.mark.slow
def test_audit_finds_no_violation(method, params):
    result = audit_estimator(
        DPLinearSVC(
            epsilon=1.0,
            method=method,
            data_norm=1.0,
            fit_intercept=False,
            classes=[0, 1],
            **params,
        ),
        (WORST_X, WORST_Y),
        (WORST_X, WORST_Y2),
        statistic=lambda e: e.coef_[0, 0],
        n_runs=600,
        confidence=0.99,
        random_state=0,
    )
    assert not result.violation, str(result)


def test_pipeline_and_grid_search_share_the_budget():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    budget = PrivacyBudget(100.0, 1e-3)
    pipe = make_pipeline(
        Normalizer(), DPLinearSVC(data_norm=1.0, classes=[0, 1], budget=budget)
    )
    grid = GridSearchCV(
        pipe,
        {"dplinearsvc__epsilon": [0.5, 1.0], "dplinearsvc__C": [0.1, 1.0]},
        cv=2,
    ).fit(X, y)
    assert len(budget.ledger) == 2 * 2 * 2 + 1
    assert grid.best_estimator_.predict(X[:3]).shape == (3,)
