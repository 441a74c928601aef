"""Random-stopping repetition: distributions, RDP bounds and the event."""

import functools
import math
import pickle

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from skdp import PrivacyBudget
from skdp.accounting import (
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PureDPEvent,
    RDPAccountant,
    RepeatedRandomStoppingEvent,
    event_from_dict,
    event_to_dict,
)
from skdp.accounting._rdp import DEFAULT_ORDERS, rdp_gaussian, rdp_pure_dp
from skdp.accounting._repetition import (
    epsilon_repeated_truncated_negative_binomial,
    rdp_repeated_poisson,
    rdp_repeated_truncated_negative_binomial,
    truncated_negative_binomial_mean,
    truncated_negative_binomial_stopping_probability,
)
from skdp.model_selection._stopping import (
    sample_poisson,
    sample_truncated_negative_binomial,
)
from skdp.utils import check_random_source

ORDERS = np.asarray(DEFAULT_ORDERS)
SHAPES = [-0.5, 0.0, 0.5, 1.0, 3.0]


# --------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------


def tnb_pmf(shape, gamma, k):
    """P[K = k] of Papernot & Steinke (2022), Definition 1, from its product."""
    k = np.asarray(k, dtype=float)
    if shape == 0:
        return (1 - gamma) ** k / (k * math.log(1 / gamma))
    # prod_{l<k} (l + eta) / (l + 1) = Gamma(k + eta) / (Gamma(eta) k!)
    sign = 1.0 if shape > 0 else -1.0  # Gamma(eta) < 0 for -1 < eta < 0
    log_product = gammaln(k + shape) - gammaln(abs(shape)) - gammaln(k + 1)
    if shape < 0:
        log_product = gammaln(k + shape) - (gammaln(shape + 1) - math.log(-shape))
        log_product -= gammaln(k + 1)
    return sign * np.exp(log_product) * (1 - gamma) ** k / (gamma**-shape - 1)


def tnb_pgf(shape, gamma, x):
    """E[x**K]: ((1 - (1 - gamma) x)**-eta - 1) / (gamma**-eta - 1)."""
    if shape == 0:
        return np.log1p(-(1 - gamma) * x) / math.log(gamma)
    return np.expm1(-shape * np.log1p(-(1 - gamma) * x)) / math.expm1(
        -shape * math.log(gamma)
    )


def poisson_pgf(mean, x):
    return np.exp(mean * (x - 1))


def renyi(p, q, alpha):
    """Exact D_alpha(p || q) of two probability vectors with full support."""
    return logsumexp(alpha * np.log(p) + (1 - alpha) * np.log(q)) / (alpha - 1)


def best_of_k_distribution(p, pgf):
    """Law of the best of K draws from p on outputs ordered 0 < 1 < ...

    P[best <= y] = E[F(y)**K] = pgf(F(y)); the mass pgf(0) = P[K = 0] is the
    empty release, placed first.
    """
    cdf = np.concatenate([[0.0], np.cumsum(p)])
    cdf[-1] = 1.0
    return np.diff(np.concatenate([[0.0], pgf(cdf)]))


# --------------------------------------------------------------------------
# Distributions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gamma", [0.02, 0.3])
def test_tnb_mean_matches_the_pmf(shape, gamma):
    k = np.arange(1, 20000)
    pmf = tnb_pmf(shape, gamma, k)
    assert pmf.sum() == pytest.approx(1.0, rel=1e-10)
    assert truncated_negative_binomial_mean(shape, gamma) == pytest.approx(
        float((k * pmf).sum()), rel=1e-10
    )


