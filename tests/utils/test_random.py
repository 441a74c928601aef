import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
from _stat_checks import binomial_ok
from scipy import stats

from skdp.mechanisms import gaussian_mechanism, laplace_mechanism
from skdp.mechanisms._bernoulli import _py_bernoulli_exp_neg
from skdp.utils import RandomSource, check_random_source
from skdp.utils._random import _exp_neg_floor, geometric_exp_neg_one


def test_none_is_the_os_csprng_and_unaffected_by_numpy_seeding():
    np.random.seed(0)  # noqa: NPY002 (the point of the test)
    a, _ = laplace_mechanism(np.zeros(8), 1.0, 1.0)
    np.random.seed(0)  # noqa: NPY002 (the point of the test)
    b, _ = laplace_mechanism(np.zeros(8), 1.0, 1.0)
    assert not np.array_equal(a, b)
    assert check_random_source(None).is_secure


def test_explicit_seed_is_reproducible():
    a, _ = gaussian_mechanism(np.zeros(8), 1.0, 1.0, 1e-5, random_state=3)
    b, _ = gaussian_mechanism(np.zeros(8), 1.0, 1.0, 1e-5, random_state=3)
    assert np.array_equal(a, b)
    assert not check_random_source(3).is_secure


def test_random_state_kinds():
    assert isinstance(check_random_source(np.random.RandomState(0)), RandomSource)
    assert isinstance(check_random_source(np.random.default_rng(0)), RandomSource)
    src = RandomSource()
    assert check_random_source(src) is src
    with pytest.raises(ValueError, match="random_state"):
        check_random_source("seed")


def test_exponential_sampler_is_exponential():
    e = check_random_source(0).exponential(200_000)
    # Mean 1 and variance 1; standard error of the mean 1/sqrt(n).
    assert abs(e.mean() - 1) < 5 / math.sqrt(200_000)
    # No porous tail: values above 20 still occur at their rate (e**-20 * n ~ 0),
    # and the attainable values near 10 are dense.
    tail = np.sort(e[e > 8])
    assert tail.size > 0


def test_poisson_subsample_rate():
    src = check_random_source(1)
    sizes = [src.poisson_subsample(1000, 0.1).size for _ in range(2000)]
    # Binomial(1000, 0.1): mean 100, sd 9.49; mean over 2000 runs has sd 0.21.
    assert abs(np.mean(sizes) - 100) < 5 * 9.49 / math.sqrt(2000)
    idx = src.poisson_subsample(1000, 0.5)
    assert np.all(np.diff(idx) > 0) and idx.min() >= 0 and idx.max() < 1000
    assert src.poisson_subsample(10, 1.0).tolist() == list(range(10))


def test_poisson_subsamples_of_one_step_are_the_single_draw():
    one = check_random_source(5).poisson_subsample(1000, 0.05)
    (block,) = check_random_source(5).poisson_subsamples(1000, 0.05, 1)
    assert np.array_equal(one, block)


def test_poisson_subsamples_keep_every_row_independently_in_every_step():
    # 400 steps of 50 rows at q = 0.1, drawn as 8 blocks of 50 steps: each
    # (step, row) is kept with probability q, and a row kept in one step is
    # kept in the next with probability q too (independence across steps,
    # including across the cut between two steps of a block).
    src = check_random_source(6)
    n, q = 50, 0.1
    kept = np.zeros((400, n), dtype=bool)
    for block in range(8):
        for i, batch in enumerate(src.poisson_subsamples(n, q, 50)):
            assert np.all(np.diff(batch) > 0)
            assert batch.dtype == np.intp
            kept[block * 50 + i, batch] = True
    assert binomial_ok(int(kept.sum()), kept.size, q, Z)
    # Per row: consecutive steps both kept.
    both = kept[1:] & kept[:-1]
    assert binomial_ok(int(both[:, 0].sum() + both[:, -1].sum()), 2 * 399, q * q, Z)
    after = kept[1:][kept[:-1]]
    assert binomial_ok(int(after.sum()), after.size, q, Z)
    # The last row of a step and the first of the next (adjacent positions).
    cut = kept[1:, 0][kept[:-1, -1]]
    assert cut.size > 10 and binomial_ok(int(cut.sum()), cut.size, q, Z)


