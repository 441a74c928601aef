"""The data's marginal counts: one block function, in memory and on dask.

The synthesizers read the data only through marginal counts: MWEM's
one-way marginals, the candidates its selection scores and the ones it
measures; OnlinePMW's histogram. :func:`count_block` is the one block
function that counts them: it encodes a block of raw rows with the schema
(:func:`~skdp.synthesis._schema.encode_rows`) and ``np.bincount``-s every
requested clique. A :class:`~skdp.utils._row_source.RowSource` runs it
over the blocks of a NumPy array, a pandas DataFrame or a dask array or
DataFrame alike, and adds the blocks' counts in a tree; on dask only the
totals come back to the client. Counts are int64 and exact, so the
in-memory and dask fits read the same numbers, and, with the same seed,
fit the same model bit for bit.

Before the charge, :meth:`DataMarginals.plan` decides the pass from public
values (the domains' sizes, the cliques, ``n``): the maximal cliques among
those the loop may read (every other marginal is derived from them by
summing axes), the rows per block and the tree's fan-in, so that neither a
block's tables nor a node of the tree exceed a fixed memory. A dask fit is
refused when the cliques exceed :data:`MAX_COUNTED_CELLS`; in memory they
are then counted one clique at a time, when asked for (more passes, bounded
memory). After the charge, :meth:`DataMarginals.count` runs the pass and
:meth:`DataMarginals.counts` serves every marginal. The values were checked
before the charge (:func:`~skdp.synthesis._schema.inspect_rows`), so the
pass cannot fail on them; a worker lost during it surfaces as
:class:`~skdp.exceptions.ChargedFitError`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..utils._row_source import canonical_block_rows, row_source
from ._schema import ColumnDomain, encode_rows

__all__ = [
    "MAX_COUNTED_CELLS",
    "CountingPlan",
    "DataMarginals",
    "code_marginals",
    "count_block",
    "maximal_cliques",
]

#: Cells of the maximal cliques counted in one pass (the loop keeps as many,
#: ``_loop._KEPT_CELLS``): 256 MiB of int64 counts at the cap.
MAX_COUNTED_CELLS = 2**25
#: Bytes of counts one node of the tree may hold: its fan-in is chosen so
#: that its inputs and output fit (at least 2, at most 8).
_TREE_BYTES = 2**29
#: Most rows of a counting block. A block's tables have as many cells as
#: all the counted cliques, so blocks have (up to this) as many rows as
#: cells: the tables never dwarf the rows they count.
_MAX_BLOCK_ROWS = 2**20


#: Largest clique whose proper subsets ``maximal_cliques`` enumerates
#: (``2**k`` of them); beyond, it compares the cliques pairwise.
_SUBSET_ENUMERATION = 8


def maximal_cliques(cliques):
    """The cliques not contained in another one (order kept).

    Examples
    --------
    >>> from skdp.synthesis._counting import maximal_cliques
    >>> maximal_cliques([(0,), (1,), (0, 1), (1, 2)])
    [(0, 1), (1, 2)]
    """
    unique = list(dict.fromkeys(tuple(c) for c in cliques))
    sets = [frozenset(c) for c in unique]
    if max((len(s) for s in sets), default=0) > _SUBSET_ENUMERATION:
        return [
            clique
            for clique, s in zip(unique, sets, strict=True)
            if not any(s < other for other in sets)
        ]
    # Mark every proper subset of every clique: linear in the cliques (a
    # wide table's 2- and 3-way workload has ~d**3 / 6 of them, and the
    # pairwise test above took minutes at 300 columns, before the charge).
    contained = {
        frozenset(part)
        for s in sets
        for r in range(1, len(s))
        for part in itertools.combinations(s, r)
    }
    return [
        clique for clique, s in zip(unique, sets, strict=True) if s not in contained
    ]


def count_block(block, _, domains, cliques):
    """Counts of every clique in a block of raw rows, concatenated (int64).

    The block function of every counting pass: the rows are encoded with
    the schema, then each clique's cells are counted (flat, row-major).
    """
    codes = encode_rows(block, domains)
    sizes = [domain.size for domain in domains]
    parts = []
    for clique in cliques:
        shape = [sizes[a] for a in clique]
        flat = np.ravel_multi_index(tuple(codes[:, a] for a in clique), shape)
        parts.append(np.bincount(flat, minlength=math.prod(shape)))
    return np.concatenate(parts).astype(np.int64, copy=False)


@dataclass(frozen=True)
class CountingPlan:
    """How the counts are computed, decided before the charge.

    Attributes
    ----------
    cliques : tuple of tuple
        The maximal cliques counted in one pass (empty: counted when asked).
    cells : int
        Their cells in all.
    block_rows : int
        Rows per block of the pass.
    fan_in : int
        Fan-in of the tree that adds the blocks' counts.
    """

    cliques: tuple
    cells: int
    block_rows: int
    fan_in: int

    @property
    def memory(self) -> float:
        """Bytes the pass holds at most: the blocks' and the tree's tables."""
        return 8.0 * self.cells * (self.fan_in + 2)


def _pass_settings(n_samples, cells):
    block_rows = max(canonical_block_rows(n_samples), min(cells, _MAX_BLOCK_ROWS))
    fan_in = int(min(8, max(2, _TREE_BYTES // (8 * max(cells, 1)) - 1)))
    return block_rows, fan_in


class DataMarginals:
    """The marginal counts of a table's rows, counted through one block function.

    Parameters
    ----------
    rows : RowSource
        The raw rows (in memory or on dask), their values checked.
    domains : list of ColumnDomain
        Each column's domain.

    Attributes
    ----------
    n_samples : int
        Rows (public).
    sizes : tuple of int
        Codes of each column.
    """

    def __init__(self, rows, domains):
        self.rows = rows
        self.domains = list(domains)
        self.sizes = tuple(domain.size for domain in domains)
        self.n_samples = rows.n_samples
        self._counted = {}

    def _cells(self, cliques):
        return sum(math.prod(self.sizes[a] for a in c) for c in cliques)

    def plan(self, cliques) -> CountingPlan:
        """The pass that counts ``cliques`` (public values only; may raise).

        Refuses, before the charge, a dask pass of more than
        :data:`MAX_COUNTED_CELLS` cells; in memory such cliques are counted
        one at a time instead, when asked for.
        """
        maximal = maximal_cliques(cliques)
        cells = self._cells(maximal)
        if cells > MAX_COUNTED_CELLS:
            if self.rows.is_dask:
                raise ValueError(
                    f"The marginals the fit needs have {cells} cells in all, more "
                    f"than the {MAX_COUNTED_CELLS} a dask fit counts in one pass; "
                    "use a smaller workload, fewer bins or categories, or a lower "
                    "max_model_size. Nothing was charged."
                )
            largest = max(self._cells([c]) for c in maximal)
            return CountingPlan((), largest, *_pass_settings(self.n_samples, largest))
        return CountingPlan(
            tuple(maximal), cells, *_pass_settings(self.n_samples, cells)
        )

    def _pass(self, cliques, block_rows, fan_in):
        rows = row_source(self.rows.X, block_rows=block_rows)
        total = rows.block_sum(count_block, self.domains, tuple(cliques), fan_in=fan_in)
        tables, start = {}, 0
        for clique in cliques:
            shape = tuple(self.sizes[a] for a in clique)
            size = math.prod(shape)
            tables[tuple(clique)] = np.asarray(total[start : start + size]).reshape(
                shape
            )
            start += size
        return tables

    def count(self, plan: CountingPlan) -> DataMarginals:
        """Run the planned pass (after the charge): every clique's counts."""
        if plan.cliques:
            self._counted = self._pass(plan.cliques, plan.block_rows, plan.fan_in)
        return self

    def counts(self, clique) -> np.ndarray:
        """Counts of ``clique`` (float64, axes in ``clique``'s order).

        Summed from a counted clique that holds it, or counted by a pass of
        their own when none does.
        """
        clique = tuple(clique)
        if clique in self._counted:
            return self._counted[clique].astype(float)
        wanted = set(clique)
        for source, table in self._counted.items():
            if wanted <= set(source):
                drop = tuple(i for i, a in enumerate(source) if a not in wanted)
                kept = [a for a in source if a in wanted]
                summed = table.sum(axis=drop) if drop else table
                order = [kept.index(a) for a in clique]
                return np.ascontiguousarray(np.transpose(summed, order), dtype=float)
        cells = self._cells([clique])
        (table,) = self._pass([clique], *_pass_settings(self.n_samples, cells)).values()
        return table.astype(float)


def code_marginals(codes, sizes) -> DataMarginals:
    """The marginals of rows already encoded (codes ``0 .. size - 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.synthesis._counting import code_marginals
    >>> code_marginals(np.array([[0, 1], [1, 1], [1, 0]]), (2, 2)).counts((1,))
    array([1., 2.])
    """
    domains = [
        ColumnDomain(a, categories=tuple(range(size))) for a, size in enumerate(sizes)
    ]
    return DataMarginals(row_source(np.asarray(codes)), domains)
