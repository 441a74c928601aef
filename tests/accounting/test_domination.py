"""Each discrete event's accounting dominates the mechanism that runs.

Independent of the accountants' formulas: the privacy loss of the
mechanism on worst-case neighbours is computed here from the probability
mass functions of the noise the samplers draw (the two-sided geometric
``P(z) ~ exp(-|z| / t)`` and the discrete Gaussian ``P(z) ~ exp(-z**2 /
(2 sigma**2))``, both checked against the samplers below), summed exactly
over a support whose left-out tails are bounded, and compared with the
accountant's ``delta(epsilon)`` curve at many epsilons: the accountant's
must be at least the exact one everywhere. A mutation that accounts the
discrete Laplace by the continuous pair, or the discrete Gaussian without
its lattice shift, fails these tests.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from skdp.accounting import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    PLDAccountant,
    PoissonSubsampledDiscreteGaussianEvent,
    RDPAccountant,
)
from skdp.mechanisms import sample_discrete_gaussian, sample_discrete_laplace
from skdp.utils import check_random_source

EPSILONS = np.linspace(0.0, 4.0, 81)


def _laplace_logpmf(t, support):
    log_r = -1.0 / t
    log_norm = math.log(-math.expm1(log_r)) - math.log1p(math.exp(log_r))
    return np.abs(support) * log_r + log_norm


def _gaussian_logpmf(sigma, support):
    logs = -(support.astype(float) ** 2) / (2 * sigma**2)
    # The normaliser over all of Z: the support reaches 40 sigma, where the
    # left-out mass is below exp(-800).
    return logs - special.logsumexp(logs)


def _laplace_pmf(t, support):
    return np.exp(_laplace_logpmf(t, support))


def _gaussian_pmf(sigma, support):
    return np.exp(_gaussian_logpmf(sigma, support))


def _hockey_sticks(log_p, log_q, epsilons=EPSILONS):
    """Exact delta(epsilon) of two pmfs (log masses on one support), P vs Q.

    ``delta(e) = sum over L > e of p (1 - exp(e - L))`` with ``L = log p -
    log q``: sorted once, then read off cumulative sums at each epsilon.
    """
    loss = log_p - log_q
    order = np.argsort(-loss)
    loss, p = loss[order], np.exp(log_p[order])
    q = np.exp(log_q[order])
    cum_p, cum_q = np.cumsum(p), np.cumsum(q)
    out = []
    for e in epsilons:
        k = int(np.searchsorted(-loss, -e, side="left"))  # losses > e
        out.append(0.0 if k == 0 else max(cum_p[k - 1] - math.exp(e) * cum_q[k - 1], 0))
    return np.array(out)


def _renyi(log_p, log_q, alpha):
    """Exact Renyi divergence D_alpha(P || Q) of two pmfs in log masses."""
    return special.logsumexp(alpha * log_p + (1 - alpha) * log_q) / (alpha - 1)


def _curve(accountant, event):
    pld = accountant.pld(event)
    return np.array([pld.delta_for_epsilon(e) for e in EPSILONS])


def _loss_masses(log_p, log_q, unit):
    """P-masses of the privacy loss ``log p - log q`` on the grid ``k * unit``.

    The losses of these pairs are exact multiples of ``unit`` (``1 / t`` for
    the discrete Laplace, ``1 / (2 sigma**2)`` for the discrete Gaussian with
    integer shifts), so grouping by ``k`` is exact. Returns the smallest
    ``k`` and the masses of ``k, k + 1, ...``.
    """
    k = np.rint((log_p - log_q) / unit).astype(np.int64)
    assert np.allclose(k * unit, log_p - log_q, atol=1e-9)
    low = int(k.min())
    return low, np.bincount(k - low, weights=np.exp(log_p))


def _vector_loss_masses(coordinates, unit):
    """Loss masses of independent coordinates: the convolution of each one's."""
    low, masses = 0, np.ones(1)
    for log_p, log_q in coordinates:
        first, part = _loss_masses(log_p, log_q, unit)
        low, masses = low + first, np.convolve(masses, part)
    return low, masses


def _hockey_sticks_of_losses(low, masses, unit, epsilons=EPSILONS):
    """Exact delta(epsilon) = E_P[(1 - exp(epsilon - L))_+] from loss masses."""
    losses = (low + np.arange(masses.size)) * unit
    return np.array(
        [
            float(np.sum(masses * np.maximum(-np.expm1(e - losses), 0.0)))
            for e in epsilons
        ]
    )


