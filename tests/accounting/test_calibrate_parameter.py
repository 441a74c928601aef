"""The one calibration helper, calibrate_parameter, and its root-finder."""

import math

import pytest

from skdp.accounting import (
    GaussianEvent,
    LaplaceEvent,
    PLDAccountant,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
    RDPAccountant,
    SelfComposedEvent,
    calibrate_parameter,
    gaussian_noise_multiplier,
)
from skdp.accounting._search import solve_monotone


def _cost(make_event, accountant, delta):
    return lambda p: accountant.epsilon_delta([make_event(p)], delta)[0]


@pytest.mark.parametrize("tolerance", [1e-3, 1e-6])
@pytest.mark.parametrize(
    "accountant", [RDPAccountant(), PLDAccountant(), PrivacyAccountant()]
)
@pytest.mark.slow
def test_noise_multiplier_meets_the_target_within_the_tolerance(accountant, tolerance):
    def make(sigma):
        return PoissonSubsampledGaussianEvent(0.05, sigma, 100)

    sigma = calibrate_parameter(
        make, 1.0, 1e-5, accountant, increasing=False, tolerance=tolerance
    )
    cost = _cost(make, accountant, 1e-5)
    assert cost(sigma) <= 1.0
    assert cost(sigma * (1 - tolerance)) > 1.0


def test_increasing_parameter_returns_the_largest_acceptable():
    # Four Laplace releases at a total of 1: epsilon = 0.25 each (exactly).
    epsilon = calibrate_parameter(
        lambda e: SelfComposedEvent(LaplaceEvent(e), 4),
        1.0,
        0.0,
        RDPAccountant(),
        increasing=True,
    )
    assert 0.25 * (1 - 1e-6) <= epsilon <= 0.25


def test_matches_the_analytic_gaussian():
    sigma = calibrate_parameter(
        GaussianEvent, 0.7, 1e-6, RDPAccountant(), increasing=False, tolerance=1e-9
    )
    assert sigma == pytest.approx(gaussian_noise_multiplier(0.7, 1e-6), rel=1e-8)


def test_far_away_answers_are_bracketed():
    # 1e-3 and 1e4 are both far from the default bracket (0.5, 2).
    for target in (1e4, 1e-3):
        sigma = calibrate_parameter(
            GaussianEvent, target, 1e-5, RDPAccountant(), increasing=False
        )
        assert RDPAccountant().epsilon_delta([GaussianEvent(sigma)], 1e-5)[0] <= target


@pytest.mark.slow
def test_unreachable_targets_raise():
    def subsampled(sigma):
        return PoissonSubsampledGaussianEvent(0.5, sigma, 10)

    with pytest.raises(ValueError, match="not reachable"):
        # Renyi DP cannot certify 1e-4 at delta 1e-5 with any noise.
        calibrate_parameter(subsampled, 1e-4, 1e-5, RDPAccountant(), increasing=False)
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate_parameter(GaussianEvent, 0.0, 1e-5, increasing=False)
    with pytest.raises(ValueError, match="delta"):
        calibrate_parameter(GaussianEvent, 1.0, 1.0, increasing=False)


@pytest.mark.slow
def test_the_coarse_search_does_not_decide_the_result():
    # The default accountant searches with a 10x coarser PLD first; the
    # answer is still checked against the exact accountant.
    accountant = PrivacyAccountant()
    assert accountant.coarse() != accountant

    def make(sigma):
        return PoissonSubsampledGaussianEvent(0.01, sigma, 500)

    sigma = calibrate_parameter(make, 2.0, 1e-5, accountant, increasing=False)
    assert accountant.epsilon_delta([make(sigma)], 1e-5)[0] <= 2.0
    assert accountant.epsilon_delta([make(sigma * (1 - 1e-6))], 1e-5)[0] > 2.0


def test_solve_monotone_on_a_closed_form():
    # cost(p) = p**2 crosses 2 at sqrt(2).
    root = solve_monotone(lambda p: p * p, 2.0, increasing=True, tolerance=1e-12)
    assert root <= math.sqrt(2) and root == pytest.approx(math.sqrt(2), rel=1e-12)
    root = solve_monotone(lambda p: 1 / p, 3.0, increasing=False, tolerance=1e-12)
    assert root >= 1 / 3 and root == pytest.approx(1 / 3, rel=1e-12)
    # Infinite costs are allowed (bisection takes over).
    root = solve_monotone(
        lambda p: math.inf if p > 5 else p, 4.0, increasing=True, tolerance=1e-9
    )
    assert root == pytest.approx(4.0, rel=1e-9) and root <= 4.0
    with pytest.raises(ValueError, match="bracket"):
        solve_monotone(lambda p: p, 1.0, increasing=True, bracket=(2.0, 1.0))
    with pytest.raises(ValueError, match="tolerance"):
        solve_monotone(lambda p: p, 1.0, increasing=True, tolerance=0.0)


class _Scaled(RDPAccountant):
    """Renyi-DP epsilons times ``factor``: a guide that is wrong on purpose."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def _config(self):
        return (*super()._config(), self.factor)

    def epsilon_delta(self, events, delta):
        epsilon, spent = super().epsilon_delta(events, delta)
        return epsilon * self.factor, spent


class _Misguided(RDPAccountant):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def guide(self, event):
        return _Scaled(self.factor)


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_a_guide_that_disagrees_does_not_decide(factor):
    # The guide's crossing is wrong by a factor 2 in epsilon either way; the
    # accountant's check of its bracket fails and it searches alone.
    accountant = _Misguided(factor)
    sigma = calibrate_parameter(GaussianEvent, 1.0, 1e-5, accountant, increasing=False)
    cost = _cost(GaussianEvent, RDPAccountant(), 1e-5)
    assert cost(sigma) <= 1.0
    assert cost(sigma * (1 - 1e-6)) > 1.0


def test_the_default_accountant_guides_dpsgd_by_its_pld():
    accountant = PrivacyAccountant()
    dpsgd = PoissonSubsampledGaussianEvent(0.01, 1.0, 100)
    assert accountant.guide(dpsgd) is accountant.pld
    # Renyi-DP methods win elsewhere (the exact Gaussian, zCDP, ...).
    assert accountant.guide(GaussianEvent(1.0)) is accountant
    assert accountant.guide(PoissonSubsampledGaussianEvent(1.0, 1.0, 10)) is accountant