def test_tnb_special_cases():
    # Geometric: mean 1 / gamma; logarithmic: (1 - gamma) / (gamma log(1/gamma)).
    assert truncated_negative_binomial_mean(1.0, 0.2) == pytest.approx(5.0)
    expected = 0.8 / (0.2 * math.log(5.0))
    assert truncated_negative_binomial_mean(0.0, 0.2) == pytest.approx(expected)
    # Continuous in the shape at 0.
    assert truncated_negative_binomial_mean(1e-9, 0.2) == pytest.approx(
        expected, rel=1e-8
    )


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mean", [1.5, 10.0, 1000.0])
def test_stopping_probability_inverts_the_mean(shape, mean):
    gamma = truncated_negative_binomial_stopping_probability(shape, mean)
    assert 0 < gamma < 1
    assert truncated_negative_binomial_mean(shape, gamma) == pytest.approx(
        mean, rel=1e-10
    )


@pytest.mark.parametrize("shape", [-0.5, 0.0, 1.0, 3.0])
def test_tnb_sampler_follows_the_pmf(shape):
    gamma = truncated_negative_binomial_stopping_probability(shape, 5.0)
    source = check_random_source(123)
    n = 20000
    draws = np.array(
        [sample_truncated_negative_binomial(shape, gamma, source) for _ in range(n)]
    )
    assert draws.min() >= 1
    # Each cell count is binomial(n, p): within 5 standard deviations (the
    # chance that any of these 6 cells fails under the true law is < 1e-5).
    for k in range(1, 7):
        p = float(tnb_pmf(shape, gamma, k))
        assert abs((draws == k).sum() - n * p) < 5 * math.sqrt(n * p * (1 - p))
    # Mean within 5 standard errors, variance from the pmf.
    ks = np.arange(1, 100000)
    pmf = tnb_pmf(shape, gamma, ks)
    variance = float((ks**2 * pmf).sum()) - 5.0**2
    assert abs(draws.mean() - 5.0) < 5 * math.sqrt(variance / n)


@pytest.mark.parametrize("mean", [0.3, 4.0, 40.0])
def test_poisson_sampler_mean_and_variance(mean):
    source = check_random_source(7)
    n = 20000
    draws = np.array([sample_poisson(mean, source) for _ in range(n)])
    # Mean within 5 standard errors (variance = mean); P[K = 0] = exp(-mean).
    assert abs(draws.mean() - mean) < 5 * math.sqrt(mean / n)
    p0 = math.exp(-mean)
    assert abs((draws == 0).sum() - n * p0) < 5 * math.sqrt(n * p0 * (1 - p0)) + 1


# --------------------------------------------------------------------------
# RDP bounds: closed forms
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_tnb_bound_is_theorem_2(shape):
    """Brute force over (lambda, lambda_hat) of Papernot & Steinke, Theorem 2."""
    gamma = truncated_negative_binomial_stopping_probability(shape, 10.0)
    orders = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 64.0])
    base = rdp_gaussian(2.0, orders)
    mean = truncated_negative_binomial_mean(shape, gamma)
    expected = []
    for lam, eps in zip(orders, base):
        candidates = [
            eps
            + (1 + shape)
            * ((1 - 1 / lam_hat) * eps_hat + math.log(1 / gamma) / lam_hat)
            + math.log(mean) / (lam - 1)
            for lam_hat, eps_hat in [(1.0, 0.0), *zip(orders, base)]
        ]
        expected.append(min(candidates))
    expected = np.minimum.accumulate(np.array(expected)[::-1])[::-1]
    got = rdp_repeated_truncated_negative_binomial(base, orders, shape, gamma)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_pure_dp_limit_is_liu_talwar():
    """Pure eps runs, lambda and lambda_hat to infinity: (2 + eta) eps."""
    epsilon = 0.5
    orders = np.geomspace(1.5, 1e9, 400)
    for shape in (0.0, 1.0, 2.0):
        gamma = truncated_negative_binomial_stopping_probability(shape, 10.0)
        curve = rdp_repeated_truncated_negative_binomial(
            np.full(orders.shape, epsilon), orders, shape, gamma
        )
        assert curve[-1] == pytest.approx((2 + shape) * epsilon, rel=1e-6)
        assert curve[-1] >= (2 + shape) * epsilon


