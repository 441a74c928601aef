"""The privacy plan of an MWEM fit, made before the charge from public values.

A round selects one marginal (or query) with the exponential mechanism and
measures it with Laplace or Gaussian noise. :func:`plan_privacy` splits
``(epsilon, delta)`` over the initial measurements and the rounds, fixed in
advance (``schedule="fixed"``) or as one zCDP (or pure-DP) budget that the
adaptive rounds anneal (``schedule="adaptive"``, see
:class:`~skdp.synthesis._schedule.RoundSchedule`); :func:`plan_measurement`
gives the noise of measuring a table of a given number of cells.

All quantities are fractions of the ``n`` rows. Neighbouring datasets differ
by *replacing one row* (``n`` is public), so one counting query moves by at
most ``1/n`` and a marginal table (vector of cell fractions) by at most
``2/n`` in L1 and ``sqrt(2)/n`` in L2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..accounting._calibration import calibrate_parameter
from ..accounting._composition import UnsupportedEventError
from ..accounting._events import (
    ComposedEvent,
    ExponentialMechanismEvent,
    PureDPEvent,
    ZCDPEvent,
)
from ..mechanisms import plan_gaussian, plan_laplace
from ..mechanisms._additive import worst_case_gaussian_event

__all__ = [
    "MARGINAL_L1",
    "MARGINAL_L2",
    "QUERY_SENSITIVITY",
    "MWEMPlan",
    "RoundSettings",
    "plan_measurement",
    "plan_privacy",
]

# Share of each round's budget that goes to the measurement (the rest
# selects). 0.9 as in AIM (McKenna et al. 2022) for Gaussian noise under
# zCDP; MWEM's even split for pure DP with Laplace noise.
_MEASURE_SHARE = {"gaussian": 0.9, "laplace": 0.5}


@dataclass(frozen=True)
class RoundSettings:
    """Noise of one round: its selection epsilon and measurement noise.

    Attributes
    ----------
    noise : {"gaussian", "laplace"}
    select_epsilon : float
        Epsilon of the exponential-mechanism selection.
    measure_epsilon : float or None
        Epsilon of a Laplace measurement.
    noise_multiplier : float or None
        Noise standard deviation over L2 sensitivity, Gaussian measurements.
    max_cells : int, default=1
        Cells of the largest table a round may measure (public): the
        measurement event covers it.
    n_samples : int or None, default=None
        Rows (public): the largest count a measurement carries.
    """

    noise: str
    select_epsilon: float
    measure_epsilon: float | None
    noise_multiplier: float | None
    max_cells: int = 1
    n_samples: int | None = None

    @classmethod
    def from_unit(cls, noise, unit, max_cells=1, n_samples=None):
        """The round that spends ``unit`` (zCDP rho, or pure epsilon)."""
        share = _MEASURE_SHARE[noise]
        if noise == "gaussian":
            # rho = 1 / (2 s**2) per measurement; rho = eps**2 / 8 per
            # selection (bounded range, Cesar & Rogers 2021).
            return cls(
                noise,
                math.sqrt(8.0 * (1.0 - share) * unit),
                None,
                1.0 / math.sqrt(2.0 * share * unit),
                max_cells,
                n_samples,
            )
        return cls(
            noise, (1.0 - share) * unit, share * unit, None, max_cells, n_samples
        )

    @property
    def measure_cost(self):
        """zCDP rho (Gaussian) or epsilon (Laplace) of one measurement."""
        if self.noise == "gaussian":
            return 0.5 / self.noise_multiplier**2
        return self.measure_epsilon

    @property
    def select_cost(self):
        """zCDP rho (bounded range) or epsilon of one selection."""
        if self.noise == "gaussian":
            return self.select_epsilon**2 / 8.0
        return self.select_epsilon

    def measurement_cover(self, label=""):
        """The discrete Gaussian event that covers every measurement."""
        magnitude = None if self.n_samples is None else float(self.n_samples)
        return worst_case_gaussian_event(
            self.noise_multiplier,
            self.max_cells,
            (QUERY_SENSITIVITY, MARGINAL_L2),
            magnitude=magnitude,
            label=label,
        )

    @property
    def cost(self):
        """What the round (one selection, one measurement) spends."""
        return self.select_cost + self.measure_cost

    def events(self, *, select=True):
        """The round's events: selection (if ``select``) and measurement."""
        # The measured table is chosen by the selection, so the event must
        # cover every candidate: the discrete Gaussian of the largest lattice
        # shift (max_cells), or the discrete Laplace's pure epsilon.
        if self.noise == "gaussian":
            measure = self.measurement_cover(label="MWEM measurement")
        else:
            measure = PureDPEvent(self.measure_epsilon, label="MWEM measurement")
        if not select:
            return (measure,)
        selection = ExponentialMechanismEvent(
            self.select_epsilon, label="MWEM selection"
        )
        return (selection, measure)


