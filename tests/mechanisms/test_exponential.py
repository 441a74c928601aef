"""The exponential mechanism's exact sampler: quantisation, exponents, tails."""

import math
from fractions import Fraction

import numpy as np
import pytest
from _stat_checks import binomial_ok

from skdp.accounting import ExponentialMechanismEvent
from skdp.mechanisms import _bernoulli, exponential_mechanism
from skdp.mechanisms._bernoulli import sample_exp_weights
from skdp.mechanisms._exponential import _exponents, _floor_scaled, _grid_bits
from skdp.utils import check_random_source

Z = 5.0  # standard errors allowed


def _exact_floor(score, bits, sensitivity):
    return math.floor(Fraction(score) * 2**bits / Fraction(sensitivity))


@pytest.mark.parametrize("sensitivity", [1.0, 0.1, 3e-7, 2.5e5])
def test_floor_scaled_is_exact(sensitivity):
    rng = np.random.default_rng(50)
    scores = np.concatenate(
        [
            rng.normal(size=200) * 10.0 ** rng.integers(-12, 12, size=200),
            [0.0, -0.0, 1.0, -1.0, sensitivity, -sensitivity, 5e-324, -1e-300],
        ]
    )
    for bits in (0, 20, 40):
        steps = _floor_scaled(scores, bits, sensitivity)
        expected = [_exact_floor(s, bits, sensitivity) for s in scores]
        assert [int(v) for v in steps] == expected
    # Huge scores take the Python-integer path, still exact.
    huge = np.array([1e300, -1e300, 12345.678])
    assert [int(v) for v in _floor_scaled(huge, 20, sensitivity)] == [
        _exact_floor(s, 20, sensitivity) for s in huge
    ]


def test_quantised_scores_keep_the_sensitivity():
    # If |u - u'| <= Delta then floor(u 2**k / Delta) and floor(u' 2**k /
    # Delta) differ by at most 2**k: the mechanism is calibrated to that.
    rng = np.random.default_rng(51)
    for sensitivity in (1.0, 0.3, 7e-5):
        bits = 20
        u = rng.normal(size=2000) * sensitivity * 50
        # Neighbours at distance up to Delta, many at exactly Delta, and
        # some just across a grid line.
        offsets = sensitivity * rng.choice([-1.0, 1.0, 0.5, -0.999999], size=2000)
        v = u + offsets
        close = np.array(
            [
                abs(Fraction(a) - Fraction(b)) <= Fraction(sensitivity)
                for a, b in zip(u, v)
            ]
        )
        steps_u = _floor_scaled(u[close], bits, sensitivity)
        steps_v = _floor_scaled(v[close], bits, sensitivity)
        assert close.sum() > 1000
        assert np.abs(steps_u - steps_v).max() <= 2**bits


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("epsilon, sensitivity", [(2.0, 1.0), (0.3, 0.7), (50.0, 1e-3)])
def test_exponents_are_the_mechanisms_rounded_down(epsilon, sensitivity, monotonic):
    factor = 1 if monotonic else 2
    scores = np.array([0.0, -0.5, -3.0, -10.0, 2.25]) * factor * sensitivity / epsilon
    gaps, steps_per_unit = _exponents(scores, sensitivity, epsilon, monotonic)
    bits = _grid_bits(epsilon)
    # The rate per grid step, 1 / L, is epsilon / (factor 2**k) rounded down
    # by a relative 2**-20 at most.
    ideal = Fraction(epsilon) / (factor * 2**bits)
    assert Fraction(1, steps_per_unit) <= ideal
    assert Fraction(1, steps_per_unit) >= ideal * (1 - Fraction(1, 2**20))
    # So each exponent is epsilon (max u - u_i) / (factor Delta) up to one
    # grid step of quantisation and the rounding of the rate.
    top = Fraction(float(scores.max()))
    for score, gap in zip(scores, gaps):
        exact = Fraction(epsilon) * (top - Fraction(float(score)))
        exact /= factor * Fraction(sensitivity)
        got = Fraction(int(gap), steps_per_unit)
        assert abs(got - exact) <= Fraction(1, steps_per_unit) + exact / 2**20
    if (epsilon, sensitivity) == (2.0, 1.0):  # dyadic: no rounding at all
        expected = [2.25, 2.75, 5.25, 12.25, 0.0]
        assert [Fraction(int(g), steps_per_unit) for g in gaps] == expected


