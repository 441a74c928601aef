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
    "DiscreteGaussianEvent",
    "DiscreteLaplaceEvent",
    "ExponentialMechanismEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "ParallelComposedEvent",
    "PoissonSubsampledDiscreteGaussianEvent",
    "PoissonSubsampledGaussianEvent",
    "PrivacyEvent",
    "PureDPEvent",
    "RepeatedRandomStoppingEvent",
    "SelfComposedEvent",
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


def _check_count(name: str, value) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or int(value) != value
        or value < 1
    ):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


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
    r"""One release of the Laplace mechanism, ``epsilon``-DP.

    Examples
    --------
    >>> from skdp.accounting import LaplaceEvent
    >>> LaplaceEvent(0.5, label="count")
    LaplaceEvent(label='count', epsilon=0.5)

    Notes
    -----
    :math:`\varepsilon = \Delta_1 / b`: the L1 sensitivity (under the
    accountant's neighbouring relation) over the noise scale. Besides pure
    DP, the accountants use the privacy loss distribution of the continuous
    Laplace pair :math:`\mathrm{Lap}(0, 1)` against
    :math:`\mathrm{Lap}(\varepsilon, 1)`, which also bounds vector
    releases (``skdp.accounting._pld.pld_laplace``); an implementation
    on a grid must emit an epsilon that covers its rounding.
    """

    kind: ClassVar[str] = "laplace"


@dataclass(frozen=True)
class ExponentialMechanismEvent(PureDPEvent):
    r"""One selection by the exponential mechanism, ``epsilon``-DP.

    The mechanism samples candidate :math:`r` with probability proportional
    to :math:`\exp(\varepsilon\,u(r) / (2\Delta_u))` for scores :math:`u`
    of sensitivity :math:`\Delta_u` (McSherry & Talwar 2007), which is also
    :math:`\varepsilon`-bounded-range (Durfee & Rogers 2019); the
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

    Notes
    -----
    Accounted as the pair ``N(0, s^2)`` against ``N(1, s^2)`` (``s`` the
    noise multiplier): the exact (epsilon, delta) profile of Balle & Wang
    (2018), its privacy loss distribution, and the Renyi curve
    ``alpha / (2 s^2)``.
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
    (``rdp_poisson_subsampled_gaussian_replace_one``).

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


def _check_steps(name: str, value, minimum: float) -> float:
    """A finite real number >= ``minimum`` (a quantity in grid steps)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not (math.isfinite(value) and value >= minimum):
        raise ValueError(f"{name} must be finite and >= {minimum:g}, got {value!r}.")
    return value