@dataclass(frozen=True)
class MWEMPlan:
    """What each MWEM step of one fit spends; built from public parameters only.

    A synthesizer's ``mwem_plan_``; the whole fit's charge is its
    ``privacy_plan(X)`` (a :class:`~skdp.base.FitPlan`).

    Attributes
    ----------
    noise : {"gaussian", "laplace"}
    n_init : int
        One-way marginals measured before the rounds.
    n_rounds : int
        Rounds (``"fixed"``), or the planned rounds that set the first
        round's budget (``"adaptive"``; at most this many are run).
    select_epsilon : float
        Epsilon of each exponential-mechanism selection (of the first round
        when adaptive).
    measure_epsilon : float or None
        Epsilon of each Laplace measurement (of the first round when
        adaptive).
    noise_multiplier : float or None
        Noise standard deviation over L2 sensitivity, Gaussian measurements
        (of the first round when adaptive).
    events : tuple of PrivacyEvent
        What the fit charges: every step in order (``"fixed"``), or the one
        budget of the adaptive rounds (``"adaptive"``: a
        :class:`~skdp.accounting.ZCDPEvent` with Gaussian noise, a
        :class:`~skdp.accounting.PureDPEvent` with Laplace noise).
    schedule : {"fixed", "adaptive"}
    total : float or None
        The adaptive rounds' budget: zCDP rho (Gaussian) or pure epsilon
        (Laplace); ``None`` when fixed.
    max_cells : int
        Cells of the largest table a measurement may cover.
    n_samples : int or None
        Rows: the largest count a measurement carries.
    """

    noise: str
    n_init: int
    n_rounds: int
    select_epsilon: float
    measure_epsilon: float | None
    noise_multiplier: float | None
    events: tuple = field(repr=False)
    schedule: str = "fixed"
    total: float | None = None
    max_cells: int = 1
    n_samples: int | None = None

    @property
    def first_round(self) -> RoundSettings:
        """Settings of the first round (of every round when fixed)."""
        return RoundSettings(
            self.noise,
            self.select_epsilon,
            self.measure_epsilon,
            self.noise_multiplier,
            self.max_cells,
            self.n_samples,
        )


def _events(noise, n_init, n_rounds, unit, max_cells=1, n_samples=None):
    """Events when each round gets ``unit`` (zCDP rho, or pure epsilon)."""
    settings = RoundSettings.from_unit(noise, unit, max_cells, n_samples)
    events = settings.events(select=False) * n_init + settings.events() * n_rounds
    return (
        events,
        settings.select_epsilon,
        settings.measure_epsilon,
        settings.noise_multiplier,
    )


