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

All quantities are fractions of the ``n`` rows. Neighbouring datasets differ
by *replacing one row* (``n`` is public), so one counting query moves by at
most ``1/n`` and a marginal table (vector of cell fractions) by at most
``2/n`` in L1 and ``sqrt(2)/n`` in L2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..accounting._calibration import calibrate_parameter
from ..accounting._events import (
    ComposedEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
)
from ..mechanisms import add_noise, exponential_mechanism, plan_gaussian, plan_laplace
from ._models import DenseModel, JunctionTreeModel, junction_tree_size

__all__ = ["PrivacyPlan", "plan_measurement", "plan_privacy", "run_mwem"]

# Share of each round's budget that goes to the measurement (the rest
# selects). 0.9 as in AIM (McKenna et al. 2022) for Gaussian noise under
# zCDP; MWEM's even split for pure DP with Laplace noise.
_MEASURE_SHARE = {"gaussian": 0.9, "laplace": 0.5}


@dataclass(frozen=True)
class PrivacyPlan:
    """What each step of one fit spends; built from public parameters only.

    Attributes
    ----------
    noise : {"gaussian", "laplace"}
    n_init : int
        One-way marginals measured before the rounds.
    n_rounds : int
    select_epsilon : float
        Epsilon of each exponential-mechanism selection.
    measure_epsilon : float or None
        Epsilon of each Laplace measurement.
    noise_multiplier : float or None
        Noise standard deviation over L2 sensitivity, Gaussian measurements.
    events : tuple of PrivacyEvent
        Everything, in order.
    """

    noise: str
    n_init: int
    n_rounds: int
    select_epsilon: float
    measure_epsilon: float | None
    noise_multiplier: float | None
    events: tuple = field(repr=False)


def _events(noise, n_init, n_rounds, unit):
    """Events when each round gets ``unit`` (zCDP rho, or pure epsilon)."""
    share = _MEASURE_SHARE[noise]
    if noise == "gaussian":
        # rho = 1 / (2 s**2) per measurement; rho = eps**2 / 8 per selection
        # (bounded range, Cesar & Rogers 2021).
        multiplier = 1.0 / math.sqrt(2.0 * share * unit)
        select = math.sqrt(8.0 * (1.0 - share) * unit)
        measure = GaussianEvent(multiplier, label="MWEM measurement")
        measure_epsilon = None
    else:
        multiplier = None
        select = (1.0 - share) * unit
        measure_epsilon = share * unit
        measure = LaplaceEvent(measure_epsilon, label="MWEM measurement")
    selection = ExponentialMechanismEvent(select, label="MWEM selection")
    events = (measure,) * n_init + (selection, measure) * n_rounds
    return events, select, measure_epsilon, multiplier


def plan_privacy(epsilon, delta, noise, n_init, n_rounds, accountant) -> PrivacyPlan:
    """Split ``(epsilon, delta)`` over the initial measurements and the rounds.

    Every round and every initial one-way marginal gets the same budget
    unit (a round splits it 10/90 between selection and Gaussian
    measurement, or 50/50 with Laplace); the unit is the largest whose
    composition, computed by ``accountant``, stays within ``(epsilon,
    delta)``, found by :func:`~skdp.accounting.calibrate_parameter` with the
    same accountant that will account the fit.
    """
    if noise == "laplace":
        # Pure DP composes by adding epsilons.
        share = _MEASURE_SHARE[noise]
        unit = epsilon / (n_rounds + share * n_init)
        events, select, measure, multiplier = _events(noise, n_init, n_rounds, unit)
        return PrivacyPlan(noise, n_init, n_rounds, select, measure, None, events)

    def event(unit):
        return ComposedEvent(_events(noise, n_init, n_rounds, unit)[0])

    # rho-zCDP gives epsilon >= rho, and rho = (n_init + n_rounds) * unit
    # roughly: start the search there.
    guess = epsilon**2 / (4.0 * math.log(1.0 / delta) * (n_init + n_rounds))
    if accountant.epsilon_delta([event(1e-12)], delta)[0] > epsilon:
        raise ValueError(
            f"epsilon={epsilon!r} at delta={delta!r} is too small to split over "
            f"{n_init + n_rounds} measurements; use a larger epsilon or fewer "
            "rounds."
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
            f"{n_init + n_rounds} measurements (too large: measurements this "
            "precise provide no privacy); use a smaller epsilon."
        ) from None
    if not 1e-12 <= low <= 1e12:
        raise ValueError(
            f"epsilon={epsilon!r} is too large to calibrate: measurements "
            "this precise provide no privacy."
        )
    events, select, measure, multiplier = _events(noise, n_init, n_rounds, low)
    return PrivacyPlan(noise, n_init, n_rounds, select, None, multiplier, events)


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

    def add_marginal(self, clique, value, sigma):
        self.cliques.setdefault(clique, _Measured()).add(value, sigma)
        if clique not in self.potentials:
            self.potentials[clique] = np.zeros(value.shape)
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
        for clique, measured in self.cliques.items():
            mu = self.model.marginal(clique)
            diff = mu - measured.value
            loss += 0.5 * measured.weight * float(np.sum(diff * diff))
            gradient[clique] = measured.weight * diff
            means[clique] = mu
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


