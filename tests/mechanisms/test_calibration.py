"""Sample statistics of every mechanism against theory.

Tolerances are a fixed number of standard errors (derived from the variance
of the statistic, stated next to each assertion) with fixed seeds, so the
tests cannot flake and a factor-of-two error in the noise scale fails them.
"""

import math

import numpy as np
import pytest
from scipy import stats

from skdp.accounting import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    PureDPEvent,
    gaussian_noise_multiplier,
)
from skdp.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    l2_vector_mechanism,
    l2_vector_noise,
    laplace_mechanism,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from skdp.utils import check_random_source

N = 200_000
Z = 5.0  # standard errors allowed


@pytest.mark.parametrize("sensitivity, epsilon", [(1.0, 1.0), (2.0, 0.1), (0.01, 5.0)])
def test_laplace_scale(sensitivity, epsilon):
    b = sensitivity / epsilon
    noisy, event = laplace_mechanism(
        np.full(N, 3.0), sensitivity, epsilon, random_state=1
    )
    noise = noisy - 3.0
    # The event is the discrete Laplace that ran: its epsilon k / t (k the
    # neighbours' largest distance in grid steps, t the scale in steps) is
    # at most the requested one, and the scale of the draws is t steps.
    assert isinstance(event, DiscreteLaplaceEvent)
    assert event.epsilon <= epsilon and event.epsilon == pytest.approx(epsilon)
    # The scale covers the rounding of the N coordinates to the grid too:
    # t gamma = (sensitivity + N gamma) / epsilon.
    gamma = 2.0 ** (math.floor(math.log2(b)) - 32)
    assert event.noise_scale * gamma == pytest.approx(
        (sensitivity + N * gamma) / epsilon, rel=1e-12
    )
    # E|Z| = b, Var|Z| = b**2 for Laplace(b).
    assert abs(np.abs(noise).mean() - b) < Z * b / math.sqrt(N)
    # Mean 0 with variance 2 b**2.
    assert abs(noise.mean()) < Z * math.sqrt(2 * b * b / N)
    # Tail P(|Z| > b) = exp(-1); binomial standard error.
    p = math.exp(-1)
    assert abs((np.abs(noise) > b).mean() - p) < Z * math.sqrt(p * (1 - p) / N)


def test_laplace_scalar_in_scalar_out():
    noisy, _ = laplace_mechanism(1.5, 1.0, 1.0, random_state=0)
    assert isinstance(noisy, float)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.3, 1e-6), (8.0, 1e-3)])
def test_gaussian_standard_deviation(epsilon, delta):
    sensitivity = 2.0
    s = gaussian_noise_multiplier(epsilon, delta)
    noisy, event = gaussian_mechanism(
        np.zeros(N), sensitivity, epsilon, delta, random_state=2
    )
    # A hair more noise than the bisection's figure: 1e-10 relative, and
    # room for the lattice shift of N coordinates, 2 sqrt(N) / (s 2**32) <
    # 2e-7 in epsilon here, which moves s by less than a relative 1e-6.
    assert isinstance(event, DiscreteGaussianEvent)
    assert event.noise_multiplier == pytest.approx(s, rel=1e-6)
    assert event.noise_multiplier >= s
    sigma = s * sensitivity
    # Sample variance of N normals has relative standard error sqrt(2 / N).
    assert abs(noisy.var() / sigma**2 - 1) < Z * math.sqrt(2 / N)
    assert abs(noisy.mean()) < Z * sigma / math.sqrt(N)
    # Normality: Kolmogorov-Smirnov against N(0, sigma).
    assert stats.kstest(noisy[:20000] / sigma, "norm").pvalue > 1e-4


def test_gaussian_with_noise_multiplier():
    noisy, event = gaussian_mechanism(
        np.zeros(N), 1.0, noise_multiplier=0.5, random_state=3
    )
    assert isinstance(event, DiscreteGaussianEvent)
    assert event.noise_multiplier == 0.5
    assert abs(noisy.std() / 0.5 - 1) < Z * math.sqrt(1 / (2 * N))


def test_gaussian_argument_errors():
    with pytest.raises(ValueError, match="either"):
        gaussian_mechanism(0.0, 1.0, 1.0, 1e-5, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="delta must be in"):
        gaussian_mechanism(0.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="Give epsilon and delta"):
        gaussian_mechanism(0.0, 1.0, 1.0)


