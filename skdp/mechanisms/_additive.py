"""Additive noise mechanisms: Laplace, Gaussian and the L2 vector mechanism.

Each mechanism comes in two halves, following skdp's plan-charge-run
contract (:mod:`skdp.base`):

* ``plan_*`` takes the public quantities (sensitivity, privacy parameters,
  number of coordinates), checks that they are numerically feasible, and
  returns a :class:`NoisePlan`: the event to charge and every setting of the
  noise (grid spacing, noise scale in grid steps). It may raise.
* :func:`add_noise` (and :func:`draw_l2_noise`) applies a plan to the exact
  value after the caller has charged ``plan.event``. It does not raise.

epsilon becomes a noise scale in exactly one place, the plan. The
one-call functions (:func:`laplace_mechanism`, :func:`gaussian_mechanism`,
:func:`l2_vector_mechanism`, :func:`l2_vector_noise`) validate their value,
plan and apply, and return ``(noisy_value, event)``; the caller charges the
event *before* releasing the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..accounting._analytic_gaussian import gaussian_epsilon, gaussian_noise_multiplier
from ..accounting._events import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    PoissonSubsampledDiscreteGaussianEvent,
    PrivacyEvent,
    PureDPEvent,
)
from ..utils._random import RandomSource, RandomStateLike, check_random_source
from ._samplers import (
    _MAX_GRID_INDEX,
    GRID_BITS,
    grid_spacing,
    round_to_grid,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

__all__ = [
    "NoisePlan",
    "add_drawn_noise",
    "add_noise",
    "draw_l2_noise",
    "draw_noise",
    "gaussian_mechanism",
    "l2_vector_mechanism",
    "l2_vector_noise",
    "laplace_mechanism",
    "plan_gaussian",
    "plan_l2_noise",
    "plan_l2_vector",
    "plan_laplace",
]

# Noise scales outside this range are refused by the plans: below it the
# grid spacing (2**-32 of the scale) is no longer a normal float, above it
# noise of a few million scales overflows float64.
_MIN_SCALE = 1e-250
_MAX_SCALE = 1e250
# Coordinates one plan may cover (memory of the noise, about 8 bytes each).
_MAX_SIZE = 2**40


@dataclass(frozen=True)
class NoisePlan:
    """Everything an additive mechanism will do, decided before the charge.

    Attributes
    ----------
    kind : {"laplace", "gaussian", "l2_vector", "l2_noise"}
        Discrete Laplace per coordinate, discrete Gaussian per coordinate,
        the L2 vector mechanism on a grid, or continuous L2 noise alone.
    size : int
        Number of coordinates.
    sensitivity : float
        The declared sensitivity (L1 for Laplace, L2 otherwise).
    gamma : float
        Grid spacing (a power of two); 0 for ``"l2_noise"``.
    scale : float
        Noise scale in grid steps: the discrete Laplace scale, the discrete
        Gaussian's sigma, or (vector mechanisms) the Gamma scale of the
        noise norm; in value units for ``"l2_noise"``. The rounding slack
        is included.
    event : PrivacyEvent
        What applying the plan spends.
    """

    kind: str
    size: int
    sensitivity: float
    gamma: float
    scale: float
    event: PrivacyEvent


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(
        value, int | float | np.floating | np.integer
    ):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


def _check_size(size, name: str = "the number of coordinates") -> int:
    if (
        isinstance(size, bool)
        or not isinstance(size, int | np.integer | float | np.floating)
        or not math.isfinite(size)
        or int(size) != size
        or size < 1
    ):
        raise ValueError(f"{name} must be an integer >= 1, got {size!r}.")
    size = int(size)
    if size > _MAX_SIZE:
        raise ValueError(
            f"{size} noise coordinates are more than skdp can hold ({_MAX_SIZE})."
        )
    return size


def _check_scale(scale: float, what: str) -> None:
    if not (_MIN_SCALE <= scale <= _MAX_SCALE):
        raise ValueError(
            f"The noise scale of {what} would be {scale:.3g}, outside the range "
            f"[{_MIN_SCALE:g}, {_MAX_SCALE:g}] that float64 arithmetic can carry "
            "without overflow or underflow; check the sensitivity and epsilon "
            "(a fit this noisy, or this exact, is not meaningful)."
        )


def plan_laplace(
    sensitivity: float,
    epsilon: float,
    size: int,
    *,
    label: str = "",
    magnitude: float | None = None,
    integer: bool = False,
) -> NoisePlan:
    r"""Plan the Laplace mechanism on ``size`` coordinates; epsilon-DP.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity :math:`\Delta_1` of the value, > 0.
    epsilon : float
        > 0.
    size : int
        Number of coordinates.
    label : str, default=""
        Label of the event.
    magnitude : float or None, default=None
        A public bound on ``|value|`` that the plan must carry exactly. The
        grid is coarsened (by powers of two) until ``magnitude`` is within
        ``2**50`` grid steps, so that :func:`add_noise` never clips a value
        of that size; the rounding slack grows with the grid and is charged
        as always. ``None`` keeps the default grid (values beyond about
        ``2**18`` noise scales are then clipped).
    integer : bool, default=False
        The values are integers (counts) and :math:`\Delta_1` is an integer:
        the grid is the integers themselves, rounding is the identity and
        needs no slack, and the noise is the two-sided geometric distribution
        of scale :math:`\Delta_1 / \varepsilon` (Ghosh, Roughgarden &
        Sundararajan 2009). Its expected absolute value,
        :math:`2p / (1 - p^2)` with :math:`p = e^{-\varepsilon / \Delta_1}`,
        is below the continuous Laplace's :math:`\Delta_1 / \varepsilon`.

    Returns
    -------
    plan : NoisePlan
        ``kind="laplace"``; ``scale`` is
        :math:`t = (\Delta_1 + d\gamma) / (\varepsilon\gamma)` grid steps
        for :math:`d` = ``size`` coordinates on a grid of spacing
        :math:`\gamma` (see :func:`laplace_mechanism`), or
        :math:`\Delta_1 / \varepsilon` with :math:`\gamma = 1` when
        ``integer``; event ``DiscreteLaplaceEvent(t, k)`` with :math:`k =
        \lfloor \Delta_1 / \gamma + d \rfloor` (or :math:`\Delta_1`
        when ``integer``), the largest L1 distance in grid steps between
        neighbours' rounded values, so that its epsilon :math:`k / t` is
        at most ``epsilon``.

    Examples
    --------
    >>> from skdp.mechanisms import plan_laplace
    >>> plan = plan_laplace(1.0, 0.5, size=3)
    >>> plan.gamma == 2.0**-31, plan.event.sensitivity == 2**31 + 3
    (True, True)
    >>> bool(plan.event.epsilon <= 0.5)
    True
    >>> plan_laplace(1, 0.5, size=1, integer=True).event  # a count
    DiscreteLaplaceEvent(label='', noise_scale=2.0, sensitivity=1)
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    size = _check_size(size)
    _check_scale(sensitivity / epsilon, "the Laplace mechanism")
    if magnitude is not None:
        magnitude = float(magnitude)
        if not (math.isfinite(magnitude) and magnitude >= 0):
            raise ValueError(f"magnitude must be finite and >= 0, got {magnitude!r}.")
    if integer:
        if sensitivity != int(sensitivity):
            raise ValueError(
                f"integer=True needs an integer sensitivity, got {sensitivity!r}."
            )
        if magnitude is not None and magnitude > _MAX_GRID_INDEX:
            raise ValueError(
                f"Integer values up to {magnitude:.3g} exceed the {_MAX_GRID_INDEX:g} "
                "that the integer grid carries exactly."
            )
        gamma, scale = 1.0, sensitivity / epsilon
        steps = int(sensitivity)
    else:
        gamma = grid_spacing(sensitivity / epsilon)
        if magnitude is not None and magnitude / gamma > _MAX_GRID_INDEX:
            gamma = 2.0 ** math.ceil(math.log2(magnitude / _MAX_GRID_INDEX))
        scale = (sensitivity + size * gamma) / (epsilon * gamma)
        # Rounding moves each coordinate that differs by at most one step:
        # the integer indices differ by at most sensitivity / gamma + size.
        steps = math.floor(sensitivity / gamma + size)
    event = DiscreteLaplaceEvent(scale, steps, label=label)
    return NoisePlan("laplace", size, sensitivity, gamma, scale, event)


