"""The maths behind each private method, checked numerically."""

import math

import numpy as np
import pytest
from _data import sphere_rows
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skdp.accounting import epsilon_poisson_subsampled_gaussian
from skdp.linear_model._dpsgd import clipped_gradient_sum, dpsgd_logistic
from skdp.linear_model._newton import minimize_loss
from skdp.linear_model._objective import (
    LOGISTIC_CURVATURE,
    objective_noise_scale,
    objective_perturbation,
    plan_objective,
)
from skdp.linear_model._output import output_perturbation, output_sensitivity
from skdp.utils import check_random_source


def test_newton_matches_sklearn_and_reaches_tolerance():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(500, 8))
    y = np.where(Z[:, 0] + rng.normal(size=500) > 0, 1, -1)
    result = minimize_loss(Z, y, alpha=1.0, C=2.0, tol=1e-12)
    reference = LogisticRegression(C=2.0, fit_intercept=False, tol=1e-12).fit(Z, y)
    assert result.converged and result.n_iter <= 15
    # lbfgs stops at its own tolerance; 1e-6 is far above both solvers' error.
    np.testing.assert_allclose(result.coef, reference.coef_[0], atol=1e-6)
    # The exact minimiser is within gradient_norm / alpha of the result.
    assert result.gradient_norm <= 1e-12 * (1 + 2 * np.linalg.norm(Z, axis=1).sum())


@pytest.mark.parametrize(
    "epsilon, C, row_norm", [(10.0, 0.1, 1.0), (1.0, 1.0, 1.5), (0.1, 5.0, 3.0)]
)
def test_objective_privacy_loss_is_at_most_epsilon(epsilon, C, row_norm):
    """Density ratio of the output at many points, for neighbouring data.

    The output ``w`` determines the noise: ``b(w) = -(alpha w + C sum_i
    loss'(m_i) y_i z_i) / (C R)``, so ``p_D(w) = p_b(b_D(w)) |det J_D(w)|``
    with ``J = -H(w) / (C R)``. The log ratio of ``p_D`` and ``p_D'`` must
    stay below epsilon for every ``w`` (CMS 2011, proof of Theorem 9).
    """
    rng = np.random.default_rng(1)
    d, n = 3, 20
    epsilon_noise, alpha = objective_noise_scale(epsilon, C, row_norm)

    def log_density(Z, y, w):
        margins = y * (Z @ w)
        slope = -expit(-margins)
        b = -(alpha * w + C * Z.T @ (slope * y)) / (C * row_norm)
        curvature = expit(margins) * expit(-margins)
        hessian = alpha * np.eye(d) + C * (Z * curvature[:, None]).T @ Z
        return -epsilon_noise * np.linalg.norm(b) / 2 + np.linalg.slogdet(hessian)[1]

    worst = -np.inf
    for _ in range(30):
        Z = sphere_rows(rng, n, d, row_norm)
        y = rng.choice([-1.0, 1.0], size=n)
        Z2, y2 = Z.copy(), y.copy()
        Z2[0] = sphere_rows(rng, 1, d, row_norm)[0]
        y2[0] = -y[0]
        for scale in (0.1, 1.0, 10.0):
            for w in rng.normal(size=(20, d)) * scale:
                gap = log_density(Z, y, w) - log_density(Z2, y2, w)
                worst = max(worst, abs(gap))
    assert worst <= epsilon + 1e-9
    # The bound is not vacuous: the sampled neighbours get within a factor 4.
    assert worst >= epsilon / 4


def test_objective_curvature_term_scales_with_row_norm_squared():
    # epsilon' = epsilon - log(1 + c C R^2) while that leaves >= 0.95 epsilon.
    eps_noise, alpha = objective_noise_scale(100.0, C=0.5, row_norm=3.0)
    assert alpha == 1.0
    assert eps_noise == pytest.approx(100 - math.log1p(0.25 * 0.5 * 9))
    # Otherwise the regulariser grows so that exactly 0.95 epsilon is left.
    eps_noise, alpha = objective_noise_scale(1.0, C=0.5, row_norm=3.0)
    curvature = LOGISTIC_CURVATURE * 0.5 * 9
    assert eps_noise == 0.95
    assert eps_noise + math.log1p(curvature / alpha) == pytest.approx(1.0)
    # Softmax loss, K classes: (K - 1) log(1 + C R^2 / (K alpha)).
    eps_noise, alpha = objective_noise_scale(100.0, C=0.5, row_norm=3.0, n_classes=4)
    assert alpha == 1.0
    assert eps_noise == pytest.approx(100 - 3 * math.log1p(0.5 * 9 / 4))
    eps_noise, alpha = objective_noise_scale(1.0, C=0.5, row_norm=3.0, n_classes=4)
    assert eps_noise + 3 * math.log1p(0.5 * 9 / (4 * alpha)) == pytest.approx(1.0)