def plan_privacy(
    epsilon,
    delta,
    noise,
    n_init,
    n_rounds,
    accountant,
    schedule="fixed",
    max_cells=1,
    n_samples=None,
) -> MWEMPlan:
    """Split ``(epsilon, delta)`` over the initial measurements and the rounds.

    ``schedule="fixed"``: every round and every initial one-way marginal
    gets the same budget unit (a round splits it 10/90 between selection
    and Gaussian measurement, or 50/50 with Laplace); the unit is the
    largest whose composition, computed by ``accountant``, stays within
    ``(epsilon, delta)``, found by
    :func:`~skdp.accounting.calibrate_parameter` with the same accountant
    that will account the fit.

    ``schedule="adaptive"``: the rounds share one budget, the largest zCDP
    ``rho`` whose :class:`~skdp.accounting.ZCDPEvent` the accountant puts
    within ``(epsilon, delta)`` (Gaussian noise), or ``epsilon`` itself as
    a pure-DP budget (Laplace noise). The first round gets the unit
    ``total / (n_rounds + share * n_init)`` (the fixed schedule's split of
    that budget); :func:`~skdp.synthesis._loop.run_mwem` anneals it and
    stops on the budget.
    """
    if schedule == "adaptive":
        return _plan_adaptive(
            epsilon, delta, noise, n_init, n_rounds, accountant, max_cells, n_samples
        )
    if noise == "laplace":
        # Pure DP composes by adding epsilons.
        share = _MEASURE_SHARE[noise]
        unit = epsilon / (n_rounds + share * n_init)
        events, select, measure, multiplier = _events(
            noise, n_init, n_rounds, unit, max_cells, n_samples
        )
        return MWEMPlan(
            noise,
            n_init,
            n_rounds,
            select,
            measure,
            None,
            events,
            max_cells=max_cells,
            n_samples=n_samples,
        )

    def event(unit):
        return ComposedEvent(
            _events(noise, n_init, n_rounds, unit, max_cells, n_samples)[0]
        )

    # rho-zCDP gives epsilon >= rho, and rho = (n_init + n_rounds) * unit
    # roughly: start the search there.
    guess = epsilon**2 / (4.0 * math.log(1.0 / delta) * (n_init + n_rounds))
    low = _calibrate(event, epsilon, delta, accountant, guess, n_init + n_rounds)
    events, select, measure, multiplier = _events(
        noise, n_init, n_rounds, low, max_cells, n_samples
    )
    return MWEMPlan(
        noise,
        n_init,
        n_rounds,
        select,
        None,
        multiplier,
        events,
        max_cells=max_cells,
        n_samples=n_samples,
    )


def _calibrate(event, epsilon, delta, accountant, guess, n_steps):
    """Largest parameter of ``event`` within ``(epsilon, delta)`` (may raise)."""
    if accountant.epsilon_delta([event(1e-12)], delta)[0] > epsilon:
        raise ValueError(
            f"epsilon={epsilon!r} at delta={delta!r} is too small to split over "
            f"{n_steps} measurements; use a larger epsilon or fewer rounds."
        )
    try:
        low = calibrate_parameter(
            event,
            epsilon,
            delta,
            accountant,
            increasing=True,
            bracket=(guess / 2.0, guess * 2.0),
        )
    except ValueError:
        raise ValueError(
            f"epsilon={epsilon!r} at delta={delta!r} cannot be split over "
            f"{n_steps} measurements (too large: measurements this "
            "precise provide no privacy); use a smaller epsilon."
        ) from None
    if not 1e-12 <= low <= 1e12:
        raise ValueError(
            f"epsilon={epsilon!r} is too large to calibrate: measurements "
            "this precise provide no privacy."
        )
    return low


