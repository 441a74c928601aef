"""MWEM's estimation step: the model refitted to every noisy measurement.

Entropic mirror descent on the inverse-variance-weighted squared error of
all measurements so far, ``sum_i w_i ||M_i p - y_i||^2 / 2``:
``p <- p * exp(-eta * grad)``, renormalised (private-pgm's estimator,
McKenna, Sheldon & Miklau 2019, Section 4); MWEM's own update is one such
step with ``eta = 1/2`` per measurement.

Each step reads the model once: every measured clique's marginal comes
from one shared reduction of the model's tables (:meth:`marginals`), and
every view measured on a clique (plain or coarse, on the clique or on a
clique inside it) is reduced from that marginal. A coarse view is measured
on the model's group attributes where the model has them
(:meth:`~skdp.synthesis._attributes.Attributes.measured`): its marginal is
then the view itself. The potentials live on the *covering* cliques only (a
measured clique inside another keeps none of its own): the log-linear model
only sees their sum, so this is the same model and the same steps, with
fewer tables to add up.

Privacy: nothing here touches the data. The estimation is post-processing
of the noisy measurements, and the group attributes change only how the
same model is stored and stepped (the tests check the steps against the
dense model of the columns), so the guarantee is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._models import DenseModel, JunctionTreeModel
from ._views import expand_view, reduce_view


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

    Attributes
    ----------
    views : dict
        The combined measurements (:class:`_Measured`) of each view.
    measured_as : dict
        Each view's model clique and what is left to reduce from its
        marginal (:meth:`~skdp.synthesis._attributes.Attributes.measured`).
    cover : dict
        Each measured clique's covering clique, the one whose potential and
        marginal it uses (itself, or a measured clique that holds it).
    potentials : dict
        Log-potential table of each covering clique.
    """

    def __init__(self, model):
        self._model = model
        self._stale = False  # a new covering clique awaits a new junction tree
        self.views: dict = {}
        self.measured_as: dict = {}
        self.cover: dict[tuple, tuple] = {}
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
            self._model = self._model.with_cliques(list(self.potentials))
            self._model.set_potentials(self.potentials)
            self._stale = False
        return self._model

    def add_marginal(self, view, value, sigma):
        self.views.setdefault(view, _Measured()).add(value, sigma)
        attributes = self._model.attributes
        if view not in self.measured_as:
            self.measured_as[view] = attributes.measured(view)
        clique = self.measured_as[view][0]
        if clique in self.cover:
            return
        holders = [c for c in self.potentials if attributes.holds(c, clique)]
        if holders:
            self.cover[clique] = min(holders, key=attributes.cells)
            return
        # A new covering clique; it takes over the potentials of the
        # covering cliques inside it (their sum, hence the model, unchanged).
        theta = np.zeros(attributes.shape(clique))
        inside = [c for c in self.potentials if attributes.holds(clique, c)]
        for inner in inside:
            theta = theta + attributes.expand(self.potentials.pop(inner), inner, clique)
            for measured, covering in self.cover.items():
                if covering == inner:
                    self.cover[measured] = clique
        self.potentials[clique] = theta
        self.cover[clique] = clique
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

    def view_marginals(self):
        """The model's table of every measured view, and each clique's marginal.

        Returns ``(views, cliques)``: ``views[v]`` is the model's answer to
        view ``v`` (:func:`~skdp.synthesis._views.view_marginal`, computed
        once per clique) and ``cliques[c]`` the marginal of each measured
        clique.
        """
        cliques = self.model.marginals(list(self.cover))
        views = {
            v: reduce_view(cliques[clique], rest)
            for v, (clique, rest) in self.measured_as.items()
        }
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
            clique, rest = self.measured_as[view]
            diff = views[view] - measured.value
            loss += 0.5 * measured.weight * float(np.sum(diff * diff))
            grad = measured.weight * expand_view(diff, rest, means[clique].shape)
            if clique in by_clique:
                grad = by_clique[clique] + grad
            by_clique[clique] = grad
        gradient = {}
        for clique, grad in by_clique.items():
            cover = self.cover[clique]
            if cover != clique:
                shape = self.potentials[cover].shape
                expanded = self.model.attributes.expand(grad, clique, cover)
                grad = np.broadcast_to(expanded, shape)
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

        Each trial step refits the model (a calibration of the junction
        tree); there are at most ``2 * max_iter + EXTRA_TRIALS`` of them
        (:func:`max_refits`, with the refit that restores the accepted
        model), a public bound of the run's work. A step starts at twice
        the last accepted size, so ``max_iter`` steps halve about
        ``max_iter`` times in all, plus the logarithm of how far the size
        falls: on PMW fits of Adult and wide tables no run used more than
        ``2 * max_iter + 3``. Past the bound the run stops with the last
        accepted model, as when no step decreases the loss.
        """
        trials = 2 * max_iter + EXTRA_TRIALS
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
            for _ in range(MAX_HALVINGS):
                if trials == 0:  # the public bound: keep the accepted model
                    self._apply(self.potentials, self.query_potential)
                    return done
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
