"""Calibrated noise multipliers: the values main gave before the faster search.

The expected values were computed with skdp at commit c165e6d (before the
vectorised Renyi-DP curves and the interpolating root-finder), by the same
calls. A calibration returns a multiplier ``s`` that meets the target and
whose neighbour ``s * (1 - tol)`` does not, so two correct searches of the
same accountant land within ``tol`` (relative) of each other: that is the
tolerance of every comparison here.

Two settings changed on purpose (``WINDOW_FIXED``): there c165e6d's PLD
searched its Chernoff window over too small a range of ``t``, found a
window of 3e7 to 8e7 grid points and coarsened the grid 15 to 38 times, so
its epsilon was loose (and, at n = 1e6, not even monotone in the noise:
calibrations landed on islands). Their expected values are today's.
"""

import math

import pytest

from skdp.accounting import (
    GaussianEvent,
    LaplaceEvent,
    PLDAccountant,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
    RDPAccountant,
    RepeatedRandomStoppingEvent,
    calibrate_parameter,
)
from skdp.accounting._calibration import (
    _noise_multiplier_bracket,
    calibrate_gaussian_noise_multiplier,
    epsilon_poisson_subsampled_gaussian,
)
from skdp.linear_model._dpsgd import calibrate_dpsgd_noise_multiplier

TOL = 1e-6  # the default relative tolerance of the calibrations below

# DP-SGD's default on the Adult benchmark's training split: 24,129 rows,
# batch_size=256, epochs=10.
Q_ADULT = 256 / 24129
T_ADULT = math.ceil(10 / Q_ADULT)

# (epsilon, delta, sampling_rate, steps, neighbouring, multiplier at c165e6d)
GRID = [
    (1.0, 1e-5, Q_ADULT, T_ADULT, "replace_one", 2.4353152761800776),
    (0.1, 1e-5, Q_ADULT, T_ADULT, "replace_one", 20.05137601295657),
    (8.0, 1e-5, Q_ADULT, T_ADULT, "replace_one", 0.6262550907930172),
    (1.0, 1e-6, 0.01, 100, "replace_one", 1.0436309687773193),
    (2.0, 1e-5, 0.01, 1000, "add_remove", 0.9591029428496499),
    (0.5, 1e-5, 1.0, 1, "replace_one", 14.063653355024309),
    (1.0, 1e-5, 1.0, 50, "replace_one", 52.759098556665755),
    (0.3, 1e-5, 0.05, 200, "add_remove", 8.085952445827614),
]  # fmt: skip


# (epsilon, delta, sampling_rate, steps, neighbouring, multiplier, c165e6d's)
WINDOW_FIXED = [
    # DP-SGD's default at n = 1e6 (batch_size=256, epochs=10).
    (1.0, 1e-5, 256e-6, 39063, "replace_one", 0.6343274690124779, 0.745899452416950),
    (3.0, 1e-7, 0.001, 5000, "replace_one", 0.6299484660446948, 0.6301859177323333),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "epsilon, delta, q, steps, relation, expected, before", WINDOW_FIXED
)
def test_noise_multiplier_where_the_pld_window_was_fixed(
    epsilon, delta, q, steps, relation, expected, before
):
    sigma = calibrate_gaussian_noise_multiplier(
        epsilon, delta, q, steps, neighbouring=relation
    )
    assert sigma == pytest.approx(expected, rel=TOL)
    assert sigma < before
    spent = epsilon_poisson_subsampled_gaussian(
        q, sigma, steps, delta, neighbouring=relation
    )
    assert spent <= epsilon


@pytest.mark.parametrize("epsilon, delta, q, steps, relation, expected", GRID)
def test_noise_multiplier_is_the_one_main_calibrated(
    epsilon, delta, q, steps, relation, expected
):
    sigma = calibrate_gaussian_noise_multiplier(
        epsilon, delta, q, steps, neighbouring=relation
    )
    assert sigma == pytest.approx(expected, rel=TOL)


@pytest.mark.parametrize("epsilon, delta, q, steps, relation, expected", GRID)
def test_calibrated_multiplier_spends_the_target_and_no_more(
    epsilon, delta, q, steps, relation, expected
):
    sigma = calibrate_gaussian_noise_multiplier(
        epsilon, delta, q, steps, neighbouring=relation
    )

    def spent(s):
        return epsilon_poisson_subsampled_gaussian(
            q, s, steps, delta, neighbouring=relation
        )

    assert spent(sigma) <= epsilon
    assert spent(sigma * (1 - TOL)) > epsilon


def test_renyi_dp_calibrations_are_main_s():
    add_remove = RDPAccountant(neighbouring_relation="add_remove")
    sigma = calibrate_gaussian_noise_multiplier(
        2.0, 1e-5, 0.01, 1000, accountant=add_remove
    )
    assert sigma == pytest.approx(1.0222654865194891, rel=TOL)
    sigma = calibrate_gaussian_noise_multiplier(
        1.0, 1e-5, Q_ADULT, T_ADULT, accountant=RDPAccountant()
    )
    assert sigma == pytest.approx(2.795164331058062, rel=TOL)