@dataclass(frozen=True)
class DiscreteLaplaceEvent(PrivacyEvent):
    r"""One release of the discrete Laplace mechanism on a grid.

    Every coordinate of the released vector is a grid index (an integer)
    plus independent noise :math:`Z` with :math:`P(Z = z) \propto
    e^{-|z| / t}` (the two-sided geometric distribution, Ghosh,
    Roughgarden & Sundararajan 2009; sampled exactly by Canonne, Kamath &
    Steinke 2020, Algorithm 2). Everything is in grid steps.

    Parameters
    ----------
    noise_scale : float
        :math:`t > 0`, the noise scale in grid steps.
    sensitivity : int
        :math:`k \ge 1`, the largest L1 distance, in grid steps, between the
        grid indices released on two neighbouring datasets (an integer: both
        are integer vectors).
    label : str, default=""
        What spent it.

    Attributes
    ----------
    epsilon : float
        :math:`k / t`: the mechanism is :math:`\varepsilon`-DP.

    Notes
    -----
    Not a :class:`LaplaceEvent`: the privacy loss of the discrete pair
    :math:`P = Z`, :math:`Q = Z + k` takes the values
    :math:`(k - 2x) / t` for :math:`x = 0, \dots, k` only, with atoms of mass
    :math:`1 / (1 + r)` at :math:`+\varepsilon` and :math:`r^k / (1 + r)` at
    :math:`-\varepsilon` (:math:`r = e^{-1/t}`). For :math:`k = 1` (a count)
    it is randomised response, which composes worse than the continuous
    Laplace pair once :math:`\delta > 0`. The accountants use this exact
    loss (``skdp.accounting._pld.pld_discrete_laplace``). A vector release
    whose integer shift :math:`v` has :math:`\|v\|_1 \le k` is dominated by
    the scalar pair with shift :math:`k` (the argument of
    :class:`LaplaceEvent`'s Notes, on the integers; checked exhaustively for
    small shifts by the tests).

    Examples
    --------
    >>> from skdp.accounting import DiscreteLaplaceEvent
    >>> DiscreteLaplaceEvent(2.0, 1).epsilon
    0.5
    """

    noise_scale: float
    sensitivity: int
    kind: ClassVar[str] = "discrete_laplace"

    def __post_init__(self):
        object.__setattr__(
            self, "noise_scale", _check_finite_positive("noise_scale", self.noise_scale)
        )
        k = self.sensitivity
        if isinstance(k, bool) or not isinstance(k, int | float) or int(k) != k:
            raise ValueError(f"sensitivity must be an integer >= 1, got {k!r}.")
        if not 1 <= k <= 2**53:
            raise ValueError(f"sensitivity must be in [1, 2**53], got {k!r}.")
        object.__setattr__(self, "sensitivity", int(k))

    @property
    def epsilon(self) -> float:
        return self.sensitivity / self.noise_scale


def _check_lattice(event) -> None:
    """Validate and normalise a discrete Gaussian's multiplier and sensitivities."""
    s = _check_finite_positive("noise_multiplier", event.noise_multiplier)
    k = _check_finite_positive("sensitivity", event.sensitivity)
    k1 = _check_steps("l1_sensitivity", event.l1_sensitivity, k)
    if not s * k >= 1.0:
        raise ValueError(
            "The discrete Gaussian's scale noise_multiplier * sensitivity must be "
            f"at least 1 grid step, got {s * k!r}."
        )
    object.__setattr__(event, "noise_multiplier", s)
    object.__setattr__(event, "sensitivity", k)
    object.__setattr__(event, "l1_sensitivity", k1)


#: Largest distance between a draw of the discrete Gaussian and a coupled
#: draw of the continuous Gaussian of the same sigma (sigma >= 1), in grid
#: steps: see DiscreteGaussianEvent.
LATTICE_COUPLING_DISTANCE = 2.0


