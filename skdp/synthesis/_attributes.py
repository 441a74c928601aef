"""The model's attributes: the columns, and a grouping of a column as one more.

A coarse measurement (:class:`~skdp.synthesis._views.CoarseMarginal`) adds
up fixed groups of consecutive codes of a column ``a``. The junction tree
models each such grouping as an attribute of its own, ``g = group(a)``,
tied to ``a`` by the deterministic factor ``1[g = group(a)]``: a coarse
marginal of ``(a, x, y)`` is a marginal of ``(g, x, y)``, and the model's
tables need not hold every value of ``a`` next to ``x`` and ``y``. The
log-linear family is unchanged: a potential on ``(g, x, y)`` is a
potential on ``(a, x, y)`` constant within each group.

A table over attributes that hold both ``a`` and ``g`` keeps ``a``'s axis
only (``g`` is a function of it), so the factor is never stored and no
cell is zero that the columns' model would not make zero. The functions of
:mod:`skdp.synthesis._tables` are applied on the *stored* axes
(:meth:`Attributes.axes`); summing ``a`` away while keeping ``g`` adds up
``a``'s groups, and a table over ``g`` spreads onto ``a`` by repeating each
group's value over its codes.
"""

from __future__ import annotations

import math

import numpy as np

from ._tables import (
    expand_axes,
    log_reduce_groups,
    marginalize_log,
    marginals_of,
    sum_to,
)
from ._views import CoarseMarginal

__all__ = ["Attributes"]