def test_discrete_samplers_match_their_pmf():
    source = check_random_source(4)
    # Discrete Laplace, scale t: variance 2 e^{-1/t} / (1 - e^{-1/t})**2.
    t = 3.0
    z = sample_discrete_laplace(t, N, source)
    assert np.all(z == np.round(z))
    r = math.exp(-1 / t)
    var = 2 * r / (1 - r) ** 2
    # Relative standard error of a sample variance: sqrt((kurtosis - 1) / N),
    # kurtosis of a Laplace-like law about 6.
    assert abs(z.var() / var - 1) < Z * math.sqrt(5 / N)
    # Discrete Gaussian: chi-square goodness of fit on the central values.
    sigma = 1.5
    g = sample_discrete_gaussian(sigma, N, source)
    support = np.arange(-6, 7)
    pmf = np.exp(-(support**2) / (2 * sigma**2))
    pmf /= np.exp(-(np.arange(-60, 61) ** 2) / (2 * sigma**2)).sum()
    observed = np.array([(g == k).sum() for k in support])
    chi2 = ((observed - N * pmf) ** 2 / (N * pmf)).sum()
    assert chi2 < stats.chi2.ppf(1 - 1e-6, df=len(support) - 1)


def test_exponential_mechanism_probabilities():
    scores = np.array([0.0, 1.0, 2.0])
    epsilon, sensitivity = 2.0, 1.0
    counts = np.zeros(3)
    source = check_random_source(5)
    n = 20_000
    for _ in range(n):
        index, event = exponential_mechanism(
            scores, sensitivity, epsilon, random_state=source
        )
        counts[index] += 1
    assert event == ExponentialMechanismEvent(epsilon)
    p = np.exp(epsilon * scores / (2 * sensitivity))
    p /= p.sum()
    # Per-cell binomial standard errors.
    assert np.all(np.abs(counts / n - p) < Z * np.sqrt(p * (1 - p) / n))


def test_exponential_mechanism_monotonic_drops_the_factor_two():
    scores = np.array([0.0, 1.0])
    source = check_random_source(6)
    n = 20_000
    hits = sum(
        exponential_mechanism(scores, 1.0, 1.0, monotonic=True, random_state=source)[0]
        for _ in range(n)
    )
    p = math.e / (1 + math.e)
    assert abs(hits / n - p) < Z * math.sqrt(p * (1 - p) / n)


def test_exponential_mechanism_rejects_bad_scores():
    with pytest.raises(ValueError, match="finite"):
        exponential_mechanism([0.0, np.nan], 1.0, 1.0)
    with pytest.raises(ValueError, match="at least one"):
        exponential_mechanism([], 1.0, 1.0)


@pytest.mark.parametrize("d", [1, 3, 20])
def test_l2_vector_noise_norm_and_direction(d):
    sensitivity, epsilon = 2.0, 0.5
    source = check_random_source(7)
    n = 20_000
    draws = np.array(
        [
            l2_vector_noise(d, sensitivity, epsilon, random_state=source)[0]
            for _ in range(n)
        ]
    )
    norms = np.linalg.norm(draws, axis=1)
    scale = sensitivity / epsilon
    # ||b|| ~ Gamma(d, scale): mean d * scale, variance d * scale**2.
    assert abs(norms.mean() - d * scale) < Z * math.sqrt(d) * scale / math.sqrt(n)
    assert stats.kstest(norms, stats.gamma(d, scale=scale).cdf).pvalue > 1e-4
    # Uniform direction: each coordinate of b / ||b|| has mean 0, variance 1/d.
    unit = draws / norms[:, None]
    assert np.all(np.abs(unit.mean(axis=0)) < Z * math.sqrt(1 / d / n))


def test_l2_vector_mechanism_event_and_grid():
    out, event = l2_vector_mechanism([0.25, -0.5, 1.0], 0.1, 2.0, random_state=0)
    assert event == PureDPEvent(2.0)
    assert out.shape == (3,)
    assert np.all(np.abs(out - [0.25, -0.5, 1.0]) < 0.1 / 2.0 * 60)


@pytest.mark.parametrize(
    "call",
    [
        lambda: laplace_mechanism(0.0, 0.0, 1.0),
        lambda: laplace_mechanism(0.0, 1.0, -1.0),
        lambda: laplace_mechanism(np.nan, 1.0, 1.0),
        lambda: laplace_mechanism(np.inf, 1.0, 1.0),
        lambda: l2_vector_noise(0, 1.0, 1.0),
    ],
)
def test_mechanisms_reject_invalid_input(call):
    with pytest.raises((ValueError, TypeError)):
        call()
