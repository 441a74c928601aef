"""Immutable records of what a mechanism did, separate from how it is accounted.

A :class:`PrivacyEvent` says *what happened* (a Laplace draw with a given
epsilon, a Gaussian draw with a given noise multiplier, ``steps`` rounds of a
Poisson-subsampled Gaussian, ...). How much privacy that costs in composition
is decided by an accountant (:class:`skdp.accounting.RDPAccountant`). An event
class never changes meaning; a new kind of mechanism gets a new class.

Every event carries a ``label`` saying what spent it. Events are frozen
dataclasses: hashable, comparable, picklable, and serialisable to plain
dictionaries with :func:`event_to_dict` / :func:`event_from_dict` so that a
ledger can store them outside the process.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "ApproxDPEvent",
    "ComposedEvent",
    "ExponentialMechanismEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PoissonSubsampledGaussianEvent",
    "PrivacyEvent",
    "PureDPEvent",
    "ZCDPEvent",
    "event_from_dict",
    "event_to_dict",
]

_REGISTRY: dict[str, type[PrivacyEvent]] = {}


def _check_finite_positive(name: str, value: float, *, allow_zero: bool = False):
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    return value


@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of all privacy events.

    Parameters
    ----------
    label : str, default=""
        What spent the privacy (an estimator and its parameters, a mechanism).
    """

    label: str = field(default="", kw_only=True)
    kind: ClassVar[str] = "event"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.kind] = cls

    def with_label(self, label: str) -> PrivacyEvent:
        """Return a copy of the event with another ``label``."""
        return dataclasses.replace(self, label=label)


@dataclass(frozen=True)
class PureDPEvent(PrivacyEvent):
    """A mechanism that is ``epsilon``-differentially private (delta = 0).

    Use the more specific :class:`LaplaceEvent` or
    :class:`ExponentialMechanismEvent` where they apply; this class covers
    other pure mechanisms such as the vector noise of objective and output
    perturbation.

    Parameters
    ----------
    epsilon : float
        The pure-DP parameter, > 0.
    label : str, default=""
        What spent it.
    """

    epsilon: float
    kind: ClassVar[str] = "pure_dp"

    def __post_init__(self):
        object.__setattr__(
            self, "epsilon", _check_finite_positive("epsilon", self.epsilon)
        )


@dataclass(frozen=True)
class LaplaceEvent(PureDPEvent):
    """One release of the Laplace mechanism, ``epsilon``-DP.

    Examples
    --------
    >>> from skdp.accounting import LaplaceEvent
    >>> LaplaceEvent(0.5, label="count")
    LaplaceEvent(label='count', epsilon=0.5)
    """

    kind: ClassVar[str] = "laplace"


@dataclass(frozen=True)
class ExponentialMechanismEvent(PureDPEvent):
    """One selection by the exponential mechanism, ``epsilon``-DP.

    The mechanism samples with probability proportional to
    ``exp(epsilon * score / (2 * sensitivity))`` (McSherry & Talwar 2007),
    which is also ``epsilon``-bounded-range (Durfee & Rogers 2019); the
    accountant may use that for a tighter Renyi-DP curve.
    """

    kind: ClassVar[str] = "exponential_mechanism"


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """One release of the Gaussian mechanism.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise divided by the L2 sensitivity of the
        released quantity, > 0.
    label : str, default=""
        What spent it.

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent
    >>> GaussianEvent(2.0).noise_multiplier
    2.0
    """

    noise_multiplier: float
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self):
        object.__setattr__(
            self,
            "noise_multiplier",
            _check_finite_positive("noise_multiplier", self.noise_multiplier),
        )