def _plan_adaptive(
    epsilon, delta, noise, n_init, n_rounds, accountant, max_cells, n_samples
):
    share = _MEASURE_SHARE[noise]
    if noise == "laplace":
        total = float(epsilon)
        charged = PureDPEvent(total, label="MWEM adaptive rounds (pure-DP filter)")
    else:

        def event(rho):
            # (xi, rho)-zCDP: every discrete Gaussian measurement adds its
            # lattice shift to xi; at most n_init + n_rounds of them, none
            # more precise than the one that spends the whole budget.
            precise = RoundSettings.from_unit(noise, rho, max_cells, n_samples)
            shift = precise.measurement_cover().lattice_shift
            return ZCDPEvent(
                rho,
                xi=(n_init + n_rounds) * shift,
                label="MWEM adaptive rounds (zCDP filter)",
            )

        # rho-zCDP is (rho + 2 sqrt(rho log(1/delta)), delta)-DP: start there.
        guess = epsilon**2 / (4.0 * math.log(1.0 / delta))
        try:
            total = _calibrate(
                event, epsilon, delta, accountant, guess, n_init + n_rounds
            )
        except UnsupportedEventError:
            raise ValueError(
                f"The budget's accountant {accountant!r} cannot account a zCDP "
                "budget, which schedule='adaptive' charges; use "
                "schedule='fixed' or a PrivacyAccountant/RDPAccountant budget."
            ) from None
        charged = event(total)
    unit = total / (n_rounds + share * n_init)
    first = RoundSettings.from_unit(noise, unit, max_cells, n_samples)
    return MWEMPlan(
        noise,
        n_init,
        n_rounds,
        first.select_epsilon,
        first.measure_epsilon,
        first.noise_multiplier,
        (charged,),
        schedule="adaptive",
        total=total,
        max_cells=max_cells,
        n_samples=n_samples,
    )


#: Sensitivities of one measurement, in counts, under replace-one: a
#: marginal table moves by 2 in L1 and sqrt(2) in L2 (one row leaves a cell
#: and enters another); one counting query in [0, 1] moves by 1.
MARGINAL_L1 = 2.0
MARGINAL_L2 = math.sqrt(2.0)
QUERY_SENSITIVITY = 1.0


def plan_measurement(
    plan: MWEMPlan | RoundSettings,
    cells: int,
    *,
    query: bool = False,
    n_samples: int | None = None,
):
    """The noise plan of measuring a table of ``cells`` counts (may raise).

    Gaussian: sensitivity ``sqrt(2)`` (marginals) or 1 (queries) at the
    plan's (or round's) noise multiplier; Laplace: ``2`` or 1 at its
    measurement epsilon.

    Examples
    --------
    >>> from skdp.accounting import RDPAccountant
    >>> from skdp.synthesis._plan import plan_measurement, plan_privacy
    >>> plan = plan_privacy(1.0, 0.0, "laplace", 2, 3, RDPAccountant())
    >>> plan_measurement(plan, 4).sensitivity
    2.0
    """
    # Counts (and query answers in counts) are at most n: the grid must
    # carry n exactly, or a large table's counts would be clipped.
    magnitude = None if n_samples is None else float(n_samples)
    if plan.noise == "gaussian":
        sensitivity = QUERY_SENSITIVITY if query else MARGINAL_L2
        return plan_gaussian(
            sensitivity,
            cells,
            noise_multiplier=plan.noise_multiplier,
            magnitude=magnitude,
        )
    sensitivity = QUERY_SENSITIVITY if query else MARGINAL_L1
    return plan_laplace(sensitivity, plan.measure_epsilon, cells, magnitude=magnitude)


def _expected_abs_noise(settings, *, query=False):
    """Expected absolute noise of one measured cell, in counts (public).

    ``sqrt(2/pi) sigma`` for Gaussian noise of standard deviation
    ``sigma = s * Delta_2``; ``b = Delta_1 / epsilon`` for Laplace noise.
    """
    if settings.noise == "gaussian":
        sensitivity = QUERY_SENSITIVITY if query else MARGINAL_L2
        return math.sqrt(2.0 / math.pi) * settings.noise_multiplier * sensitivity
    sensitivity = QUERY_SENSITIVITY if query else MARGINAL_L1
    return sensitivity / settings.measure_epsilon
