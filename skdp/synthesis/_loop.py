"""The MWEM loop: select, measure, re-estimate.

Every round (Hardt, Ligett & McSherry 2012, Algorithm 1):

1. **select** the worst-approximated query (a whole marginal table, or one
   row of an explicit query matrix) with the exponential mechanism;
2. **measure** it with Laplace or Gaussian noise;
3. **update** the model by multiplicative weights on *all* measurements so
   far (MWEM's replay, :mod:`skdp.synthesis._estimation`).

The rounds' budgets come from the plan (:mod:`skdp.synthesis._plan`) and
the schedule (:mod:`skdp.synthesis._schedule`); the fit has charged them
before :func:`run_mwem` reads the data.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import add_noise, exponential_mechanism
from ._estimation import _Estimator
from ._models import DenseModel, JunctionTreeModel, junction_tree, junction_tree_size
from ._plan import _expected_abs_noise, plan_measurement
from ._schedule import RoundSchedule
from ._views import (
    base_clique,
    groupings_of,
    reduce_view,
    view_cells,
    view_marginal,
)

__all__ = ["run_mwem", "workload_weights"]


def _measure(value_counts, noise_plan, plan, source, n):
    """Noisy fractions and the noise standard deviation (fractions)."""
    noisy = add_noise(noise_plan, value_counts, source)
    if plan.noise == "gaussian":
        sigma = plan.noise_multiplier * noise_plan.sensitivity
    else:
        sigma = math.sqrt(2.0) * noise_plan.sensitivity / plan.measure_epsilon
    return np.asarray(noisy, dtype=float) / n, sigma / n


def workload_weights(workload, candidates):
    """AIM's weight of each candidate: ``w_r = sum_s |r & s|`` over the workload.

    A candidate that shares more columns with more workload marginals is
    worth more to the workload's error (McKenna et al. 2022, Section 4).
    Depends on the (public) workload only.

    Examples
    --------
    >>> from skdp.synthesis._loop import workload_weights
    >>> workload_weights([(0, 1), (1, 2)], [(0,), (1,), (0, 1)])
    {(0,): 1.0, (1,): 2.0, (0, 1): 3.0}
    """
    sets = [set(s) for s in workload]
    return {
        c: float(sum(len(set(base_clique(c)) & s) for s in sets)) for c in candidates
    }


def run_mwem(
    data,
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
    tol=0.0,
    verbose=0,
    noise_plans=None,
    initial=None,
    weights=None,
    record=None,
):
    """Fit the model; the caller has already charged ``plan.events``.

    Parameters
    ----------
    data : DataMarginals
        The data's marginal counts (:mod:`skdp.synthesis._counting`), the
        only way the loop reads the rows.
    sizes : tuple of int
        Domain size of each attribute.
    plan : MWEMPlan
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
        Most mirror-descent steps after each round and at the end.
    tol : float
        The estimation stops earlier once a step lowers its loss by at most
        ``tol`` times the loss (:meth:`_Estimator.run`; a rule on the noisy
        measurements only). 0: always ``round_iter`` and ``final_iter``
        steps.
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
    n = data.n_samples
    if dense:
        model = DenseModel(sizes)
    else:
        # Each grouping of the coarse candidates is an attribute of the
        # model (public: from the candidates only).
        model = JunctionTreeModel(sizes, groupings=groupings_of(candidates or ()))
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
        counts = data.counts(clique)
        noise_plan = noise_for(settings, counts.size)
        value, sigma = _measure(counts, noise_plan, settings, source, n)
        estimator.add_marginal(clique, value.reshape(counts.shape), sigma)
        spend(settings.events(select=False))
    if plan.n_init:
        estimator.run(round_iter, tol)

    if queries is not None:
        histogram = data.counts(tuple(range(len(sizes)))).ravel() / n
        true_answers = queries @ histogram
    else:
        true_marginals = _TrueMarginals(data, sizes, candidates)

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
        estimator.run(round_iter, tol)
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
    estimator.run(final_iter, tol)
    return estimator.model, selected, estimator.n_iter


