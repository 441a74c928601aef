"""The accountants' shared contract, and what the default one chooses."""

import math
import pickle

import numpy as np
import pytest

from skdp.accounting import (
    Accountant,
    ApproxDPEvent,
    ComposedEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    NeighbouringRelation,
    PLDAccountant,
    PoissonSubsampledGaussianEvent,
    PrivacyAccountant,
    PureDPEvent,
    RDPAccountant,
    RepeatedRandomStoppingEvent,
    SelfComposedEvent,
    ZCDPEvent,
    gaussian_epsilon,
)
from skdp.accounting._composition import expand_events

SGD = PoissonSubsampledGaussianEvent(0.02, 1.0, 300)

ACCOUNTANTS = [
    pytest.param(PrivacyAccountant(), id="PrivacyAccountant"),
    pytest.param(PLDAccountant(), id="PLDAccountant"),
    pytest.param(RDPAccountant(), id="RDPAccountant"),
    pytest.param(PrivacyAccountant("add_remove"), id="PrivacyAccountant-add_remove"),
]


# --------------------------------------------------------------------------
# The contract every accountant keeps
# --------------------------------------------------------------------------


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_composition_is_a_fold(accountant):
    events = [LaplaceEvent(0.2), SGD, GaussianEvent(3.0)]
    state = accountant.empty()
    for event in events:
        state = accountant.extend(state, [event])
    folded = accountant.report(state, 1e-5)
    batch = accountant.compose(events, 1e-5)
    # One batch merges and orders the parts itself; the same up to rounding.
    assert folded.epsilon == pytest.approx(batch.epsilon, rel=1e-6)
    assert folded.delta == batch.delta == 1e-5


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_states_are_immutable(accountant):
    empty = accountant.empty()
    one = accountant.extend(empty, [SGD])
    accountant.extend(one, [GaussianEvent(2.0)])
    assert (
        accountant.report(one, 1e-5).epsilon == accountant.compose([SGD], 1e-5).epsilon
    )
    assert accountant.report(empty, 1e-5).epsilon == 0.0


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_labels_do_not_change_the_result(accountant):
    plain = accountant.compose([SGD, LaplaceEvent(0.1)], 1e-5)
    labelled = accountant.compose(
        [SGD.with_label("fit"), ComposedEvent((LaplaceEvent(0.1, label="x"),))], 1e-5
    )
    assert plain.epsilon == labelled.epsilon


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_self_composed_event_is_the_composed_copies(accountant):
    copies = ComposedEvent((SGD,) * 3 + (LaplaceEvent(0.1),) * 4)
    repeated = ComposedEvent(
        (SelfComposedEvent(SGD, 3), SelfComposedEvent(LaplaceEvent(0.1), 4))
    )
    assert accountant.compose([repeated], 1e-6).epsilon == pytest.approx(
        accountant.compose([copies], 1e-6).epsilon, rel=1e-9
    )


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_non_events_are_rejected_and_state_kept(accountant):
    state = accountant.extend(accountant.empty(), [SGD])
    with pytest.raises(TypeError, match="PrivacyEvent"):
        accountant.extend(state, [SGD, 0.5])
    assert accountant.report(state, 1e-5).epsilon > 0


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_accountants_are_values(accountant):
    assert isinstance(accountant, Accountant)
    clone = pickle.loads(pickle.dumps(accountant))
    assert clone == accountant and hash(clone) == hash(accountant)
    assert accountant != PLDAccountant(value_discretization_interval=2e-4)


def test_relation_is_an_attribute():
    assert PrivacyAccountant().neighbouring_relation is NeighbouringRelation.REPLACE_ONE
    add_remove = PLDAccountant("add_or_remove_one")
    assert add_remove.neighbouring_relation is NeighbouringRelation.ADD_OR_REMOVE_ONE
    assert RDPAccountant(neighbouring_relation="add_remove") != RDPAccountant()
    with pytest.raises(ValueError, match="neighbouring_relation"):
        PLDAccountant("swap")
    # Replacing a row moves the sum by 2C: it costs more than adding one.
    assert (
        PLDAccountant("add_remove").compose([SGD], 1e-5).epsilon
        < PLDAccountant().compose([SGD], 1e-5).epsilon
    )


def test_expand_events_merges_repeats():
    events = [
        SelfComposedEvent(ComposedEvent((GaussianEvent(2.0), LaplaceEvent(0.1))), 3),
        GaussianEvent(2.0, label="again"),
    ]
    assert expand_events(events) == [(GaussianEvent(2.0), 4), (LaplaceEvent(0.1), 3)]