@dataclass(frozen=True)
class DiscreteGaussianEvent(PrivacyEvent):
    r"""One release of the discrete Gaussian mechanism on a grid.

    Every coordinate of the released vector is a grid index (an integer)
    plus independent noise :math:`Z` with :math:`P(Z = z) \propto
    e^{-z^2 / (2\sigma^2)}` (Canonne, Kamath & Steinke 2020, Algorithm 3).
    Everything is in grid steps.

    Parameters
    ----------
    noise_multiplier : float
        :math:`s > 0`: the noise scale is :math:`\sigma = s K` grid steps,
        which must be at least 1.
    sensitivity : float
        :math:`K`, a bound on the L2 distance between the grid indices
        released on two neighbouring datasets, in grid steps (> 0).
    l1_sensitivity : float
        :math:`K_1 \ge K`, a bound on their L1 distance, in grid steps
        (:math:`\sqrt{d}\,K` for :math:`d` coordinates always holds).
    label : str, default=""
        What spent it.

    Attributes
    ----------
    noise_scale : float
        :math:`\sigma = s K`.
    lattice_shift : float
        :math:`\eta = 2 K_1 / \sigma^2`.

    Notes
    -----
    Accounted as the continuous Gaussian mechanism with multiplier
    :math:`s` whose privacy loss is raised by :math:`\eta` everywhere: its
    privacy loss distribution shifted by :math:`+\eta` (a valid dominating
    pair, whose second distribution gives mass :math:`1 - e^{-\eta}` to an
    outcome the first never produces), and its Renyi curve
    :math:`\alpha / (2 s^2) + \eta`. Proof: for integer means the discrete
    Gaussian's normalising constant does not depend on the mean, so the
    discrete privacy loss at a lattice point :math:`o` is the continuous
    one, :math:`\ell(o) = (\|o - \mu'\|^2 - \|o - \mu\|^2) / (2\sigma^2)`.
    Coordinatewise quantile coupling puts a continuous draw within
    :math:`c = 2` steps of the discrete one in each coordinate
    (:math:`\sigma \ge 1`: with :math:`f(u) = e^{-u^2/(2\sigma^2)}`,
    :math:`\sum_{w \le z} f(w) \le \int_{-\infty}^{z+1} f` for
    :math:`z < 0`, :math:`\sum_{w > z} f(w) \ge \int_{z+1}^\infty f` for
    :math:`z \ge 0`, and the normaliser :math:`\sum_w f(w) = \sigma
    \sqrt{2\pi}\,(1 + 2\sum_{j \ge 1} e^{-2\pi^2\sigma^2 j^2})` is within
    a factor :math:`1 + 0.79/\sigma` of :math:`\sigma\sqrt{2\pi}`, so
    the two distribution functions are within a shift of 2 steps). Since
    :math:`|\ell(o + e) - \ell(o)| = |\langle \mu - \mu', e\rangle| /
    \sigma^2 \le K_1 \|e\|_\infty / \sigma^2`, the discrete loss is at most
    the coupled continuous loss plus :math:`\eta`, pointwise; the
    hockey-stick divergence and the Renyi moment are increasing in the
    loss. On skdp's grids :math:`\sigma \ge 2^{32}`, so :math:`\eta` is
    about :math:`10^{-9}\sqrt{d}/s`.

    Examples
    --------
    >>> from skdp.accounting import DiscreteGaussianEvent
    >>> event = DiscreteGaussianEvent(2.0, 2.0**32, 2.0**33)
    >>> event.noise_scale, event.lattice_shift == 2 * 2.0**33 / 2.0**66
    (8589934592.0, True)
    """

    noise_multiplier: float
    sensitivity: float
    l1_sensitivity: float
    kind: ClassVar[str] = "discrete_gaussian"

    def __post_init__(self):
        _check_lattice(self)

    @property
    def noise_scale(self) -> float:
        return self.noise_multiplier * self.sensitivity

    @property
    def lattice_shift(self) -> float:
        return LATTICE_COUPLING_DISTANCE * self.l1_sensitivity / self.noise_scale**2


