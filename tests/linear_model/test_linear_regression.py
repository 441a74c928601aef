"""DPLinearRegression: AdaSSP and the Huber-loss ERM methods, checked numerically."""

import math
import warnings

import numpy as np
import pytest
from _data import clip_rows
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp import PrivacyBudget, PrivacyLeakWarning
from skdp.accounting import (
    DiscreteGaussianEvent,
    RDPAccountant,
    gaussian_noise_multiplier,
)
from skdp.audit import audit_estimator
from skdp.linear_model import DPLinearRegression
from skdp.linear_model._adassp import noisy_gram_matrix, plan_adassp, run_adassp
from skdp.linear_model._losses import HuberLoss
from skdp.linear_model._rows import RowSpec
from skdp.utils import check_random_source
from skdp.utils._row_source import row_source


def _data(n=3000, d=3, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X = clip_rows(X)
    w = rng.normal(size=d)
    y = np.clip(X @ w + noise * rng.normal(size=n), -3, 3)
    return X, y


def test_adassp_sensitivities_are_pinned():
    """lambda_min: R**2; upper triangle of Z^T Z: sqrt(2) R**2; Z^T t: 2 R T."""
    R, T = 1.5, 2.0
    plan = plan_adassp(
        epsilon=1.0,
        delta=1e-6,
        row_norm=R,
        target_bound=T,
        n_samples=100,
        n_features=4,
        alpha=0.0,
    )
    assert plan.eigenvalue_noise.sensitivity == R**2
    assert plan.gram_noise.sensitivity == pytest.approx(math.sqrt(2) * R**2)
    assert plan.gram_noise.size == 4 * 5 // 2
    assert plan.moment_noise.sensitivity == 2 * R * T


def test_adassp_spends_exactly_its_epsilon():
    """Gaussians with multipliers s / sqrt(w_i), sum w_i = 1, compose to s."""
    plan = plan_adassp(
        epsilon=0.8,
        delta=1e-5,
        row_norm=1.0,
        target_bound=1.0,
        n_samples=100,
        n_features=3,
        alpha=0.0,
        eigenvalue_share=0.1,
    )
    multipliers = [e.noise_multiplier for e in plan.event.events]
    single = gaussian_noise_multiplier(0.8, 1e-5)
    shares = [1 / s**2 for s in multipliers]
    assert sum(shares) * single**2 == pytest.approx(1.0, rel=1e-8)
    assert shares[0] * single**2 == pytest.approx(0.1, rel=1e-8)
    spent, _ = RDPAccountant().epsilon_delta(plan.event.events, 1e-5)
    assert spent <= 0.8 and spent == pytest.approx(0.8, rel=1e-6)


def test_the_sensitivities_hold_on_worst_case_neighbours():
    """Replace a row by its opposite with the opposite target."""
    rng = np.random.default_rng(4)
    R, worst = 1.0, [0.0, 0.0, 0.0]
    for _ in range(200):
        Z = rng.normal(size=(20, 3))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        t = rng.uniform(-1, 1, size=20)
        Z2, t2 = Z.copy(), t.copy()
        Z2[0] = rng.normal(size=3)
        Z2[0] /= np.linalg.norm(Z2[0])
        t2[0] = -np.sign(t[0])
        A, A2 = Z.T @ Z, Z2.T @ Z2
        rows, cols = np.triu_indices(3)
        # The released vector: the diagonal and sqrt(2) x the upper triangle.
        weights = np.where(rows == cols, 1.0, math.sqrt(2.0))
        worst[0] = max(
            worst[0], abs(np.linalg.eigvalsh(A)[0] - np.linalg.eigvalsh(A2)[0])
        )
        worst[1] = max(
            worst[1], np.linalg.norm((A[rows, cols] - A2[rows, cols]) * weights)
        )
        worst[2] = max(worst[2], np.linalg.norm(Z.T @ t - Z2.T @ t2))
    assert worst[0] <= R**2 and worst[1] <= math.sqrt(2) * R**2 + 1e-12
    assert worst[2] <= 2 * R
    assert worst[1] >= 0.9 * R**2 and worst[2] >= 1.5 * R  # not vacuous


def test_adassp_noise_has_the_planned_scale():
    """Run AdaSSP on Z = 0 many times: Z^T t is pure noise of sd s (2 R T)."""
    plan = plan_adassp(
        epsilon=1.0,
        delta=1e-6,
        row_norm=1.0,
        target_bound=1.0,
        n_samples=100,
        n_features=2,
        alpha=0.0,
    )
    source = check_random_source(0)
    from skdp.mechanisms import add_noise

    draws = np.array(
        [add_noise(plan.moment_noise, np.zeros(2), source) for _ in range(4000)]
    ).ravel()
    sd = plan.event.events[2].noise_multiplier * 2.0
    # The sample sd of 8000 normals is within 5 sqrt(1 / (2 * 8000)) relative.
    assert np.std(draws) == pytest.approx(sd, rel=5 / math.sqrt(16000))


def test_adassp_carries_sufficient_statistics_beyond_the_default_grid():
    """n R**2 past 2**50 steps of the default grid is released, not clipped.

    At epsilon 10 the Gram entry's noise sd is about 1.1 and the default
    grid (about 2**-32 of it) carries 2**18 = 262,144; 2**19 rows of [1]
    with y = 0.5 have Z^T Z = 2**19 and Z^T t = 2**18, whose ratio the
    clipped release put at 1.0.
    """
    n = 2**19
    X, y = np.ones((n, 1)), np.full(n, 0.5)
    reg = DPLinearRegression(
        epsilon=10.0,
        delta=1e-6,
        method="adassp",
        alpha=0.0,
        data_norm=1.0,
        y_bounds=(-1.0, 1.0),
        fit_intercept=False,
        random_state=0,
    ).fit(X, y)
    plan = reg.privacy_plan(X, y).settings["method"]
    # lambda_min = n dwarfs the ridge's noise bound, so the ridge is 0 and
    # coef = (n / 2 + e_m) / (n + e_g) ~ 0.5 + (e_m - e_g / 2) / n, with
    # e_m, e_g the moment's and the Gram entry's noise (h = 1: t = y).
    sd_moment = plan.moment_noise.scale * plan.moment_noise.gamma
    sd_gram = plan.gram_noise.scale * plan.gram_noise.gamma
    sd = math.sqrt(sd_moment**2 + (sd_gram / 2) ** 2) / n
    # 6 sd: two-sided normal tail 2e-9 (the discrete Gaussian's is lighter).
    assert abs(reg.coef_[0] - 0.5) <= 6 * sd


def test_the_gram_noise_is_a_scaled_goe_within_the_ridge_bound():
    """Run AdaSSP's Gram release on Z = 0: the released matrix is the noise E.

    Its off-diagonal entries have sd s / sqrt(2) (s: the diagonal's), and
    ||E|| stays below the ridge's bound s (sqrt(2 d) + sqrt(2 log(4 / rho)))
    in at least 1 - rho / 2 of the draws (here: every one of 300, while
    rho / 2 = 0.025 would allow a few).
    """
    from skdp.linear_model._adassp import FAILURE_PROBABILITY

    d = 30
    plan = plan_adassp(
        epsilon=1.0,
        delta=1e-6,
        row_norm=1.0,
        target_bound=1.0,
        n_samples=100,
        n_features=d,
        alpha=0.0,
    )
    s = plan.gram_noise.scale * plan.gram_noise.gamma
    bound = s * (math.sqrt(2 * d) + math.sqrt(2 * math.log(4 / FAILURE_PROBABILITY)))
    source = check_random_source(3)
    draws = [
        noisy_gram_matrix(np.zeros((d, d)), plan.gram_noise, source) for _ in range(300)
    ]
    off = np.concatenate([m[np.triu_indices(d, 1)] for m in draws])
    diagonal = np.concatenate([np.diag(m) for m in draws])
    # 130,500 and 9,000 normals: relative sd errors of ~0.002 and ~0.0075.
    assert np.std(off) == pytest.approx(s / math.sqrt(2), rel=0.02)
    assert np.std(diagonal) == pytest.approx(s, rel=0.05)
    norms = [np.linalg.norm(m, 2) for m in draws]
    assert max(norms) <= bound
    assert np.median(norms) >= 0.6 * bound  # the bound is not vacuous


def test_run_adassp_is_accurate_and_never_fails():
    X, y = _data(n=20000, d=4)
    Z = np.hstack([X, np.full((len(X), 1), 0.5)])
    t = y / 3.0
    plan = plan_adassp(
        epsilon=1.0,
        delta=1e-6,
        row_norm=math.hypot(1, 0.5),
        target_bound=1.0,
        n_samples=len(Z),
        n_features=5,
        alpha=0.0,
    )
    given = RowSpec(n_features=5)  # rows and targets used as they are
    coef = run_adassp(row_source(Z, t), given, plan, check_random_source(1))
    exact = np.linalg.solve(Z.T @ Z, Z.T @ t)
    assert np.linalg.norm(coef - exact) < 0.1 * np.linalg.norm(exact)
    # Degenerate data (every row zero): still a finite answer.
    zeros = row_source(np.zeros((10, 5)), np.zeros(10))
    zero = run_adassp(zeros, given, plan, check_random_source(2))
    assert np.all(np.isfinite(zero))


@pytest.mark.parametrize("method", ["adassp", "objective", "output", "gradient"])
def test_methods_fit_charge_once_and_predict(method):
    X, y = _data()
    budget = PrivacyBudget(5.0, 1e-4)
    reg = DPLinearRegression(
        epsilon=2.0,
        method=method,
        alpha=300.0 if method == "output" else 1.0,  # output noise ~ 1 / alpha
        data_norm=1.0,
        y_bounds=(-3, 3),
        budget=budget,
        random_state=0,
    ).fit(X, y)
    assert len(budget.ledger) == 1 and reg.epsilon_ <= 2.0 + 1e-9
    reference = Ridge().fit(X, y).score(X, y)
    assert reg.score(X, y) > (0.8 if method != "output" else 0.3) * reference
    assert reg.coef_.shape == (3,) and isinstance(reg.intercept_, float)
    assert reg.y_bounds_ == (-3.0, 3.0)


def test_targets_are_clipped_to_the_public_bounds():
    X, y = _data()
    y[0] = 1e6
    reg = DPLinearRegression(data_norm=1.0, y_bounds=(-3, 3), random_state=0)
    prepared, _ = reg._plan_with_input(X, y)
    assert prepared.Y.max() <= 1.0 and prepared.Y.min() >= -1.0


def test_bounds_read_from_the_data_warn():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="y_bounds"):
        DPLinearRegression(data_norm=1.0, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPLinearRegression(data_norm=1.0, y_bounds=(-3, 3), random_state=0).fit(X, y)


@pytest.mark.parametrize("bounds", [(3, -3), (0, 0), (0, math.inf), (1,)])
def test_bad_bounds_are_refused_before_the_charge(bounds):
    X, y = _data()
    budget = PrivacyBudget(5.0, 1e-4)
    with pytest.raises(ValueError):
        DPLinearRegression(data_norm=1.0, y_bounds=bounds, budget=budget).fit(X, y)
    assert budget.ledger == []


def test_huber_loss_is_the_squared_loss_on_the_targets_range():
    loss = HuberLoss(2.0)
    m = np.linspace(-1, 1, 11)
    t = np.linspace(1, -1, 11)
    np.testing.assert_allclose(loss.value(m, t), 0.5 * (m - t) ** 2)
    assert loss.lipschitz == 2.0 and loss.curvature == 1.0


def test_objective_constants_for_the_huber_loss():
    X, y = _data(n=500)
    plan = (
        DPLinearRegression(
            method="objective", data_norm=1.0, y_bounds=(-3, 3), alpha=2.0
        )
        .privacy_plan(X, y)
        .settings["method"]
    )
    assert plan.noise.sensitivity == 4.0  # 2 L with L = 2
    R = math.hypot(1.0, 0.5)
    C = 1 / 2.0
    assert plan.epsilon_objective == pytest.approx(
        plan.epsilon_noise + math.log1p(1.0 * C * R**2 / plan.alpha)
    )


WORST_X = np.zeros((10, 1))
WORST_X[0, 0] = 1.0
WORST_Y = np.zeros(10)
WORST_Y[0] = 1.0
WORST_Y2 = WORST_Y.copy()
WORST_Y2[0] = -1.0


@pytest.mark.parametrize(
    "method, params",
    [
        ("adassp", {}),
        ("objective", {"alpha": 3.0}),
        ("output", {"alpha": 3.0}),
        ("gradient", {"epochs": 1}),
    ],
)
@pytest.mark.slow
def test_audit_finds_no_violation(method, params):
    result = audit_estimator(
        DPLinearRegression(
            epsilon=1.0,
            method=method,
            data_norm=1.0,
            y_bounds=(-1, 1),
            fit_intercept=False,
            **params,
        ),
        (WORST_X, WORST_Y),
        (WORST_X, WORST_Y2),
        statistic=lambda e: e.coef_[0],
        n_runs=600,
        confidence=0.99,
        random_state=0,
    )
    assert not result.violation, str(result)


@pytest.mark.slow
def test_grid_search_over_epsilon_and_alpha_shares_the_budget():
    X, y = _data(n=600)
    budget = PrivacyBudget(100.0, 1e-3)
    grid = GridSearchCV(
        DPLinearRegression(data_norm=1.0, y_bounds=(-3, 3), budget=budget),
        {"epsilon": [0.5, 1.0], "alpha": [1.0, 10.0]},
        cv=2,
    ).fit(X, y)
    assert len(budget.ledger) == 2 * 2 * 2 + 1
    assert grid.best_estimator_.predict(X[:4]).shape == (4,)


def test_pipeline_and_cross_val_score_charge_the_shared_budget():
    X, y = _data(n=600)
    budget = PrivacyBudget(10.0, 1e-3)
    pipe = make_pipeline(
        FunctionTransformer(lambda Z: np.clip(Z, -1, 1)),
        DPLinearRegression(
            method="adassp", data_norm=np.sqrt(3), y_bounds=(-3, 3), budget=budget
        ),
    )
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert len(budget.ledger) == 3
    spent_epsilon, _ = budget.spent()
    assert 1.0 < spent_epsilon <= 3.0 + 1e-9  # three fits at epsilon 1, composed


def test_gaussian_event_of_output_with_delta():
    X, y = _data(n=300)
    reg = DPLinearRegression(
        method="output", delta=1e-6, alpha=10.0, data_norm=1.0, y_bounds=(-3, 3)
    ).fit(X, y)
    assert isinstance(reg.privacy_event_, DiscreteGaussianEvent)
    assert reg.epsilon_ <= 1.0


def test_dpsgd_default_clip_is_the_public_constant():
    """The default method clips at 0.4 R, whatever the data (nothing read)."""
    X, y = _data(n=500)
    fits = [
        DPLinearRegression(data_norm=1.0, y_bounds=bounds, random_state=0).fit(X, y)
        for bounds in ((-3, 3), (-30, 30))
    ]
    R = math.hypot(1.0, 0.5)
    for reg in fits:
        assert reg.method == "gradient"
        assert reg.max_grad_norm_ == pytest.approx(0.4 * R, rel=1e-12)


def test_dpsgd_step_is_capped_on_the_targets_scale():
    """At small epsilon the step keeps a prediction's noise sd at 0.1."""
    X, y = _data(n=2000)
    reg = DPLinearRegression(
        epsilon=0.05, data_norm=1.0, y_bounds=(-3, 3), random_state=0
    ).fit(X, y)
    R = math.hypot(1.0, 0.5)
    q, T = reg.sampling_rate_, reg.n_steps_
    noise_sd = (
        reg.learning_rate_
        * math.sqrt(T)
        * reg.noise_multiplier_
        * reg.max_grad_norm_
        * R
        / (q * 2000)
    )
    assert noise_sd == pytest.approx(0.1, rel=1e-9)


@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("data_norm", [None, 1.0])
def test_an_adassp_fit_makes_no_copy_of_float64_rows(data_norm, copies_of_x):
    # Z^T Z is summed block by block, and the largest row norm read so. (The
    # noise draws take about 5 MB whatever n: X is 24 MB here.)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200_000, 16))
    y = X[:, 0] + 0.1 * rng.normal(size=200_000)
    model = DPLinearRegression(
        method="adassp", data_norm=data_norm, y_bounds=(-4, 4), random_state=0
    )
    assert copies_of_x(lambda A: model.fit(A, y[: len(A)]), X) < 0.5
