"""Exact Bernoulli(exp(-x)) draws and exponential weights (mechanisms/_bernoulli.py)."""

import math

import numpy as np
import pytest
from _stat_checks import binomial_ok

from skdp.mechanisms import _bernoulli
from skdp.mechanisms._bernoulli import bernoulli_exp_neg, sample_exp_weights
from skdp.utils import check_random_source
from skdp.utils._random import _exp_neg_floor

Z = 5.0  # standard errors allowed in the statistical tests below
TWO_64 = 1 << 64


@pytest.mark.parametrize(
    "numerator, denominator", [(0, 1), (3, 10), (1, 1), (27, 10), (10, 1)]
)
def test_bernoulli_exp_neg_probability(numerator, denominator):
    n = 2_000_000
    draws = bernoulli_exp_neg(
        numerator, np.full(n, denominator), check_random_source(16)
    )
    p = math.exp(-numerator / denominator)
    assert draws.dtype == bool and draws.shape == (n,)
    assert binomial_ok(draws.sum(), n, p, Z)


def test_bernoulli_exp_neg_branch_structure(scripted_source):
    # gamma = 3/10 <= 1: A_j ~ Bernoulli(gamma / j) drawn as Bernoulli(1/j)
    # (the first bit of a word for j = 2, then U below j equal to 0) and
    # Bernoulli(3/10) (U below 10 less than 3); the result is whether the
    # first A_j = 0 has odd j.
    heads, tails = 0x80, 0  # the first bit :meth:`RandomSource.bits` takes
    assert not bernoulli_exp_neg(3, 10, scripted_source([1, heads, 5]))  # j = 2
    assert not bernoulli_exp_neg(3, 10, scripted_source([1, tails]))  # j = 2
    assert bernoulli_exp_neg(3, 10, scripted_source([1, heads, 1, 1]))  # j = 3
    assert bernoulli_exp_neg(3, 10, scripted_source([4]))  # j = 1
    # gamma = 27/10: two Bernoulli(1/e) trials, i.e. K >= 2 for the
    # geometric K, then Bernoulli(exp(-7/10)).
    k_is_2 = _exp_neg_floor(2, 64) - 1  # U just below e**-2, above e**-3
    k_is_1 = _exp_neg_floor(1, 64) - 1
    assert bernoulli_exp_neg(27, 10, scripted_source([k_is_2, 9]))
    assert not bernoulli_exp_neg(27, 10, scripted_source([k_is_2, 1, heads, 8]))
    source = scripted_source([k_is_1, 123])
    assert not bernoulli_exp_neg(27, 10, source)  # one trial failed: done
    assert source.script == [123]


def test_bernoulli_exp_neg_45_is_exact(scripted_source):
    # exp(-45) = 2.9e-20 is far below the 2**-54 resolution of a float
    # uniform; here it is P(K >= 45) = P(U < e**-45), decided bit by bit.
    # U = 2**-65 + ... < e**-45 = 2**-64.9 is accepted; U just below 2**-64
    # is not.
    assert bernoulli_exp_neg(45, 1, scripted_source([0, 2**63]))
    assert not bernoulli_exp_neg(45, 1, scripted_source([0, TWO_64 - 1]))
    assert bernoulli_exp_neg(90, 2, scripted_source([0, 2**63]))


def test_bernoulli_exp_neg_python_integers_agree_with_int64():
    # Beyond int64 the same algorithm runs with Python integers.
    big = 1 << 70
    n = 20_000
    source = check_random_source(17)
    for numerator, denominator in ((3, 10), (27, 10)):
        p = math.exp(-numerator / denominator)
        slow = bernoulli_exp_neg(numerator * big, [denominator * big] * n, source)
        assert binomial_ok(slow.sum(), n, p, Z)
    mixed = bernoulli_exp_neg(
        np.array([3 * big, 3], dtype=object), np.array([10 * big, 10]), source
    )
    assert mixed.shape == (2,)
    # A big denominator with small numerators: gamma = 0 and 2**-70.
    tiny = bernoulli_exp_neg([0, 1], 2**70, source)
    assert tiny.dtype == bool and tiny[0]
    with pytest.raises(ValueError, match="numerator"):
        bernoulli_exp_neg(-1, 1, source)
    with pytest.raises(TypeError, match="integers"):
        bernoulli_exp_neg(0.5, 1, source)


def test_forced_python_path_agrees(monkeypatch):
    # Lowering the int64 headroom sends most draws to the Python integers.
    monkeypatch.setattr(_bernoulli, "_LIMIT", 8)
    n = 20_000
    draws = bernoulli_exp_neg(27, [10] * n, check_random_source(18))
    assert binomial_ok(draws.sum(), n, math.exp(-2.7), Z)


def test_sample_exp_weights_probabilities():
    # Exponents 0, 3, 10 and 10.5: relative weights 1, e**-3, e**-10, e**-10.5.
    numerators = [0, 6, 20, 21]
    n = 2_000_000
    draws = sample_exp_weights(numerators, 2, check_random_source(19), size=n)
    weights = np.exp(-np.array(numerators) / 2)
    p = weights / weights.sum()
    counts = np.bincount(draws, minlength=4)
    for i in range(4):
        assert binomial_ok(counts[i], n, p[i], Z), i
    assert isinstance(sample_exp_weights([0, 1], 1, check_random_source(0)), int)


def test_sample_exp_weights_one_dominant_candidate():
    # 1e5 candidates 30 below the best: the best has probability 1 - 1e-8.
    numerators = np.full(100_000, 30)
    numerators[123] = 0
    draws = sample_exp_weights(numerators, 1, check_random_source(20), size=5)
    assert (draws == 123).all()


def test_seeded_draws_are_reproducible():
    a = bernoulli_exp_neg(3, [10] * 50, check_random_source(5))
    b = bernoulli_exp_neg(3, [10] * 50, check_random_source(5))
    np.testing.assert_array_equal(a, b)