# -- the samplers draw these pmfs --------------------------------------------


@pytest.mark.parametrize("scale", [0.7, 2.5])
def test_the_discrete_laplace_sampler_draws_its_pmf(scale):
    draws = sample_discrete_laplace(scale, 40_000, check_random_source(3))
    support = np.arange(-8, 9)
    expected = _laplace_pmf(scale, support) * draws.size
    observed = np.array([np.sum(draws == z) for z in support])
    keep = expected > 20
    rest = draws.size - observed[keep].sum()
    chi2 = stats.chisquare(
        np.append(observed[keep], rest),
        np.append(expected[keep], draws.size - expected[keep].sum()),
    )
    assert chi2.pvalue > 1e-4  # a wrong scale (or sign rule) fails by far


@pytest.mark.parametrize("sigma", [1.0, 2.5])
def test_the_discrete_gaussian_sampler_draws_its_pmf(sigma):
    draws = sample_discrete_gaussian(sigma, 40_000, check_random_source(4))
    support = np.arange(-12, 13)
    expected = (
        _gaussian_pmf(sigma, np.arange(-40 * 3, 40 * 3 + 1))[120 - 12 : 120 + 13]
        * draws.size
    )
    observed = np.array([np.sum(draws == z) for z in support])
    keep = expected > 20
    chi2 = stats.chisquare(
        np.append(observed[keep], draws.size - observed[keep].sum()),
        np.append(expected[keep], draws.size - expected[keep].sum()),
    )
    assert chi2.pvalue > 1e-4


# -- discrete Laplace -----------------------------------------------------------


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("shift", [1, 2, 5])
def test_discrete_laplace_accounting_dominates_the_scalar_mechanism(scale, shift):
    # Support to 60 scales each side: the left-out mass is below exp(-60).
    m = int(60 * scale) + shift + 1
    support = np.arange(-m, m + 1)
    exact = _hockey_sticks(
        _laplace_logpmf(scale, support), _laplace_logpmf(scale, support - shift)
    )
    claimed = _curve(PLDAccountant(), DiscreteLaplaceEvent(scale, shift))
    assert np.all(claimed >= exact - 1e-12)
    # And tight: within the PLD's grid (1e-4 in epsilon) of exact.
    assert np.max(claimed - exact) < 1e-3


@pytest.mark.parametrize("scale", [0.6, 1.5])
@pytest.mark.parametrize("shift", [2, 3, 4])
def test_a_vector_of_total_shift_k_is_dominated_by_the_scalar_shift_k(scale, shift):
    """Every split of the L1 shift over 2 or 3 coordinates, both signs."""
    m = int(40 * scale) + shift + 1
    support = np.arange(-m, m + 1)
    claimed = _curve(PLDAccountant(), DiscreteLaplaceEvent(scale, shift))
    base = _laplace_logpmf(scale, support)
    for d in (2, 3, 4):
        for parts in itertools.product(range(-shift, shift + 1), repeat=d):
            if sum(abs(v) for v in parts) != shift:
                continue
            coordinates = [(base, _laplace_logpmf(scale, support - v)) for v in parts]
            low, masses = _vector_loss_masses(coordinates, 1.0 / scale)
            exact = _hockey_sticks_of_losses(low, masses, 1.0 / scale)
            assert np.all(claimed >= exact - 1e-10), parts


def test_counts_are_randomised_response_not_the_continuous_laplace():
    """At shift 1 the discrete pair composes worse than Lap(0,1) vs Lap(eps,1).

    The mutation this guards against: accounting DiscreteLaplaceEvent by
    the continuous Laplace pair reports 27.77 for 30 counts at epsilon 1
    (delta 1e-6); the exact figure, from the binomial law of 30 randomised
    responses, is 29.99.
    """
    k, eps, delta = 30, 1.0, 1e-6
    j = np.arange(k + 1)
    losses = (2 * j - k) * eps
    masses = stats.binom.pmf(j, k, special.expit(eps))

    def exact_delta(e):
        return float(np.sum(masses * np.maximum(1 - np.exp(e - losses), 0.0)))

    exact = _bisect(exact_delta, delta)
    accountant = PLDAccountant()
    pld = accountant.pld(DiscreteLaplaceEvent(1.0, 1)).self_compose(k)
    reported = pld.epsilon_for_delta(delta)
    assert exact > 29.9 and exact <= reported <= exact + 1e-3