def plan_gaussian(
    sensitivity: float,
    size: int,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    noise_multiplier: float | None = None,
    label: str = "",
    magnitude: float | None = None,
) -> NoisePlan:
    r"""Plan the Gaussian mechanism on ``size`` coordinates.

    Give either ``epsilon`` and ``delta`` (analytic calibration, Balle &
    Wang 2018) or ``noise_multiplier``. ``magnitude`` is a public bound on
    ``|value|`` that the plan must carry exactly, as in
    :func:`plan_laplace`: the grid is coarsened (by powers of two) until it
    is within ``2**50`` grid steps, and the larger rounding slack is in the
    noise. ``None`` keeps the default grid.

    Returns
    -------
    plan : NoisePlan
        ``kind="gaussian"``; ``scale`` is the discrete Gaussian's sigma in
        grid steps, :math:`\sigma = s K` with :math:`K = \Delta_2 / \gamma
        + \sqrt{d}` (the L2 distance in grid steps between neighbours'
        rounded values) for the noise multiplier :math:`s`, L2 sensitivity
        :math:`\Delta_2`, :math:`d` = ``size`` coordinates and grid spacing
        :math:`\gamma`; event ``DiscreteGaussianEvent(sigma, K, sqrt(d)
        K)``. Given ``epsilon`` and ``delta``, :math:`s` is calibrated so
        that the event, lattice shift included, is within them.

    Examples
    --------
    >>> from skdp.mechanisms import plan_gaussian
    >>> plan = plan_gaussian(1.0, 2, noise_multiplier=2.0)
    >>> type(plan.event).__name__, plan.event.noise_multiplier
    ('DiscreteGaussianEvent', 2.0)
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    size = _check_size(size)
    if magnitude is not None:
        magnitude = float(magnitude)
        if not (math.isfinite(magnitude) and magnitude >= 0):
            raise ValueError(f"magnitude must be finite and >= 0, got {magnitude!r}.")
    if noise_multiplier is None:
        if epsilon is None or delta is None:
            raise ValueError("Give epsilon and delta, or noise_multiplier.")
        epsilon = _check_positive("epsilon", epsilon)
        delta = float(delta)
        if not 0 < delta < 1:
            raise ValueError(
                f"delta must be in (0, 1) for Gaussian noise, got {delta!r}."
            )
        noise_multiplier = grid_gaussian_noise_multiplier(
            epsilon, delta, [(sensitivity, size, 1.0, magnitude)]
        )
    else:
        if epsilon is not None or delta is not None:
            raise ValueError(
                "Give either (epsilon, delta) or noise_multiplier, not both."
            )
        noise_multiplier = _check_positive("noise_multiplier", noise_multiplier)
    _check_scale(noise_multiplier * sensitivity, "the Gaussian mechanism")
    return _gaussian_plan(sensitivity, size, noise_multiplier, magnitude, label)


def _gaussian_plan(sensitivity, size, noise_multiplier, magnitude, label):
    """The grid, the scale in grid steps and the event of a Gaussian plan."""
    gamma = grid_spacing(noise_multiplier * sensitivity)
    if magnitude is not None and magnitude / gamma > _MAX_GRID_INDEX:
        gamma = 2.0 ** math.ceil(math.log2(magnitude / _MAX_GRID_INDEX))
    # Rounding to the grid moves the L2 distance of neighbours' indices by at
    # most sqrt(size) steps (one per coordinate that differs).
    steps = sensitivity / gamma + math.sqrt(size)
    scale = noise_multiplier * steps
    event = DiscreteGaussianEvent(
        noise_multiplier, steps, math.sqrt(size) * steps, label=label
    )
    return NoisePlan("gaussian", size, sensitivity, gamma, scale, event)


def grid_gaussian_noise_multiplier(epsilon: float, delta: float, parts) -> float:
    """Multiplier ``s`` of Gaussian releases on grids within ``(epsilon, delta)``.

    ``parts`` lists ``(sensitivity, size, share, magnitude)``: a
    :func:`plan_gaussian` release each, with multiplier ``s / sqrt(share)``
    (shares of ``s**-2`` summing to 1). Continuous Gaussian mechanisms of
    these multipliers compose to one of multiplier ``s`` exactly (Balle &
    Wang 2018, Theorem 8); the discrete releases add their lattice shifts
    (:class:`~skdp.accounting.DiscreteGaussianEvent`), so ``s`` is the
    smallest multiplier found with ``gaussian_epsilon(s, delta) + sum of
    the shifts <= epsilon``: the analytic multiplier of ``epsilon`` minus
    the shifts, checked on the plans themselves (the shifts shrink as ``s``
    grows, except by at most a factor 2 where the grid doubles), with a
    hair more noise for the bisection's accuracy (1e-13 relative).

    Examples
    --------
    >>> from skdp.accounting import gaussian_noise_multiplier
    >>> from skdp.mechanisms._additive import grid_gaussian_noise_multiplier
    >>> s = grid_gaussian_noise_multiplier(1.0, 1e-5, [(1.0, 100, 1.0, None)])
    >>> bool(0 < s / gaussian_noise_multiplier(1.0, 1e-5) - 1 < 1e-8)
    True
    """
    parts = [(float(k), int(d), float(w), m) for k, d, w, m in parts]

    def shifts(s):
        return math.fsum(
            _gaussian_plan(k, d, s / math.sqrt(w), m, "").event.lattice_shift
            for k, d, w, m in parts
        )

    s = gaussian_noise_multiplier(epsilon, delta)
    room = shifts(s)
    for _ in range(64):
        if not room < epsilon:
            break
        s = gaussian_noise_multiplier(epsilon - room, delta) * (1 + 1e-10)
        if gaussian_epsilon(s, delta) + shifts(s) <= epsilon:
            return s
        room *= 2.0
    raise ValueError(
        f"epsilon={epsilon!r} is too small for Gaussian noise on a grid over "
        f"{sum(d for _, d, _, _ in parts)} coordinates."
    )


def subsampled_gaussian_event(
    noise: NoisePlan, sampling_rate: float, steps: int, *, label: str = ""
) -> PoissonSubsampledDiscreteGaussianEvent:
    """The event of ``steps`` rounds of ``noise`` on Poisson subsamples.

    ``noise`` is a :func:`plan_gaussian` plan whose sensitivity is the bound
    on one row's contribution to the summed value (DP-SGD's clipping norm):
    the event carries its grid quantities (sigma, the L2 and L1 distance in
    grid steps that adding one row makes to the rounded sum).

    Examples
    --------
    >>> from skdp.mechanisms import plan_gaussian
    >>> from skdp.mechanisms._additive import subsampled_gaussian_event
    >>> event = subsampled_gaussian_event(
    ...     plan_gaussian(1.0, 3, noise_multiplier=1.5), 0.01, 200)
    >>> event.noise_multiplier, event.steps
    (1.5, 200)
    """
    if noise.kind != "gaussian":
        raise ValueError(f"Expected a Gaussian noise plan, got {noise.kind!r}.")
    grid = noise.event
    return PoissonSubsampledDiscreteGaussianEvent(
        sampling_rate,
        grid.noise_multiplier,
        grid.sensitivity,
        grid.l1_sensitivity,
        steps,
        label=label,
    )


def worst_case_gaussian_event(
    noise_multiplier: float,
    size: int,
    sensitivities=(1.0,),
    *,
    magnitude: float | None = None,
    label: str = "",
) -> DiscreteGaussianEvent:
    """An event that covers every :func:`plan_gaussian` plan of at most ``size``.

    For a release whose exact plan is not known when it is charged (a
    table picked by a private selection): of the plans with multiplier
    ``noise_multiplier`` on ``size`` coordinates, one per sensitivity in
    ``sensitivities`` (with ``magnitude``), the event with the largest
    lattice shift. The accountants read a discrete Gaussian event through
    its multiplier and its lattice shift only, and for a given sensitivity
    the shift ``2 sqrt(d) / (s**2 K)``, ``K = sensitivity / gamma +
    sqrt(d)``, grows with the number of coordinates ``d`` (the grid does
    not depend on ``d``), so it costs at least as much as every such plan
    on at most ``size`` coordinates.

    Examples
    --------
    >>> from skdp.mechanisms import plan_gaussian
    >>> from skdp.mechanisms._additive import worst_case_gaussian_event
    >>> cover = worst_case_gaussian_event(2.0, 16, (1.0, 1.5))
    >>> plan = plan_gaussian(1.5, 9, noise_multiplier=2.0)
    >>> bool(cover.lattice_shift >= plan.event.lattice_shift)
    True
    """
    events = [
        _gaussian_plan(float(k), int(size), noise_multiplier, magnitude, label).event
        for k in sensitivities
    ]
    return max(events, key=lambda event: event.lattice_shift)


def lattice_shift_bound(noise_multiplier: float, size: int) -> float:
    """Upper bound on the lattice shift of a :func:`plan_gaussian` event.

    ``DiscreteGaussianEvent.lattice_shift`` is ``2 sqrt(size) K / sigma**2
    = 2 sqrt(size) / (s**2 K)`` with ``K >= 2**32 / s`` steps on skdp's
    grids, hence at most ``2 sqrt(size) / (s 2**32)``, which decreases in
    ``s``.

    Examples
    --------
    >>> from skdp.mechanisms._additive import lattice_shift_bound
    >>> lattice_shift_bound(1.0, 4) == 4 / 2**32
    True
    """
    return 2.0 * math.sqrt(size) / (noise_multiplier * 2.0**GRID_BITS)


def plan_l2_vector(
    sensitivity: float, epsilon: float, size: int, *, label: str = ""
) -> NoisePlan:
    """Plan the L2 vector mechanism on a grid (see :func:`l2_vector_mechanism`).

    Returns
    -------
    plan : NoisePlan
        ``kind="l2_vector"``, event ``PureDPEvent(epsilon)``; ``scale`` is
        the Gamma scale of the noise norm in grid steps,
        ``(Delta_2 + sqrt(size) gamma) / (epsilon gamma)``.

    Examples
    --------
    >>> from skdp.mechanisms import plan_l2_vector
    >>> plan_l2_vector(2.0, 1.0, size=4).event
    PureDPEvent(label='', epsilon=1.0)
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    size = _check_size(size)
    _check_scale(size * sensitivity / epsilon, "the L2 vector mechanism")
    gamma = grid_spacing(sensitivity / epsilon)
    scale = (sensitivity + math.sqrt(size) * gamma) / (epsilon * gamma)
    return NoisePlan(
        "l2_vector", size, sensitivity, gamma, scale, PureDPEvent(epsilon, label=label)
    )


