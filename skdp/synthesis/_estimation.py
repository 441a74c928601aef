"""MWEM's estimation step: the model refitted to every noisy measurement.

Entropic mirror descent on the inverse-variance-weighted squared error of
all measurements so far, ``sum_i w_i ||M_i p - y_i||^2 / 2``:
``p <- p * exp(-eta * grad)``, renormalised (private-pgm's estimator,
McKenna, Sheldon & Miklau 2019, Section 4); MWEM's own update is one such
step with ``eta = 1/2`` per measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._models import DenseModel, JunctionTreeModel
from ._views import base_clique, expand_view, reduce_view


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
