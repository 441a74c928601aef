"""A small log-linear model over a junction tree, and the same as a dense table.

Shared by the model tests (``test_models.py``) and the sampling tests
(``test_sampling.py``); :func:`measured_estimator` by the estimation tests
(``test_estimation.py``, ``test_attributes.py``).
"""

import numpy as np

from skdp.synthesis._estimation import _Estimator
from skdp.synthesis._models import DenseModel, JunctionTreeModel
from skdp.synthesis._views import base_clique, reduce_view

SIZES = (3, 4, 2, 5, 3, 2)
CLIQUES = [(0, 1), (1, 2, 3), (3, 4), (0, 4), (2, 5)]


def small_models(seed=0):
    """``(dense, tree)``: one random model in both representations."""
    rng = np.random.default_rng(seed)
    potentials = {c: rng.normal(size=[SIZES[a] for a in c]) for c in CLIQUES}
    dense = DenseModel(SIZES)
    dense.set_potentials(potentials)
    tree = JunctionTreeModel(SIZES, CLIQUES)
    tree.set_potentials(potentials)
    return dense, tree


def measured_estimator(model, sizes, views, steps, seed=0):
    """An estimator of ``model`` with every view measured, after ``steps``."""
    rng = np.random.default_rng(seed)
    estimator = _Estimator(model)
    for view in views:
        shape = reduce_view(np.zeros([sizes[a] for a in base_clique(view)]), view)
        value = rng.dirichlet(np.ones(shape.size)).reshape(shape.shape)
        estimator.add_marginal(view, value, sigma=0.01 + 0.01 * rng.uniform())
    estimator.run(steps)
    return estimator
