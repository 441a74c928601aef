"""OnlinePMW: calibration, the single charge, exhaustion, validation, accuracy."""

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError

from skdp.accounting import PrivacyBudget
from skdp.datasets import make_lecture_example
from skdp.exceptions import BudgetExceededError, ChargedFitError, PrivacyLeakWarning
from skdp.mechanisms import add_noise
from skdp.synthesis import OnlinePMW
from skdp.synthesis._online import _projection_step
from skdp.utils import check_random_source

BITS = [[0, 1]] * 3
WEIGHTS = np.array([4, 2, 1])  # bits -> cell index, 000 ... 111


def _rows(n, distribution, seed=0):
    rng = np.random.default_rng(seed)
    example = make_lecture_example(random_state=0)
    return example.universe[rng.choice(8, size=n, p=distribution)]


def _histogram(rows):
    return np.bincount(rows @ WEIGHTS, minlength=8) / len(rows)


def _lecture_rows(n, seed=0):
    return _rows(n, make_lecture_example(random_state=0).true_distribution, seed)


# -- calibration ---------------------------------------------------------------


def test_noise_scales_follow_the_stated_split():
    n, c, eps = 1000, 7, 2.0
    pmw = OnlinePMW(BITS, epsilon=eps, max_updates=c, random_state=0)
    pmw.fit(_lecture_rows(n))
    delta = 1 / n
    eps_svt = eps / 2
    eps_1 = eps_svt / (1 + (2 * c) ** (2 / 3))
    eps_2 = eps_svt - eps_1
    scales = pmw.noise_scales_
    # The grid slack adds about 2**-32 relative; the bounds are 1e-6.
    assert scales["threshold"] == pytest.approx(delta / eps_1, rel=1e-6)
    assert scales["test"] == pytest.approx(2 * c * delta / eps_2, rel=1e-6)
    assert scales["measurement"] == pytest.approx(c * delta / (eps - eps_svt), rel=1e-6)
    # Default threshold: 4 times the test's two scales.
    assert pmw.threshold_ == pytest.approx(
        4 * (scales["threshold"] + scales["test"]), rel=1e-12
    )
    # The proof's grid conditions (Notes): each noise covers the other's rounding.
    rho = pmw.privacy_plan(_lecture_rows(n)).settings["rho"]
    nu = pmw.privacy_plan(_lecture_rows(n)).settings["nu"]
    assert rho.sensitivity >= delta + nu.gamma
    assert nu.sensitivity >= delta + (nu.gamma + rho.gamma) / 2


def test_threshold_noise_is_calibrated():
    # The fit's noisy threshold is the first draw of its plan "rho" from the
    # seeded source; m draws of that plan: tau - T ~ Lap(b), E|tau - T| = b,
    # sd of the mean b / sqrt(m): m = 20,000 gives 0.7 %, tolerance 5 sd.
    rows = _lecture_rows(200)
    pmw = OnlinePMW(BITS, max_updates=3, threshold=0.5, random_state=7).fit(rows)
    rho = pmw.privacy_plan(rows).settings["rho"]
    first = add_noise(rho, 0.5, check_random_source(7))
    assert pmw._noisy_threshold == first
    m = 20_000
    draws = add_noise(rho, np.full(m, 0.5), check_random_source(0))
    b = pmw.noise_scales_["threshold"]
    assert np.mean(np.abs(draws - 0.5)) == pytest.approx(b, rel=5 / math.sqrt(m))


def test_query_noise_is_calibrated_through_the_pass_rate():
    # An all-zero query has error 0 exactly and its update changes nothing,
    # so each one passes independently with probability P(nu >= tau) for
    # the fit's noisy threshold tau, nu ~ Lap(b_test). Summed over fits, the
    # passes have mean sum(K pi) and variance sum(K pi (1 - pi)); the
    # tolerance is 5 sd.
    rows = _lecture_rows(1000)
    n_fits, k = 6, 200
    expected, variance, passes = 0.0, 0.0, 0
    for seed in range(n_fits):
        pmw = OnlinePMW(BITS, max_updates=1000, threshold=1.0, random_state=seed).fit(
            rows
        )
        b, tau = pmw.noise_scales_["test"], pmw._noisy_threshold
        pi = 0.5 * math.exp(-tau / b) if tau >= 0 else 1 - 0.5 * math.exp(tau / b)
        pmw.answer(np.zeros((k, 8)))
        passes += pmw.n_updates_
        expected += k * pi
        variance += k * pi * (1 - pi)
    assert abs(passes - expected) <= 5 * math.sqrt(variance)
    assert 0.1 * n_fits * k < expected < 0.5 * n_fits * k  # an informative test