def plan_l2_noise(
    dimension: int, sensitivity: float, epsilon: float, *, label: str = ""
) -> NoisePlan:
    """Plan continuous noise of density proportional to exp(-epsilon ||b|| / Delta_2).

    Returns
    -------
    plan : NoisePlan
        ``kind="l2_noise"``, event ``PureDPEvent(epsilon)``; ``scale`` is
        ``Delta_2 / epsilon`` (the Gamma scale of the norm).

    Examples
    --------
    >>> from skdp.mechanisms import plan_l2_noise
    >>> plan_l2_noise(3, 2.0, 0.5).scale
    4.0
    """
    dimension = _check_size(dimension, "dimension")
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    _check_scale(dimension * sensitivity / epsilon, "the L2 noise")
    return NoisePlan(
        "l2_noise",
        dimension,
        sensitivity,
        0.0,
        sensitivity / epsilon,
        PureDPEvent(epsilon, label=label),
    )


def draw_l2_noise(plan: NoisePlan, source: RandomSource) -> np.ndarray:
    """Draw the noise of a ``plan_l2_noise`` or ``plan_l2_vector`` plan.

    In polar form: a norm of Gamma(``size``, ``scale``) law (a sum of
    ``size`` standard exponentials times ``scale``) and a direction uniform
    on the sphere (normalised standard normals).
    """
    norm = source.exponential(plan.size).sum() * plan.scale
    direction = source.standard_normal(plan.size)
    length = float(np.linalg.norm(direction))
    if not length > 0:  # probability zero; keep the draw well defined
        direction = np.zeros(plan.size)
        direction[0], length = 1.0, 1.0
    return norm * (direction / length)


