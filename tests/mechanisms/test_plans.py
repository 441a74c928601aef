"""Every privacy constant pinned, written out independently of the code.

A statistical test cannot see a rounding slack of 2**-32 of the noise, or a
sensitivity that is wrong in a branch the calibration tests do not reach,
so each plan's noise scale is compared here with the formula of its
docstring, spelled out with the paper's constants (2 C R, 2 sqrt(2) C R,
MWEM's 2 and sqrt(2), the grid slack d gamma or sqrt(d) gamma).
"""

import math

import numpy as np
import pytest
from _data import sphere_rows

from skdp import DPLogisticRegression, PMWSynthesizer
from skdp.accounting import RDPAccountant
from skdp.mechanisms import (
    add_noise,
    plan_gaussian,
    plan_l2_noise,
    plan_l2_vector,
    plan_laplace,
)
from skdp.synthesis._plan import plan_measurement, plan_privacy
from skdp.utils import check_random_source


def _gamma(scale):
    """The grid: the largest power of two at most 2**-32 of the noise scale."""
    return 2.0 ** math.floor(math.log2(scale) - 32)


@pytest.mark.parametrize("sensitivity, epsilon, size", [(1.0, 0.5, 1), (2.0, 3.0, 50)])
def test_laplace_scale_includes_the_l1_rounding_slack(sensitivity, epsilon, size):
    plan = plan_laplace(sensitivity, epsilon, size)
    gamma = _gamma(sensitivity / epsilon)
    assert plan.gamma == gamma
    assert plan.scale == (sensitivity + size * gamma) / (epsilon * gamma)


@pytest.mark.parametrize(
    "sensitivity, multiplier, size", [(1.0, 2.0, 1), (0.5, 7.0, 30)]
)
def test_gaussian_scale_includes_the_l2_rounding_slack(sensitivity, multiplier, size):
    plan = plan_gaussian(sensitivity, size, noise_multiplier=multiplier)
    gamma = _gamma(multiplier * sensitivity)
    assert plan.gamma == gamma
    assert plan.scale == multiplier * (sensitivity + math.sqrt(size) * gamma) / gamma


@pytest.mark.parametrize("sensitivity, epsilon, size", [(1.0, 1.0, 1), (4.0, 0.1, 9)])
def test_vector_scale_includes_the_l2_rounding_slack(sensitivity, epsilon, size):
    plan = plan_l2_vector(sensitivity, epsilon, size)
    gamma = _gamma(sensitivity / epsilon)
    assert plan.gamma == gamma
    assert plan.scale == (sensitivity + math.sqrt(size) * gamma) / (epsilon * gamma)
    assert plan_l2_noise(size, sensitivity, epsilon).scale == sensitivity / epsilon


def _logistic_plan(method, n_classes=2, **params):
    rng = np.random.default_rng(0)
    X = sphere_rows(rng, 120, 3)
    y = rng.integers(0, n_classes, 120)
    clf = DPLogisticRegression(
        method=method, data_norm=1.0, classes=list(range(n_classes)), **params
    )
    return clf.privacy_plan(X, y).settings["method"]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("C", [0.1, 2.0])
def test_output_sensitivity_is_2CR_plus_twice_the_residual(n_classes, C):
    plan = _logistic_plan("output", n_classes, C=C, intercept_scaling=0.5)
    R = math.hypot(1.0, 0.5)
    per_row = 1.0 if n_classes == 2 else math.sqrt(2)
    residual = 2 * plan.solver.threshold / 1.0  # r = 2 tau / alpha, alpha = 1
    assert plan.solver.residual == residual
    assert plan.sensitivity == pytest.approx(2 * per_row * C * R + 2 * residual)
    assert plan.noise.sensitivity == plan.sensitivity


def test_solver_threshold_is_public_and_covers_rounding():
    """tau = max(tol (alpha + C n R), 4 x the rounding bound); n R, not sum ||z||."""
    plan = _logistic_plan("output", C=1.0, tol=1e-3).solver
    R = math.hypot(1.0, 0.5)
    assert plan.threshold == pytest.approx(1e-3 * (1.0 + 1.0 * 120 * R))
    tiny = _logistic_plan("output", C=1.0, tol=0.0).solver
    assert tiny.threshold > 0 and tiny.threshold == pytest.approx(
        4 * tiny.gradient_error(math.sqrt(2 * 120 * math.log(2)), 0.0)
    )


@pytest.mark.parametrize("n_classes, sensitivity", [(2, 2.0), (4, 2 * math.sqrt(2))])
def test_objective_noise_sensitivity(n_classes, sensitivity):
    plan = _logistic_plan("objective", n_classes)
    rank = 1 if n_classes == 2 else n_classes - 1
    assert plan.noise.sensitivity == pytest.approx(sensitivity)
    assert plan.noise.size == rank * 4  # 3 features and the intercept column
    assert plan.noise.scale == pytest.approx(sensitivity / plan.epsilon_noise)
    # 1% of epsilon covers the residual, with sensitivity 2 r.
    assert plan.epsilon_residual == pytest.approx(0.01)
    assert plan.residual_noise.sensitivity == 2 * plan.solver.residual


