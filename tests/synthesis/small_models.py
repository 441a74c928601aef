"""A small log-linear model over a junction tree, and the same as a dense table.

Shared by the model tests (``test_models.py``) and the sampling tests
(``test_sampling.py``).
"""

import numpy as np

from skdp.synthesis._models import DenseModel, JunctionTreeModel

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