def test_poisson_bound_is_theorem_6():
    orders = np.array([1.5, 2.0, 4.0, 8.0, 16.0])
    base = rdp_gaussian(3.0, orders)
    mean = 5.0
    expected = []
    for lam, eps in zip(orders, base):
        eps_hat = math.log(1 + 1 / (lam - 1))
        log_deltas = [
            (a - 1) * (r - eps_hat + math.log(1 - 1 / a)) - math.log(a)
            for a, r in zip(orders, base)
        ]
        delta_hat = min(math.exp(min(log_deltas)), math.sqrt(1 - math.exp(-base[0])))
        expected.append(eps + mean * delta_hat + math.log(mean) / (lam - 1))
    expected = np.minimum.accumulate(np.array(expected)[::-1])[::-1]
    got = rdp_repeated_poisson(base, orders, mean)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("sigma", [0.8, 2.0, 5.0])
@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, math.inf])
def test_matches_dp_accounting(sigma, shape):
    """dp_accounting's RepeatAndSelect (shape=inf is Poisson) as an oracle."""
    dp_rdp = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    oracle = getattr(dp_rdp, "_compute_rdp_repeat_and_select", None)
    if oracle is None:
        pytest.skip("this dp_accounting has no repeat-and-select")
    mean = 10.0
    base = rdp_gaussian(sigma, ORDERS)
    theirs = np.asarray(oracle(ORDERS, base, mean, shape))
    # Their Poisson curve is not made non-decreasing in the order; ours is.
    theirs = np.minimum.accumulate(theirs[::-1])[::-1]
    if shape == math.inf:
        ours = rdp_repeated_poisson(base, ORDERS, mean)
    else:
        gamma = truncated_negative_binomial_stopping_probability(shape, mean)
        ours = rdp_repeated_truncated_negative_binomial(base, ORDERS, shape, gamma)
    # Same theorem; theirs rounds gamma down by up to 1e-9 relative (slightly
    # larger bound), ours may also use lambda_hat = 1 (smaller or equal).
    assert np.all(ours <= theirs * (1 + 1e-8))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


# --------------------------------------------------------------------------
# RDP bounds: against the exact divergence of a toy repeated mechanism
# --------------------------------------------------------------------------


def _toy_pairs():
    """Neighbouring output laws of small pure-DP mechanisms (ordered outputs)."""
    rng = np.random.default_rng(0)
    pairs = []
    for epsilon in (0.2, 1.0, 2.0):
        for _ in range(3):
            # Exponential mechanism over 6 ordered outputs, utility
            # sensitivity 1: epsilon-DP.
            utility = rng.uniform(0, 3, size=6)
            shift = rng.uniform(-1, 1, size=6)
            p = np.exp(epsilon * utility / 2)
            q = np.exp(epsilon * (utility + shift) / 2)
            pairs.append((p / p.sum(), q / q.sum()))
    return pairs


def _exact_curve(p, q, orders):
    return np.array([max(renyi(p, q, a), renyi(q, p, a)) for a in orders])


TOY_ORDERS = np.array([1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 200.0])