def test_measurement_noise_is_calibrated():
    # Half the rows in cell 0: q = [1, 0, ..., 0] has answer 0.5 and the
    # uniform start answers 1/8, an error far above the threshold; a step of
    # 1e-12 keeps the distribution uniform, so every query is measured:
    # 0.5 + Lap(b). E|noise| = b with sd b / sqrt(m): m = 1500 gives 2.6 %,
    # tolerance 5 sd = 13 %.
    m = 1500
    rows = _rows(200_000, [0.5, 0, 0, 0, 0, 0, 0.25, 0.25])
    pmw = OnlinePMW(BITS, max_updates=m, learning_rate=1e-12, random_state=0)
    answers = pmw.fit(rows).answer(np.tile(np.eye(8)[0], (m, 1)))
    assert pmw.n_updates_ == m
    b = pmw.noise_scales_["measurement"]
    assert 0.005 < b < 0.05  # measurable, and far from the clip at 0 and 1
    deviations = np.abs(answers - _histogram(rows)[0])
    assert np.mean(deviations) == pytest.approx(b, rel=5 / math.sqrt(m))


# -- budget --------------------------------------------------------------------


def test_fit_charges_once_for_the_whole_interaction():
    budget = PrivacyBudget(3.0)
    pmw = OnlinePMW(BITS, epsilon=1.0, max_updates=4, budget=budget, random_state=0)
    pmw.fit(_lecture_rows(2000))
    assert len(budget.ledger) == 1
    assert budget.ledger[0].event == pmw.privacy_event_
    assert budget.spent()[0] == pytest.approx(1.0)
    assert (pmw.epsilon_, pmw.delta_) == (pytest.approx(1.0), 0.0)
    pmw.answer(make_lecture_example(random_state=0).queries)
    assert len(budget.ledger) == 1  # answering spends nothing more
    # The event: the sparse vector test and max_updates Laplace measurements.
    svt, measurements = pmw.privacy_event_.events
    assert svt.epsilon == pytest.approx(0.5)
    assert measurements.count == 4
    assert measurements.event.epsilon == pytest.approx(0.5 / 4)


def test_refused_charge_leaves_nothing():
    rows = _lecture_rows(500)
    budget = PrivacyBudget(1.5)
    pmw = OnlinePMW(BITS, epsilon=1.0, budget=budget, random_state=0).fit(rows)
    with pytest.raises(BudgetExceededError):
        pmw.fit(rows)  # a second fit needs 1.0 more
    assert len(budget.ledger) == 1
    assert not hasattr(pmw, "n_updates_")
    assert not hasattr(pmw, "privacy_event_")
    assert "_histogram" not in vars(pmw)  # the first fit's data are gone too
    with pytest.raises(NotFittedError):
        pmw.answer(np.zeros(8))


def test_clone_shares_the_budget():
    budget = PrivacyBudget(5.0)
    pmw = OnlinePMW(BITS, epsilon=1.0, budget=budget, random_state=0)
    copy = clone(pmw)
    assert copy.budget is budget
    assert copy.get_params()["max_updates"] == 10
    copy.fit(_lecture_rows(100))
    assert len(budget.ledger) == 1
    assert "epsilon=1.0" in budget.ledger[0].label


# -- data-derived domain -------------------------------------------------------


def test_domain_from_data_warns_and_declared_domain_does_not():
    rows = _lecture_rows(300)
    with pytest.warns(PrivacyLeakWarning, match="domain"):
        pmw = OnlinePMW(random_state=0).fit(rows)
    assert pmw.domain_ == ((0, 1),) * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OnlinePMW(BITS, random_state=0).fit(rows)


# -- validation before the charge ------------------------------------------------