def test_objective_noise_has_the_calibrated_norm():
    """Recover b from the first-order condition; E||b|| = 2 d / epsilon'."""
    rng = np.random.default_rng(2)
    d, n, C, R = 4, 50, 1.0, 2.0
    Z = sphere_rows(rng, n, d, R)
    y = rng.choice([-1.0, 1.0], size=n)
    plan = plan_objective(
        epsilon=1.0,
        C=C,
        row_norm=R,
        n_samples=n,
        n_features=d,
        n_classes=2,
        tol=1e-12,
        max_iter=100,
    )
    epsilon_noise, alpha = plan.epsilon_noise, plan.alpha
    # 1% of epsilon covers the solver's residual; the rest is the objective's.
    assert (epsilon_noise, alpha) == objective_noise_scale(0.99, C, R)
    norms = []
    source = check_random_source(3)
    for _ in range(300):
        coef, _ = objective_perturbation(
            Z, y, epsilon=1.0, C=C, row_norm=R, source=source, tol=1e-12, max_iter=100
        )
        w = coef[0]
        slope = -expit(-y * (Z @ w))
        b = -(alpha * w + C * Z.T @ (slope * y)) / (C * R)
        norms.append(np.linalg.norm(b))
    # ||b|| ~ Gamma(d, 2 / epsilon'): mean 2 d / eps', sd 2 sqrt(d) / eps';
    # 4 standard errors of the mean over 300 draws.
    mean, sd = 2 * d / epsilon_noise, 2 * math.sqrt(d) / epsilon_noise
    assert abs(np.mean(norms) - mean) <= 4 * sd / math.sqrt(300)


def test_output_sensitivity_bounds_the_change_of_the_minimiser():
    rng = np.random.default_rng(4)
    d, n = 3, 10
    for C, R in [(1.0, 1.0), (5.0, 2.0), (0.1, 3.0)]:
        bound = 2 * C * R  # CMS 2011, Corollary 8: written out, not computed
        assert output_sensitivity(C, R) == bound
        worst = 0.0
        for _ in range(40):
            Z = sphere_rows(rng, n, d, R)
            y = rng.choice([-1.0, 1.0], size=n)
            Z2, y2 = Z.copy(), y.copy()
            Z2[0], y2[0] = -Z[0], y[0]  # the opposite row: largest gradient change
            w = minimize_loss(Z, y, alpha=1.0, C=C, tol=1e-13).coef
            w2 = minimize_loss(Z2, y2, alpha=1.0, C=C, tol=1e-13).coef
            worst = max(worst, np.linalg.norm(w - w2))
        assert worst <= bound * (1 + 1e-9)
        assert worst >= bound / 10  # not vacuous


def test_softmax_output_sensitivity_bounds_the_change_of_the_minimiser():
    rng = np.random.default_rng(16)
    d, n, K = 3, 10, 3
    # Small C R^2 keeps the model near 0 where ||p - e_y|| is largest; with
    # a larger one the fit saturates and the change is far below the bound.
    for C, R in [(1.0, 1.0), (0.1, 1.0)]:
        bound = 2 * math.sqrt(2) * C * R  # softmax gradient <= sqrt(2) R
        assert output_sensitivity(C, R, n_classes=K) == pytest.approx(bound)
        worst = 0.0
        for _ in range(40):
            Z = sphere_rows(rng, n, d, R)
            labels = rng.integers(0, K, size=n)
            Z2, labels2 = Z.copy(), labels.copy()
            Z2[0], labels2[0] = -Z[0], (labels[0] + 1) % K
            W = minimize_loss(Z, np.eye(K)[labels], alpha=1.0, C=C, tol=1e-13)
            W2 = minimize_loss(Z2, np.eye(K)[labels2], alpha=1.0, C=C, tol=1e-13)
            worst = max(worst, np.linalg.norm(W.coef - W2.coef))
        assert worst <= bound * (1 + 1e-9)
        assert worst >= bound / 10  # not vacuous