@pytest.mark.parametrize("shape", SHAPES)
def test_tnb_bound_dominates_the_exact_divergence(shape):
    gamma = truncated_negative_binomial_stopping_probability(shape, 8.0)
    for p, q in _toy_pairs():
        base = _exact_curve(p, q, TOY_ORDERS)
        bound = rdp_repeated_truncated_negative_binomial(base, TOY_ORDERS, shape, gamma)
        a = best_of_k_distribution(p, lambda x: tnb_pgf(shape, gamma, x))[1:]
        b = best_of_k_distribution(q, lambda x: tnb_pgf(shape, gamma, x))[1:]
        exact = _exact_curve(a, b, TOY_ORDERS)
        assert np.all(exact <= bound + 1e-12)
        # Never below one run's curve (K >= 1 always).
        assert np.all(bound >= base - 1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_pure_bound_dominates_the_exact_max_divergence(shape):
    """(2 + eta) eps-DP: the largest log-ratio of the repeated toy mechanisms."""
    for mean in (1.5, 8.0, 100.0):
        gamma = truncated_negative_binomial_stopping_probability(shape, mean)
        for p, q in _toy_pairs():
            epsilon = float(np.max(np.abs(np.log(p / q))))
            pgf = functools.partial(tnb_pgf, shape, gamma)
            a = best_of_k_distribution(p, pgf)[1:]
            b = best_of_k_distribution(q, pgf)[1:]
            exact = float(np.max(np.abs(np.log(a / b))))
            bound = epsilon_repeated_truncated_negative_binomial(epsilon, shape)
            assert exact <= bound + 1e-9
            assert bound == pytest.approx((2 + shape) * epsilon)


def test_pure_route_in_the_accountant():
    gamma = truncated_negative_binomial_stopping_probability(0.0, 10.0)
    pure_base = ComposedEvent((PureDPEvent(0.2), LaplaceEvent(0.05)))
    event = RepeatedRandomStoppingEvent(
        pure_base,
        "truncated_negative_binomial",
        shape=0.0,
        stopping_probability=gamma,
    )
    accountant = RDPAccountant()
    report = accountant.compose([event], delta=0.0)
    assert report.method == "basic" and report.epsilon == pytest.approx(0.5)
    # With another pure event it still composes by addition at delta = 0.
    assert accountant.compose([event, LaplaceEvent(0.1)], 0.0).epsilon == (
        pytest.approx(0.6)
    )
    # Next to a Gaussian event the pure part enters both ways.
    mixed = accountant.compose([event, GaussianEvent(5.0)], 1e-6)
    assert mixed.candidates["basic+rdp"] == pytest.approx(
        0.5 + accountant.compose([GaussianEvent(5.0)], 1e-6).candidates["rdp"]
    )
    # A Gaussian base, or the Poisson law, has no pure epsilon.
    for other in (
        _event(),
        RepeatedRandomStoppingEvent(pure_base, "poisson", mean=3.0),
    ):
        assert math.isinf(accountant.compose([other], 0.0).epsilon)
    assert PrivacyBudget(1.0).check(event)


@pytest.mark.parametrize("mean", [1.0, 3.0, 20.0])
def test_poisson_bound_dominates_the_exact_divergence(mean):
    for p, q in _toy_pairs():
        base = _exact_curve(p, q, TOY_ORDERS)
        bound = rdp_repeated_poisson(base, TOY_ORDERS, mean)
        a = best_of_k_distribution(p, lambda x: poisson_pgf(mean, x))
        b = best_of_k_distribution(q, lambda x: poisson_pgf(mean, x))
        exact = _exact_curve(a, b, TOY_ORDERS)
        assert np.all(exact <= bound + 1e-12)
        assert np.all(bound >= base - 1e-12)


def test_poisson_bound_needs_mean_at_least_one():
    """Below mean 1 the formula is not a bound: the exact divergence exceeds it."""
    p, q = _toy_pairs()[4]
    base = _exact_curve(p, q, TOY_ORDERS)
    mean = 0.5
    formula = base + mean + math.log(mean) / (TOY_ORDERS - 1)  # delta_hat <= 1
    a = best_of_k_distribution(p, lambda x: poisson_pgf(mean, x))
    b = best_of_k_distribution(q, lambda x: poisson_pgf(mean, x))
    assert np.any(_exact_curve(a, b, TOY_ORDERS) > formula)
    with pytest.raises(ValueError, match="mean must be finite and >= 1"):
        rdp_repeated_poisson(base, TOY_ORDERS, mean)
    with pytest.raises(ValueError, match="mean must be >= 1"):
        RepeatedRandomStoppingEvent(PureDPEvent(1.0), "poisson", mean=mean)


def test_repetition_costs_more_than_one_run_but_far_less_than_composition():
    base = rdp_pure_dp(0.3, ORDERS)
    gamma = truncated_negative_binomial_stopping_probability(1.0, 10.0)
    repeated = rdp_repeated_truncated_negative_binomial(base, ORDERS, 1.0, gamma)
    assert np.all(repeated >= base)
    accountant = RDPAccountant()
    one = accountant.epsilon_delta([PureDPEvent(0.3)], 1e-6)[0]
    event = RepeatedRandomStoppingEvent(
        PureDPEvent(0.3),
        "truncated_negative_binomial",
        shape=1.0,
        stopping_probability=gamma,
    )
    total = accountant.epsilon_delta([event], 1e-6)[0]
    ten_runs = accountant.epsilon_delta([PureDPEvent(0.3)] * 10, 1e-6)[0]
    assert one < total <= 3 * 0.3 * 1.05 < ten_runs


def test_tiny_pure_epsilon_has_a_non_negative_curve():
    for epsilon in (1e-7, 1e-8, 1e-9, 1e-12):
        assert np.all(rdp_pure_dp(epsilon, ORDERS) >= 0)


def test_infinite_base_curve_stays_infinite():
    orders = np.array([2.0, 4.0])
    inf = np.full(2, np.inf)
    assert np.all(
        np.isinf(rdp_repeated_truncated_negative_binomial(inf, orders, 1, 0.5))
    )
    assert np.all(np.isinf(rdp_repeated_poisson(inf, orders, 2.0)))


# --------------------------------------------------------------------------
# The event
# --------------------------------------------------------------------------


def _event(**kwargs):
    base = ComposedEvent((GaussianEvent(4.0), LaplaceEvent(0.05)), label="trial")
    law = {
        "distribution": "truncated_negative_binomial",
        "shape": 1.0,
        "stopping_probability": 0.1,
    }
    law.update(kwargs)
    return RepeatedRandomStoppingEvent(base, **law, label="search")


def test_event_round_trips_and_reports_its_mean():
    for event in (
        _event(),
        _event(distribution="poisson", shape=None, stopping_probability=None, mean=3.0),
    ):
        assert event_from_dict(event_to_dict(event)) == event
        assert pickle.loads(pickle.dumps(event)) == event
        hash(event)
    assert _event().expected_runs == pytest.approx(10.0)
    assert _event(shape=0.0, stopping_probability=0.2).expected_runs == pytest.approx(
        truncated_negative_binomial_mean(0.0, 0.2)
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"distribution": "uniform"}, "distribution must be"),
        ({"shape": -1.0}, "shape must be finite and > -1"),
        ({"stopping_probability": 1.0}, "stopping_probability must be in"),
        ({"shape": None}, "needs shape and stopping_probability"),
        ({"mean": 2.0}, "mean is only for the Poisson"),
        ({"distribution": "poisson"}, "only for the truncated negative"),
        (
            {"distribution": "poisson", "shape": None, "stopping_probability": None},
            "needs its mean",
        ),
    ],
)
def test_event_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _event(**kwargs)


