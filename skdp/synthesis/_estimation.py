"""MWEM's estimation step: the model refitted to every noisy measurement.

Entropic mirror descent on the inverse-variance-weighted squared error of
all measurements so far, ``sum_i w_i ||M_i p - y_i||^2 / 2``:
``p <- p * exp(-eta * grad)``, renormalised (private-pgm's estimator,
McKenna, Sheldon & Miklau 2019, Section 4); MWEM's own update is one such
step with ``eta = 1/2`` per measurement.

Each step reads the model once: every measured clique's marginal comes
from one shared reduction of the model's tables (:meth:`marginals`), and
every view measured on a clique (plain or coarse, on the clique or on a
clique inside it) is reduced from that marginal. The potentials live on the
*covering* cliques only (a measured clique inside another keeps none of its
own): the log-linear model only sees their sum, so this is the same model
and the same steps, with fewer tables to add up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._models import DenseModel, JunctionTreeModel, _cells, _expand
from ._views import base_clique, expand_view, reduce_view


@dataclass
class _Measured:
    """All noisy measurements of one view, combined by precision weighting."""

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

    Attributes
    ----------
    views : dict
        The combined measurements (:class:`_Measured`) of each view.
    cover : dict
        Each measured clique's covering clique, the one whose potential and
        marginal it uses (itself, or a measured clique that holds it).
    potentials : dict
        Log-potential table of each covering clique.
    """

    def __init__(self, model):
        self.model = model
        self.views: dict = {}
        self.cover: dict[tuple, tuple] = {}
        self.queries: list[np.ndarray] = []
        self.query_values: list[float] = []
        self.query_weights: list[float] = []
        self.potentials: dict[tuple, np.ndarray] = {}
        self.query_potential = None
        self.step = None
        self.n_iter = 0

    def add_marginal(self, view, value, sigma):
        self.views.setdefault(view, _Measured()).add(value, sigma)
        clique = base_clique(view)
        if clique in self.cover:
            return
        sizes = self.model.sizes
        holders = [c for c in self.potentials if set(clique) <= set(c)]
        if holders:
            self.cover[clique] = min(holders, key=lambda c: _cells(c, sizes))
            return
        # A new covering clique; it takes over the potentials of the
        # covering cliques inside it (their sum, hence the model, unchanged).
        theta = np.zeros([sizes[a] for a in clique])
        for inner in [c for c in self.potentials if set(c) < set(clique)]:
            theta = theta + _expand(self.potentials.pop(inner), inner, clique)
            for measured, covering in self.cover.items():
                if covering == inner:
                    self.cover[measured] = clique
        self.potentials[clique] = theta
        self.cover[clique] = clique
        if isinstance(self.model, JunctionTreeModel):
            self.model = JunctionTreeModel(sizes, list(self.potentials))
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

    def view_marginals(self):
        """The model's table of every measured view, and each clique's marginal.

        Returns ``(views, cliques)``: ``views[v]`` is the model's answer to
        view ``v`` (:func:`~skdp.synthesis._views.view_marginal`, computed
        once per clique) and ``cliques[c]`` the marginal of each measured
        clique.
        """
        cliques = self.model.marginals(list(self.cover))
        views = {v: reduce_view(cliques[base_clique(v)], v) for v in self.views}
        return views, cliques

    def _loss_and_gradient(self):
        """Loss, gradient in mean space, and the current means.

        The gradient is by covering clique (what the potentials are on);
        the means are by measured clique (what the predicted decrease of
        the line search reads), and ``"queries"`` for a query workload.
        """
        loss = 0.0
        views, means = self.view_marginals()
        by_clique = {}
        for view, measured in self.views.items():
            clique = base_clique(view)
            diff = views[view] - measured.value
            loss += 0.5 * measured.weight * float(np.sum(diff * diff))
            grad = measured.weight * expand_view(diff, view, means[clique].shape)
            if clique in by_clique:
                grad = by_clique[clique] + grad
            by_clique[clique] = grad
        gradient = {}
        for clique, grad in by_clique.items():
            cover = self.cover[clique]
            if cover != clique:
                shape = self.potentials[cover].shape
                grad = np.broadcast_to(_expand(grad, clique, cover), shape)
            gradient[cover] = gradient[cover] + grad if cover in gradient else grad
        query_gradient = None
        if self.queries:
            matrix = np.asarray(self.queries)
            answers = self.model.answer_queries(matrix)
            diff = answers - np.asarray(self.query_values)
            weights = np.asarray(self.query_weights)
            loss += 0.5 * float(np.sum(weights * diff * diff))
            query_gradient = matrix.T @ (weights * diff)
            by_clique["queries"] = query_gradient
            means["queries"] = self.model.probabilities.ravel().copy()
        return loss, gradient, query_gradient, (by_clique, means)

    def run(self, max_iter, tol=0.0):
        """Mirror-descent steps with Armijo backtracking, until converged.

        Stops after ``max_iter`` steps, or as soon as a step lowers the loss
        by at most ``tol`` times its new value (relative decrease), or when
        no step size lowers it. Returns the number of steps run.

        The rule reads the loss only: a function of the model and the noisy
        measurements, with public constants (``max_iter``, ``tol``). The
        estimate is therefore post-processing of the measurements whenever
        it stops, and the stopping rule costs no privacy.
        """
        loss, gradient, query_gradient, means = self._loss_and_gradient()
        total = sum(m.weight for m in self.views.values()) + sum(self.query_weights)
        # Start no smaller than 1 / total weight: at a flat optimum Armijo
        # backtracking accepts a step that changes nothing, so the step can
        # shrink to ~1e-24, and a later, informative measurement could then
        # no longer move the model.
        if self.step is None or self.step < 1.0 / total:
            self.step = 1.0 / total
        for done in range(max_iter):
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
                if loss - new_loss >= 0.5 * _predicted(means, new_means):
                    break
                step *= 0.5
            else:  # no decrease found: keep the previous model
                self._apply(self.potentials, self.query_potential)
                return done
            self.n_iter += 1
            self.step = step
            self.potentials, self.query_potential = potentials, query_potential
            converged = loss - new_loss <= tol * new_loss
            loss, gradient, query_gradient, means = (
                new_loss,
                new_gradient,
                new_query_gradient,
                new_means,
            )
            if converged:
                return done + 1
        return max_iter


def _predicted(before, after):
    """The linear prediction ``<gradient, mu_before - mu_after>`` of the decrease.

    Read on the measured cliques' own (small) marginals (and the query
    workload's cells): the gradient of a covering clique is the sum of its
    measured cliques' gradients, expanded, so the two inner products are
    equal.
    """
    gradients, means = before
    new_means = after[1]
    return sum(
        float(np.sum(g * (means[c] - new_means[c]))) for c, g in gradients.items()
    )