@pytest.mark.parametrize(
    "params, X, match",
    [
        ({}, [[0, 1, 2]], "outside its declared domain"),
        ({}, [[0, 1, np.nan]], "outside its declared domain"),
        ({}, [[0, 1]], "domain has 3 entries"),
        ({}, [0, 1, 1], "must be 2-D"),
        ({"epsilon": -1.0}, [[0, 1, 1]], "epsilon"),
        ({"max_updates": 0}, [[0, 1, 1]], "max_updates"),
        ({"threshold": 2.0}, [[0, 1, 1]], "threshold"),
        ({"svt_fraction": 1.0}, [[0, 1, 1]], "svt_fraction"),
        ({"domain": [[0, 1]] * 30}, [[0] * 30], "cells"),
    ],
)
def test_bad_input_raises_before_the_charge(params, X, match):
    budget = PrivacyBudget(10.0)
    pmw = OnlinePMW(BITS, budget=budget, random_state=0).set_params(**params)
    with pytest.raises(ValueError, match=match):
        pmw.fit(np.asarray(X, dtype=float) if np.ndim(X) == 2 else X)
    assert budget.ledger == []


@pytest.mark.parametrize(
    "query, match",
    [
        (np.ones(7), "shape"),
        (np.full(8, 1.5), r"\[0, 1\]"),
        (np.r_[np.nan, np.zeros(7)], "finite"),
        (lambda cells: cells[:, 0] * 2.0, r"\[0, 1\]"),
        (np.ones((2, 2, 8)), "shape"),
        (["a"] * 8, "numbers"),
    ],
)
def test_bad_query_raises_before_touching_the_data(query, match, monkeypatch):
    pmw = OnlinePMW(BITS, random_state=0).fit(_lecture_rows(500))

    def data_path(q):
        raise AssertionError("the data were read")

    monkeypatch.setattr(pmw, "_test_and_update", data_path)
    with pytest.raises(ValueError, match=match):
        pmw.answer(query)
    assert pmw.n_queries_ == 0


def test_a_batch_is_validated_whole_before_any_answer():
    pmw = OnlinePMW(BITS, random_state=0).fit(_lecture_rows(500))
    batch = np.vstack([np.zeros(8), np.full(8, 2.0)])
    with pytest.raises(ValueError):
        pmw.answer(batch)
    assert pmw.n_queries_ == 0


# -- the interaction -------------------------------------------------------------


def test_updates_stop_at_max_updates_and_then_the_data_are_not_read(monkeypatch):
    rows = _lecture_rows(5000)
    queries = make_lecture_example(random_state=0).queries
    pmw = OnlinePMW(BITS, epsilon=5.0, max_updates=3, threshold=1e-3, random_state=0)
    pmw.fit(rows)
    pmw.answer(queries)
    assert pmw.n_updates_ == 3
    assert pmw.updates_remaining_ == 0
    assert pmw.report()["reads_data"] is False
    assert pmw._histogram is None and pmw._noisy_threshold is None

    def data_path(q):
        raise AssertionError("the data were read")

    monkeypatch.setattr(pmw, "_test_and_update", data_path)
    distribution = pmw.distribution_
    answers = pmw.answer(queries)
    np.testing.assert_allclose(answers, queries @ distribution, rtol=1e-12)
    assert pmw.n_updates_ == 3
    assert pmw.report()["n_queries"] == 2 * len(queries)


def test_close_stops_reading_the_data():
    pmw = OnlinePMW(BITS, random_state=0).fit(_lecture_rows(500))
    pmw.close()
    assert pmw.updates_remaining_ == 0
    q = np.linspace(0, 1, 8)
    assert pmw.answer(q) == pytest.approx(q @ pmw.distribution_)


def test_a_failure_after_the_charge_releases_nothing(monkeypatch):
    pmw = OnlinePMW(BITS, random_state=0).fit(_lecture_rows(500))

    def broken(q):
        raise ValueError("a private value: 0.4711")

    monkeypatch.setattr(pmw, "_test_and_update", broken)
    # The answer runs on the one charge path (after fit's charge): its guard.
    with pytest.raises(ChargedFitError, match="withheld") as info:
        pmw.answer(np.ones(8))
    assert str(info.value).startswith("OnlinePMW.answer failed after charging")
    assert "no longer reads the data" in str(info.value)
    assert "0.4711" not in str(info.value) and info.value.__context__ is None
    assert pmw.report()["reads_data"] is False