def test_dpsgd_multiplier_on_adult_is_main_s():
    # The discrete mechanism that runs: 103 coordinates, clipping norm 0.5.
    sigma = calibrate_dpsgd_noise_multiplier(
        1.0, 1e-5, Q_ADULT, T_ADULT, 0.5, 103, magnitude=2 * 24129 * 0.5
    )
    assert sigma == pytest.approx(2.4353331024480536, rel=TOL)


def test_calibrate_parameter_values_are_main_s():
    sigma = calibrate_parameter(
        GaussianEvent, 1.0, 1e-5, RDPAccountant(), increasing=False
    )
    assert sigma == pytest.approx(3.7306316349165143, rel=TOL)

    def repeated(epsilon):
        return RepeatedRandomStoppingEvent(
            LaplaceEvent(epsilon),
            "truncated_negative_binomial",
            shape=1.0,
            stopping_probability=0.1,
        )

    share = calibrate_parameter(repeated, 1.0, 0.0, increasing=True)
    assert share == pytest.approx(0.33333333325520736, rel=TOL)


class _CountingPLD(PLDAccountant):
    """The default accountant's PLD part, counting its evaluations."""

    calls = 0

    def epsilon_delta(self, events, delta):
        self.calls += 1
        return super().epsilon_delta(events, delta)

    def coarse(self):
        return PLDAccountant().coarse()


class _CountingAccountant(PrivacyAccountant):
    """The default accountant, counting its evaluations and its guide's."""

    calls = 0

    def __init__(self):
        super().__init__()
        self.pld_part = _CountingPLD()

    def epsilon_delta(self, events, delta):
        self.calls += 1
        return super().epsilon_delta(events, delta)

    def guide(self, event):
        assert super().guide(event) == self.pld
        return self.pld_part

    def coarse(self):
        return PrivacyAccountant().coarse()

    def _guide_bounds_above(self, guide):
        # Its guide is the PLD part it reports the least of, counted.
        return guide is self.pld_part


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
def test_adult_calibration_makes_few_exact_evaluations(epsilon):
    # The exact accountant (a PLD on the fine grid and every Renyi order) is
    # asked once, to check the unacceptable end of the bracket its PLD part
    # found (the acceptable end needs no check: the accountant reports at
    # most its PLD); the PLD on the fine grid a handful of times. (c165e6d
    # asked the exact accountant 6 to 10 times here, and its coarse version
    # 9 to 20 times; before the guide's bound was used, twice.)
    accountant = _CountingAccountant()

    def event(sigma):
        return PoissonSubsampledGaussianEvent(Q_ADULT, sigma, T_ADULT)

    sigma = calibrate_parameter(event, epsilon, 1e-5, accountant, increasing=False)
    assert accountant.calls == 1
    assert accountant.pld_part.calls <= 6
    assert accountant.epsilon_delta([event(sigma)], 1e-5)[0] <= epsilon


@pytest.mark.parametrize(
    "epsilon, delta, rate, steps",
    [
        (1.0, 1e-5, Q_ADULT, T_ADULT),
        (1e4, 1e-6, 1.0, 10),
        (1e300, 0.9, 1.0, 1),
        (1e-300, 1e-300, 1e-300, 1),
        (1e-6, 0.999, 1.0, 10**9),
    ],
)
def test_the_search_starts_from_a_finite_bracket_whatever_the_inputs(
    epsilon, delta, rate, steps
):
    # Only a start (the search widens it), but it must never raise: a fit
    # with epsilon=1e4 overflowed e**epsilon here.
    low, high = _noise_multiplier_bracket(epsilon, delta, rate, steps)
    assert 0 < low < high < math.inf


def test_the_starting_bracket_holds_adults_multipliers():
    # The central-limit guess g and 2 g hold the replace-one multiplier at
    # the benchmark's epsilons, so the search starts with the crossing.
    for epsilon in (0.1, 1.0, 8.0):
        low, high = _noise_multiplier_bracket(epsilon, 1e-5, Q_ADULT, T_ADULT)
        sigma = calibrate_gaussian_noise_multiplier(epsilon, 1e-5, Q_ADULT, T_ADULT)
        assert low <= sigma <= high, (epsilon, low, sigma, high)


def test_an_accountant_accepts_through_a_guide_that_bounds_it_from_above():
    # What its PLD part accepts the default accountant accepts, without the
    # Renyi-DP curves; what the PLD part refuses the accountant decides.
    accountant = _CountingAccountant()
    event = PoissonSubsampledGaussianEvent(Q_ADULT, 2.5, T_ADULT)
    pld_epsilon = PLDAccountant().epsilon_delta([event], 1e-5)[0]
    assert accountant._accepts(event, 1e-5, pld_epsilon * 1.01)
    assert (accountant.calls, accountant.pld_part.calls) == (0, 1)
    assert not accountant._accepts(event, 1e-5, pld_epsilon * 0.99)
    assert accountant.calls == 1
    # A guide without that property is never trusted alone.
    assert not PrivacyAccountant()._guide_bounds_above(RDPAccountant())