def test_softmax_output_noise_lies_in_s_with_the_calibrated_norm():
    K, d, C, R, epsilon = 3, 4, 0.5, 2.0, 2.0
    sensitivity = 2 * math.sqrt(2) * C * R
    source = check_random_source(17)
    norms = []
    for _ in range(400):
        noisy, event = output_perturbation(
            np.zeros((K, d)), epsilon=epsilon, delta=0.0, C=C, row_norm=R, source=source
        )
        np.testing.assert_allclose(noisy.sum(axis=0), 0.0, atol=1e-12)
        norms.append(np.linalg.norm(noisy))
    # Gamma((K - 1) d, sensitivity / epsilon): 4 standard errors over 400.
    dim = (K - 1) * d
    mean, sd = dim * sensitivity / epsilon, math.sqrt(dim) * sensitivity / epsilon
    assert abs(np.mean(norms) - mean) <= 4 * sd / math.sqrt(400)


def test_output_noise_norm_matches_the_vector_density():
    d, C, R, epsilon = 5, 0.5, 2.0, 2.0
    sensitivity = 2 * C * R
    source = check_random_source(5)
    norms = [
        np.linalg.norm(
            output_perturbation(
                np.zeros((1, d)),
                epsilon=epsilon,
                delta=0.0,
                C=C,
                row_norm=R,
                source=source,
            )[0]
        )
        for _ in range(400)
    ]
    # Gamma(d, sensitivity / epsilon): 4 standard errors over 400 draws.
    mean, sd = d * sensitivity / epsilon, math.sqrt(d) * sensitivity / epsilon
    assert abs(np.mean(norms) - mean) <= 4 * sd / math.sqrt(400)


def test_clipped_gradient_sum_matches_per_row_loop():
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(30, 4)) * 3
    Y = rng.choice([-1.0, 1.0], size=(30, 3))
    W = rng.normal(size=(3, 4))
    clip = 0.7
    expected = np.zeros((3, 4))
    for z, labels in zip(Z, Y):
        grad = np.outer(-labels * expit(-labels * (W @ z)), z)
        norm = np.linalg.norm(grad)
        assert np.linalg.norm(grad * min(1, clip / norm)) <= clip + 1e-12
        expected += grad * min(1.0, clip / norm)
    np.testing.assert_allclose(clipped_gradient_sum(Z, Y, W, clip), expected)


def test_dpsgd_noise_has_the_calibrated_standard_deviation():
    # Zero rows: the first iterate is pure noise, -lr * noise / (q n).
    n, d, q, sigma, clip, lr = 100, 4000, 0.5, 2.0, 0.3, 1.0
    coef, event = dpsgd_logistic(
        np.zeros((n, d)),
        np.ones((n, 1)),
        C=1.0,
        sampling_rate=q,
        steps=1,
        noise_multiplier=sigma,
        max_grad_norm=clip,
        learning_rate=lr,
        source=check_random_source(7),
    )
    expected = lr * sigma * clip / (q * n)
    # The std estimate over 4000 entries has relative sd 1/sqrt(8000) ~ 1.1%;
    # the grid slack adds below 1e-8.
    assert np.std(coef) == pytest.approx(expected, rel=0.05)
    assert (event.sampling_rate, event.noise_multiplier, event.steps) == (q, sigma, 1)


def test_dpsgd_event_meets_the_target_exactly():
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(8)
    X = sphere_rows(rng, 2000, 3, 1.0)
    y = (X[:, 0] > 0).astype(int)
    clf = DPLogisticRegression(
        epsilon=0.7, delta=1e-6, data_norm=1.0, classes=[0, 1], random_state=0
    ).fit(X, y)
    spent = epsilon_poisson_subsampled_gaussian(
        clf.sampling_rate_, clf.noise_multiplier_, clf.n_steps_, 1e-6
    )
    # Calibration bisects to a relative tolerance of 1e-6 on the multiplier.
    assert spent <= 0.7 and spent == pytest.approx(0.7, rel=1e-3)
    assert clf.epsilon_ == pytest.approx(0.7, rel=1e-3) and clf.delta_ == 1e-6
    assert clf.sampling_rate_ == 256 / 2000 and clf.n_steps_ == math.ceil(10 / 0.128)


