"""The privacy-loss-distribution maths of skdp.accounting._pld.

Independent references: closed forms (Gaussian: Balle & Wang 2018;
randomised response: binomial sums), and the definition of the hockey-stick
divergence evaluated on fine grids.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from skdp.accounting import gaussian_epsilon
from skdp.accounting._pld import (
    _DELTA_SLACK_ABSOLUTE,
    identity_pld,
    pld_approximate_dp,
    pld_gaussian,
    pld_laplace,
    pld_poisson_subsampled_gaussian,
    pld_pure_dp,
)


def randomized_response_delta(epsilon, count, t):
    """Exact hockey-stick divergence at ``t`` of ``count`` randomised responses."""
    j = np.arange(count + 1)
    losses = (2 * j - count) * epsilon
    p = stats.binom.pmf(j, count, special.expit(epsilon))
    return float(np.sum(p * np.maximum(0.0, -np.expm1(t - losses))))


@pytest.mark.parametrize("s", [0.3, 0.8, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_gaussian_is_pessimistic_and_tight(s, delta):
    exact = gaussian_epsilon(s, delta)
    ours = pld_gaussian(s).epsilon_for_delta(delta)
    assert ours >= exact
    assert ours <= exact + 1e-3


@pytest.mark.parametrize("epsilon, count", [(0.1, 1), (0.5, 10), (1.0, 40)])
def test_pure_dp_matches_the_binomial_and_is_pessimistic(epsilon, count):
    pld = pld_pure_dp(epsilon, count)
    for t in np.linspace(0.0, epsilon * count, 23):
        exact = randomized_response_delta(epsilon, count, t)
        ours = pld.delta_for_epsilon(t)
        assert ours >= exact - 1e-15
        assert ours <= exact + 1e-4 * count
    # Without delta, the worst loss: count * epsilon (up to one grid step).
    assert pld.epsilon_for_delta(0.0) == pytest.approx(count * epsilon, abs=1e-4)


def test_approximate_dp_puts_delta_at_infinity():
    pld = pld_approximate_dp(1.0, 1e-6, count=3)
    assert pld.epsilon_for_delta(2e-6) == math.inf
    assert pld.delta_for_epsilon(100.0) == pytest.approx(1 - (1 - 1e-6) ** 3)
    assert pld.epsilon_for_delta(1e-5) < 3.0


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_laplace_profile(epsilon):
    pld = pld_laplace(epsilon)
    for t in np.linspace(0.0, epsilon, 17):
        exact = -math.expm1((t - epsilon) / 2.0)
        # Connect the dots is exact at the grid points and a chord between.
        assert pld.delta_for_epsilon(t) >= exact - 1e-15
        assert pld.delta_for_epsilon(t) <= exact + 1e-8
    assert pld.epsilon_for_delta(0.0) == pytest.approx(epsilon, abs=1e-4)


@pytest.mark.parametrize("split", [0.5, 0.2, 0.05])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
@pytest.mark.slow
def test_laplace_dominates_vector_releases_of_the_same_l1_sensitivity(epsilon, split):
    # A shift of L1 norm epsilon spread over two coordinates is the
    # composition of Laplace pairs with epsilons a + c = epsilon. Its PLD,
    # built pessimistically on a fine grid, stays below the exact profile of
    # the scalar pair at every t: the scalar pair dominates.
    a, c = split * epsilon, (1 - split) * epsilon
    vector = pld_laplace(a, interval=1e-5).compose(pld_laplace(c, interval=1e-5))
    for t in np.linspace(-epsilon, epsilon, 41):
        scalar = -math.expm1((t - epsilon) / 2.0) if t > -epsilon else 1 - math.exp(t)
        assert vector.delta_for_epsilon(t) <= scalar + 2e-5


def test_self_compose_equals_repeated_compose():
    one = pld_poisson_subsampled_gaussian(0.05, 1.2)
    repeated = one
    for _ in range(7):
        repeated = repeated.compose(one)
    assert one.self_compose(8).epsilon_for_delta(1e-5) == pytest.approx(
        repeated.epsilon_for_delta(1e-5), rel=1e-9
    )


def test_gaussians_compose_into_one_gaussian():
    composed = pld_gaussian(2.0).compose(pld_gaussian(2.0)).compose(pld_gaussian(1.0))
    merged = pld_gaussian((2 * 2.0**-2 + 1.0**-2) ** -0.5)
    assert composed.epsilon_for_delta(1e-6) == pytest.approx(
        merged.epsilon_for_delta(1e-6), abs=5e-4
    )


def test_sampling_rate_one_is_the_unsampled_gaussian():
    # Replace one row: the contribution moves from +C to -C, sensitivity 2C.
    replace = pld_poisson_subsampled_gaussian(1.0, 3.0, "replace_one")
    add_remove = pld_poisson_subsampled_gaussian(1.0, 3.0, "add_remove")
    assert replace.epsilon_for_delta(1e-5) == pytest.approx(
        gaussian_epsilon(1.5, 1e-5), abs=1e-3
    )
    assert add_remove.epsilon_for_delta(1e-5) == pytest.approx(
        gaussian_epsilon(3.0, 1e-5), abs=1e-3
    )


@pytest.mark.parametrize("q, s", [(0.01, 1.0), (0.3, 0.8), (0.9, 2.0)])
def test_replace_one_step_profile(q, s):
    # The pair of the docstring: P = (1-q) N(0, s^2) + q N(1, s^2) against
    # Q = (1-q) N(0, s^2) + q N(-1, s^2). Its loss increases in x, so
    # delta(t) = P(X > x_t) - e^t Q(X > x_t) with x_t found by root finding
    # (independently of the closed-form inverse used by the code).
    from scipy import optimize

    def loss(x):
        upper = np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * s * s))
        lower = np.logaddexp(math.log1p(-q), math.log(q) + (-2 * x - 1) / (2 * s * s))
        return upper - lower

    def tail(x, shift):
        return (1 - q) * stats.norm.sf(x, 0, s) + q * stats.norm.sf(x, shift, s)

    def exact_delta(t):
        x_t = optimize.brentq(lambda x: loss(x) - t, -50, 50, xtol=1e-14)
        return tail(x_t, 1.0) - math.exp(t) * tail(x_t, -1.0)

    pld = pld_poisson_subsampled_gaussian(q, s, "replace_one")
    for t in (0.0, 0.05, 0.3, 1.0):
        # On the grid connect the dots is exact; between, an upper bound.
        assert pld.delta_for_epsilon(t) == pytest.approx(
            exact_delta(t), rel=1e-7, abs=1e-15
        )
        assert pld.delta_for_epsilon(t + 0.5e-4) >= exact_delta(t + 0.5e-4) * (1 - 1e-7)


def test_add_remove_takes_the_worse_direction():
    pld = pld_poisson_subsampled_gaussian(0.2, 1.0, "add_remove")
    assert not pld.symmetric
    remove, add = pld._remove, pld._add
    from skdp.accounting._pld import PrivacyLossDistribution

    worst = max(
        PrivacyLossDistribution(remove).epsilon_for_delta(1e-5),
        PrivacyLossDistribution(add).epsilon_for_delta(1e-5),
    )
    assert pld.epsilon_for_delta(1e-5) == worst


def test_coarsening_is_pessimistic_and_tight():
    pld = pld_poisson_subsampled_gaussian(0.05, 1.0).self_compose(50)
    fine = pld.epsilon_for_delta(1e-5)
    coarse = pld._coarsened(16)
    assert coarse.interval == pytest.approx(16e-4)
    # Connect the dots again: an upper bound, second-order close.
    assert fine <= coarse.epsilon_for_delta(1e-5) <= fine + 1e-5
    # A composition too large for max_points is carried out on a coarser grid.
    small = pld.compose(pld, max_points=1000)
    assert small.interval > pld.interval
    assert small.epsilon_for_delta(1e-5) >= pld.compose(pld).epsilon_for_delta(1e-5)


def test_delta_and_epsilon_are_inverse():
    pld = pld_poisson_subsampled_gaussian(0.02, 0.9).self_compose(300)
    for delta in (1e-3, 1e-5, 1e-8):
        epsilon = pld.epsilon_for_delta(delta)
        assert pld.delta_for_epsilon(epsilon) <= delta
        assert (
            pld.delta_for_epsilon(epsilon * (1 - 1e-4)) > delta - _DELTA_SLACK_ABSOLUTE
        )


def test_identity_reveals_nothing():
    assert identity_pld().epsilon_for_delta(0.0) == 0.0
    pld = pld_gaussian(2.0)
    assert identity_pld().compose(pld).epsilon_for_delta(1e-5) == pytest.approx(
        pld.epsilon_for_delta(1e-5), rel=1e-12
    )


def test_invalid_parameters():
    with pytest.raises(ValueError, match="sampling_rate"):
        pld_poisson_subsampled_gaussian(0.0, 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        pld_gaussian(-1.0)
    with pytest.raises(ValueError, match="neighbouring_relation"):
        pld_poisson_subsampled_gaussian(0.1, 1.0, "swap")
    with pytest.raises(ValueError, match="interval"):
        pld_laplace(1.0, interval=0.0)
    with pytest.raises(ValueError, match="count"):
        pld_gaussian(1.0).self_compose(0)


@pytest.mark.parametrize(
    "other",
    [
        (-1.0, 0.0),  # the pair the code uses: the row moves from +C to -C
        (0.0, 1.0),  # moved by 90 degrees
        (math.cos(2.5), math.sin(2.5)),  # by 143 degrees
        (-0.5, 0.0),  # to a shorter contribution
        (0.0, 0.0),  # to a zero contribution
    ],
)
@pytest.mark.slow
def test_replace_one_pair_dominates_other_replacements_in_the_plane(other):
    # One step of the subsampled Gaussian in two dimensions: the replaced
    # row contributes x = (1, 0) or x' = other (both of norm <= C = 1). The
    # hockey-stick divergence, integrated on a fine grid, never exceeds that
    # of the one-dimensional pair of the PLD (x' = -x), at any epsilon.
    q, s = 0.2, 0.8
    axis = np.linspace(-7.0, 7.0, 1401)
    step = axis[1] - axis[0]
    u, v = np.meshgrid(axis, axis, indexing="ij")

    def mixture(shift):
        near = stats.norm.pdf(u, shift[0], s) * stats.norm.pdf(v, shift[1], s)
        return (1 - q) * stats.norm.pdf(u, 0, s) * stats.norm.pdf(v, 0, s) + q * near

    p, p_other = mixture((1.0, 0.0)), mixture(other)
    pld = pld_poisson_subsampled_gaussian(q, s, "replace_one")
    for t in (0.0, 0.2, 0.5, 1.0):
        for upper, lower in ((p, p_other), (p_other, p)):
            delta = (
                float(np.sum(np.maximum(upper - math.exp(t) * lower, 0.0))) * step**2
            )
            assert delta <= pld.delta_for_epsilon(t) + 1e-6


def test_extreme_events_fall_back_without_warnings():
    """A PLD whose probabilities overflow (tiny noise multipliers next to an
    exponential mechanism) gives up as 'all mass at infinity' instead of
    warning and convolving NaN; the tightest valid bound is then another
    method's."""
    import warnings

    from skdp.accounting import (
        ExponentialMechanismEvent,
        GaussianEvent,
        PrivacyAccountant,
    )

    events = [GaussianEvent(0.01)] * 3 + [
        ExponentialMechanismEvent(10.0),
        GaussianEvent(0.01),
    ] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = PrivacyAccountant().compose(events, 1e-9)
    assert math.isfinite(report.epsilon) and report.method != "pld"