@dataclass(frozen=True)
class PoissonSubsampledDiscreteGaussianEvent(PrivacyEvent):
    r"""``steps`` rounds of a discrete Gaussian sum on a Poisson subsample.

    Each round includes every row independently with probability
    ``sampling_rate``, sums the rows' contributions, rounds the sum to the
    grid and adds discrete Gaussian noise of scale ``noise_scale`` grid
    steps to each coordinate: one DP-SGD run on a grid.

    Parameters
    ----------
    sampling_rate : float
        In (0, 1].
    noise_multiplier : float
        :math:`s > 0`: the noise scale is :math:`\sigma = s K` grid steps,
        which must be at least 1.
    sensitivity : float
        :math:`K`, a bound on how far (L2, in grid steps) adding one row's
        contribution moves the rounded sum (:math:`C / \gamma + \sqrt{d}`
        for contributions of norm at most :math:`C` on a grid of spacing
        :math:`\gamma` with :math:`d` coordinates).
    l1_sensitivity : float
        :math:`K_1 \ge K`, the same in L1.
    steps : int
        Number of rounds, >= 1.
    label : str, default=""
        What spent it.

    Attributes
    ----------
    noise_scale : float
        :math:`\sigma = s K`.
    lattice_shift : float
        :math:`\eta = 4 K_1 / \sigma^2` per round.

    Notes
    -----
    Accounted, per round, as :class:`PoissonSubsampledGaussianEvent` with
    multiplier :math:`s` and the privacy loss raised by :math:`\eta`
    (:class:`DiscreteGaussianEvent`'s argument): the mixtures' loss on the
    lattice is the continuous one, whose gradient is
    :math:`(\pi\,v - \pi'\,v') / \sigma^2` for the two rows' shifts
    :math:`v, v'` and posterior weights :math:`\pi, \pi' \in [0, 1]`, so it
    moves by at most :math:`2 K_1 \cdot 2 / \sigma^2` under the coupling.

    Examples
    --------
    >>> from skdp.accounting import PoissonSubsampledDiscreteGaussianEvent
    >>> event = PoissonSubsampledDiscreteGaussianEvent(0.01, 2.0, 2.0**32,
    ...                                                2.0**34, 100)
    >>> event.noise_scale
    8589934592.0
    """

    sampling_rate: float
    noise_multiplier: float
    sensitivity: float
    l1_sensitivity: float
    steps: int
    kind: ClassVar[str] = "poisson_subsampled_discrete_gaussian"

    def __post_init__(self):
        q = _check_finite_positive("sampling_rate", self.sampling_rate)
        if q > 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {q!r}.")
        object.__setattr__(self, "sampling_rate", q)
        _check_lattice(self)
        object.__setattr__(self, "steps", _check_count("steps", self.steps))

    @property
    def noise_scale(self) -> float:
        return self.noise_multiplier * self.sensitivity

    @property
    def lattice_shift(self) -> float:
        return (
            2.0 * LATTICE_COUPLING_DISTANCE * self.l1_sensitivity / self.noise_scale**2
        )


@dataclass(frozen=True)
class ZCDPEvent(PrivacyEvent):
    r"""A mechanism satisfying ``(xi, rho)``-zero-concentrated DP.

    :math:`D_\alpha(M(D) \| M(D')) \le \xi + \rho\alpha` for every order
    :math:`\alpha > 1` (Bun & Steinke 2016, Definition 1.1); ``xi=0`` is
    :math:`\rho`-zCDP.

    Parameters
    ----------
    rho : float
        > 0.
    xi : float, default=0.0
        >= 0 (discrete Gaussian measurements on a grid add their
        ``DiscreteGaussianEvent.lattice_shift`` here).
    label : str, default=""
        What spent it.
    """

    rho: float
    xi: float = 0.0
    kind: ClassVar[str] = "zcdp"

    def __post_init__(self):
        object.__setattr__(self, "rho", _check_finite_positive("rho", self.rho))
        object.__setattr__(
            self, "xi", _check_finite_positive("xi", self.xi, allow_zero=True)
        )


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


@dataclass(frozen=True)
class ParallelComposedEvent(PrivacyEvent):
    """Events applied to disjoint parts of the rows, one part each.

    The rows are split into parts by their position only (independently of
    their values), and each event reads one part. Under skdp's neighbouring
    relation (replace one row) a replaced row lies in exactly one part, so
    the release costs what its most expensive part costs (parallel
    composition, McSherry 2009): the accountants take the pointwise maximum
    of the parts' Renyi curves and of their pure epsilons.

    Parameters
    ----------
    events : tuple of PrivacyEvent
        One event per part (nested compositions allowed).
    label : str, default=""
        What spent it.

    Examples
    --------
    >>> from skdp.accounting import LaplaceEvent, ParallelComposedEvent
    >>> ParallelComposedEvent((LaplaceEvent(0.5), LaplaceEvent(0.2))).events[0]
    LaplaceEvent(label='', epsilon=0.5)
    """

    events: tuple[PrivacyEvent, ...] = ()
    kind: ClassVar[str] = "parallel_composed"

    def __post_init__(self):
        events = tuple(self.events)
        if not events:
            raise ValueError("ParallelComposedEvent needs at least one part.")
        for ev in events:
            if not isinstance(ev, PrivacyEvent):
                raise TypeError(
                    f"ParallelComposedEvent parts must be PrivacyEvent, got {ev!r}."
                )
        object.__setattr__(self, "events", events)