def _softmax_rows(W, Z):
    logits = Z @ W.T
    logits -= logits.max(axis=1, keepdims=True)
    proba = np.exp(logits)
    return proba / proba.sum(axis=1, keepdims=True)


@pytest.mark.parametrize(
    "epsilon, C, row_norm, K",
    [(10.0, 0.1, 1.0, 3), (1.0, 1.0, 1.5, 4), (0.2, 5.0, 3.0, 3)],
)
@pytest.mark.slow
def test_softmax_objective_privacy_loss_is_at_most_epsilon(epsilon, C, row_norm, K):
    """The density-ratio check above, for the multinomial loss on ``S``.

    ``W`` in ``S = {1^T W = 0}`` determines ``B(W) = -(alpha W + C sum_i
    (p_i - e_{y_i}) z_i^T) / (C R)``, also in ``S``; the density is
    ``exp(-epsilon' ||B|| / (2 sqrt 2)) det(alpha I + C H(W))`` (the
    determinant on the whole space is the one on ``S`` times
    ``alpha**d``, the same for both datasets).
    """
    rng = np.random.default_rng(11)
    d, n = 2, 12
    epsilon_noise, alpha = objective_noise_scale(epsilon, C, row_norm, K)

    def log_density(Z, labels, W):
        proba = _softmax_rows(W, Z)
        residual = proba - np.eye(K)[labels]
        B = -(alpha * W + C * residual.T @ Z) / (C * row_norm)
        assert np.allclose(B.sum(axis=0), 0.0)  # B lies in S
        hessian = alpha * np.eye(K * d)
        for p, z in zip(proba, Z):
            hessian += C * np.kron(np.diag(p) - np.outer(p, p), np.outer(z, z))
        norm = np.linalg.norm(B)
        return (
            -epsilon_noise * norm / (2 * math.sqrt(2)) + np.linalg.slogdet(hessian)[1]
        )

    worst = -np.inf
    for _ in range(30):
        Z = sphere_rows(rng, n, d, row_norm)
        labels = rng.integers(0, K, size=n)
        Z2, labels2 = Z.copy(), labels.copy()
        Z2[0] = sphere_rows(rng, 1, d, row_norm)[0]
        labels2[0] = (labels[0] + 1) % K
        for scale in (0.1, 1.0, 10.0):
            for W in rng.normal(size=(20, K, d)) * scale:
                W -= W.mean(axis=0)  # a point of S
                gap = log_density(Z, labels, W) - log_density(Z2, labels2, W)
                worst = max(worst, abs(gap))
    assert worst <= epsilon + 1e-9
    assert worst >= epsilon / 4  # not vacuous


def test_softmax_objective_noise_lies_in_s_with_the_calibrated_norm():
    """Recover B from the first-order condition: in S, ||B|| ~ Gamma((K-1) d)."""
    rng = np.random.default_rng(12)
    d, n, K, C, R = 3, 60, 3, 1.0, 2.0
    Z = sphere_rows(rng, n, d, R)
    labels = rng.integers(0, K, size=n)
    Y = np.where(np.eye(K)[labels] > 0, 1.0, -1.0)
    epsilon_noise, alpha = objective_noise_scale(0.99, C, R, K)
    source = check_random_source(13)
    norms = []
    for _ in range(300):
        W, event = objective_perturbation(
            Z, Y, epsilon=1.0, C=C, row_norm=R, source=source, tol=1e-12, max_iter=100
        )
        assert W.shape == (K, d) and event.epsilon == 1.0
        np.testing.assert_allclose(W.sum(axis=0), 0.0, atol=1e-9)  # W in S
        residual = _softmax_rows(W, Z) - np.eye(K)[labels]
        B = -(alpha * W + C * residual.T @ Z) / (C * R)
        norms.append(np.linalg.norm(B))
    dim, scale = (K - 1) * d, 2 * math.sqrt(2) / epsilon_noise
    # Gamma(dim, scale): 4 standard errors of the mean over 300 draws. A
    # K d-dimensional draw would have mean 9 scale, far outside.
    mean, sd = dim * scale, math.sqrt(dim) * scale
    assert abs(np.mean(norms) - mean) <= 4 * sd / math.sqrt(300)


