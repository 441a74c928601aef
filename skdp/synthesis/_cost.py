"""A public bound on the work of one MWEM run, checked before the charge.

:func:`~skdp.synthesis._loop.run_mwem` reads the data once (the counting
pass) and then works on the model only: per round a selection over the
candidates, a measurement, and a re-estimation of ``round_iter``
mirror-descent steps, each of which refits the model (a calibration of
the junction tree, or a pass over the dense histogram); the last
re-estimation takes ``final_iter`` steps. Every count this depends on is
public: the number of columns ``d``, the planned rounds and initial
measurements, the candidates and their cells, ``max_model_size``.

The bound is in *operations* of about a nanosecond of one core
(:data:`~skdp.utils._feasibility.MAX_WORK`, as the exact solver's
products), with each kind of step priced at what it was measured to
cost (``benchmarks/plan_checks.py`` prints the bound beside the measured
time of wide fits):

* a message of the junction tree (a log-sum-exp over a node's table and
  the additions that use it: numpy calls on small tables), or a marginal
  read from a node: :data:`MESSAGE_COST`;
* a cell of the model's tables in a refit (exp, log, sums):
  :data:`CELL_COST`;
* a pair of tree nodes when a junction tree is built (the spanning tree
  over separators): :data:`PAIR_COST`.
"""

from __future__ import annotations

import itertools
import math

from ._estimation import max_refits
from ._views import base_clique, view_cells

__all__ = ["CELL_COST", "MESSAGE_COST", "PAIR_COST", "mwem_work"]

#: Operations (about a nanosecond each) of one junction-tree message.
MESSAGE_COST = 3e4
#: Operations of one model cell in a refit.
CELL_COST = 50.0
#: Operations of one pair of nodes when a junction tree is built.
PAIR_COST = 3e3


def mwem_work(
    *,
    sizes,
    initial,
    n_rounds: int,
    candidates,
    dense: bool,
    max_model_size: int,
    n_queries: int,
    round_iter: int,
    final_iter: int,
) -> float:
    """Most operations one MWEM run performs after the counting pass.

    Parameters
    ----------
    sizes : tuple of int
        Domain size of each column.
    initial : list of tuple
        The initial measurements (one-way marginals, or a feature with the
        label for :class:`~skdp.synthesis.SyntheticDataClassifier`).
    n_rounds : int
        Planned rounds (the adaptive schedule may stop earlier).
    candidates : list or None
        Marginals the rounds select from, or ``None`` (query workload).
    dense : bool
        Whether the model is a dense histogram over all cells.
    max_model_size : int
        The cap on the junction tree's cells.
    n_queries : int
        Rows of an explicit query workload (0 for marginals).
    round_iter, final_iter : int
        Mirror-descent steps per round and at the end.

    Returns
    -------
    work : float

    Notes
    -----
    Refits: at most :func:`~skdp.synthesis._estimation.max_refits` per
    re-estimation, ``n_rounds + 1`` of ``round_iter`` steps and one of
    ``final_iter``, plus two for each junction tree built (at most one per
    round and one for the initial measurements). A refit of a junction
    tree passes two messages per edge (fewer than ``d`` nodes: every node
    is the clique of an eliminated column) over at most ``M`` cells, ``M``
    the larger of ``max_model_size`` (which the selection keeps the tree
    under) and the initial measurements' cells (their tree is a star or
    single columns, whose nodes are the measurements themselves); with it
    the loss reads a marginal per measurement. A dense refit sums the
    measurements' potentials over every cell and, with queries, multiplies
    the query matrix by the histogram. A round's selection reads every
    candidate's marginal once and, for a candidate outside every initial
    measurement, sizes a junction tree over the measured cliques with it
    (``d**2`` node pairs).
    """
    d = len(sizes)
    measured = len(initial) + n_rounds
    refits = (n_rounds + 1) * max_refits(round_iter) + max_refits(final_iter)
    if dense:
        refit = CELL_COST * math.prod(sizes) * (measured + 1 + n_queries)
        refit += MESSAGE_COST * measured
        builds = 0.0
    else:
        initial_cells = sum(view_cells(c, sizes) for c in initial)
        model_cells = max(max_model_size, initial_cells)
        refit = MESSAGE_COST * (2 * d + measured) + CELL_COST * model_cells
        builds = (n_rounds + 1) * (PAIR_COST * d * d + 2 * refit)
    work = refits * refit + builds
    if candidates is not None:
        covered = {
            part
            for c in initial
            for r in range(1, len(base_clique(c)) + 1)
            for part in itertools.combinations(sorted(base_clique(c)), r)
        }
        selection = 0.0
        for view in candidates:
            selection += MESSAGE_COST + CELL_COST * view_cells(view, sizes)
            if not dense and tuple(sorted(base_clique(view))) not in covered:
                selection += PAIR_COST * d * d
        work += n_rounds * selection
    return work