def add_noise(plan: NoisePlan, value: ArrayLike, source: RandomSource) -> np.ndarray:
    """Apply a Laplace, Gaussian or L2 vector plan to ``value``.

    ``value`` must hold ``plan.size`` finite numbers (any shape); the result
    has its shape, every entry a multiple of ``plan.gamma``. Entries are
    rounded to the grid and clipped to +-2**50 grid steps first (a bounded
    value stays exact; the clip never binds for finite values the caller
    has bounded). Does not raise. The same as ``add_drawn_noise()`` of one
    draw of ``draw_noise()``.
    """
    shape = np.shape(value)
    return add_drawn_noise(plan, value, _draw(plan, shape, source))


def _draw(plan: NoisePlan, shape: tuple, source: RandomSource) -> np.ndarray:
    """Noise of the plan in grid steps, of ``shape`` (``plan.size`` per draw)."""
    if plan.kind == "laplace":
        return sample_discrete_laplace(plan.scale, shape, source)
    if plan.kind == "gaussian":
        return sample_discrete_gaussian(plan.scale, shape, source)
    # "l2_vector": continuous L2 noise in grid units, rounded to the grid
    unit = NoisePlan("l2_noise", plan.size, 1.0, 0.0, plan.scale, plan.event)
    count = int(np.prod(shape)) // plan.size
    draws = [np.rint(draw_l2_noise(unit, source)) for _ in range(count)]
    return np.reshape(draws, shape)