def _bisect(delta_of, delta, low=0.0, high=200.0):
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if delta_of(mid) > delta else (low, mid)
    return high


# -- discrete Gaussian ------------------------------------------------------------


@pytest.mark.parametrize("sigma", [1.0, 1.5, 3.0])
@pytest.mark.parametrize("shift", [(1,), (2,), (1, 1), (2, 1), (1, 1, 1)])
def test_discrete_gaussian_accounting_dominates_the_mechanism(sigma, shift):
    m = int(40 * sigma) + 3
    support = np.arange(-m, m + 1)
    base = _gaussian_logpmf(sigma, support)
    coordinates = [(base, _gaussian_logpmf(sigma, support - v)) for v in shift]
    unit = 1.0 / (2 * sigma**2)
    low, masses = _vector_loss_masses(coordinates, unit)
    exact = _hockey_sticks_of_losses(low, masses, unit)
    l2 = math.sqrt(sum(v * v for v in shift))
    l1 = float(sum(abs(v) for v in shift))
    event = DiscreteGaussianEvent(sigma / l2, l2, l1)
    for accountant in (PLDAccountant(),):
        claimed = _curve(accountant, event)
        assert np.all(claimed >= exact - 1e-12)
    # The Renyi curve too: the exact Renyi divergence of the pmfs.
    rdp = RDPAccountant(orders=[1.5, 2.0, 4.0, 8.0])
    claimed_rdp = rdp.rdp_curve(event)
    losses = (low + np.arange(masses.size)) * unit
    for alpha, bound in zip(rdp.orders, claimed_rdp, strict=True):
        # D_alpha = log E_P[exp((alpha - 1) L)] / (alpha - 1).
        moment = special.logsumexp((alpha - 1) * losses, b=masses)
        assert bound >= moment / (alpha - 1) - 1e-12


def test_without_its_lattice_shift_the_continuous_gaussian_is_not_enough():
    """The shift matters: at sigma = 1 step the continuous pair's curve lies
    below the discrete mechanism's somewhere (so the shift is needed)."""
    sigma = 1.0
    support = np.arange(-50, 51)
    exact = _hockey_sticks(
        _gaussian_logpmf(sigma, support), _gaussian_logpmf(sigma, support - 1)
    )
    from skdp.accounting._pld import pld_gaussian

    continuous = pld_gaussian(sigma)
    bare = np.array([continuous.delta_for_epsilon(e) for e in EPSILONS])
    assert np.any(bare < exact - 1e-6)


@pytest.mark.parametrize("q", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_subsampled_discrete_gaussian_dominates_replace_one(q, sigma):
    """One step: a row's +1 contribution replaced by -1 (2 steps apart)."""
    m = int(40 * sigma) + 3
    support = np.arange(-m, m + 1)

    def mixture(shift):
        with np.errstate(divide="ignore"):
            rest = np.log1p(-q) if q < 1 else -np.inf
        return np.logaddexp(
            rest + _gaussian_logpmf(sigma, support),
            math.log(q) + _gaussian_logpmf(sigma, support - shift),
        )

    log_p, log_q = mixture(1), mixture(-1)
    exact = _hockey_sticks(log_p, log_q)
    event = PoissonSubsampledDiscreteGaussianEvent(q, sigma, 1.0, 1.0, 1)
    claimed = _curve(PLDAccountant(), event)
    assert np.all(claimed >= exact - 1e-12)
    rdp = RDPAccountant(orders=[2.0, 4.0])
    for alpha, bound in zip(rdp.orders, rdp.rdp_curve(event), strict=True):
        assert bound >= _renyi(log_p, log_q, alpha) - 1e-12


def test_the_check_catches_a_discrete_laplace_accounted_as_the_continuous_pair():
    """The mutation: the continuous pair Lap(0,1) vs Lap(eps,1) is below the
    count's exact curve, so the domination check above would fail on it."""
    from skdp.accounting._pld import pld_laplace

    support = np.arange(-80, 81)
    exact = _hockey_sticks(
        _laplace_logpmf(1.0, support), _laplace_logpmf(1.0, support - 1)
    )
    continuous = pld_laplace(1.0)
    wrong = np.array([continuous.delta_for_epsilon(e) for e in EPSILONS])
    assert np.any(wrong < exact - 1e-3)