@dataclass(frozen=True)
class SelfComposedEvent(PrivacyEvent):
    """``count`` independent runs of the same mechanism on the same data.

    Composes exactly like a :class:`ComposedEvent` of ``count`` copies of
    ``event``, but an accountant can use the repetition (a power of a
    Fourier transform, a multiple of a Renyi curve) instead of ``count``
    compositions, and a ledger stores it in a few bytes.

    Parameters
    ----------
    event : PrivacyEvent
        What one run spends.
    count : int
        Number of runs, >= 1.
    label : str, default=""
        What spent it.

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent, SelfComposedEvent
    >>> SelfComposedEvent(GaussianEvent(4.0), 16, label="16 means").count
    16
    """

    event: PrivacyEvent
    count: int
    kind: ClassVar[str] = "self_composed"

    def __post_init__(self):
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {self.event!r}.")
        count = self.count
        if isinstance(count, bool) or not isinstance(count, int | float):
            raise TypeError(f"count must be an integer, got {count!r}.")
        if int(count) != count or count < 1:
            raise ValueError(f"count must be an integer >= 1, got {count!r}.")
        object.__setattr__(self, "count", int(count))


@dataclass(frozen=True)
class RepeatedRandomStoppingEvent(PrivacyEvent):
    """A mechanism run a random number of times, releasing only its best run.

    The number of runs ``K`` is drawn, independently of the data and kept
    secret, from a truncated negative binomial or a Poisson distribution;
    each run is an independent execution of ``base_event`` (the same
    mechanism with fresh randomness) whose output carries a score, and only
    the output with the highest score is released (nothing when ``K = 0``).
    This is private hyperparameter tuning by random stopping (Liu & Talwar
    2019; Papernot & Steinke 2022). The accountant bounds its Renyi-DP curve
    with Papernot & Steinke (2022), Theorem 2 (truncated negative binomial)
    and Theorem 6 (Poisson); see
    ``rdp_repeated_truncated_negative_binomial`` and
    ``rdp_repeated_poisson``.

    Parameters
    ----------
    base_event : PrivacyEvent
        What one run spends (e.g. the composition of a training run and a
        noisy validation score). It must have a Renyi-DP curve.
    distribution : {"truncated_negative_binomial", "poisson"}
        Law of the number of runs.
    shape : float, default=None
        ``eta > -1`` of the truncated negative binomial (1 is the geometric
        distribution, 0 the logarithmic one). Only for that distribution.
    stopping_probability : float, default=None
        ``gamma`` in (0, 1) of the truncated negative binomial: for the
        geometric distribution, the probability of stopping after each run.
        Only for that distribution.
    mean : float, default=None
        Mean ``mu >= 1`` of the Poisson distribution (the bound is only
        valid there). Only for that distribution.
    label : str, default=""
        What spent it.

    Notes
    -----
    ``P[K = k] = (1 - gamma)**k / (gamma**-eta - 1) * prod_{l<k} (l + eta) /
    (l + 1)`` for ``k >= 1`` is the truncated negative binomial of Papernot
    & Steinke (2022), Definition 1 (its ``eta -> 0`` limit is the
    logarithmic distribution ``(1 - gamma)**k / (k log(1/gamma))``).

    Examples
    --------
    >>> from skdp.accounting import LaplaceEvent, RepeatedRandomStoppingEvent
    >>> event = RepeatedRandomStoppingEvent(
    ...     LaplaceEvent(0.1), "truncated_negative_binomial", shape=1.0,
    ...     stopping_probability=0.1)
    >>> round(event.expected_runs, 6)
    10.0
    """

    base_event: PrivacyEvent
    distribution: str
    shape: float | None = None
    stopping_probability: float | None = None
    mean: float | None = None
    kind: ClassVar[str] = "repeated_random_stopping"

    def __post_init__(self):
        if not isinstance(self.base_event, PrivacyEvent):
            raise TypeError(
                f"base_event must be a PrivacyEvent, got {self.base_event!r}."
            )
        if self.distribution == "truncated_negative_binomial":
            if self.shape is None or self.stopping_probability is None:
                raise ValueError(
                    "The truncated negative binomial needs shape and "
                    "stopping_probability."
                )
            if self.mean is not None:
                raise ValueError("mean is only for the Poisson distribution.")
            shape = self.shape
            if isinstance(shape, bool) or not isinstance(shape, int | float):
                raise TypeError(f"shape must be a real number, got {shape!r}.")
            if not (math.isfinite(shape) and shape > -1):
                raise ValueError(f"shape must be finite and > -1, got {shape!r}.")
            gamma = _check_finite_positive(
                "stopping_probability", self.stopping_probability
            )
            if gamma >= 1:
                raise ValueError(
                    f"stopping_probability must be in (0, 1), got {gamma!r}."
                )
            object.__setattr__(self, "shape", float(shape))
            object.__setattr__(self, "stopping_probability", gamma)
        elif self.distribution == "poisson":
            if self.shape is not None or self.stopping_probability is not None:
                raise ValueError(
                    "shape and stopping_probability are only for the truncated "
                    "negative binomial distribution."
                )
            if self.mean is None:
                raise ValueError("The Poisson distribution needs its mean.")
            mean = _check_finite_positive("mean", self.mean)
            if mean < 1:
                raise ValueError(f"mean must be >= 1, got {mean!r}.")
            object.__setattr__(self, "mean", mean)
        else:
            raise ValueError(
                "distribution must be 'truncated_negative_binomial' or 'poisson', "
                f"got {self.distribution!r}."
            )

    @property
    def expected_runs(self) -> float:
        """Mean number of runs ``E[K]``."""
        if self.distribution == "poisson":
            return self.mean
        gamma, eta = self.stopping_probability, self.shape
        # E[K] = eta (1 - gamma) / (gamma (1 - gamma**eta)), written with expm1
        # so that it stays accurate near eta = 0 (the logarithmic limit).
        log_gamma = math.log(gamma)
        ratio = -log_gamma if eta == 0 else -math.expm1(eta * log_gamma) / eta
        return (1.0 - gamma) / (gamma * ratio)