def draw_noise(plan: NoisePlan, count: int, source: RandomSource) -> np.ndarray:
    """``count`` independent draws of a plan's noise, in grid steps.

    For loops that apply the same plan many times (DP-SGD's steps): the
    noise is independent of the data, so it may be drawn ahead, a block of
    steps in one call, with the distribution of each draw unchanged.

    Returns
    -------
    noise : ndarray of shape (count, plan.size)
        Integers (as floats): the discrete Laplace or Gaussian per
        coordinate, or the L2 vector mechanism's noise rounded to the grid.
    """
    return _draw(plan, (count, plan.size), source)


def add_drawn_noise(plan: NoisePlan, value: ArrayLike, noise: np.ndarray) -> np.ndarray:
    """``value`` on the plan's grid plus one draw of ``draw_noise()``."""
    index = round_to_grid(value, plan.gamma)  # a NaN stays NaN, infinities clip
    index = np.where(np.isnan(index), 0.0, index)
    return (index + np.reshape(noise, index.shape)) * plan.gamma


def _as_output(noisy: np.ndarray, value):
    return float(noisy) if np.ndim(value) == 0 else noisy


def _finite_array(value) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"value must be numeric: {error}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError("value must be finite (no NaN or infinity).")
    if arr.size == 0:
        raise ValueError("value must hold at least one number.")
    return arr


