"""Tests for the pure RDP maths in skdp.accounting._rdp and ._calibration."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from skdp.accounting import PoissonSubsampledGaussianEvent, RDPAccountant
from skdp.accounting._calibration import (
    calibrate_gaussian_noise_multiplier,
    epsilon_poisson_subsampled_gaussian,
)
from skdp.accounting._rdp import (
    DEFAULT_ORDERS,
    _log_moments_fractional,
    _log_moments_integer,
    epsilon_from_zcdp,
    rdp_exponential_mechanism,
    rdp_gaussian,
    rdp_poisson_subsampled_gaussian,
    rdp_pure_dp,
    rdp_to_delta,
    rdp_to_epsilon,
    rdp_zcdp,
)

ORDERS = np.asarray(DEFAULT_ORDERS)


# --------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------


def dp_accounting_epsilon(sigma, q, steps, delta, orders=None):
    dp_accounting = pytest.importorskip("dp_accounting")
    accountant = dp_accounting.rdp.RdpAccountant(orders=orders)
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return accountant.get_epsilon(delta)


def renyi_epsilon(q, sigma, steps, delta, orders=DEFAULT_ORDERS):
    """Our Renyi-DP epsilon alone (add/remove), as dp_accounting's RdpAccountant.

    (For q = 1 the accountant also knows the exact Gaussian profile, and
    reports the smaller; only the Renyi-DP candidate is compared here.)
    """
    accountant = RDPAccountant(orders, neighbouring_relation="add_remove")
    event = PoissonSubsampledGaussianEvent(q, sigma, steps)
    return accountant.compose([event], delta).candidates["rdp"]


def exact_gaussian_epsilon(sigma, delta):
    """Exact ε of one Gaussian release, sensitivity 1 (Balle & Wang 2018).

    delta(ε) = Φ(1/(2σ) - εσ) - e^ε Φ(-1/(2σ) - εσ) is decreasing in ε;
    solve delta(ε) = delta for ε.
    """

    def excess(epsilon):
        first = special.ndtr(0.5 / sigma - epsilon * sigma)
        second = math.exp(epsilon + special.log_ndtr(-0.5 / sigma - epsilon * sigma))
        return first - second - delta

    if excess(0.0) <= 0:
        return 0.0
    return optimize.brentq(excess, 0.0, 1e3, xtol=1e-14, rtol=1e-14)


def quadrature_log_moment(q, sigma, alpha):
    """log E_{z~N(0,σ²)}[((1-q) + q exp((2z-1)/(2σ²)))^α] by adaptive quadrature."""

    def integrand(z):
        ratio = (1 - q) + q * np.exp((2 * z - 1) / (2 * sigma**2))
        return np.exp(alpha * np.log(ratio) + stats.norm.logpdf(z, scale=sigma))

    edges = np.linspace(-40 * sigma, 40 * sigma + alpha + 10, 81)
    total = sum(
        integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-13, limit=200)[0]
        for a, b in zip(edges[:-1], edges[1:])
    )
    return math.log(total)


# --------------------------------------------------------------------------
# Cross-check against dp_accounting
# --------------------------------------------------------------------------

# (noise_multiplier, sampling_rate, steps, delta, expected epsilon or None)
CROSS_CHECK_VECTORS = [
    (1.1, 256 / 60000, 14063, 1e-5, 2.597),  # Abadi et al. MNIST setting
    (1.3, 256 / 60000, 3516, 1e-5, 0.955),
    (1.5, 0.04, 2250, 1e-5, 7.329),
    (1.0, 1.0, 1, 1e-5, None),  # plain Gaussian, one step
    (2.0, 1.0, 100, 1e-6, None),  # plain Gaussian, composed
    (1.0, 0.01, 5, 1e-5, None),  # few steps
    (10.0, 0.01, 1000, 1e-5, None),  # large sigma
    (50.0, 0.05, 1000, 1e-5, None),  # very large sigma
    (2.0, 0.5, 5, 1e-6, None),  # q = 0.5
    (1.0, 0.001, 100000, 1e-7, None),  # tiny q, many steps
]


ADD_REMOVE = "add_remove"  # dp_accounting's relation for PoissonSampledDpEvent
# The Renyi-DP accountant alone (the default accountant also tries PLDs).
AR = {"accountant": RDPAccountant(neighbouring_relation=ADD_REMOVE)}


@pytest.mark.parametrize("sigma, q, steps, delta, expected", CROSS_CHECK_VECTORS)
def test_matches_dp_accounting(sigma, q, steps, delta, expected):
    pytest.importorskip("dp_accounting")
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    theirs = dp_accounting_epsilon(sigma, q, steps, delta)
    # Same orders: the same quantity, computed independently.
    ours_same_orders = renyi_epsilon(q, sigma, steps, delta, DEFAULT_RDP_ORDERS)
    assert ours_same_orders == pytest.approx(theirs, rel=1e-3)
    # Our default grid is a superset of theirs, so we are never looser.
    ours = renyi_epsilon(q, sigma, steps, delta)
    assert ours <= theirs * (1 + 1e-9)
    assert ours == pytest.approx(theirs, rel=1e-2)
    if expected is not None:
        assert ours == pytest.approx(expected, abs=1e-3)


def test_tighter_than_dp_accounting_where_its_series_is_cut():
    # At q = 0.5, sigma = 0.7 dp_accounting drops fractional orders whose
    # series do not converge in 1000 terms; ours converge (checked against
    # quadrature below), so we are tighter, never looser.
    theirs = dp_accounting_epsilon(0.7, 0.5, 20, 1e-5)
    ours = epsilon_poisson_subsampled_gaussian(0.5, 0.7, 20, 1e-5, **AR)
    assert ours <= theirs
    assert ours == pytest.approx(theirs, rel=1e-2)


# --------------------------------------------------------------------------
# Never below the truth
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "q, sigma, alpha",
    [
        (0.5, 0.7, 1.8),
        (0.5, 2.0, 1.5),
        (0.04, 1.5, 3.95),
        (0.9, 1.0, 2.5),
        (0.01, 0.3, 7.3),
        (0.04, 1.5, 4.0),
        (0.5, 0.7, 3.0),
    ],
)
def test_log_moment_is_upper_bound_on_quadrature(q, sigma, alpha):
    exact = quadrature_log_moment(q, sigma, alpha)
    if float(alpha).is_integer():
        ours = _log_moments_integer(q, sigma, np.array([int(alpha)]))[0]
    else:
        ours = _log_moments_fractional(q, sigma, np.array([alpha]))[0]
    # The quadrature is accurate to ~1e-13 relative; allow for that, no more.
    assert ours >= exact * (1 - 1e-11)
    assert ours == pytest.approx(exact, rel=1e-8)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_gaussian_epsilon_not_below_exact(sigma, delta):
    exact = exact_gaussian_epsilon(sigma, delta)
    ours = epsilon_poisson_subsampled_gaussian(1.0, sigma, 1, delta, **AR)
    assert ours >= exact
    # RDP is an upper bound but not a wildly loose one for one Gaussian.
    assert ours <= 1.5 * exact + 0.05


@pytest.mark.parametrize("sigma, steps", [(2.0, 100), (0.8, 10), (5.0, 1000)])
def test_composed_gaussian_epsilon_not_below_exact(sigma, steps):
    # k Gaussian releases with noise multiplier sigma compose exactly to one
    # with noise multiplier sigma / sqrt(k).
    exact = exact_gaussian_epsilon(sigma / math.sqrt(steps), 1e-6)
    ours = epsilon_poisson_subsampled_gaussian(1.0, sigma, steps, 1e-6, **AR)
    assert ours >= exact


# --------------------------------------------------------------------------
# Curve properties
# --------------------------------------------------------------------------


def test_subsampled_with_q_one_is_gaussian():
    np.testing.assert_array_equal(
        rdp_poisson_subsampled_gaussian(1.0, 1.3), rdp_gaussian(1.3)
    )


def test_subsampled_edge_cases():
    np.testing.assert_array_equal(rdp_poisson_subsampled_gaussian(0.0, 1.0), 0.0)
    np.testing.assert_array_equal(rdp_poisson_subsampled_gaussian(0.1, 0.0), np.inf)
    np.testing.assert_array_equal(rdp_gaussian(0.0, [2, 3]), np.inf)
    with pytest.raises(ValueError, match="sampling_rate"):
        rdp_poisson_subsampled_gaussian(1.5, 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        rdp_poisson_subsampled_gaussian(0.1, -1.0)
    with pytest.raises(ValueError, match="greater than 1"):
        rdp_poisson_subsampled_gaussian(0.1, 1.0, orders=[0.5, 2])


@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (0.04, 1.5), (0.5, 0.7), (0.3, 4.0)])
def test_subsampled_curve_is_sane(q, sigma):
    rdp = rdp_poisson_subsampled_gaussian(q, sigma)
    assert np.all(np.isfinite(rdp)) and np.all(rdp > 0)
    # Never above the unsampled Gaussian.
    assert np.all(rdp <= rdp_gaussian(sigma))
    # Rényi divergence is non-decreasing in the order.
    assert np.all(np.diff(rdp) >= -1e-12 * rdp[1:])
    # More noise or a smaller sampling rate never costs more.
    assert np.all(rdp_poisson_subsampled_gaussian(q, 1.1 * sigma) <= rdp)
    assert np.all(rdp_poisson_subsampled_gaussian(0.9 * q, sigma) <= rdp)


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 3.0, 10.0])
def test_pure_dp_and_exponential_mechanism_bounds(epsilon):
    pure = rdp_pure_dp(epsilon)
    exponential = rdp_exponential_mechanism(epsilon)
    assert np.all(pure <= epsilon)
    assert np.all(pure <= ORDERS * epsilon**2 / 2)
    assert np.all(exponential <= pure)
    assert np.all(exponential <= ORDERS * epsilon**2 / 8)
    assert np.all(np.diff(pure) >= -1e-12)
    # Tight for randomised response at order 2: log E_Q[(P/Q)^2].
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    randomised_response = math.log(
        (1 - p) * math.exp(2 * epsilon) + p * math.exp(-2 * epsilon)
    )
    assert rdp_pure_dp(epsilon, [2.0])[0] == pytest.approx(randomised_response)


def test_zcdp_curve_and_conversion():
    np.testing.assert_allclose(rdp_zcdp(0.25, [2, 4]), [0.5, 1.0])
    # Improved conversion beats the classical rho + 2 sqrt(rho log(1/delta)).
    rho, delta = 0.5, 1e-5
    classical = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert epsilon_from_zcdp(rho, delta) < classical


# --------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------


def test_rdp_to_epsilon_formula_single_order():
    alpha, rdp, delta = 8.0, 0.3, 1e-5
    expected = (
        rdp + math.log1p(-1 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1)
    )
    assert rdp_to_epsilon([rdp], [alpha], delta) == (pytest.approx(expected), alpha)


def test_rdp_to_epsilon_edge_cases():
    orders = [0.5, 1.0, 2.0, 4.0]
    # Orders <= 1 are ignored, inf and nan entries carry no bound.
    epsilon, order = rdp_to_epsilon([0.0, 0.0, np.inf, 0.5], orders, 1e-5)
    assert order == 4.0 and math.isfinite(epsilon)
    assert rdp_to_epsilon([0.1, np.nan, 0.5, 0.2], [2, 3, 4, 5], 1e-5)[1] != 3
    assert rdp_to_epsilon([np.inf, np.nan], [2, 3], 1e-5)[0] == math.inf
    # delta = 0: only a zero curve certifies anything.
    assert rdp_to_epsilon([0.1, 0.2], [2, 3], 0.0) == (
        math.inf,
        pytest.approx(math.nan, nan_ok=True),
    )
    assert rdp_to_epsilon([0.0, 0.0], [2, 3], 0.0)[0] == 0.0
    # Never negative.
    assert rdp_to_epsilon([1e-9], [2.0], 0.9)[0] == 0.0
    with pytest.raises(ValueError, match="non-negative"):
        rdp_to_epsilon([-0.1], [2.0], 1e-5)
    with pytest.raises(ValueError, match="same shape"):
        rdp_to_epsilon([0.1, 0.2], [2.0], 1e-5)
    with pytest.raises(ValueError, match="delta"):
        rdp_to_epsilon([0.1], [2.0], -1e-5)


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_rdp_to_delta_inverts_rdp_to_epsilon(delta):
    rdp = 100 * rdp_poisson_subsampled_gaussian(0.02, 1.2)
    epsilon, order = rdp_to_epsilon(rdp, ORDERS, delta)
    recovered, recovered_order = rdp_to_delta(rdp, ORDERS, epsilon)
    assert recovered == pytest.approx(delta, rel=1e-9)
    assert recovered_order == order
    # A larger epsilon needs a smaller delta.
    assert rdp_to_delta(rdp, ORDERS, 1.1 * epsilon)[0] < delta
    assert rdp_to_delta([np.inf], [2.0], 1.0) == (
        1.0,
        pytest.approx(math.nan, nan_ok=True),
    )


def test_epsilon_monotone_in_steps_and_sigma():
    steps = [1, 10, 100, 1000, 10000]
    by_steps = [epsilon_poisson_subsampled_gaussian(0.01, 1.0, t, 1e-5) for t in steps]
    assert np.all(np.diff(by_steps) > 0)
    sigmas = [0.6, 0.8, 1.0, 2.0, 4.0]
    by_sigma = [
        epsilon_poisson_subsampled_gaussian(0.01, s, 1000, 1e-5) for s in sigmas
    ]
    assert np.all(np.diff(by_sigma) < 0)
    assert epsilon_poisson_subsampled_gaussian(0.01, 1.0, 0, 1e-5) == 0.0


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target_epsilon, target_delta, q, steps",
    [
        (1.0, 1e-5, 1.0, 1),
        (8.0, 1e-5, 256 / 60000, 14063),
        (2.0, 1e-6, 0.01, 1000),
        (0.5, 1e-5, 0.05, 100),
        (20.0, 1e-5, 1.0, 10),
    ],
)
@pytest.mark.slow
def test_calibration_meets_target_and_is_tight(target_epsilon, target_delta, q, steps):
    sigma = calibrate_gaussian_noise_multiplier(
        target_epsilon, target_delta, sampling_rate=q, steps=steps
    )
    achieved = epsilon_poisson_subsampled_gaussian(q, sigma, steps, target_delta)
    assert achieved <= target_epsilon
    too_little = epsilon_poisson_subsampled_gaussian(
        q, sigma * (1 - 1e-3), steps, target_delta
    )
    assert too_little > target_epsilon


@pytest.mark.slow
def test_calibration_recovers_known_sigma():
    epsilon = epsilon_poisson_subsampled_gaussian(256 / 60000, 1.1, 14063, 1e-5)
    sigma = calibrate_gaussian_noise_multiplier(
        epsilon, 1e-5, sampling_rate=256 / 60000, steps=14063
    )
    assert sigma == pytest.approx(1.1, rel=1e-5)
    # What calibration guarantees: the multiplier found spends at most the
    # target. (Not sigma >= 1.1: the PLD's epsilon is monotone in sigma only
    # up to its discretisation, here 3e-9 relative, so a sigma 2e-9 below
    # 1.1 can spend less.)
    spent = epsilon_poisson_subsampled_gaussian(256 / 60000, sigma, 14063, 1e-5)
    assert spent <= epsilon


def test_calibration_rejects_bad_input():
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate_gaussian_noise_multiplier(0.0, 1e-5)
    with pytest.raises(ValueError, match="target_delta"):
        calibrate_gaussian_noise_multiplier(1.0, 0.0)
    with pytest.raises(ValueError, match="sampling_rate"):
        calibrate_gaussian_noise_multiplier(1.0, 1e-5, sampling_rate=0.0)
    with pytest.raises(ValueError, match="steps"):
        calibrate_gaussian_noise_multiplier(1.0, 1e-5, steps=0)
    with pytest.raises(ValueError, match="steps"):
        calibrate_gaussian_noise_multiplier(1.0, 1e-5, steps=2.5)
    with pytest.raises(ValueError, match="tol"):
        calibrate_gaussian_noise_multiplier(1.0, 1e-5, tol=0.0)
    # Below the floor of the Renyi-DP conversion for these orders: unreachable.
    with pytest.raises(ValueError, match="not reachable"):
        calibrate_gaussian_noise_multiplier(1e-4, 1e-5, accountant=RDPAccountant())


# --------------------------------------------------------------------------
# Replace-one (skdp's neighbouring relation)
# --------------------------------------------------------------------------


def _quadrature_renyi(log_p, log_q, alpha, lo=-40.0, hi=40.0):
    def integrand(z):
        return math.exp(alpha * log_p(z) + (1 - alpha) * log_q(z))

    value, _ = integrate.quad(integrand, lo, hi, limit=400, points=[0.0])
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize(
    "q, sigma, alpha",
    [(0.01, 1.0, 4.0), (0.1, 2.0, 8.0), (0.5, 1.5, 2.5), (1.0, 3.0, 3.0)],
)
def test_replace_one_curve_bounds_the_worst_case_pair(q, sigma, alpha):
    # Worst case in one dimension: the replaced row's contribution moves from
    # +C to -C (C = 1). Both orderings of the pair are checked.
    from skdp.accounting._rdp import rdp_poisson_subsampled_gaussian_replace_one

    def mixture(shift):
        def log_pdf(z):
            rest = math.log1p(-q) + stats.norm.logpdf(z, 0, sigma) if q < 1 else -np.inf
            return np.logaddexp(rest, math.log(q) + stats.norm.logpdf(z, shift, sigma))

        return log_pdf

    exact = max(
        _quadrature_renyi(mixture(1.0), mixture(-1.0), alpha),
        _quadrature_renyi(mixture(-1.0), mixture(1.0), alpha),
    )
    ours = rdp_poisson_subsampled_gaussian_replace_one(q, sigma, orders=[alpha])[0]
    assert ours >= exact * (1 - 1e-9)
    add_remove = rdp_poisson_subsampled_gaussian(q, sigma, orders=[alpha])[0]
    assert ours >= add_remove


def test_replace_one_is_the_default_and_costs_more_than_add_remove():
    args = (256 / 60000, 1.1, 14063, 1e-5)
    replace = epsilon_poisson_subsampled_gaussian(*args)
    add_remove = epsilon_poisson_subsampled_gaussian(*args, neighbouring=ADD_REMOVE)
    explicit = epsilon_poisson_subsampled_gaussian(*args, neighbouring="replace_one")
    assert replace == explicit
    assert add_remove < replace < 4 * add_remove
    with pytest.raises(ValueError, match="neighbouring"):
        epsilon_poisson_subsampled_gaussian(*args, neighbouring="swap")