def test_pickled_copies_do_not_carry_the_data():
    pmw = OnlinePMW(BITS, random_state=0).fit(_lecture_rows(500))
    copy = pickle.loads(pickle.dumps(pmw))
    assert copy._histogram is None and copy._noisy_threshold is None
    assert copy.report()["reads_data"] is False
    assert pmw.report()["reads_data"] is True  # the original is untouched
    np.testing.assert_array_equal(copy.distribution_, pmw.distribution_)


def test_predicates_are_evaluated_on_the_universe():
    pmw = OnlinePMW(BITS, max_updates=1, random_state=0).fit(_lecture_rows(500))
    pmw.close()
    assert pmw.universe_.tolist()[6] == [1, 1, 0]
    by_predicate = pmw.answer(lambda cells: cells[:, 0] == 1)
    assert by_predicate == pytest.approx(pmw.answer(np.r_[np.zeros(4), np.ones(4)]))


def test_non_numeric_domains():
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"]] * 50, dtype=object)
    pmw = OnlinePMW([["a", "b"], ["x", "y"]], random_state=0).fit(X)
    assert pmw.universe_.tolist() == [["a", "x"], ["a", "y"], ["b", "x"], ["b", "y"]]
    assert 0 <= pmw.answer(lambda cells: cells[:, 0] == "a") <= 1


def test_dataframes_and_array_domains():
    pd = pytest.importorskip("pandas")
    rows = _lecture_rows(400)
    frame = pd.DataFrame(rows, columns=["a", "b", "c"]).astype("category")
    from_frame = OnlinePMW(np.array(BITS), random_state=0).fit(frame)
    from_array = OnlinePMW(BITS, random_state=0).fit(rows)
    q = np.linspace(0, 1, 8)
    assert from_frame.answer(q) == from_array.answer(q)


def test_reproducible_with_a_seed():
    rows = _lecture_rows(3000)
    queries = make_lecture_example(random_state=0).queries
    first = OnlinePMW(BITS, random_state=3).fit(rows).answer(queries)
    again = OnlinePMW(BITS, random_state=3).fit(rows).answer(queries)
    other = OnlinePMW(BITS, random_state=4).fit(rows).answer(queries)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_accurate_at_large_epsilon():
    # Lecture universe, 20,000 rows, epsilon = 10: the measured answers are
    # within about 1e-4 and the distribution converges on the workload.
    rows = _lecture_rows(20_000)
    queries = make_lecture_example(random_state=0).queries
    truth = queries @ _histogram(rows)
    uniform_error = np.abs(queries @ np.full(8, 1 / 8) - truth).mean()
    pmw = OnlinePMW(BITS, epsilon=10.0, max_updates=20, random_state=0).fit(rows)
    answers = pmw.answer(queries)
    errors = np.abs(answers - truth)
    assert errors.mean() < 0.2 * uniform_error
    assert errors.max() < 0.02
    assert 0 < pmw.n_updates_ <= 20


def test_fixed_learning_rate_moves_by_eta():
    rows = _rows(1000, [0.5, 0, 0, 0, 0, 0, 0.25, 0.25])
    q = np.eye(8)[0]
    pmw = OnlinePMW(BITS, max_updates=2, learning_rate=0.1, random_state=0).fit(rows)
    pmw.answer(q)
    expected = np.full(8, 1.0)
    expected[0] = math.exp(0.1)  # the synthetic answer 1/8 was too low
    np.testing.assert_allclose(pmw.distribution_, expected / expected.sum())


def test_projection_step_hits_the_target():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    q = np.array([1.0, 0.0, 0.5, 1.0])
    eta = _projection_step(p, q, 0.8)
    w = p * np.exp(eta * q)
    assert w @ q / w.sum() == pytest.approx(0.8, abs=1e-9)
    assert _projection_step(p, q, 1.0) == pytest.approx(30.0)  # the capped step


def test_repr_and_params():
    pmw = OnlinePMW(BITS, epsilon=0.5)
    assert repr(pmw) == "OnlinePMW(domain=[[0, 1], [0, 1], [0, 1]], epsilon=0.5)"
    with pytest.raises(ValueError, match="Invalid parameter"):
        pmw.set_params(alpha=1)