class Attributes:
    """Domain sizes of the columns, then one attribute per grouping of a column.

    Parameters
    ----------
    sizes : sequence of int
        Domain size of each column (attributes ``0 .. d - 1``).
    groupings : dict, optional
        Column -> first codes of its groups (increasing, from 0; public).
        Grouping ``k`` in column order becomes attribute ``d + k``, of size
        the number of groups.

    Examples
    --------
    >>> from skdp.synthesis._attributes import Attributes
    >>> attributes = Attributes((6, 2), {0: (0, 2, 4)})
    >>> attributes.sizes, attributes.base
    ((6, 2, 3), {2: 0})
    >>> attributes.axes((2, 1)), attributes.axes((0, 2, 1)), attributes.cells((2, 1))
    ((2, 1), (0, 1), 6)
    """

    def __init__(self, sizes, groupings=None):
        self.column_sizes = tuple(int(s) for s in sizes)
        self.groupings = {
            int(a): tuple(int(s) for s in starts)
            for a, starts in sorted((groupings or {}).items())
        }
        sizes = list(self.column_sizes)
        self.base, self.starts, self.group_of = {}, {}, {}
        for a, starts in self.groupings.items():
            g = len(sizes)
            sizes.append(len(starts))
            self.base[g], self.starts[g], self.group_of[a] = a, starts, g
        self.sizes = tuple(sizes)
        self._axes, self._cells, self.tree_sizes = {}, {}, {}
        self._columns = None

    @property
    def n_columns(self) -> int:
        return len(self.column_sizes)

    @property
    def columns(self) -> Attributes:
        """The columns alone, without the groupings."""
        if self._columns is None:
            self._columns = (
                self if not self.groupings else Attributes(self.column_sizes)
            )
        return self._columns

    def links(self) -> list:
        """The cliques ``(a, g)`` of the deterministic factors."""
        return [(a, g) for g, a in self.base.items()]

    def axes(self, attrs) -> tuple:
        """The attributes a table over ``attrs`` stores: no group beside its column."""
        key = attrs if type(attrs) is tuple else tuple(attrs)
        if not self.base:
            return key
        found = self._axes.get(key)
        if found is None:
            base = self.base
            found = self._axes[key] = tuple(
                x for x in key if not (x in base and base[x] in key)
            )
        return found

    def shape(self, attrs) -> list:
        """Shape of a table over ``attrs``."""
        return [self.sizes[x] for x in self.axes(attrs)]

    def cells(self, attrs) -> int:
        """Cells of a table over ``attrs`` (remembered per set of attributes)."""
        key = frozenset(attrs)
        found = self._cells.get(key)
        if found is None:
            found = self._cells[key] = math.prod(self.sizes[x] for x in self.axes(key))
        return found

    def closure(self, attrs) -> tuple:
        """``attrs`` and the groups of its columns: what a table over it determines."""
        groups = [self.group_of[a] for a in attrs if a in self.group_of]
        return tuple(dict.fromkeys([*attrs, *groups]))

    def holds(self, container, clique) -> bool:
        """Whether a table over ``container`` determines all of ``clique``."""
        inside = set(container)
        return all(x in inside or self.base.get(x) in inside for x in clique)

    def group_codes(self, g, codes) -> np.ndarray:
        """Group attribute ``g``'s code of each of its column's ``codes``."""
        return np.searchsorted(self.starts[g], codes, side="right") - 1

    def widths(self, g) -> np.ndarray:
        """Number of codes in each of ``g``'s groups."""
        return np.diff(np.append(self.starts[g], self.sizes[self.base[g]]))

    def measured(self, view):
        """The model clique a candidate is measured on, and what is left to reduce.

        Returns ``(clique, rest)``: a coarse view's attributes grouped as the
        model groups them become their group attributes, so that the view
        is ``reduce_view(marginal(clique), rest)``; ``rest`` is ``clique``
        itself (nothing to reduce) unless some grouping differs from the
        model's.
        """
        if not isinstance(view, CoarseMarginal):
            return tuple(view), tuple(view)
        clique, starts = [], []
        for a, s in zip(view.clique, view.starts, strict=True):
            g = self.group_of.get(a)
            if s is not None and g is not None and tuple(s) == self.starts[g]:
                clique.append(g)
                starts.append(None)
            else:
                clique.append(a)
                starts.append(s)
        clique = tuple(clique)
        if all(s is None for s in starts):
            return clique, clique
        return clique, CoarseMarginal(clique, tuple(starts))

    def given(self, fixed) -> Attributes:
        """The attributes with the columns ``fixed`` (and their groups) of size 1."""
        if not fixed:
            return self
        out = Attributes.__new__(Attributes)
        out.__dict__.update(self.__dict__)
        sizes, out.starts = list(self.sizes), dict(self.starts)
        for a in fixed:
            sizes[a] = 1
            if a in self.group_of:
                sizes[self.group_of[a]] = 1
                out.starts[self.group_of[a]] = (0,)
        out.sizes, out._cells, out.tree_sizes = tuple(sizes), {}, {}
        out._columns = None
        return out

    def condition(self, table, attrs, given) -> np.ndarray:
        """A table over ``attrs`` at the columns' codes ``given`` (axes of size 1)."""
        index = []
        for x in self.axes(attrs):
            if x in given:
                index.append(slice(given[x], given[x] + 1))
            elif self.base.get(x) in given:
                k = int(self.group_codes(x, given[self.base[x]]))
                index.append(slice(k, k + 1))
            else:
                index.append(slice(None))
        return table[tuple(index)]

    def _grouped(self, table, attrs, columns, log=False):
        """``table`` with each of ``columns`` summed into its groups; its axes."""
        axes = list(self.axes(attrs))
        for a in columns:
            i, g = axes.index(a), self.group_of[a]
            if log:
                table = log_reduce_groups(table, self.starts[g], i)
            else:
                table = np.add.reduceat(table, self.starts[g], axis=i)
            axes[i] = g
        return table, tuple(axes)

    def _to_group(self, attrs, keep) -> list:
        """Columns of ``attrs`` that ``keep`` holds only as their groups."""
        if not self.base:
            return []
        return [
            a
            for a in self.axes(attrs)
            if a in self.group_of and a not in keep and self.group_of[a] in keep
        ]

    def sum_to(self, table, attrs, keep) -> np.ndarray:
        """Sum a table over ``attrs`` down to ``keep`` (axes in ``keep``'s order)."""
        table, axes = self._grouped(table, attrs, self._to_group(attrs, keep))
        return sum_to(table, axes, self.axes(keep))

    def logsumexp_to(self, table, attrs, keep) -> np.ndarray:
        """:meth:`sum_to` in log space (exact log-sum-exp)."""
        columns = self._to_group(attrs, keep)
        table, axes = self._grouped(table, attrs, columns, log=True)
        return marginalize_log(table, axes, self.axes(keep))

    def expand(self, table, attrs, target) -> np.ndarray:
        """A table over ``attrs`` as a view broadcastable to a table over ``target``.

        A group attribute of ``attrs`` whose column ``target`` holds is
        spread onto the column: each group's value on each of its codes.
        """
        axes = list(self.axes(attrs))
        for i, x in enumerate(axes):
            if x in self.base and self.base[x] in target:
                table = np.repeat(table, self.widths(x), axis=i)
                axes[i] = self.base[x]
        return expand_axes(table, tuple(axes), self.axes(target))

    def marginals(self, table, attrs, targets) -> dict:
        """:func:`~skdp.synthesis._tables.marginals_of` on a table over ``attrs``.

        Targets that need the same columns summed into their groups share
        one such reduction of the table.
        """
        by_columns = {}
        for target in dict.fromkeys(tuple(t) for t in targets):
            columns = tuple(self._to_group(attrs, target))
            by_columns.setdefault(columns, []).append(target)
        out = {}
        for columns, inside in by_columns.items():
            grouped, axes = self._grouped(table, attrs, columns)
            found = marginals_of(grouped, axes, [self.axes(t) for t in inside])
            out.update((t, found[self.axes(t)]) for t in inside)
        return out

    def spell_out(self, table, axes, g):
        """A table over stored ``axes`` with group ``g``'s axis written out.

        Inserted before its column's axis, with zeros where a code is not
        in the group: ``out[..., k, v, ...] = table[..., v, ...] 1[group(v) = k]``.
        """
        i = axes.index(self.base[g])
        groups = self.group_codes(g, np.arange(table.shape[i]))
        indicator = groups[np.newaxis, :] == np.arange(self.sizes[g])[:, np.newaxis]
        shape = [1] * i + list(indicator.shape) + [1] * (table.ndim - i - 1)
        out = np.expand_dims(table, i) * indicator.reshape(shape)
        return out, axes[:i] + (g,) + axes[i:]

    @classmethod
    def of(cls, sizes) -> Attributes:
        """``sizes`` if it is an :class:`Attributes`, else the columns' sizes alone."""
        return sizes if isinstance(sizes, Attributes) else cls(sizes)