def laplace_mechanism(
    value: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    random_state: RandomStateLike = None,
    label: str = "",
) -> tuple[float | NDArray[np.float64], PrivacyEvent]:
    r"""Release ``value`` with Laplace noise, epsilon-DP.

    Parameters
    ----------
    value : float or array-like
        The exact answer (scalar or array).
    sensitivity : float
        L1 sensitivity of ``value``: the largest
        :math:`\sum_i |f(D)_i - f(D')_i|` over neighbouring datasets, > 0.
    epsilon : float
        Privacy parameter, > 0.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG and is the only choice for a release; a
        seed gives reproducible noise for testing.
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noisy_value : float or ndarray
        Same shape as ``value``; every entry a multiple of the grid spacing.
    event : DiscreteLaplaceEvent
        What to charge: the discrete Laplace on the grid, at most
        ``epsilon``-DP.

    Notes
    -----
    Dwork, McSherry, Nissim & Smith (2006), Theorem 1 / Dwork & Roth (2014),
    Theorem 3.6: adding noise with density proportional to
    :math:`\exp(-|z|\,\varepsilon / \Delta_1)` to each coordinate is
    :math:`\varepsilon`-DP for L1 sensitivity :math:`\Delta_1`, under any
    neighbouring relation for which :math:`\Delta_1` bounds the change.

    Implemented as the discrete Laplace on a grid of spacing
    :math:`\gamma = 2^{\lfloor \log_2 b \rfloor - 32}`,
    :math:`b = \Delta_1 / \varepsilon`: the value is rounded to the grid,
    which can increase the L1 distance between neighbours' values by
    :math:`d\gamma` for :math:`d` coordinates, so the discrete scale is
    :math:`(\Delta_1 + d\gamma) / (\varepsilon\gamma)` grid steps
    (Canonne, Kamath & Steinke 2020; Mironov 2012 for the attack this
    avoids). Entries beyond :math:`2^{50}` grid steps are clipped.

    Examples
    --------
    >>> from skdp.mechanisms import laplace_mechanism
    >>> noisy, event = laplace_mechanism(10.0, sensitivity=1.0, epsilon=0.5,
    ...                                  random_state=0)
    >>> bool(event.epsilon <= 0.5)
    True
    >>> abs(noisy - 10.0) < 40
    True
    """
    arr = _finite_array(value)
    plan = plan_laplace(sensitivity, epsilon, arr.size, label=label)
    noisy = add_noise(plan, arr, check_random_source(random_state))
    return _as_output(noisy, value), plan.event


