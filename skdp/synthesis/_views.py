"""What a round measures: a marginal, or a coarse view of one.

A candidate is a clique (a tuple of attributes) or a
:class:`CoarseMarginal`, the clique's marginal with some attributes' codes
merged into fixed groups, ``R M_C``. The functions here are that public
linear map ``R`` and its adjoint.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "CoarseMarginal",
    "base_clique",
    "coarse_views",
    "expand_view",
    "groupings_of",
    "reduce_view",
    "view_cells",
    "view_marginal",
]


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
    calibration (``MARGINAL_L1``, ``MARGINAL_L2`` of ``skdp.synthesis._plan``).

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
    """The model's table of a candidate (its clique's marginal, reduced).

    A coarse view whose groupings the model holds as attributes is read
    from their marginal (``model.attributes.measured``), else reduced from
    its clique's.
    """
    clique, rest = model.attributes.measured(view)
    return reduce_view(model.marginal(clique), rest)


def expand_view(table, view, shape):
    """The adjoint ``R^T table``: each group's value on each of its codes."""
    if isinstance(view, CoarseMarginal):
        for axis, starts in enumerate(view.starts):
            if starts is not None:
                widths = np.diff(np.append(starts, shape[axis]))
                table = np.repeat(table, widths, axis=axis)
    return table


def groupings_of(views):
    """Each grouped attribute's first codes, from the coarse views among ``views``.

    An attribute grouped two ways keeps the first grouping met.

    Examples
    --------
    >>> from skdp.synthesis._views import CoarseMarginal, groupings_of
    >>> groupings_of([(0, 1), CoarseMarginal((0, 1), ((0, 3), None))])
    {0: (0, 3)}
    """
    groupings = {}
    for view in views:
        if isinstance(view, CoarseMarginal):
            for a, starts in zip(view.clique, view.starts, strict=True):
                if starts is not None:
                    groupings.setdefault(a, tuple(starts))
    return groupings


def coarse_views(candidates, groupings):
    """The candidates, each followed by its coarse version if it has one.

    ``groupings`` maps an attribute to the first codes of its groups (public);
    each candidate holding one or more of them is followed by one
    :class:`CoarseMarginal` with all of them grouped (next to its clique,
    so that the selection computes the model's marginal once for both).

    Examples
    --------
    >>> from skdp.synthesis._views import coarse_views
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