def test_selection_probabilities_at_gaps_3_and_10():
    # The mechanism's own exponents, sampled 2e6 times at once.
    gaps, steps_per_unit = _exponents(np.array([0.0, -3.0, -10.0]), 1.0, 2.0, False)
    n = 2_000_000
    draws = sample_exp_weights(gaps, steps_per_unit, check_random_source(52), size=n)
    p = np.exp([0.0, -3.0, -10.0])
    p /= p.sum()
    counts = np.bincount(draws, minlength=3)
    for i in range(3):  # index 2 has probability 4.3e-5: ~86 expected
        assert binomial_ok(counts[i], n, p[i], Z), i


@pytest.mark.parametrize("n_low", [1, 20])  # Python-integer, vectorised path
def test_gap_45_is_accepted_with_an_exact_exponent(monkeypatch, n_low):
    # exp(-45) = 2.9e-20 is too rare to observe. Every proposal of a low
    # candidate must be accepted with Bernoulli(exp(-gamma)) for gamma
    # exactly 45 (Algorithm 1 then makes that probability exact, see
    # tests/mechanisms/test_bernoulli.py); the Gumbel-max draw used before could
    # never select it.
    exponents = []
    fast, slow = _bernoulli._bernoulli_exp_neg_fast, _bernoulli._py_bernoulli_exp_neg

    def record_fast(whole, fraction, denominator, source):
        exponents.extend(
            w + Fraction(int(f), denominator) for w, f in zip(whole, fraction)
        )
        return fast(whole, fraction, denominator, source)

    def record_slow(numerator, denominator, source):
        exponents.append(Fraction(numerator, denominator))
        return slow(numerator, denominator, source)

    monkeypatch.setattr(_bernoulli, "_bernoulli_exp_neg_fast", record_fast)
    monkeypatch.setattr(_bernoulli, "_py_bernoulli_exp_neg", record_slow)
    scores = [0.0] + [-45.0] * n_low
    source = check_random_source(53)
    for _ in range(20):
        index, _ = exponential_mechanism(scores, 1.0, 2.0, random_state=source)
        assert index == 0
    assert set(exponents) == {0, 45}


def test_huge_scores_use_python_integers():
    # Scores near 1e20 quantise beyond int64 (1e20 * 2**21 > 2**63); their
    # gaps are small again. Gap 16384 with Delta = 16384 and epsilon = 2 is
    # an exponent gap of 1.
    scores = [1e20, 1e20 - 16384.0]
    source = check_random_source(54)
    n = 1500
    hits = sum(
        exponential_mechanism(scores, 16384.0, 2.0, random_state=source)[0]
        for _ in range(n)
    )
    p = math.exp(-1) / (1 + math.exp(-1))
    assert binomial_ok(hits, n, p, Z)


def test_one_dominant_candidate_among_100000():
    scores = np.zeros(100_000)
    scores[777] = 100.0
    for seed in range(3):
        index, event = exponential_mechanism(scores, 1.0, 1.0, random_state=seed)
        assert index == 777
    assert event == ExponentialMechanismEvent(1.0)


def test_exponential_mechanism_is_reproducible_with_a_seed():
    scores = np.linspace(0, 3, 50)
    a = [exponential_mechanism(scores, 1.0, 1.0, random_state=s)[0] for s in range(20)]
    b = [exponential_mechanism(scores, 1.0, 1.0, random_state=s)[0] for s in range(20)]
    assert a == b
    assert len(set(a)) > 1