def gaussian_mechanism(
    value: ArrayLike,
    sensitivity: float,
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    noise_multiplier: float | None = None,
    random_state: RandomStateLike = None,
    label: str = "",
) -> tuple[float | NDArray[np.float64], PrivacyEvent]:
    r"""Release ``value`` with Gaussian noise, (epsilon, delta)-DP.

    Give either ``epsilon`` and ``delta`` (analytic calibration) or
    ``noise_multiplier`` directly.

    Parameters
    ----------
    value : float or array-like
        The exact answer.
    sensitivity : float
        L2 sensitivity of ``value``, > 0.
    epsilon, delta : float, optional
        Target guarantee; ``epsilon > 0`` (any size), ``0 < delta < 1``.
    noise_multiplier : float, optional
        Noise standard deviation in units of the sensitivity.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noisy_value : float or ndarray
    event : DiscreteGaussianEvent
        The discrete Gaussian on the grid; accounted as the Gaussian
        mechanism's exact profile (Balle & Wang 2018, Theorem 8) with the
        lattice shift added.

    Notes
    -----
    Balle & Wang (2018), Theorem 8 and Algorithm 1: noise of standard
    deviation :math:`\sigma = s\,\Delta_2` (L2 sensitivity
    :math:`\Delta_2`) is :math:`(\varepsilon, \delta)`-DP iff

    .. math::

        \Phi\Big(\frac{1}{2s} - \varepsilon s\Big)
        - e^{\varepsilon}\,\Phi\Big(-\frac{1}{2s} - \varepsilon s\Big)
        \le \delta;

    :math:`s` is the smallest multiplier satisfying it, found by bisection.
    Valid for every :math:`\varepsilon`, unlike the classical
    :math:`s = \sqrt{2 \ln(1.25/\delta)} / \varepsilon` (Dwork & Roth
    2014, Theorem A.1, for :math:`\varepsilon < 1`).

    Implemented as the discrete Gaussian on a grid of spacing
    :math:`\gamma` (Canonne, Kamath & Steinke 2020, Algorithm 3), calibrated
    to the L2 sensitivity plus the rounding slack :math:`\sqrt{d}\,\gamma`
    for :math:`d` coordinates. Its privacy loss is at most the continuous
    Gaussian's plus the lattice shift
    :math:`\eta = 2\sqrt{d}\,K / \sigma^2` (about
    :math:`10^{-9}\sqrt{d}/s`; proof in
    :class:`~skdp.accounting.DiscreteGaussianEvent`), which the event
    carries and the calibration leaves room for.

    Examples
    --------
    >>> from skdp.mechanisms import gaussian_mechanism
    >>> noisy, event = gaussian_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1.0,
    ...                                   delta=1e-5, random_state=0)
    >>> noisy.shape, round(event.noise_multiplier, 3)
    ((2,), 3.731)
    """
    arr = _finite_array(value)
    plan = plan_gaussian(
        sensitivity,
        arr.size,
        epsilon=epsilon,
        delta=delta,
        noise_multiplier=noise_multiplier,
        label=label,
    )
    noisy = add_noise(plan, arr, check_random_source(random_state))
    return _as_output(noisy, value), plan.event