def test_dpsgd_noise_is_calibrated_to_the_clipping_norm():
    # A batch below the 120 rows: Poisson-subsampled DP-SGD, noise relative
    # to c (the accountant accounts for replace-one's 2 c).
    plan = _logistic_plan("gradient", max_grad_norm=0.3, batch_size=60)
    assert plan.sampling_rate == 0.5
    assert plan.noise.sensitivity == 0.3
    assert plan.noise.event.noise_multiplier == plan.noise_multiplier
    # A batch of every row (the default 256 >= 120): full-batch gradient
    # descent, DP-SGD's mechanism at rate 1 and charged so (its noise
    # relative to c too; the accountant accounts for replace-one's 2 c).
    full = _logistic_plan("gradient", max_grad_norm=0.3)
    assert full.sampling_rate == 1.0 and full.event.sampling_rate == 1.0
    assert full.noise.sensitivity == 0.3
    assert full.noise.event.noise_multiplier == full.noise_multiplier


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_mwem_measurement_sensitivities(noise):
    """Replace-one: a marginal moves by 2 in L1 and sqrt(2) in L2; a query by 1."""
    plan = plan_privacy(1.0, 1e-6, noise, 3, 4, RDPAccountant())
    marginal = plan_measurement(plan, 12)
    query = plan_measurement(plan, 1, query=True)
    if noise == "gaussian":
        assert marginal.sensitivity == math.sqrt(2)
        assert marginal.event.noise_multiplier == plan.noise_multiplier
    else:
        assert marginal.sensitivity == 2.0
        assert marginal.event.epsilon == plan.measure_epsilon
    assert query.sensitivity == 1.0


def test_pmw_plan_holds_the_measurements_it_will_run():
    X = np.random.default_rng(0).integers(0, 3, size=(100, 3))
    plan = PMWSynthesizer(
        noise="laplace", categories=[[0, 1, 2]] * 3, n_rounds=2
    ).privacy_plan(X)
    sizes = {key: p.sensitivity for key, p in plan.settings["noise_plans"].items()}
    assert sizes == {3: 2.0, 9: 2.0, 27: 2.0}


def test_gaussian_magnitude_coarsens_the_grid_to_carry_the_bound():
    """Like plan_laplace(magnitude=...): the bound lies within 2**50 grid steps."""
    sensitivity, multiplier, size = 1.0, 2.0, 3
    magnitude = 2.0**60  # the default grid (2**-31 here) carries only 2**19
    plan = plan_gaussian(
        sensitivity, size, noise_multiplier=multiplier, magnitude=magnitude
    )
    gamma = 2.0**10  # the finest power of two with magnitude / gamma <= 2**50
    assert plan.gamma == gamma
    # The rounding slack sqrt(d) gamma of the coarser grid is in the noise.
    assert plan.scale == multiplier * (sensitivity + math.sqrt(size) * gamma) / gamma
    # The event is the discrete Gaussian on that grid: the multiplier asked
    # for, the sensitivity in (coarser) grid steps with its rounding slack.
    assert plan.event.noise_multiplier == multiplier
    assert plan.event.sensitivity == sensitivity / gamma + math.sqrt(size)
    assert plan.event.noise_scale == plan.scale
    # Noise-free: the bound and its fractions are grid points within the
    # 2**50 steps add_noise carries, so rounding loses nothing.
    values = np.array([magnitude, -magnitude, 0.75 * magnitude])
    steps = values / plan.gamma
    assert np.all(steps == np.rint(steps)) and np.all(np.abs(steps) <= 2.0**50)
    # With the noise: within 6 standard deviations of the value (two-sided
    # normal tail 2e-9; the discrete Gaussian's tail is lighter).
    noisy = add_noise(plan, values, check_random_source(0))
    assert np.all(np.abs(noisy - values) <= 6 * plan.scale * plan.gamma)
    # A bound the default grid already carries leaves the plan unchanged.
    default = plan_gaussian(sensitivity, size, noise_multiplier=multiplier)
    assert (
        plan_gaussian(sensitivity, size, noise_multiplier=multiplier, magnitude=2.0**19)
        == default
    )


@pytest.mark.parametrize("magnitude", [-1.0, math.inf, math.nan])
def test_gaussian_magnitude_must_be_finite_and_non_negative(magnitude):
    with pytest.raises(ValueError, match="magnitude must be finite"):
        plan_gaussian(1.0, 2, noise_multiplier=1.0, magnitude=magnitude)


def test_noise_drawn_in_blocks_is_the_planned_noise():
    # DP-SGD draws a block of steps' noise in one call (issue 29): each row
    # of the block must be one draw of the plan's noise, independent of the
    # others, and add_noise is one such draw applied.
    from skdp.mechanisms import plan_gaussian
    from skdp.mechanisms._additive import add_drawn_noise, add_noise, draw_noise
    from skdp.utils._random import check_random_source

    plan = plan_gaussian(1.0, 50, noise_multiplier=2.0)
    value = np.linspace(-1, 1, 50)
    once = add_noise(plan, value, check_random_source(3))
    drawn = draw_noise(plan, 1, check_random_source(3))[0]
    np.testing.assert_array_equal(once, add_drawn_noise(plan, value, drawn))
    block = draw_noise(plan, 400, check_random_source(0)) * plan.gamma
    assert block.shape == (400, 50)
    # sigma = 2 per coordinate: 20,000 draws give its estimate within 3 %.
    assert abs(block.std() / 2.0 - 1.0) < 0.03
    # Rows are independent: their correlations are those of white noise.
    correlation = np.corrcoef(block[:-1].ravel(), block[1:].ravel())[0, 1]
    assert abs(correlation) < 0.03
