"""Regression tests for accounting bugs that survived the suite before.

Each expected value is computed here from first principles, not with the
function under test:

* composing two PLDs keeps ``1 - (1 - a)(1 - b)`` of mass at ``+inf``
  (a mutation keeping ``max(a, b)`` under-reports delta at large epsilon);
* a full-batch (``sampling_rate=1``) subsampled Gaussian under replace-one
  has sensitivity ``2C``: it is the Gaussian mechanism with multiplier
  ``s / 2`` per step, in both the PLD and the Renyi accountant (a mutation
  using ``C`` under-reports by a factor about 2).
"""

import math

import numpy as np
import pytest
from scipy import stats

from skdp.accounting import (
    ApproxDPEvent,
    PLDAccountant,
    PoissonSubsampledDiscreteGaussianEvent,
    PoissonSubsampledGaussianEvent,
    RDPAccountant,
)
from skdp.accounting._pld import pld_approximate_dp


def _gaussian_delta(s, epsilon):
    """Balle & Wang (2018), Theorem 8, for L2 sensitivity 1 and multiplier s."""
    return stats.norm.cdf(0.5 / s - epsilon * s) - math.exp(epsilon) * stats.norm.cdf(
        -0.5 / s - epsilon * s
    )


def test_composition_keeps_the_union_of_the_infinite_masses():
    a, b = 0.1, 0.25
    composed = pld_approximate_dp(0.5, a).compose(pld_approximate_dp(0.5, b))
    # Beyond every finite loss only the mass at +inf is left: the
    # probability that either mechanism failed, 1 - (1 - a)(1 - b) = 0.325.
    assert composed.delta_for_epsilon(50.0) == pytest.approx(0.325, rel=1e-12)
    report = PLDAccountant().compose(
        [ApproxDPEvent(0.5, a), ApproxDPEvent(0.5, b)], delta=0.3
    )
    assert math.isinf(report.epsilon)  # 0.325 > 0.3 can never be reached


@pytest.mark.parametrize("steps", [1, 10])
@pytest.mark.parametrize("s", [1.0, 4.0])
def test_full_batch_subsampled_gaussian_has_replace_one_sensitivity_2c(s, steps):
    # T steps of the Gaussian mechanism with multiplier s / 2 compose to one
    # of multiplier s / (2 sqrt(T)).
    merged = s / (2 * math.sqrt(steps))
    for event in (
        PoissonSubsampledGaussianEvent(1.0, s, steps),
        PoissonSubsampledDiscreteGaussianEvent(1.0, s, 2.0**32, 2.0**32, steps),
    ):
        pld = PLDAccountant().pld(event)
        for epsilon in (0.5, 1.0, 3.0):
            expected = _gaussian_delta(merged, epsilon)
            assert pld.delta_for_epsilon(epsilon) == pytest.approx(
                expected, rel=1e-3, abs=1e-12
            )
        orders = np.array([1.5, 2.0, 8.0, 32.0])
        curve = RDPAccountant(orders).rdp_curve(event)
        # alpha / (2 (s/2)**2) per step: 2 alpha T / s**2 (plus the tiny
        # lattice shift of the discrete event).
        np.testing.assert_allclose(curve, 2 * orders * steps / s**2, rtol=1e-6)
        # Every composition the Renyi accountant reports (its exact-Gaussian
        # candidate included) is at least the exact epsilon.
        for delta in (1e-5, 1e-3):
            exact = _exact_gaussian_epsilon(merged, delta)
            reported = RDPAccountant().compose([event], delta)
            assert reported.epsilon >= exact * (1 - 1e-9)
            assert min(reported.candidates.values()) >= exact * (1 - 1e-9)


def _exact_gaussian_epsilon(s, delta):
    low, high = 0.0, 1e3
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if _gaussian_delta(s, mid) > delta else (low, mid)
    return high


def test_no_accountant_accounts_a_subclass_through_its_parent():
    """A new kind of mechanism whose loss differs must not inherit an
    accounting: the dispatch is on the exact event class."""
    from dataclasses import dataclass
    from typing import ClassVar

    from skdp.accounting import LaplaceEvent, PrivacyAccountant
    from skdp.accounting._composition import UnsupportedEventError

    @dataclass(frozen=True)
    class SomeGridLaplaceEvent(LaplaceEvent):
        kind: ClassVar[str] = "test_some_grid_laplace"

    event = SomeGridLaplaceEvent(1.0)
    for accountant in (PLDAccountant(), RDPAccountant()):
        with pytest.raises(UnsupportedEventError):
            accountant.compose([event], 1e-6)
    with pytest.raises(UnsupportedEventError):
        PrivacyAccountant().compose([event], 1e-6)