def test_accountant_and_budget_use_the_curve():
    event = _event()
    accountant = RDPAccountant()
    base_curve = accountant.rdp_curve(event.base_event)
    expected = rdp_repeated_truncated_negative_binomial(base_curve, ORDERS, 1.0, 0.1)
    np.testing.assert_array_equal(accountant.rdp_curve(event), expected)
    report = accountant.compose([event], 1e-6)
    assert report.method == "rdp"
    assert report.epsilon > accountant.compose([event.base_event], 1e-6).epsilon
    budget = PrivacyBudget(10.0, 1e-6)
    budget.spend(event)
    assert budget.spent()[0] == pytest.approx(report.epsilon)
    assert "RepeatedRandomStoppingEvent(base_event=ComposedEvent(" in budget.summary()
    # Without delta, Renyi DP gives no finite epsilon: refused, nothing recorded.
    assert not PrivacyBudget(10.0).check(event)


def test_event_survives_a_sqlite_ledger(tmp_path):
    path = tmp_path / "ledger.db"
    event = _event()
    budget = PrivacyBudget(10.0, 1e-6, ledger=str(path))
    budget.spend(event)
    reopened = PrivacyBudget.from_ledger(str(path))
    assert reopened.ledger[0].event == event
    assert reopened.spent() == budget.spent()