def test_a_scikit_learn_estimator():
    # It was a class of its own with hand-written get_params / set_params
    # (issue 27); now scikit-learn's machinery serves it, as every estimator.
    budget = PrivacyBudget(5.0)
    pmw = OnlinePMW(BITS, epsilon=0.5, max_updates=3, budget=budget, random_state=1)
    assert isinstance(pmw, BaseEstimator)
    assert set(pmw.get_params()) == set(OnlinePMW._parameter_constraints)
    copy = clone(pmw)
    assert copy.get_params() == pmw.get_params() and copy.budget is budget
    assert "OnlinePMW" in pmw._repr_html_()  # scikit-learn's display
    rows = _lecture_rows(500)
    q = np.linspace(0, 1, 8)
    assert copy.fit(rows).answer(q) == pmw.fit(rows).answer(q)  # same seed
    assert len(budget.ledger) == 2


@pytest.mark.parametrize(
    "params",
    [
        {"domain": {0: [0, 1]}},
        {"domain": "01"},
        {"epsilon": True},
        {"max_updates": 2.5},
        {"learning_rate": math.inf},
        {"svt_fraction": 0.0},
        {"budget": "all of it"},
        {"random_state": "seed"},
    ],
)
def test_parameters_are_validated_by_their_constraints(params):
    budget = PrivacyBudget(10.0)
    pmw = OnlinePMW(BITS, budget=budget, random_state=0).set_params(**params)
    name = next(iter(params))
    with pytest.raises(ValueError, match=f"The '{name}' parameter of OnlinePMW"):
        pmw.fit(_lecture_rows(50))
    assert budget.ledger == []


def test_empty_and_complex_input_is_refused_with_scikit_learns_messages():
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 3\)\)"):
        OnlinePMW(BITS).fit(np.empty((0, 3)))
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(4, 0\)\)"):
        OnlinePMW().fit(np.empty((4, 0)))
    with pytest.raises(ValueError, match="Complex data not supported"):
        OnlinePMW().fit(np.ones((4, 2), dtype=complex))


def test_missing_values_are_refused_even_in_a_domain_read_from_the_data():
    # The one schema: a missing value is never a value of its own unless
    # declared (OnlinePMW declares none), whether the domain is given or read.
    budget = PrivacyBudget(10.0)
    X = np.array([[0, "a"], [1, None], [1, "b"]] * 20, dtype=object)
    with pytest.raises(ValueError, match="outside its declared domain"):
        OnlinePMW(budget=budget, random_state=0).fit(X)
    with pytest.raises(ValueError, match="include a missing value"):
        OnlinePMW([[0, 1], ["a", None]], budget=budget, random_state=0).fit(X)
    assert budget.ledger == []


def test_a_domain_read_from_the_data_is_in_natural_order():
    X = np.array([[10], [9], [100], [9]] * 10)
    with pytest.warns(PrivacyLeakWarning, match="domain"):
        pmw = OnlinePMW(random_state=0).fit(X)
    assert pmw.domain_ == ((9, 10, 100),)


def test_dask_rows_stay_on_the_workers_and_are_refused_alike(
    dask_sync, largest_task_rows, assert_same_refusal
):
    # A dask array used to be gathered into the client (np.asarray) and a
    # dask DataFrame failed on its lazy shape.
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    rows = _lecture_rows(3000)
    for on_dask in (
        da.from_array(rows, chunks=(700, 3)),
        dd.from_pandas(pd.DataFrame(rows, columns=list("abc")), npartitions=3),
    ):
        memory = OnlinePMW(BITS, epsilon=2.0, random_state=1).fit(rows)
        with largest_task_rows() as seen:
            dasked = OnlinePMW(BITS, epsilon=2.0, random_state=1).fit(on_dask)
        assert 0 < seen.rows <= 1024
        assert dasked.answer([1, 0, 1, 0, 1, 0, 1, 0]) == memory.answer(
            [1, 0, 1, 0, 1, 0, 1, 0]
        )
    outside = rows.copy()
    outside[2500, 1] = 2

    def fit(data, budget):
        OnlinePMW(BITS, budget=budget).fit(data)

    kind, message = assert_same_refusal(
        fit, outside, da.from_array(outside, chunks=(700, 3))
    )
    assert kind is ValueError and "outside its declared domain" in message