def test_poisson_subsamples_edge_rates():
    src = check_random_source(7)
    assert [b.tolist() for b in src.poisson_subsamples(3, 1.0, 2)] == [[0, 1, 2]] * 2
    assert [b.size for b in src.poisson_subsamples(3, 0.0, 2)] == [0, 0]
    assert [b.size for b in src.poisson_subsamples(0, 0.5, 3)] == [0, 0, 0]
    # A rate so small that the block is almost surely empty.
    assert all(b.size == 0 for b in src.poisson_subsamples(10, 1e-20, 64))


# -- exact integer samplers ---------------------------------------------------

Z = 5.0  # standard errors allowed in the statistical tests below
TWO_64 = 1 << 64


def test_integers_below_is_uniform():
    source = check_random_source(10)
    n = 210_000
    for bound in (7, np.full(n, 7)):
        draws = source.integers_below(bound, n)
        assert draws.dtype == np.int64
        counts = np.bincount(draws, minlength=7)
        # Chi-square with 6 degrees of freedom; the 1e-6 quantile is ~40.
        chi2 = ((counts - n / 7) ** 2 / (n / 7)).sum()
        assert counts.size == 7 and chi2 < stats.chi2.ppf(1 - 1e-6, 6)
    mixed = source.integers_below([1, 2, 3, 2**62])
    assert mixed[0] == 0 and 0 <= mixed[1] < 2 and 0 <= mixed[2] < 3


def test_integers_below_rejects_the_partial_block(scripted_source):
    # 2**64 = 3 q + 1, so of the 2**64 words only 2**64 - 1 is rejected.
    for bound in (3, [3]):
        source = scripted_source([TWO_64 - 1, 5])
        assert int(np.ravel(source.integers_below(bound, 1))[0]) == 5 % 3
        assert source.script == []  # both words were used
    source = scripted_source([TWO_64 - 2])  # accepted: its block fits below 2**64
    assert int(source.integers_below(3, 1)[0]) == (TWO_64 - 2) % 3
    with pytest.raises(ValueError, match="bound"):
        source.integers_below(0, 1)
    with pytest.raises(ValueError, match="bound"):
        source.integers_below([1, 2**63])


def test_bits_are_fair(scripted_source):
    bits = check_random_source(11).bits(100_001)
    assert bits.shape == (100_001,) and bits.dtype == bool
    assert binomial_ok(bits.sum(), bits.size, 0.5, Z)
    # The documented order: the lowest byte first, its top bit first.
    first = scripted_source([0x80 | (1 << 8)]).bits(16)
    assert first.tolist() == [True] + [False] * 14 + [True]


def test_exp_neg_floor_matches_high_precision():
    getcontext().prec = 120
    for k, bits in ((1, 64), (2, 64), (40, 64), (5, 192), (47, 128)):
        expected = int(Decimal(-k).exp() * (Decimal(2) ** bits))
        assert _exp_neg_floor(k, bits) == expected


def test_geometric_has_the_exact_tail():
    n = 2_000_000
    k = geometric_exp_neg_one(n, check_random_source(12))
    # P(K >= j) = e**-j; per-point binomial standard errors.
    for j in range(13):
        assert binomial_ok((k >= j).sum(), n, math.exp(-j), Z), j