@dataclass(frozen=True)
class PoissonSubsampledGaussianEvent(PrivacyEvent):
    """``steps`` rounds of a Gaussian mechanism on a Poisson subsample.

    Each round includes every row independently with probability
    ``sampling_rate`` and releases a sum of per-row contributions of L2 norm
    at most ``C``, plus Gaussian noise of standard deviation
    ``noise_multiplier * C``: one DP-SGD training run (Abadi et al. 2016).

    The accountant analyses it under skdp's neighbouring relation, replacing
    one row, where one row can move the sum by ``2C``
    (:func:`~skdp.accounting.rdp_poisson_subsampled_gaussian_replace_one`).

    Parameters
    ----------
    sampling_rate : float
        Probability that a row is in a round's sample, in (0, 1].
    noise_multiplier : float
        Noise standard deviation over sensitivity, > 0.
    steps : int
        Number of rounds, >= 1.
    label : str, default=""
        What spent it.
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    kind: ClassVar[str] = "poisson_subsampled_gaussian"

    def __post_init__(self):
        q = _check_finite_positive("sampling_rate", self.sampling_rate)
        if q > 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {q!r}.")
        object.__setattr__(self, "sampling_rate", q)
        object.__setattr__(
            self,
            "noise_multiplier",
            _check_finite_positive("noise_multiplier", self.noise_multiplier),
        )
        if (
            isinstance(self.steps, bool)
            or int(self.steps) != self.steps
            or self.steps < 1
        ):
            raise ValueError(f"steps must be an integer >= 1, got {self.steps!r}.")
        object.__setattr__(self, "steps", int(self.steps))


@dataclass(frozen=True)
class ZCDPEvent(PrivacyEvent):
    """A mechanism satisfying ``rho``-zero-concentrated DP (Bun & Steinke 2016)."""

    rho: float
    kind: ClassVar[str] = "zcdp"

    def __post_init__(self):
        object.__setattr__(self, "rho", _check_finite_positive("rho", self.rho))


@dataclass(frozen=True)
class ApproxDPEvent(PrivacyEvent):
    """A mechanism known only to be ``(epsilon, delta)``-DP.

    The accountant composes these with basic composition (epsilons add,
    deltas add); prefer a more specific event when one fits.
    """

    epsilon: float
    delta: float
    kind: ClassVar[str] = "approx_dp"

    def __post_init__(self):
        object.__setattr__(
            self, "epsilon", _check_finite_positive("epsilon", self.epsilon)
        )
        delta = _check_finite_positive("delta", self.delta, allow_zero=True)
        if delta >= 1:
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        object.__setattr__(self, "delta", delta)


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Several events applied to the same data, in order.

    Parameters
    ----------
    events : tuple of PrivacyEvent
        The parts; nested compositions are allowed.
    label : str, default=""
        What spent it.

    Examples
    --------
    >>> from skdp.accounting import ComposedEvent, LaplaceEvent
    >>> ev = ComposedEvent((LaplaceEvent(0.1), LaplaceEvent(0.2)), label="two counts")
    >>> len(ev.events)
    2
    """

    events: tuple[PrivacyEvent, ...] = ()
    kind: ClassVar[str] = "composed"

    def __post_init__(self):
        events = tuple(self.events)
        for ev in events:
            if not isinstance(ev, PrivacyEvent):
                raise TypeError(
                    f"ComposedEvent parts must be PrivacyEvent, got {ev!r}."
                )
        object.__setattr__(self, "events", events)

    def leaves(self) -> tuple[PrivacyEvent, ...]:
        """All non-composed events inside, depth first."""
        out: list[PrivacyEvent] = []
        for ev in self.events:
            out.extend(ev.leaves() if isinstance(ev, ComposedEvent) else (ev,))
        return tuple(out)


def event_to_dict(event: PrivacyEvent) -> dict[str, Any]:
    """Serialise an event to JSON-compatible builtins.

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent, event_from_dict, event_to_dict
    >>> ev = GaussianEvent(1.5, label="mean")
    >>> event_from_dict(event_to_dict(ev)) == ev
    True
    """
    out: dict[str, Any] = {"kind": event.kind}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "events":
            value = [event_to_dict(e) for e in value]
        out[f.name] = value
    return out


def event_from_dict(data: dict[str, Any]) -> PrivacyEvent:
    """Rebuild an event serialised by :func:`event_to_dict`."""
    data = dict(data)
    try:
        cls = _REGISTRY[data.pop("kind")]
    except KeyError as exc:
        raise ValueError(f"Unknown privacy event kind in {data!r}.") from exc
    if "events" in data:
        data["events"] = tuple(event_from_dict(e) for e in data["events"])
    return cls(**data)