class _TrueMarginals:
    """The data's marginals of the candidates, as fractions, kept or recomputed.

    Up to ``_KEPT_CELLS`` cells in all they are computed once; beyond, each
    is read again from the data's counts when asked for (more time, bounded
    memory). The last
    clique's counts are kept, so that a coarse view, which follows its clique
    among the candidates, is reduced from them instead of counted again.
    """

    def __init__(self, data, sizes, candidates):
        self.data, self.sizes = data, sizes
        self._last = (None, None)
        total = sum(view_cells(c, sizes) for c in candidates)
        self.kept = (
            {c: self._count(c) for c in candidates} if total <= _KEPT_CELLS else None
        )

    def _count(self, view):
        clique = base_clique(view)
        if clique != self._last[0]:
            self._last = (clique, self.data.counts(clique))
        return reduce_view(self._last[1], view) / self.data.n_samples

    def __getitem__(self, clique):
        if self.kept is not None:
            return self.kept[clique]
        return self._count(clique)


#: Cells of candidate marginals kept in memory at once (8 bytes each).
_KEPT_CELLS = 2**25


class _SizeCap:
    """Whether measuring a candidate keeps the model within ``max_model_size``.

    Priced on the columns: the junction tree of the measured views' cliques
    and the candidate's, at full resolution (a coarse view on its clique's
    every value), must stay within the cap. The model's tree is never larger
    (:func:`~skdp.synthesis._models.junction_tree`), and the candidates
    offered are those a model of the columns alone would offer: the group
    attributes change what a step costs, not which marginals a fit measures.
    Both cliques are public (outputs of the mechanism, and the candidate). A
    clique the tree already holds adds nothing.
    """

    def __init__(self, estimator, max_model_size):
        model = estimator.model
        self.cap = max_model_size
        self.active = max_model_size is not None and isinstance(
            model, JunctionTreeModel
        )
        if not self.active:
            return
        self.columns = model.attributes.columns
        self.measured = list(dict.fromkeys(base_clique(v) for v in estimator.views))
        nodes, _ = junction_tree(self.measured, self.columns)
        self.nodes = [set(node) for node in nodes]
        self.fits = {}

    def __call__(self, view) -> bool:
        if not self.active:
            return True
        clique = base_clique(view)
        if clique not in self.fits:
            self.fits[clique] = any(set(clique) <= node for node in self.nodes) or (
                junction_tree_size(self.measured + [clique], self.columns) <= self.cap
            )
        return self.fits[clique]


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
    per_cell = _expected_abs_noise(settings)
    fits = _SizeCap(estimator, max_model_size)
    allowed, sources = [], {}
    for view in candidates:
        clique = base_clique(view)
        penalty = per_cell * view_cells(view, sizes) / n
        if penalty >= 2.0 and len(clique) > 1:
            # The L1 error is at most 2, so the score is negative whatever
            # the data: measuring this marginal would add more noise than
            # it could remove. Dropping it depends on public values only.
            continue
        if not fits(view):
            continue
        allowed.append((view, penalty))
        # The model's table of the view: reduced from its clique's marginal
        # when that is a candidate too (a coarse view follows its clique),
        # else from the model clique it would be measured on.
        model_clique, rest = model.attributes.measured(view)
        sources[view] = (clique, view) if clique in sources else (model_clique, rest)
    tables = model.marginals(list(dict.fromkeys(c for c, _ in sources.values())))
    scores = []
    for view, penalty in allowed:
        table, rest = sources[view]
        estimate = reduce_view(tables[table], rest)
        error = float(np.abs(true_marginals[view] - estimate).sum())
        weight = 1.0 if weights is None else weights[view]
        scores.append(weight * (error - penalty))
    allowed = [view for view, _ in allowed]
    largest = 1.0 if weights is None else max(weights[c] for c in allowed)
    index, _ = exponential_mechanism(
        scores, largest * 2.0 / n, settings.select_epsilon, random_state=source
    )
    return allowed[index]
