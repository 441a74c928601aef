"""Exactness of the discrete Laplace and discrete Gaussian samplers.

Each sampler is compared with its closed-form pmf by chi-square and
per-point binomial tests with fixed seeds (tolerances derived from the
variance, written next to each assertion). The far tails, which no test of
feasible size reaches directly (the old float samplers were truncated at
probabilities near 1e-16), are tested through the samplers' structure:
conditionally on the geometric part, by the memoryless property, and by
checking that every acceptance probability is an exact rational exponent.
The Python-integer fallback is forced by lowering the int64 headroom and
compared with the same pmf.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from _stat_checks import binomial_ok
from scipy import stats

from skdp.mechanisms import (
    _bernoulli,
    _samplers,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from skdp.mechanisms._samplers import (
    _bernoulli_exp_neg_square,
    _gaussian_parameters,
    _laplace_ratio,
    geometric_exp_neg_one,
)
from skdp.utils import check_random_source

Z = 5.0  # standard errors allowed


def _laplace_pmf(scale, support):
    r = math.exp(-1 / scale)
    return (1 - r) / (1 + r) * r ** np.abs(support)


def _gaussian_pmf(sigma, support):
    wide = np.arange(-60 * math.ceil(sigma) - 60, 60 * math.ceil(sigma) + 61)
    norm = np.exp(-(wide**2) / (2 * sigma**2)).sum()
    return np.exp(-(support**2) / (2 * sigma**2)) / norm


def _assert_pmf(draws, pmf_function, parameter):
    """Chi-square over the values with expected count >= 5, plus one bin
    for the rest; the threshold is the chi-square 1 - 1e-6 quantile."""
    n = draws.size
    assert np.array_equal(draws, np.round(draws))
    support = np.arange(-2000, 2001)
    expected = n * pmf_function(parameter, support)
    cells = support[expected >= 5]
    observed = np.array([(draws == k).sum() for k in cells])
    expected = expected[expected >= 5]
    observed = np.append(observed, n - observed.sum())
    expected = np.append(expected, n - expected.sum())
    keep = expected > 0
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert chi2 < stats.chi2.ppf(1 - 1e-6, df=keep.sum() - 1), chi2


# -- discrete Laplace ---------------------------------------------------------


@pytest.mark.parametrize("scale", [0.3, 0.7, 3.0, 12.5])
def test_discrete_laplace_pmf(scale):
    draws = sample_discrete_laplace(scale, 400_000, check_random_source(30))
    assert draws.dtype == np.float64 and draws.shape == (400_000,)
    _assert_pmf(draws, _laplace_pmf, scale)


@pytest.mark.parametrize("scale", [1.3 * 2.0**32, 2.0**40 / 3])
def test_discrete_laplace_at_the_callers_scales(scale):
    n = 400_000
    draws = sample_discrete_laplace(scale, n, check_random_source(31))
    # At these scales P(|Z| >= x scale) = e**-x up to a relative 1/scale.
    for x in (0.25, 1.0, 3.0, 8.0):
        assert binomial_ok((np.abs(draws) >= x * scale).sum(), n, math.exp(-x), Z), x
    # Mean 0, variance 2 scale**2.
    assert abs(draws.mean()) < Z * math.sqrt(2 / n) * scale


def test_discrete_laplace_tiny_scales():
    # P(Z != 0) = 2 e**-(1/scale) / (1 + e**-(1/scale)), about 1e-434 here.
    draws = sample_discrete_laplace(1e-3, (50, 2), check_random_source(32))
    assert draws.shape == (50, 2) and not draws.any()
    # 1e-5 = t / 2**69 is rounded up to the next multiple of 2**-61; scales
    # of the callers are used exactly.
    t, s = _laplace_ratio(1e-5)
    assert s == 2**61 and 0 <= Fraction(t, s) - Fraction(1e-5) < Fraction(1, s)
    for scale in (0.05, 0.7, 3.0, 1.3 * 2.0**32, 2.0**40 / 3):
        t, s = _laplace_ratio(scale)
        assert Fraction(t, s) == Fraction(scale)


def test_discrete_laplace_far_tail_beyond_40_scales(monkeypatch):
    # |Z| = floor((U + t V) / s): by memorylessness, V given V >= 40 is
    # 40 + V', so forcing the geometric part to 40 + V' draws exactly from
    # the law of Z given V >= 40, a region of probability e**-40 which the
    # old sampler (floor(scale E), E < 37.5) could not reach at all.
    def shifted(size, source):
        return 40 + geometric_exp_neg_one(size, source)

    monkeypatch.setattr(_samplers, "geometric_exp_neg_one", shifted)
    n = 200_000
    draws = sample_discrete_laplace(3.0, n, check_random_source(33))
    # With t = 3, s = 1: |Z| - 120 = U + 3 V' has P(>= j) = e**(-j/3).
    excess = np.abs(draws) - 120
    assert excess.min() >= 0
    for j in (1, 3, 6, 15, 30):
        assert binomial_ok((excess >= j).sum(), n, math.exp(-j / 3), Z), j
    assert binomial_ok((draws > 0).sum(), n, 0.5, Z)
    # Scale 0.05: 40 scale units is |Z| = 2, beyond the old maximum of 1.
    draws = sample_discrete_laplace(0.05, 1000, check_random_source(34))
    assert (np.abs(draws) >= 2).all()


def test_discrete_laplace_int64_fallback_agrees(monkeypatch):
    # With a headroom of 16, every draw with U + 3 V >= 16 (probability
    # about e**(-16/3) = 0.5 %) is finished with Python integers.
    monkeypatch.setattr(_bernoulli, "_LIMIT", 16)
    draws = sample_discrete_laplace(3.0, 200_000, check_random_source(35))
    assert (np.abs(draws) >= 16).sum() > 100  # Binomial mean ~ 970.
    _assert_pmf(draws, _laplace_pmf, 3.0)


def test_discrete_laplace_python_path_agrees(monkeypatch):
    # 0.7 = t / 2**52 exceeds a headroom of 2**20: all Python integers,
    # with the textbook Bernoulli(exp(-1)) loop for V.
    monkeypatch.setattr(_bernoulli, "_LIMIT", 2**20)
    draws = sample_discrete_laplace(0.7, 20_000, check_random_source(36))
    _assert_pmf(draws, _laplace_pmf, 0.7)


# -- discrete Gaussian --------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.3, 1.5, 7.7])
def test_discrete_gaussian_pmf(sigma):
    draws = sample_discrete_gaussian(sigma, 400_000, check_random_source(37))
    _assert_pmf(draws, _gaussian_pmf, sigma)


@pytest.mark.parametrize("sigma", [1.1 * 2.0**20, 1.3 * 2.0**32, 2.0**40 / 3])
def test_discrete_gaussian_at_the_callers_scales(sigma):
    n = 400_000
    draws = sample_discrete_gaussian(sigma, n, check_random_source(38))
    # Sample variance: relative standard error sqrt(2 / n).
    assert abs(draws.var() / sigma**2 - 1) < Z * math.sqrt(2 / n)
    for x in (1.0, 2.0, 3.0, 4.0):
        p = 2 * stats.norm.sf(x)
        assert binomial_ok((np.abs(draws) >= x * sigma).sum(), n, p, Z), x


def test_gaussian_parameters_round_sigma_up():
    assert _gaussian_parameters(1.5) == (2, 9 * 2**43, 2**46)  # exact: 9/8
    sigmas = (0.3, 1.0000001, 1.5, 7.7, 1.1 * 2.0**20, 1.3 * 2.0**32, 2.0**40 / 3)
    for sigma in sigmas:
        t, p, q = _gaussian_parameters(sigma)
        exact = Fraction(sigma) ** 2
        assert t == math.floor(sigma) + 1
        assert exact <= Fraction(p * t, q) < exact + Fraction(t, q)
        if sigma >= 1:
            assert Fraction(p * t, q) / exact - 1 < Fraction(1, 2**45)
        else:
            assert Fraction(p * t, q) - exact < Fraction(1, 2**47)
    # At the callers' scale the increase is about 2**-47.
    t, p, q = _gaussian_parameters(1.3 * 2.0**32)
    assert Fraction(p * t, q) / Fraction(1.3 * 2.0**32) ** 2 - 1 < Fraction(1, 2**46)


@pytest.mark.parametrize(
    "m, a, b",
    [
        (3, 10, 5),  # gamma = 0.18, one piece
        (25, 10, 20),  # gamma = 3.125, 3 x 2 pieces
        (49, 20, 20),  # gamma = 6.0025, 3 x 3 pieces
        (2**40 + 12345, 2**40, 2**39),  # gamma ~ 2, 2 x 3 pieces, int64 scale
    ],
)
def test_bernoulli_exp_neg_square_probability(m, a, b):
    n = 1_000_000
    draws = _bernoulli_exp_neg_square(np.full(n, m), a, b, check_random_source(39))
    assert binomial_ok(draws.sum(), n, math.exp(-(m * m) / (a * b)), Z)


def test_gaussian_acceptance_far_in_the_tail_is_exact(monkeypatch):
    # A Laplace candidate 10 sigma out at sigma = 1.3 * 2**32 has acceptance
    # exp(-gamma) with gamma ~ 40.5: below 2**-54, so the old float test
    # (uniform < exp(-gamma)) could never pass. Here gamma is an exact
    # rational split into pieces whose exponents add up to it, each a
    # product of two ratios at most 1.
    sigma = 1.3 * 2.0**32
    t, p, q = _gaussian_parameters(sigma)
    y = 10 * t
    m = abs(y * q - p)
    gamma = Fraction(m * m, 2 * p * t * q)
    sigma2 = Fraction(p * t, q)  # the (rounded-up) sigma**2 used
    assert gamma == (y - sigma2 / t) ** 2 / (2 * sigma2)
    assert 40 < gamma < 41
    pieces = []

    def record(n, factors, source):
        (num_a, den_a), (num_b, den_b) = factors
        for i in range(n):
            ratio_a = Fraction(int(num_a[i]), int(den_a[i]))
            ratio_b = Fraction(int(num_b[i]), int(den_b[i]))
            assert ratio_a <= 1 and ratio_b <= 1
            pieces.append(ratio_a * ratio_b)
        return np.ones(n, dtype=bool)  # every piece passes: the lucky draw

    monkeypatch.setattr(_samplers, "_bernoulli_exp_neg_unit", record)
    accepted = _bernoulli_exp_neg_square(
        np.array([m]), 2 * p, t * q, check_random_source(0)
    )
    assert accepted.all()
    assert sum(pieces) == gamma and all(piece <= 1 for piece in pieces)


def test_discrete_gaussian_int64_fallback_agrees(monkeypatch):
    # sigma = 1.5: p = 9 * 2**43, q = 2**46. With a headroom of 2**48 every
    # Laplace candidate with |Y| >= 3 (probability e**-1.5 = 22 %) is
    # accepted or rejected with Python integers.
    monkeypatch.setattr(_bernoulli, "_LIMIT", 2**48)
    draws = sample_discrete_gaussian(1.5, 100_000, check_random_source(40))
    _assert_pmf(draws, _gaussian_pmf, 1.5)


def test_discrete_gaussian_python_path_agrees(monkeypatch):
    # A headroom of 2**30 is below a = 2p and b = tq: all Python integers,
    # with the textbook acceptance Bernoulli(exp(-m**2 / (2 p t q))).
    monkeypatch.setattr(_bernoulli, "_LIMIT", 2**30)
    draws = sample_discrete_gaussian(1.5, 5_000, check_random_source(41))
    _assert_pmf(draws, _gaussian_pmf, 1.5)


# -- both -------------------------------------------------------------------


@pytest.mark.parametrize(
    "sampler, parameter, pmf",
    [
        (sample_discrete_laplace, 3.0, _laplace_pmf),
        (sample_discrete_gaussian, 1.5, _gaussian_pmf),
    ],
)
def test_small_calls_use_the_textbook_algorithm(sampler, parameter, pmf):
    # At most 8 draws per call run with Python integers (faster there).
    source = check_random_source(43)
    draws = np.concatenate([sampler(parameter, 5, source) for _ in range(3000)])
    _assert_pmf(draws, pmf, parameter)


@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_discrete_gaussian])
def test_samplers_are_reproducible_and_shaped(sampler):
    a = sampler(1.3 * 2.0**32, (3, 4), check_random_source(42))
    b = sampler(1.3 * 2.0**32, (3, 4), check_random_source(42))
    assert a.shape == (3, 4) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert sampler(2.0, 0, check_random_source(0)).shape == (0,)
    # The caller's stream after a call does not depend on how many words the
    # call's rejections used (here: a slightly different scale).
    c, d = check_random_source(44), check_random_source(44)
    sampler(1.3 * 2.0**32, 1000, c)
    sampler(1.3 * 2.0**32 * (1 + 1e-9), 1000, d)
    assert c.words(2).tolist() == d.words(2).tolist()
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="finite and > 0"):
            sampler(bad, 3, check_random_source(0))