def plan_measurement(plan: PrivacyPlan, cells: int, *, query: bool = False):
    """The noise plan of measuring a table of ``cells`` counts (may raise).

    Gaussian: sensitivity ``sqrt(2)`` (marginals) or 1 (queries) at the
    plan's noise multiplier; Laplace: ``2`` or 1 at the plan's measurement
    epsilon.

    Examples
    --------
    >>> from skdp.accounting import RDPAccountant
    >>> from skdp.synthesis._mwem import plan_measurement, plan_privacy
    >>> plan = plan_privacy(1.0, 0.0, "laplace", 2, 3, RDPAccountant())
    >>> plan_measurement(plan, 4).sensitivity
    2.0
    """
    if plan.noise == "gaussian":
        sensitivity = QUERY_SENSITIVITY if query else MARGINAL_L2
        return plan_gaussian(sensitivity, cells, noise_multiplier=plan.noise_multiplier)
    sensitivity = QUERY_SENSITIVITY if query else MARGINAL_L1
    return plan_laplace(sensitivity, plan.measure_epsilon, cells)


def _measure(value_counts, noise_plan, plan, source, n):
    """Noisy fractions and the noise standard deviation (fractions)."""
    noisy = add_noise(noise_plan, value_counts, source)
    if plan.noise == "gaussian":
        sigma = plan.noise_multiplier * noise_plan.sensitivity
    else:
        sigma = math.sqrt(2.0) * noise_plan.sensitivity / plan.measure_epsilon
    return np.asarray(noisy, dtype=float) / n, sigma / n


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
        are not offered to the selection (the cap is public).
    round_iter, final_iter : int
        Mirror-descent steps after each round and at the end.
    verbose : int
    noise_plans : dict, optional
        The measurements' noise plans by number of cells (``"query"`` for
        one query), made with :func:`plan_measurement` before the charge;
        missing ones are planned here.
    initial : list of tuple of int, optional
        The ``plan.n_init`` marginals measured before the rounds; by default
        the one-way marginals ``(0,), (1,), ...``. Any marginal has the same
        sensitivity, so which ones they are does not change the plan.

    Returns
    -------
    model : DenseModel or JunctionTreeModel
    selected : list
        Selected clique tuples or query indices, in order.
    n_iter : int
        Mirror-descent steps run.
    """
    n = codes.shape[0]
    model = DenseModel(sizes) if dense else JunctionTreeModel(sizes)
    estimator = _Estimator(model)
    noise_plans = {} if noise_plans is None else noise_plans

    def noise_for(cells, query=False):
        key = "query" if query else cells
        if key not in noise_plans:
            noise_plans[key] = plan_measurement(plan, cells, query=query)
        return noise_plans[key]

    initial = [(a,) for a in range(plan.n_init)] if initial is None else initial
    for clique in initial:
        counts = _counts(codes, clique, sizes)
        value, sigma = _measure(counts, noise_for(counts.size), plan, source, n)
        estimator.add_marginal(clique, value.reshape(counts.shape), sigma)
    if plan.n_init:
        estimator.run(round_iter)

    if queries is not None:
        histogram = _counts(codes, tuple(range(len(sizes))), sizes).ravel() / n
        true_answers = queries @ histogram
    else:
        true_marginals = _TrueMarginals(codes, sizes, candidates)

    selected = []
    for t in range(plan.n_rounds):
        if queries is not None:
            errors = np.abs(true_answers - estimator.model.answer_queries(queries))
            # One counting query in [0, 1] moves by at most 1/n.
            index, _ = exponential_mechanism(
                errors, 1.0 / n, plan.select_epsilon, random_state=source
            )
            selected.append(index)
            value, sigma = _measure(
                [true_answers[index] * n], noise_for(1, query=True), plan, source, n
            )
            estimator.add_query(queries[index], float(value[0]), sigma)
        else:
            chosen = _select_marginal(
                estimator,
                candidates,
                true_marginals,
                sizes,
                plan,
                source,
                n,
                max_model_size,
            )
            selected.append(chosen)
            counts = true_marginals[chosen] * n
            value, sigma = _measure(counts, noise_for(counts.size), plan, source, n)
            estimator.add_marginal(chosen, value.reshape(counts.shape), sigma)
        estimator.run(round_iter)
        if verbose:
            print(
                f"[PMWSynthesizer] round {t + 1}/{plan.n_rounds}: measured "
                f"{selected[-1]!r}, model size {estimator.model.size}"
            )
    estimator.run(final_iter)
    return estimator.model, selected, estimator.n_iter


class _TrueMarginals:
    """The data's marginals of the candidates, as fractions, kept or recomputed.

    Up to ``_KEPT_CELLS`` cells in all they are computed once; beyond, each
    is counted again when asked for (more time, bounded memory).
    """

    def __init__(self, codes, sizes, candidates):
        self.codes, self.sizes = codes, sizes
        total = sum(math.prod(sizes[a] for a in c) for c in candidates)
        self.kept = (
            {c: self._count(c) for c in candidates} if total <= _KEPT_CELLS else None
        )

    def _count(self, clique):
        return _counts(self.codes, clique, self.sizes) / self.codes.shape[0]

    def __getitem__(self, clique):
        if self.kept is not None:
            return self.kept[clique]
        return self._count(clique)


#: Cells of candidate marginals kept in memory at once (8 bytes each).
_KEPT_CELLS = 2**25


def _select_marginal(
    estimator, candidates, true_marginals, sizes, plan, source, n, max_model_size
):
    """Exponential-mechanism choice of the worst-approximated marginal.

    Score ``||M_C(data) - M_C(model)||_1 - E||noise_C||_1``: the L1 error of
    the model's marginal minus the expected L1 norm of the noise a
    measurement of ``C`` would add (``sqrt(2/pi) sigma`` per cell for
    Gaussian noise, ``b`` for Laplace), as in AIM (McKenna et al. 2022,
    Section 4). The subtracted term is public, so the score's sensitivity is
    that of the L1 error, ``2/n`` under replace-one.
    """
    model = estimator.model
    measured = list(estimator.potentials)
    if plan.noise == "gaussian":
        per_cell = math.sqrt(2.0 / math.pi) * plan.noise_multiplier * math.sqrt(2.0)
    else:
        per_cell = 2.0 / plan.measure_epsilon
    scores, allowed = [], []
    for clique in candidates:
        cells = math.prod(sizes[a] for a in clique)
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
        error = float(np.abs(true_marginals[clique] - model.marginal(clique)).sum())
        scores.append(error - penalty)
        allowed.append(clique)
    index, _ = exponential_mechanism(
        scores, 2.0 / n, plan.select_epsilon, random_state=source
    )
    return allowed[index]
