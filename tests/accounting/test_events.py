import pickle

import pytest

from skdp.accounting import (
    ApproxDPEvent,
    ComposedEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PureDPEvent,
    ZCDPEvent,
    event_from_dict,
    event_to_dict,
)

ALL_EVENTS = [
    LaplaceEvent(0.5, label="a"),
    PureDPEvent(1.0),
    ExponentialMechanismEvent(0.1, label="select"),
    GaussianEvent(2.0),
    PoissonSubsampledGaussianEvent(0.01, 1.1, 100, label="sgd"),
    ZCDPEvent(0.05),
    ApproxDPEvent(1.0, 1e-6),
    ComposedEvent((LaplaceEvent(0.1), ComposedEvent((GaussianEvent(3.0),))), label="c"),
]


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: type(e).__name__)
def test_events_round_trip_through_dict_and_pickle(event):
    assert event_from_dict(event_to_dict(event)) == event
    assert pickle.loads(pickle.dumps(event)) == event
    hash(event)


def test_events_are_immutable():
    event = LaplaceEvent(0.5)
    with pytest.raises(AttributeError):
        event.epsilon = 5.0


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: LaplaceEvent(0.0), "epsilon must be > 0"),
        (lambda: LaplaceEvent(float("nan")), "finite"),
        (lambda: LaplaceEvent("1"), "real number"),
        (lambda: GaussianEvent(-1.0), "noise_multiplier"),
        (lambda: PoissonSubsampledGaussianEvent(1.5, 1.0, 10), "sampling_rate"),
        (lambda: PoissonSubsampledGaussianEvent(0.1, 1.0, 0), "steps"),
        (lambda: PoissonSubsampledGaussianEvent(0.1, 1.0, 2.5), "steps"),
        (lambda: ApproxDPEvent(1.0, 1.0), "delta"),
        (lambda: ComposedEvent((1.0,)), "PrivacyEvent"),
    ],
)
def test_events_reject_invalid_parameters(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_composed_event_leaves_flatten_in_order():
    a, b, c = LaplaceEvent(0.1), GaussianEvent(2.0), LaplaceEvent(0.3)
    ev = ComposedEvent((a, ComposedEvent((b, c))))
    assert ev.leaves() == (a, b, c)


def test_with_label_returns_a_new_event():
    ev = LaplaceEvent(0.5)
    relabelled = ev.with_label("x")
    assert relabelled.label == "x" and ev.label == ""