# --------------------------------------------------------------------------
# The default accountant: the tightest valid method, named
# --------------------------------------------------------------------------


def test_pure_ledgers_stay_pure():
    report = PrivacyAccountant().compose([LaplaceEvent(0.3)] * 10, 1e-5)
    assert (report.epsilon, report.delta, report.method) == (
        pytest.approx(3.0),
        0.0,
        "basic",
    )


def test_gaussian_ledgers_use_the_exact_profile():
    report = PrivacyAccountant().compose([GaussianEvent(2.0)] * 4, 1e-5)
    assert report.method == "basic+gaussian"
    assert report.epsilon == pytest.approx(gaussian_epsilon(1.0, 1e-5), rel=1e-9)
    # The PLD is computed too, and is never below the exact value.
    assert report.candidates["pld"] >= report.epsilon


def test_subsampled_gaussian_uses_the_pld():
    report = PrivacyAccountant().compose([SGD, LaplaceEvent(0.2)], 1e-5)
    assert report.method == "pld"
    assert report.epsilon == min(report.candidates.values())
    assert set(report.candidates) == {"pld", "rdp", "basic+rdp"}


def test_events_without_a_pld_fall_back_to_renyi_for_the_whole_ledger():
    for other in (
        ZCDPEvent(0.01),
        RepeatedRandomStoppingEvent(SGD, "poisson", mean=3.0),
    ):
        report = PrivacyAccountant().compose([SGD, other], 1e-5)
        assert "pld" not in report.candidates
        assert report.epsilon == RDPAccountant().compose([SGD, other], 1e-5).epsilon
        with pytest.raises(TypeError, match="PLD accountant does not support"):
            PLDAccountant().compose([SGD, other], 1e-5)


def test_random_stopping_over_pure_events_has_a_pld():
    base = ComposedEvent((PureDPEvent(0.05), LaplaceEvent(0.05)))
    event = RepeatedRandomStoppingEvent(
        base, "truncated_negative_binomial", shape=1.0, stopping_probability=0.1
    )
    # 3 x 0.1 = 0.3-DP, which is randomised response at 0.3 for the PLD.
    pld = PLDAccountant().compose([event], 0.0).epsilon
    assert pld == pytest.approx(0.3, abs=1e-4)


def test_approximate_events_enter_the_pld_natively():
    events = [ApproxDPEvent(0.5, 1e-6), SGD]
    report = PrivacyAccountant().compose(events, 1e-5)
    assert report.candidates["rdp+approx"] > report.candidates["pld"]
    assert report.method == "pld"
    # Approximate events alone are basic composition, at their own delta.
    alone = PrivacyAccountant().compose([ApproxDPEvent(0.5, 1e-6)] * 2, 1e-5)
    assert (alone.epsilon, alone.delta, alone.method) == (1.0, 2e-6, "basic")


def test_exponential_mechanism_keeps_its_bounded_range_curve():
    # Many selections: Renyi DP with the bounded-range curve beats the PLD
    # of randomised response (an epsilon-DP pair that ignores bounded range).
    events = [ExponentialMechanismEvent(0.05)] * 200 + [GaussianEvent(20.0)]
    report = PrivacyAccountant().compose(events, 1e-6)
    assert report.method in {"rdp", "pld"}
    assert report.epsilon == min(report.candidates.values())


def test_rdp_curve_and_orders_are_on_the_default_accountant():
    accountant = PrivacyAccountant()
    np.testing.assert_array_equal(accountant.orders, RDPAccountant().orders)
    np.testing.assert_array_equal(
        accountant.rdp_curve(SGD), RDPAccountant().rdp_curve(SGD)
    )
    assert accountant.epsilon_delta([SGD], 1e-5) == (
        accountant.compose([SGD], 1e-5).epsilon,
        1e-5,
    )


def test_without_delta_gaussian_events_cannot_be_accounted():
    report = PrivacyAccountant().compose([GaussianEvent(1.0)], 0.0)
    assert report.epsilon == math.inf


def test_pld_of_one_event_is_cached():
    accountant = PLDAccountant()
    event = PoissonSubsampledGaussianEvent(0.03, 1.3, 123)
    assert accountant.pld(event) is accountant.pld(event.with_label("other"))
    assert PLDAccountant().pld(event) is accountant.pld(event)
