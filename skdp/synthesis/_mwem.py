"""The MWEM loop: select, measure, re-estimate; and its privacy plan.

Every round (Hardt, Ligett & McSherry 2012, Algorithm 1):

1. **select** the worst-approximated query (a whole marginal table, or one
   row of an explicit query matrix) with the exponential mechanism;
2. **measure** it with Laplace or Gaussian noise;
3. **update** the model by multiplicative weights on *all* measurements so
   far (MWEM's replay), which here is entropic mirror descent on their
   squared error, ``sum_i w_i ||M_i p - y_i||^2 / 2`` with ``w_i`` the
   inverse noise variance: ``p <- p * exp(-eta * grad)``, renormalised.
   This is private-pgm's estimation step (McKenna, Sheldon & Miklau 2019,
   Section 4); MWEM's own update is one such step with ``eta = 1/2`` per
   measurement.

The budget per round is fixed in advance (``schedule="fixed"``) or annealed
as in AIM (McKenna et al. 2022, Algorithm 1; ``schedule="adaptive"``, see
:class:`RoundSchedule`): the fit then charges one zCDP (or pure-DP) budget
that bounds every sequence of rounds the stopping rule allows.

All quantities are fractions of the ``n`` rows. Neighbouring datasets differ
by *replacing one row* (``n`` is public), so one counting query moves by at
most ``1/n`` and a marginal table (vector of cell fractions) by at most
``2/n`` in L1 and ``sqrt(2)/n`` in L2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..accounting._calibration import calibrate_parameter
from ..accounting._composition import UnsupportedEventError
from ..accounting._events import (
    ComposedEvent,
    ExponentialMechanismEvent,
    PureDPEvent,
    ZCDPEvent,
)
from ..mechanisms import add_noise, exponential_mechanism, plan_gaussian, plan_laplace
from ..mechanisms._additive import worst_case_gaussian_event
from ._models import DenseModel, JunctionTreeModel, junction_tree_size

__all__ = [
    "CoarseMarginal",
    "PrivacyPlan",
    "RoundSchedule",
    "RoundSettings",
    "plan_measurement",
    "plan_privacy",
    "run_mwem",
    "workload_weights",
]

# Share of each round's budget that goes to the measurement (the rest
# selects). 0.9 as in AIM (McKenna et al. 2022) for Gaussian noise under
# zCDP; MWEM's even split for pure DP with Laplace noise.
_MEASURE_SHARE = {"gaussian": 0.9, "laplace": 0.5}

#: Adaptive schedule: a round whose measurement moved the model's answer
#: by less than the noise explains gets this many times more budget (zCDP
#: rho, or pure epsilon with Laplace noise) in the following rounds. 4 is
#: AIM's (sigma halved and the selection epsilon doubled).
ANNEAL_FACTOR = 4.0

#: Relative margin kept when the last round spends "the remainder", so that
#: rounding in ``1 / (2 s**2)`` can never push the total past the budget.
_REMAINDER_MARGIN = 1e-9


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
class PrivacyPlan:
    """What each step of one fit spends; built from public parameters only.

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
) -> PrivacyPlan:
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
    that budget); :func:`run_mwem` anneals it and stops on the budget.
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
        return PrivacyPlan(
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
    return PrivacyPlan(
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
    return PrivacyPlan(
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


# --- measurements and the estimation step ---------------------------------------


@dataclass
class _Measured:
    """All noisy measurements of one clique, combined by precision weighting."""

    weight: float = 0.0  # sum of 1 / sigma_i**2
    weighted_sum: np.ndarray | float = 0.0  # sum of y_i / sigma_i**2

    def add(self, value, sigma):
        self.weight += 1.0 / sigma**2
        self.weighted_sum = self.weighted_sum + value / sigma**2

    @property
    def value(self):
        return self.weighted_sum / self.weight


class _Estimator:
    """Mirror descent on the squared error of all measurements.

    Parameters
    ----------
    model : DenseModel or JunctionTreeModel
    """

    def __init__(self, model):
        self.model = model
        self.cliques: dict[tuple, _Measured] = {}
        self.queries: list[np.ndarray] = []
        self.query_values: list[float] = []
        self.query_weights: list[float] = []
        self.potentials: dict[tuple, np.ndarray] = {}
        self.query_potential = None
        self.step = None
        self.n_iter = 0

    def add_marginal(self, view, value, sigma):
        self.cliques.setdefault(view, _Measured()).add(value, sigma)
        clique = base_clique(view)
        if clique not in self.potentials:
            sizes = self.model.sizes
            self.potentials[clique] = np.zeros([sizes[a] for a in clique])
            if isinstance(self.model, JunctionTreeModel):
                current = self.model
                self.model = JunctionTreeModel(current.sizes, list(self.potentials))
                self.model.set_potentials(self.potentials)

    def add_query(self, query, value, sigma):
        self.queries.append(query)
        self.query_values.append(value)
        self.query_weights.append(1.0 / sigma**2)
        if self.query_potential is None:
            self.query_potential = np.zeros(query.size)

    def _apply(self, potentials, query_potential):
        if isinstance(self.model, DenseModel):
            self.model.set_potentials(potentials, query_potential)
        else:
            self.model.set_potentials(potentials)

    def _loss_and_gradient(self):
        """Loss, gradient in mean space, and the current means."""
        loss = 0.0
        gradient, means = {}, {}
        for view, measured in self.cliques.items():
            clique = base_clique(view)
            if clique not in means:
                means[clique] = self.model.marginal(clique)
            mu = means[clique]
            diff = reduce_view(mu, view) - measured.value
            loss += 0.5 * measured.weight * float(np.sum(diff * diff))
            grad = measured.weight * expand_view(diff, view, mu.shape)
            gradient[clique] = gradient[clique] + grad if clique in gradient else grad
        query_gradient = None
        if self.queries:
            matrix = np.asarray(self.queries)
            answers = self.model.answer_queries(matrix)
            diff = answers - np.asarray(self.query_values)
            weights = np.asarray(self.query_weights)
            loss += 0.5 * float(np.sum(weights * diff * diff))
            query_gradient = matrix.T @ (weights * diff)
            means["queries"] = self.model.probabilities.ravel().copy()
        return loss, gradient, query_gradient, means

    def run(self, n_iter):
        """``n_iter`` mirror-descent steps with Armijo backtracking."""
        loss, gradient, query_gradient, means = self._loss_and_gradient()
        total = sum(m.weight for m in self.cliques.values()) + sum(self.query_weights)
        # Start no smaller than 1 / total weight: at a flat optimum Armijo
        # backtracking accepts a step that changes nothing, so the step can
        # shrink to ~1e-24, and a later, informative measurement could then
        # no longer move the model.
        if self.step is None or self.step < 1.0 / total:
            self.step = 1.0 / total
        for _ in range(n_iter):
            self.n_iter += 1
            step = 2.0 * self.step
            for _ in range(40):
                potentials = {
                    c: theta - step * gradient[c] if c in gradient else theta
                    for c, theta in self.potentials.items()
                }
                query_potential = self.query_potential
                if query_gradient is not None:
                    query_potential = query_potential - step * query_gradient
                self._apply(potentials, query_potential)
                new_loss, new_gradient, new_query_gradient, new_means = (
                    self._loss_and_gradient()
                )
                predicted = sum(
                    float(np.sum(gradient[c] * (means[c] - new_means[c])))
                    for c in gradient
                )
                if query_gradient is not None:
                    predicted += float(
                        query_gradient @ (means["queries"] - new_means["queries"])
                    )
                if loss - new_loss >= 0.5 * predicted:
                    break
                step *= 0.5
            else:  # no decrease found: keep the previous model
                self._apply(self.potentials, self.query_potential)
                return
            self.step = step
            self.potentials, self.query_potential = potentials, query_potential
            loss, gradient, query_gradient, means = (
                new_loss,
                new_gradient,
                new_query_gradient,
                new_means,
            )


# --- the loop ---------------------------------------------------------------


def _counts(codes, clique, sizes):
    if not isinstance(codes, np.ndarray):  # counted elsewhere (dask input)
        return codes.counts(clique)
    shape = [sizes[a] for a in clique]
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in clique), shape)
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(float)


#: Sensitivities of one measurement, in counts, under replace-one: a
#: marginal table moves by 2 in L1 and sqrt(2) in L2 (one row leaves a cell
#: and enters another); one counting query in [0, 1] moves by 1.
MARGINAL_L1 = 2.0
MARGINAL_L2 = math.sqrt(2.0)
QUERY_SENSITIVITY = 1.0


def plan_measurement(
    plan: PrivacyPlan | RoundSettings,
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
    >>> from skdp.synthesis._mwem import plan_measurement, plan_privacy
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


def _measure(value_counts, noise_plan, plan, source, n):
    """Noisy fractions and the noise standard deviation (fractions)."""
    noisy = add_noise(noise_plan, value_counts, source)
    if plan.noise == "gaussian":
        sigma = plan.noise_multiplier * noise_plan.sensitivity
    else:
        sigma = math.sqrt(2.0) * noise_plan.sensitivity / plan.measure_epsilon
    return np.asarray(noisy, dtype=float) / n, sigma / n


class RoundSchedule:
    """Each round's settings, and when to stop; spends at most the plan's budget.

    ``"fixed"`` plans: ``plan.n_rounds`` rounds at the plan's settings.
    ``"adaptive"`` plans (AIM's rule, McKenna et al. 2022, Algorithm 1):
    the rounds start at the plan's first-round settings (unit ``u``); a
    round is the last if it is round ``plan.n_rounds`` or the budget left
    is at most ``2u``, and then spends everything left (less a relative
    ``1e-9``); after a round, :meth:`end_round` with ``anneal=True``
    multiplies ``u`` by :data:`ANNEAL_FACTOR`.

    Every round spends ``u <= left / 2`` or ``(1 - 1e-9) left``, so the
    budget spent never exceeds ``plan.total``, whatever the sequence of
    annealing decisions; and at most ``plan.n_rounds`` rounds run.

    Parameters
    ----------
    plan : PrivacyPlan

    Attributes
    ----------
    settings : RoundSettings
        Of the current (or next) round.
    spent : float
        Budget spent so far, including the initial measurements (zCDP rho
        or pure epsilon).
    rounds : int
        Rounds ended.
    done : bool
    """

    def __init__(self, plan):
        self.plan = plan
        self.adaptive = plan.schedule == "adaptive"
        self.settings = plan.first_round
        self.spent = plan.n_init * self.settings.measure_cost
        self.rounds = 0
        self.last = False
        self.done = plan.n_rounds == 0

    def next_round(self):
        """Settings of the next round and whether it is the last."""
        self.last = self.rounds + 1 >= self.plan.n_rounds
        if self.adaptive:
            left = self.plan.total - self.spent
            # Two rounds' worth left is not merged into one (a relative
            # 1e-9 for rounding: an exact tie would otherwise depend on it).
            if self.last or left < 2.0 * self.settings.cost * (1.0 - 1e-9):
                self.settings = RoundSettings.from_unit(
                    self.plan.noise,
                    left * (1.0 - _REMAINDER_MARGIN),
                    self.plan.max_cells,
                    self.plan.n_samples,
                )
                self.last = True
        return self.settings, self.last

    def size_cap(self, max_model_size):
        """Model cells allowed this round: AIM's share of the budget spent."""
        if max_model_size is None or not self.adaptive:
            return max_model_size
        share = min(1.0, (self.spent + self.settings.cost) / self.plan.total)
        return max_model_size * share

    def end_round(self, anneal=False):
        """Record the round's spend; raise the next rounds' budget if ``anneal``."""
        self.spent += self.settings.cost
        self.rounds += 1
        if self.last:
            self.done = True
        elif anneal and self.adaptive:
            self.settings = RoundSettings.from_unit(
                self.plan.noise,
                ANNEAL_FACTOR * self.settings.cost,
                self.plan.max_cells,
                self.plan.n_samples,
            )


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


def workload_weights(workload, candidates):
    """AIM's weight of each candidate: ``w_r = sum_s |r & s|`` over the workload.

    A candidate that shares more columns with more workload marginals is
    worth more to the workload's error (McKenna et al. 2022, Section 4).
    Depends on the (public) workload only.

    Examples
    --------
    >>> from skdp.synthesis._mwem import workload_weights
    >>> workload_weights([(0, 1), (1, 2)], [(0,), (1,), (0, 1)])
    {(0,): 1.0, (1,): 2.0, (0, 1): 3.0}
    """
    sets = [set(s) for s in workload]
    return {
        c: float(sum(len(set(base_clique(c)) & s) for s in sets)) for c in candidates
    }


class CoarseMarginal(NamedTuple):
    """A marginal measured on groups of consecutive codes of some attributes.

    Attributes
    ----------
    clique : tuple of int
        The attributes, as in a plain marginal.
    starts : tuple
        One entry per attribute of ``clique``: ``None`` (every code its own
        cell) or the increasing first codes of its groups, starting at 0
        (group ``k`` holds codes ``starts[k]`` to ``starts[k + 1] - 1``).

    Notes
    -----
    The coarse table is ``R M_C(D)``, where ``R`` adds up fixed groups of
    the cells of the clique's marginal ``M_C(D)``: a linear map that depends
    on public values only (the domain and the grouping). Under replace-one
    a row leaves one cell of ``M_C`` and enters one, so it leaves one group
    and enters one (or stays in the same one): the coarse counts move by at
    most 2 in L1 and ``sqrt(2)`` in L2, the sensitivities of a plain
    marginal, and a coarse marginal is selected and measured with the same
    calibration (``MARGINAL_L1``, ``MARGINAL_L2`` of this module).

    Examples
    --------
    >>> from skdp.synthesis import CoarseMarginal
    >>> view = CoarseMarginal((0, 2), ((0, 5, 10), None))
    >>> view
    CoarseMarginal((0, 2), 3 groups, all)
    >>> view.clique
    (0, 2)
    """

    clique: tuple
    starts: tuple

    def __repr__(self):
        groups = ", ".join(
            "all" if s is None else f"{len(s)} groups" for s in self.starts
        )
        return f"CoarseMarginal({self.clique!r}, {groups})"


def base_clique(view):
    """The attributes a candidate (clique or :class:`CoarseMarginal`) is over."""
    return view.clique if isinstance(view, CoarseMarginal) else view


def view_cells(view, sizes):
    """Cells of a candidate's measured table."""
    if isinstance(view, CoarseMarginal):
        return math.prod(
            sizes[a] if s is None else len(s) for a, s in zip(*view, strict=True)
        )
    return math.prod(sizes[a] for a in view)


def reduce_view(table, view):
    """The candidate's table from its clique's marginal ``table``: ``R table``."""
    if isinstance(view, CoarseMarginal):
        for axis, starts in enumerate(view.starts):
            if starts is not None:
                table = np.add.reduceat(table, starts, axis=axis)
    return table


def view_marginal(model, view):
    """The model's table of a candidate (its clique's marginal, reduced)."""
    return reduce_view(model.marginal(base_clique(view)), view)


def expand_view(table, view, shape):
    """The adjoint ``R^T table``: each group's value on each of its codes."""
    if isinstance(view, CoarseMarginal):
        for axis, starts in enumerate(view.starts):
            if starts is not None:
                widths = np.diff(np.append(starts, shape[axis]))
                table = np.repeat(table, widths, axis=axis)
    return table


def coarse_views(candidates, groupings):
    """The candidates, each followed by its coarse version if it has one.

    ``groupings`` maps an attribute to the first codes of its groups (public);
    each candidate holding one or more of them is followed by one
    :class:`CoarseMarginal` with all of them grouped (next to its clique,
    so that the selection computes the model's marginal once for both).

    Examples
    --------
    >>> from skdp.synthesis._mwem import coarse_views
    >>> for view in coarse_views([(0,), (1,), (0, 1)], {0: (0, 3, 6)}):
    ...     print(view)
    (0,)
    CoarseMarginal((0,), 3 groups)
    (1,)
    (0, 1)
    CoarseMarginal((0, 1), 3 groups, all)
    """
    views = []
    for clique in candidates:
        views.append(clique)
        starts = tuple(groupings.get(a) for a in clique)
        if any(s is not None for s in starts):
            views.append(CoarseMarginal(tuple(clique), starts))
    return views


def run_mwem(
    codes,
    sizes,
    plan,
    source,
    *,
    candidates=None,
    queries=None,
    dense=False,
    max_model_size=None,
    round_iter=50,
    final_iter=200,
    verbose=0,
    noise_plans=None,
    initial=None,
    weights=None,
    record=None,
):
    """Fit the model; the caller has already charged ``plan.events``.

    Parameters
    ----------
    codes : ndarray of shape (n, d)
        Encoded rows.
    sizes : tuple of int
        Domain size of each attribute.
    plan : PrivacyPlan
    source : RandomSource
        Noise for selections and measurements.
    candidates : list of tuple of int, optional
        Marginals to select from (marginal workloads).
    queries : ndarray of shape (k, prod(sizes)), optional
        Explicit linear queries over the enumerated universe (dense only).
    dense : bool
        Whether to use :class:`DenseModel`.
    max_model_size : int or None
        Cap on the junction tree's cells; candidates that would exceed it
        are not offered to the selection (the cap is public). With the
        adaptive schedule the cap grows with the share of the budget spent
        (AIM's rule): ``max_model_size * spent / total``.
    round_iter, final_iter : int
        Mirror-descent steps after each round and at the end.
    verbose : int
    noise_plans : dict, optional
        The measurements' noise plans by number of cells (``"query"`` for
        one query) at the plan's (first) round settings, made with
        :func:`plan_measurement` before the charge; missing ones are
        planned here.
    initial : list of tuple of int, optional
        The ``plan.n_init`` marginals measured before the rounds; by default
        the one-way marginals ``(0,), (1,), ...``. Any marginal has the same
        sensitivity, so which ones they are does not change the plan.
    weights : dict, optional
        Weight of each candidate marginal in the selection score (see
        :func:`workload_weights`); all 1 when omitted.
    record : list, optional
        If given, the events of the steps actually run (selections and
        measurements, in order) are appended to it.

    Returns
    -------
    model : DenseModel or JunctionTreeModel
    selected : list
        Selected clique tuples or query indices, in order.
    n_iter : int
        Mirror-descent steps run.

    Notes
    -----
    **Adaptive schedule** (``plan.schedule == "adaptive"``; AIM, McKenna et
    al. 2022, Algorithm 1). Each round's settings come from a unit ``u``
    (zCDP rho, or pure epsilon with Laplace noise), split between
    selection and measurement as in the fixed schedule; the first unit is
    ``plan``'s. Before a round, if the budget left, ``total - spent``, is
    at most twice ``u``, or this is round ``plan.n_rounds``, the round
    spends all that is left (less a relative ``1e-9``) and is the last.
    After a round that measured ``r``, if the model's answer moved by no
    more than the noise explains, ``||M_r(p_new) - M_r(p_old)||_1 <=
    E||noise_r||_1``, the unit is multiplied by :data:`ANNEAL_FACTOR`. All
    of these decisions read only the noisy model and public values, so
    they are post-processing. Every round spends either ``u <= (total -
    spent) / 2`` or less than what is left, so ``spent <= total`` always,
    and a fit runs at most ``plan.n_rounds`` rounds.
    """
    n = codes.shape[0]
    model = DenseModel(sizes) if dense else JunctionTreeModel(sizes)
    estimator = _Estimator(model)
    noise_plans = {} if noise_plans is None else noise_plans
    adaptive = plan.schedule == "adaptive"
    first = plan.first_round

    def noise_for(settings, cells, query=False):
        key = "query" if query else cells
        if settings != first:
            key = (settings, key)
        if key not in noise_plans:
            noise_plans[key] = plan_measurement(
                settings, cells, query=query, n_samples=n
            )
        return noise_plans[key]

    def spend(events):
        if record is not None:
            record.extend(events)

    schedule = RoundSchedule(plan)
    settings = first
    initial = [(a,) for a in range(plan.n_init)] if initial is None else initial
    for clique in initial:
        counts = _counts(codes, clique, sizes)
        noise_plan = noise_for(settings, counts.size)
        value, sigma = _measure(counts, noise_plan, settings, source, n)
        estimator.add_marginal(clique, value.reshape(counts.shape), sigma)
        spend(settings.events(select=False))
    if plan.n_init:
        estimator.run(round_iter)

    if queries is not None:
        histogram = _counts(codes, tuple(range(len(sizes))), sizes).ravel() / n
        true_answers = queries @ histogram
    else:
        true_marginals = _TrueMarginals(codes, sizes, candidates)

    selected = []
    while not schedule.done:
        settings, _ = schedule.next_round()
        size_cap = schedule.size_cap(max_model_size)
        if queries is not None:
            errors = np.abs(true_answers - estimator.model.answer_queries(queries))
            # One counting query in [0, 1] moves by at most 1/n.
            index, _ = exponential_mechanism(
                errors, 1.0 / n, settings.select_epsilon, random_state=source
            )
            selected.append(index)
            before = estimator.model.answer_queries(queries[index : index + 1])
            value, sigma = _measure(
                [true_answers[index] * n],
                noise_for(settings, 1, query=True),
                settings,
                source,
                n,
            )
            estimator.add_query(queries[index], float(value[0]), sigma)
        else:
            chosen = _select_marginal(
                estimator,
                candidates,
                true_marginals,
                sizes,
                settings,
                source,
                n,
                size_cap,
                weights=weights,
            )
            selected.append(chosen)
            before = view_marginal(estimator.model, chosen)
            counts = true_marginals[chosen] * n
            value, sigma = _measure(
                counts, noise_for(settings, counts.size), settings, source, n
            )
            estimator.add_marginal(chosen, value.reshape(counts.shape), sigma)
        estimator.run(round_iter)
        spend(settings.events())
        anneal = False
        if adaptive:
            # Post-processing: reads the noisy model and public values only.
            if queries is not None:
                after = estimator.model.answer_queries(queries[index : index + 1])
                expected = _expected_abs_noise(settings, query=True) / n
            else:
                after = view_marginal(estimator.model, chosen)
                expected = _expected_abs_noise(settings) * before.size / n
            anneal = float(np.abs(after - before).sum()) <= expected
        schedule.end_round(anneal)
        if verbose:
            print(
                f"[PMWSynthesizer] round {schedule.rounds}/{plan.n_rounds}: "
                f"measured {selected[-1]!r}, model size {estimator.model.size}"
                + (
                    f", spent {schedule.spent:.4g} of {plan.total:.4g}"
                    if adaptive
                    else ""
                )
            )
    estimator.run(final_iter)
    return estimator.model, selected, estimator.n_iter


class _TrueMarginals:
    """The data's marginals of the candidates, as fractions, kept or recomputed.

    Up to ``_KEPT_CELLS`` cells in all they are computed once; beyond, each
    is counted again when asked for (more time, bounded memory). The last
    clique's counts are kept, so that a coarse view, which follows its clique
    among the candidates, is reduced from them instead of counted again.
    """

    def __init__(self, codes, sizes, candidates):
        self.codes, self.sizes = codes, sizes
        self._last = (None, None)
        total = sum(view_cells(c, sizes) for c in candidates)
        self.kept = (
            {c: self._count(c) for c in candidates} if total <= _KEPT_CELLS else None
        )

    def _count(self, view):
        clique = base_clique(view)
        if clique != self._last[0]:
            self._last = (clique, _counts(self.codes, clique, self.sizes))
        return reduce_view(self._last[1], view) / self.codes.shape[0]

    def __getitem__(self, clique):
        if self.kept is not None:
            return self.kept[clique]
        return self._count(clique)


#: Cells of candidate marginals kept in memory at once (8 bytes each).
_KEPT_CELLS = 2**25


def _select_marginal(
    estimator,
    candidates,
    true_marginals,
    sizes,
    settings,
    source,
    n,
    max_model_size,
    *,
    weights=None,
):
    """Exponential-mechanism choice of the worst-approximated marginal.

    Score ``w_C (||M_C(data) - M_C(model)||_1 - E||noise_C||_1)``: the L1
    error of the model's marginal minus the expected L1 norm of the noise a
    measurement of ``C`` would add (``sqrt(2/pi) sigma`` per cell for
    Gaussian noise, ``b`` for Laplace), times the candidate's public weight
    ``w_C`` (1 without ``weights``), as in AIM (McKenna et al. 2022,
    Section 4). The subtracted term is public, so the score of ``C`` moves
    by at most ``w_C * 2/n`` under replace-one, and the selection uses the
    sensitivity ``max_C w_C * 2/n`` over the candidates offered (which are
    chosen from public values only).
    """
    model = estimator.model
    measured = list(estimator.potentials)
    per_cell = _expected_abs_noise(settings)
    scores, allowed = [], []
    last = (None, None)
    for view in candidates:
        clique = base_clique(view)
        cells = view_cells(view, sizes)
        penalty = per_cell * cells / n
        if penalty >= 2.0 and len(clique) > 1:
            # The L1 error is at most 2, so the score is negative whatever
            # the data: measuring this marginal would add more noise than
            # it could remove. Dropping it depends on public values only.
            continue
        if (
            max_model_size is not None
            and isinstance(model, JunctionTreeModel)
            and not model.contains(clique)
            and junction_tree_size(measured + [clique], sizes) > max_model_size
        ):
            continue
        if clique != last[0]:  # a coarse view follows its clique: reuse
            last = (clique, model.marginal(clique))
        estimate = reduce_view(last[1], view)
        error = float(np.abs(true_marginals[view] - estimate).sum())
        weight = 1.0 if weights is None else weights[view]
        scores.append(weight * (error - penalty))
        allowed.append(view)
    largest = 1.0 if weights is None else max(weights[c] for c in allowed)
    index, _ = exponential_mechanism(
        scores, largest * 2.0 / n, settings.select_epsilon, random_state=source
    )
    return allowed[index]
