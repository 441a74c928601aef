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


#: Halvings of one mirror-descent step before the run gives up.
MAX_HALVINGS = 40
#: Trial steps a run of ``n`` steps may take beyond ``2 n``.
EXTRA_TRIALS = 40


def max_refits(n_iter: int) -> int:
    """Most model refits (junction-tree calibrations) of ``_Estimator.run``.

    ``2 n_iter + EXTRA_TRIALS`` trial steps and one restoring refit.

    Examples
    --------
    >>> from skdp.synthesis._estimation import max_refits
    >>> max_refits(30)
    101
    """
    return 2 * int(n_iter) + EXTRA_TRIALS + 1


class _Estimator:
    """Mirror descent on the squared error of all measurements.

    Parameters
    ----------
    model : DenseModel or JunctionTreeModel
    """

    def __init__(self, model):
        self._model = model
        self._stale = False  # a new clique awaits a new junction tree
        self.cliques: dict[tuple, _Measured] = {}
        self.queries: list[np.ndarray] = []
        self.query_values: list[float] = []
        self.query_weights: list[float] = []
        self.potentials: dict[tuple, np.ndarray] = {}
        self.query_potential = None
        self.step = None
        self.n_iter = 0

    @property
    def model(self):
        """The model over every measured clique (a junction tree is rebuilt
        once for all the cliques added since it was last read: the initial
        measurements of a wide table used to rebuild it once each, cubic in
        the number of columns)."""
        if self._stale:
            self._model = JunctionTreeModel(self._model.sizes, list(self.potentials))
            self._model.set_potentials(self.potentials)
            self._stale = False
        return self._model

    def add_marginal(self, view, value, sigma):
        self.cliques.setdefault(view, _Measured()).add(value, sigma)
        clique = base_clique(view)
        if clique not in self.potentials:
            sizes = self._model.sizes
            self.potentials[clique] = np.zeros([sizes[a] for a in clique])
            self._stale = isinstance(self._model, JunctionTreeModel)

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
        """``n_iter`` mirror-descent steps with Armijo backtracking.

        Each trial step refits the model (a calibration of the junction
        tree); there are at most ``2 * n_iter + EXTRA_TRIALS`` of them
        (:func:`max_refits`, with the refit that restores the accepted
        model), a public bound of the run's work. A step
        starts at twice the last accepted size, so ``n_iter`` steps halve
        about ``n_iter`` times in all, plus the logarithm of how far the
        size falls: on PMW fits of Adult and wide tables no run used more
        than ``2 * n_iter + 3``. Past the bound the run stops with the
        last accepted model, as when no step decreases the loss.
        """
        trials = 2 * n_iter + EXTRA_TRIALS
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
            for _ in range(MAX_HALVINGS):
                if trials == 0:  # the public bound: keep the accepted model
                    self._apply(self.potentials, self.query_potential)
                    return
                trials -= 1
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