def test_a_long_composition_stays_within_the_point_budget():
    """DP-SGD at n = 1e6 (39,063 steps at q = 256 / 1e6, sigma = 0.7).

    The per-step PLD has a heavy upper tail (rare large losses): the
    Chernoff bound of the 39,063-fold sum is best at a ``t`` about 50 times
    below the Gaussian guess. Searched over the old range around that guess
    the window spanned about 2.5e8 grid points, and the grid was coarsened
    38 times to fit DEFAULT_MAX_POINTS (epsilon 0.998 at sigma = 0.7459);
    searched over ``t`` it spans about 5e5 points on the 1e-4 grid, and
    epsilon is dp_accounting's pessimistic PLD at the same grid step
    (0.727884674; 0.7774 at 1e-3).
    """
    from skdp.accounting import PLDAccountant, PoissonSubsampledGaussianEvent
    from skdp.accounting._pld import DEFAULT_MAX_POINTS

    event = PoissonSubsampledGaussianEvent(256 / 1_000_000, 0.7, 39_063)
    pld = PLDAccountant().pld(event)
    assert pld.interval == 1e-4
    assert pld.size <= DEFAULT_MAX_POINTS
    epsilon, _ = PLDAccountant().epsilon_delta([event], 1e-5)
    assert epsilon == pytest.approx(0.727884674, rel=1e-6)


def test_a_composition_with_almost_no_finite_mass_keeps_one_point():
    """Three discrete Laplace releases at epsilon ~ 1e8 (DPGaussianNB's plan
    at ``epsilon=1e8``) leave less than ``tail / 2`` of finite mass after the
    second convolution; the truncation kept an empty array and raised
    IndexError from ``PrivacyBudget.spend``. The composition is now valid
    (pessimistic): epsilon is infinite, not an exception."""
    from skdp.accounting import DiscreteLaplaceEvent, PLDAccountant

    scale = 6710886400.003052
    events = [
        DiscreteLaplaceEvent(scale, 2199023255553),
        DiscreteLaplaceEvent(scale, 13194139533318),
        DiscreteLaplaceEvent(scale, 13194139533318),
    ]
    assert PLDAccountant().compose(events, 1e-5).epsilon == math.inf