def test_softmax_newton_matches_sklearn_multinomial():
    rng = np.random.default_rng(14)
    Z = rng.normal(size=(400, 5))
    labels = rng.integers(0, 4, size=400)
    Z[:, 0] += labels
    result = minimize_loss(Z, np.eye(4)[labels], alpha=1.0, C=2.0, tol=1e-12)
    reference = LogisticRegression(
        C=2.0, fit_intercept=False, tol=1e-12, max_iter=10_000
    ).fit(Z, labels)
    assert result.converged and result.n_iter <= 15
    np.testing.assert_allclose(result.coef, reference.coef_, atol=1e-6)


def test_newton_converges_when_the_linear_term_cancels_the_loss():
    """The value at the optimum is near 0 by cancellation; Newton must still
    reach ``tol`` (a rounding slack relative to ``|J|`` made it stall)."""
    # A case met in check_estimator (objective, 10 rows).
    Z = np.column_stack([np.random.RandomState(0).rand(10, 3), np.full(10, 0.5)])
    y = np.repeat([-1.0, 1.0], 5)
    linear = np.array(
        [-1.7552904712453326, 2.008195760784995, 3.2056496389336973, -8.154810583736404]
    )
    result = minimize_loss(Z, y, alpha=6.109443023620887, C=1.0, linear=linear)
    assert result.converged and result.n_iter <= 10


def test_gaussian_objective_privacy_loss_exceeds_epsilon_with_probability_delta():
    """Kifer-Smith-Thakurta's Gaussian variant: draw the output on D (by its
    noise b), compute the privacy loss against the neighbour D' from the two
    densities (noise density at b_D(w) and b_D'(w), and the Jacobian), and
    count how often it exceeds epsilon: at most delta (plus sampling error),
    and not vacuously (the loss comes within a factor 4 of epsilon)."""
    from skdp.linear_model._objective import plan_objective

    rng = np.random.default_rng(21)
    d, n, C, R, epsilon, delta = 2, 15, 1.0, 1.0, 1.0, 0.02
    Z = sphere_rows(rng, n, d, R)
    y = rng.choice([-1.0, 1.0], size=n)
    Z2, y2 = Z.copy(), y.copy()
    Z2[0], y2[0] = -Z[0], y[0]  # the largest change of the gradient
    plan = plan_objective(
        epsilon=epsilon,
        C=C,
        row_norm=R,
        n_samples=n,
        n_features=d,
        n_classes=2,
        tol=1e-13,
        max_iter=100,
        delta=delta,
    )
    sigma, alpha = plan.gaussian_sigma, plan.alpha
    # The AMP residual share is a separate (pure) epsilon: the objective part
    # spends epsilon_objective at delta.
    budget = plan.epsilon_objective

    def b_of(Zs, ys, w):
        slope = -expit(-ys * (Zs @ w))
        return -(alpha * w + C * Zs.T @ (slope * ys)) / (C * R)

    def log_det(Zs, ys, w):
        margins = ys * (Zs @ w)
        curvature = expit(margins) * expit(-margins)
        return np.linalg.slogdet(
            alpha * np.eye(d) + C * (Zs * curvature[:, None]).T @ Zs
        )[1]

    losses = []
    for _ in range(3000):
        b = sigma * rng.normal(size=d)
        w = minimize_loss(Z, y, alpha=alpha, C=C, linear=C * R * b, tol=1e-13).coef
        b1, b2 = b_of(Z, y, w), b_of(Z2, y2, w)
        loss = (
            (b2 @ b2 - b1 @ b1) / (2 * sigma**2) + log_det(Z, y, w) - log_det(Z2, y2, w)
        )
        losses.append(loss)
    losses = np.array(losses)
    exceed = np.mean(losses > budget)
    # Binomial(3000, delta): 5 standard errors above delta.
    assert exceed <= delta + 5 * math.sqrt(delta * (1 - delta) / 3000)
    assert np.quantile(losses, 0.99) >= budget / 4