def l2_vector_noise(
    dimension: int,
    sensitivity: float,
    epsilon: float,
    *,
    random_state: RandomStateLike = None,
    label: str = "",
) -> tuple[NDArray[np.float64], PrivacyEvent]:
    r"""Draw b in R^d with density proportional to exp(-epsilon ||b||_2 / Delta_2).

    The noise vector of objective and output perturbation (Chaudhuri,
    Monteleoni & Sarwate 2011, Algorithms 1 and 2).

    Parameters
    ----------
    dimension : int
        ``d``, >= 1.
    sensitivity : float
        ``Delta_2``, the L2 sensitivity the noise protects, > 0.
    epsilon : float
        > 0.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noise : ndarray of shape (d,)
    event : PureDPEvent
        ``PureDPEvent(epsilon)``.

    Notes
    -----
    The density of :math:`b \in \mathbb{R}^d` is proportional to
    :math:`\exp(-\varepsilon \|b\|_2 / \Delta_2)`. In polar form the norm
    :math:`\|b\|_2` follows a Gamma distribution with shape :math:`d` and
    scale :math:`\Delta_2 / \varepsilon` and the direction is uniform on
    the sphere (CMS 2011, Section 5, "Algorithm 1"). Adding :math:`b` to a
    quantity of L2 sensitivity :math:`\Delta_2` is
    :math:`\varepsilon`-DP: the density ratio at any point is at most
    :math:`\exp(\varepsilon \|v - v'\|_2 / \Delta_2) \le e^{\varepsilon}`
    by the triangle inequality. The norm is a sum of :math:`d` secure
    exponentials; the direction a normalised vector of secure normals.

    Examples
    --------
    >>> from skdp.mechanisms import l2_vector_noise
    >>> b, event = l2_vector_noise(5, sensitivity=2.0, epsilon=1.0, random_state=0)
    >>> b.shape, event.epsilon
    ((5,), 1.0)
    """
    plan = plan_l2_noise(dimension, sensitivity, epsilon, label=label)
    return draw_l2_noise(plan, check_random_source(random_state)), plan.event


def l2_vector_mechanism(
    value: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    random_state: RandomStateLike = None,
    label: str = "",
) -> tuple[NDArray[np.float64], PrivacyEvent]:
    r"""Release a vector with :func:`l2_vector_noise`, epsilon-DP.

    Parameters
    ----------
    value : array-like of shape (d,)
        The exact vector (e.g. a regularised minimiser for output
        perturbation).
    sensitivity : float
        L2 sensitivity of ``value``, > 0.
    epsilon : float
        > 0.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noisy_value : ndarray of shape (d,)
        On a grid of spacing ``gamma``.
    event : PureDPEvent

    Notes
    -----
    CMS 2011, Algorithm 1 (output perturbation) with the noise of
    :func:`l2_vector_noise`. The value is rounded to a grid of spacing
    :math:`\gamma = 2^{\lfloor \log_2(\Delta_2 / \varepsilon) \rfloor - 32}`
    first, which adds at most :math:`\sqrt{d}\,\gamma` to the L2
    sensitivity :math:`\Delta_2` the noise is calibrated to, and the noisy
    vector is snapped to the same grid, so every input has the same set of
    possible outputs.

    Examples
    --------
    >>> from skdp.mechanisms import l2_vector_mechanism
    >>> out, event = l2_vector_mechanism([0.5, -0.5], sensitivity=0.1, epsilon=1.0,
    ...                                  random_state=0)
    >>> out.shape
    (2,)
    """
    arr = _finite_array(value).ravel()
    plan = plan_l2_vector(sensitivity, epsilon, arr.size, label=label)
    return add_noise(plan, arr, check_random_source(random_state)), plan.event