def _encode(value: Any) -> Any:
    if isinstance(value, PrivacyEvent):
        return event_to_dict(value)
    if isinstance(value, tuple) and value and isinstance(value[0], PrivacyEvent):
        return [event_to_dict(part) for part in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "kind" in value:
        return event_from_dict(value)
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return tuple(event_from_dict(part) for part in value)
    return value


def event_to_dict(event: PrivacyEvent) -> dict[str, Any]:
    """Serialise an event to JSON-compatible builtins.

    Nested events (the parts of a :class:`ComposedEvent`, the ``event`` of a
    :class:`SelfComposedEvent`, ...) become nested dictionaries.

    Examples
    --------
    >>> from skdp.accounting import GaussianEvent, event_from_dict, event_to_dict
    >>> ev = GaussianEvent(1.5, label="mean")
    >>> event_from_dict(event_to_dict(ev)) == ev
    True
    """
    out: dict[str, Any] = {"kind": event.kind}
    for f in dataclasses.fields(event):
        out[f.name] = _encode(getattr(event, f.name))
    return out


def event_from_dict(data: dict[str, Any]) -> PrivacyEvent:
    """Rebuild an event serialised by :func:`event_to_dict`."""
    data = dict(data)
    try:
        cls = _REGISTRY[data.pop("kind")]
    except KeyError as exc:
        raise ValueError(f"Unknown privacy event kind in {data!r}.") from exc
    if "events" in data:  # a ComposedEvent, possibly with no parts
        data["events"] = tuple(event_from_dict(e) for e in data["events"])
    return cls(**{name: _decode(value) for name, value in data.items()})