def test_geometric_resolves_ties_and_deep_tails_exactly(scripted_source):
    # K = #{j >= 1 : U < e**-j} = floor(-ln U) for the uniform real U whose
    # binary digits are the words. A first word of 0 (U < 2**-64, beyond
    # every tabulated threshold) continues with more words: U = 2**-65 + ...
    # gives K = floor(65 ln 2) = 45, far beyond the old cap near 36.7.
    assert geometric_exp_neg_one(1, scripted_source([0, 2**63]))[0] == 45
    assert geometric_exp_neg_one(1, scripted_source([0, TWO_64 - 1]))[0] == 44
    # A first word equal to a threshold floor(2**64 / e) is a tie: the next
    # word decides against the next 64 bits of e**-1.
    tie = _exp_neg_floor(1, 64)
    next_bits = _exp_neg_floor(1, 128) - (tie << 64)
    below = scripted_source([tie, next_bits - 1])
    above = scripted_source([tie, next_bits + 1])
    assert geometric_exp_neg_one(1, below)[0] == 1
    assert geometric_exp_neg_one(1, above)[0] == 0
    # Without a tie one word decides, whatever follows.
    assert geometric_exp_neg_one(1, scripted_source([tie + 1, 0]))[0] == 0
    assert geometric_exp_neg_one(1, scripted_source([tie - 1, 0]))[0] == 1


def test_geometric_matches_the_bernoulli_loop_reference():
    # The vectorised inversion against CKS 2020's Bernoulli(e**-1) loop run
    # with Python integers: both have mean 1 / (e - 1) and variance
    # e / (e - 1)**2 = 0.92.
    source = check_random_source(13)
    n = 20_000
    loop = np.zeros(n)
    for i in range(n):
        while _py_bernoulli_exp_neg(1, 1, source):
            loop[i] += 1
    mean, sd = 1 / (math.e - 1), math.sqrt(math.e) / (math.e - 1)
    assert abs(loop.mean() - mean) < Z * sd / math.sqrt(n)
    fast = geometric_exp_neg_one(n, source)
    assert abs(fast.mean() - mean) < Z * sd / math.sqrt(n)


def test_exponential_has_an_unbounded_tail(scripted_source):
    # The old sampler drew K from a float uniform >= 2**-54, so E < 37.5
    # always; an exact geometric integer part reaches any value (here U's
    # words make K = 45; such words have probability 2**-65, the law's).
    e = scripted_source([0, 2**63]).exponential(1)
    assert e[0] > 45
    # In distribution: P(E > x) = e**-x, including past the integer parts.
    n = 400_000
    e = check_random_source(14).exponential(n)
    for x in (0.5, 1.0, 2.5, 5.0, 9.0):
        assert binomial_ok((e > x).sum(), n, math.exp(-x), Z), x
    assert stats.kstest(e[:50_000], "expon").pvalue > 1e-4


def test_standard_normal_is_normal():
    z = check_random_source(15).standard_normal((300, 200))
    assert z.shape == (300, 200)
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-4


def test_poisson_subsample_survives_huge_gaps():
    # With a tiny rate the gaps exceed int64; they must not wrap around.
    src = check_random_source(2)
    assert src.poisson_subsample(10, 1e-20).size == 0
    n, rate = 10**6, 1e-5
    sizes = [src.poisson_subsample(n, rate).size for _ in range(300)]
    # Binomial(1e6, 1e-5): mean 10, sd 3.16; the mean of 300 has sd 0.18.
    assert abs(np.mean(sizes) - 10) < Z * 3.16 / math.sqrt(300)


def test_seeded_samplers_are_reproducible():
    draws = [
        (
            check_random_source(seed).exponential(50),
            geometric_exp_neg_one(50, check_random_source(seed)),
        )
        for seed in (5, 5)
    ]
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)


def test_substream_isolates_a_calls_word_count():
    secure = RandomSource()
    assert secure.substream() is secure
    # A seeded call takes four words from the caller's stream, however many
    # its child uses, so the caller's next words do not depend on it.
    a, b = check_random_source(6), check_random_source(6)
    a.substream().words(10)
    b.substream().words(1000)
    assert a.words(3).tolist() == b.words(3).tolist()
