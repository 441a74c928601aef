"""Representations of the synthetic distribution: dense histogram or junction tree.

Both represent a log-linear model over the discrete universe
``X = X_1 x ... x X_d``,

    p(x) proportional to exp(sum_C theta_C[x_C]),

one log-potential table ``theta_C`` per *clique* ``C`` (a tuple of attribute
indices; the measured marginals). Multiplicative-weights updates only ever
add to these tables, so this family contains every distribution MWEM can
produce from the uniform start (Hardt, Ligett & McSherry 2012, Section 3).

* :class:`DenseModel` stores ``p`` over all ``prod(|X_i|)`` cells. Needed for
  explicit linear queries (a weight per cell) and fine for small universes.
* :class:`JunctionTreeModel` never forms ``p``. The cliques are triangulated
  into a junction tree (greedy min-weight elimination, maximal cliques
  joined by a maximum spanning tree on separator sizes), and marginals come
  from sum-product belief propagation in log space, exactly. Memory and time
  grow with the sizes of the tree's cliques, not with ``|X|``: on the
  14-column Adult universe (about ``10**19`` cells) a tree over a few dozen
  3-way marginals holds a few million numbers. This is the graphical-model
  representation of private-pgm (McKenna, Sheldon & Miklau 2019),
  re-implemented here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ._attributes import Attributes
from ._tables import expand_axes as _expand
from ._tables import logsumexp as _logsumexp
from ._tables import marginals_of, sum_to

__all__ = ["DenseModel", "JunctionTreeModel", "junction_tree"]


#: Largest intermediate table (cells, float64) that answering one marginal
#: by variable elimination may build; larger queries are split by value.
ELIMINATION_MAX_CELLS = 2**23

# A downward message whose separator holds a cell of smaller probability is
# computed by an exact log-sum-exp (see JunctionTreeModel._calibrate).
_TINY_MASS = 1e-250


def _eliminate_factors(factors, clique, attributes, dry=False):
    """Sum the log-factors' product down to ``clique``; also the largest table.

    Returns ``(log_table, peak_cells)``: the unnormalised log-marginal with
    axes in ``clique``'s order (``None`` when ``dry``: only the peak is
    computed) and the cells of the largest intermediate table. Attributes
    outside ``clique`` are summed out greedily, the one whose combined
    table is smallest first. Tables are over ``attributes``' stored axes
    (:class:`~skdp.synthesis._attributes.Attributes`): summing out a group
    beside its column sums nothing, and summing out a column beside its
    group adds up the column's groups.
    """
    scopes = [tuple(a) for a, _ in factors]
    tables = [t for _, t in factors]
    variables = set().union(*(set(a) for a in scopes)) - set(clique)
    peak = 0
    while variables:
        v = min(
            variables,
            key=lambda u: attributes.cells(
                set().union(*(set(f) for f in scopes if u in f))
            ),
        )
        involved = [i for i, f in enumerate(scopes) if v in f]
        attrs = tuple(sorted(set().union(*(set(scopes[i]) for i in involved))))
        peak = max(peak, attributes.cells(attrs))
        rest = tuple(a for a in attrs if a != v)
        table = None
        if not dry:
            total = sum(
                attributes.expand(tables[i], scopes[i], attrs) for i in involved
            )
            total = np.broadcast_to(total, attributes.shape(attrs))
            table = attributes.logsumexp_to(total, attrs, rest)
        scopes = [f for i, f in enumerate(scopes) if i not in involved] + [rest]
        tables = [t for i, t in enumerate(tables) if i not in involved] + [table]
        variables.discard(v)
    peak = max(peak, attributes.cells(clique))
    if dry:
        return None, peak
    total = sum(attributes.expand(t, f, clique) for f, t in zip(scopes, tables) if f)
    return np.broadcast_to(total, attributes.shape(clique)) + 0.0, peak


def _cells(clique, sizes) -> int:
    return math.prod(sizes[a] for a in clique)


# --- junction tree construction -----------------------------------------------


def _maximal_cliques(cliques, attributes):
    """The tree's nodes: maximal cliques of a greedy triangulation of ``cliques``.

    Greedy min-weight: the vertex whose clique stores fewest cells is
    eliminated first. An elimination changes its neighbours' cliques only:
    their weights are the ones recomputed. A vertex's clique can only lie
    inside the clique of a vertex eliminated before it that holds it.
    """
    adjacency = {v: set() for v in range(len(attributes.sizes))}
    for clique in list(cliques) + attributes.links():
        for u, v in itertools.combinations(clique, 2):
            adjacency[u].add(v)
            adjacency[v].add(u)
    weight = {u: (attributes.cells(adjacency[u] | {u}), u) for u in adjacency}
    eliminated, holding = [], {u: [] for u in adjacency}
    while weight:
        v = min(weight.values())[1]
        neighbours = adjacency[v]
        clique = frozenset(neighbours | {v})
        if not any(clique < other for other in holding[v]):
            eliminated.append(clique)
        for u in neighbours:
            holding[u].append(clique)
        for a, b in itertools.combinations(neighbours, 2):
            adjacency[a].add(b)
            adjacency[b].add(a)
        for u in neighbours:
            adjacency[u].discard(v)
        del adjacency[v], weight[v]
        for u in neighbours:
            weight[u] = (attributes.cells(adjacency[u] | {u}), u)
    return eliminated


def _tree_nodes(cliques, attributes):
    """The nodes of the tree over ``cliques``: the smaller of two triangulations.

    With groupings, the tree of the groups (:func:`_maximal_cliques`) is
    compared with the tree of the columns (every group replaced by its
    column), each group then beside its column wherever the column is (a
    group beside its column stores nothing, so that tree stores the cells
    of the columns' tree): the model never stores more than a model of the
    columns alone would.
    """
    nodes = _maximal_cliques(cliques, attributes)
    if not attributes.groupings:
        return nodes
    columns = attributes.columns
    on_columns = [tuple(attributes.base.get(x, x) for x in c) for c in cliques]
    spread = [
        frozenset(attributes.closure(tuple(node)))
        for node in _maximal_cliques(on_columns, columns)
    ]
    if sum(map(attributes.cells, spread)) < sum(map(attributes.cells, nodes)):
        return spread
    return nodes


def junction_tree(cliques, sizes):
    """Maximal cliques and tree edges of a junction tree covering ``cliques``.

    Parameters
    ----------
    cliques : iterable of tuple of int
        Attribute sets that must each lie inside one tree node.
    sizes : sequence of int or Attributes
        Domain size of every attribute (every attribute gets a node), or
        the :class:`~skdp.synthesis._attributes.Attributes` with groupings:
        each group attribute and its column then share a node, a node's
        cost is the cells it stores, and the tree is never larger than the
        tree of the columns alone (:func:`_tree_nodes`).

    Returns
    -------
    nodes : list of tuple of int
        The tree's maximal cliques, each attribute tuple sorted by domain
        size (then index).
    edges : list of (int, int)
        Tree edges between node indices.
    """
    attributes = Attributes.of(sizes)
    sizes = attributes.sizes
    maximal = _tree_nodes(list(cliques), attributes)
    # Each node's attributes from the fewest values to the most: numpy adds
    # and sums over a table fastest when its last axis is long.
    nodes = [tuple(sorted(c, key=lambda a: (sizes[a], a))) for c in maximal]
    # Maximum spanning tree on separator size (Kruskal); components are
    # joined by empty separators.
    candidates = sorted(
        (-len(set(nodes[i]) & set(nodes[j])), i, j)
        for i in range(len(nodes))
        for j in range(i + 1, len(nodes))
    )
    parent = list(range(len(nodes)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    edges = []
    for _, i, j in candidates:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            edges.append((i, j))
    return nodes, edges


def junction_tree_size(cliques, sizes) -> int:
    """Cells of the junction tree over ``cliques`` (see :func:`junction_tree`).

    Remembered per set of cliques by an :class:`Attributes` ``sizes`` (the
    tree does not depend on the cliques' order).
    """
    attributes = Attributes.of(sizes)
    key = frozenset(tuple(c) for c in cliques)
    found = attributes.tree_sizes.get(key)
    if found is None:
        nodes = _tree_nodes(key, attributes)
        found = attributes.tree_sizes[key] = sum(attributes.cells(n) for n in nodes)
    return found


# --- the models -----------------------------------------------------------------


class DenseModel:
    """The distribution as one table of ``prod(sizes)`` probabilities.

    Parameters
    ----------
    sizes : tuple of int
        Domain size of each attribute.
    """

    def __init__(self, sizes):
        self.sizes = tuple(int(s) for s in sizes)
        self.attributes = Attributes(self.sizes)
        self.n_cells = math.prod(self.sizes)
        self.log_table = np.zeros(self.sizes)
        self.probabilities = np.full(self.sizes, 1.0 / self.n_cells)

    @property
    def size(self) -> int:
        """Numbers stored."""
        return self.n_cells

    def set_potentials(self, potentials: dict, query_potential=None) -> None:
        """Set ``log p = sum_C theta_C (+ query_potential)``, normalised."""
        all_attrs = tuple(range(len(self.sizes)))
        log_table = np.zeros(self.sizes)
        for clique, theta in potentials.items():
            log_table = log_table + _expand(theta, clique, all_attrs)
        if query_potential is not None:
            log_table = log_table + query_potential.reshape(self.sizes)
        log_table = log_table - _logsumexp(log_table, all_attrs)
        self.log_table = log_table
        self.probabilities = np.exp(log_table)

    def marginal(self, clique) -> np.ndarray:
        """Probabilities of the attributes ``clique`` (axes in that order)."""
        return sum_to(self.probabilities, tuple(range(len(self.sizes))), tuple(clique))

    def marginals(self, cliques) -> dict:
        """:meth:`marginal` of each of ``cliques``, the table read once for all."""
        all_attrs = tuple(range(len(self.sizes)))
        return marginals_of(self.probabilities, all_attrs, [tuple(c) for c in cliques])

    def answer_queries(self, queries: np.ndarray) -> np.ndarray:
        """``queries @ p`` for a matrix of per-cell weights."""
        return queries @ self.probabilities.ravel()

    def sample(
        self, n_samples: int, rng: np.random.Generator, method: str = "iid"
    ) -> np.ndarray:
        """Codes of ``n_samples`` rows from the distribution.

        ``method="iid"`` draws them independently; ``"rounded"`` takes
        systematic sampling of the whole table (:func:`_systematic_counts`):
        every cell's count is ``floor`` or ``ceil`` of ``n_samples * p``, and
        so is every marginal over a leading run of attributes (0, (0, 1),
        ...), whose cells are contiguous in the flattened table.
        """
        if method == "rounded":
            counts = _systematic_counts(
                self.probabilities.reshape(1, -1), np.array([n_samples]), rng
            )
            flat = np.repeat(np.arange(self.n_cells), counts.ravel())
            flat = flat[rng.permutation(n_samples)]
        else:
            cdf = np.cumsum(self.probabilities.ravel())
            flat = np.searchsorted(cdf, rng.uniform(size=n_samples) * cdf[-1])
            flat = np.minimum(flat, self.n_cells - 1)
        return np.column_stack(np.unravel_index(flat, self.sizes)).astype(np.int64)


class JunctionTreeModel:
    """A log-linear model over a junction tree; exact marginals by message passing.

    Parameters
    ----------
    sizes : tuple of int or Attributes
        Domain size of each column (or the model's attributes, groupings
        included).
    cliques : iterable of tuple of int
        Cliques that carry potentials (each must lie in one tree node).
    groupings : dict, optional
        Column -> first codes of its groups (public). Each grouping is one
        more attribute of the model, ``g = group(a)`` (numbered after the
        columns, :class:`~skdp.synthesis._attributes.Attributes`), tied to
        its column by the deterministic factor ``1[g = group(a)]``: a
        potential on ``(g, x)`` is one on ``(a, x)`` constant within each
        group, and the tree need not hold ``a`` beside ``x``. Tables store
        a column's axis only where both are in a node. A clique holds
        either a column or its group, not both.

    Attributes
    ----------
    attributes : Attributes
        The columns and group attributes.
    sizes : tuple of int
        Domain size of every attribute: the columns, then the groups.
    nodes : list of tuple of int
        The tree's nodes (attributes, a group beside its column included).
    """

    def __init__(self, sizes, cliques=(), groupings=None):
        if groupings is None:
            attributes = Attributes.of(sizes)
        else:
            attributes = Attributes(sizes, groupings)
        self.attributes = attributes
        self.sizes = attributes.sizes
        self.cliques = list(dict.fromkeys(tuple(c) for c in cliques))
        self.nodes, self.edges = junction_tree(self.cliques, attributes)
        self.n_cells = math.prod(attributes.column_sizes)
        neighbours = {i: [] for i in range(len(self.nodes))}
        for i, j in self.edges:
            neighbours[i].append(j)
            neighbours[j].append(i)
        # Breadth-first order from node 0 in each component.
        self.order, self.parent = [], {}
        seen = set()
        for root in range(len(self.nodes)):
            if root in seen:
                continue
            seen.add(root)
            self.parent[root] = None
            queue = [root]
            while queue:
                i = queue.pop(0)
                self.order.append(i)
                for j in neighbours[i]:
                    if j not in seen:
                        seen.add(j)
                        self.parent[j] = i
                        queue.append(j)
        self.children = {i: [] for i in range(len(self.nodes))}
        for i, p in self.parent.items():
            if p is not None:
                self.children[p].append(i)
        self.home = {c: self._home(c) for c in self.cliques}
        self.set_potentials({})

    def with_cliques(self, cliques) -> JunctionTreeModel:
        """A model over the same attributes whose tree covers ``cliques``."""
        return JunctionTreeModel(self.attributes, cliques)

    @property
    def size(self) -> int:
        """Numbers stored in the tree's node tables."""
        return sum(self.attributes.cells(node) for node in self.nodes)

    def _home(self, clique):
        """A node of fewest cells that determines ``clique`` (None if none does)."""
        best, best_cells = None, None
        for i, node in enumerate(self.nodes):
            if self.attributes.holds(node, clique):
                cells = self.attributes.cells(node)
                if best is None or cells < best_cells:
                    best, best_cells = i, cells
        return best

    def set_potentials(self, potentials: dict) -> None:
        """Set the clique log-potentials and calibrate the tree."""
        attributes = self.attributes
        tables = [np.zeros(attributes.shape(node)) for node in self.nodes]
        for clique, theta in potentials.items():
            if clique not in self.home:
                self.home[clique] = self._home(clique)
            home = self.home[clique]
            tables[home] += attributes.expand(theta, clique, self.nodes[home])
        self._calibrate(tables)

    def _separator(self, i, j):
        return tuple(a for a in self.nodes[i] if a in self.nodes[j])

    def _calibrate(self, tables) -> None:
        """Sum-product on the tree: every node's belief (its exact marginal).

        One exponential per node cell. Going up, node ``i``'s table (its
        potentials plus its children's messages) is exponentiated once,
        shifted by its largest value ``t_i``, as ``E_i``, and the message
        to its parent is ``log E_i(s) + t_i`` on the separator ``s``.
        Going down, the belief is ``P_i = E_i exp(d_i + t_i - log Z)``,
        ``d_i`` being the parent's message (a product over the node, no
        second exponential), where ``log Z`` is the log-sum-exp of the
        root's table; the message to a child ``c`` is ``log P_i(s) + log Z
        - up_c(s)`` (``log sum_{i \\ s} exp(b_i - up_c)``, ``up_c`` being
        constant off ``s``). A separator cell whose mass is below
        ``1e-250`` (where ``E_i`` may have lost it to underflow) takes the
        exact log-sum-exp instead. ``tables`` (one log table per node) are
        updated in place. Sums and products are over the stored axes
        (:class:`~skdp.synthesis._attributes.Attributes`), which is where
        the deterministic factors of the groups act.
        """
        attributes = self.attributes
        up, scaled = {}, {}
        for i in reversed(self.order):
            node = self.nodes[i]
            for c in self.children[i]:
                tables[i] += attributes.expand(up[c], self._separator(c, i), node)
            p = self.parent[i]
            if p is None:
                continue
            sep = self._separator(i, p)
            top = float(np.max(tables[i]))
            values = np.exp(tables[i] - top)
            mass = attributes.sum_to(values, node, sep)
            if float(np.min(mass)) > _TINY_MASS:
                up[i] = np.log(mass) + top
                scaled[i] = (values, top)
            else:
                up[i] = attributes.logsumexp_to(tables[i], node, sep)
        self._log_tables, self._down = tables, {}
        self._log_z = log_z = [None] * len(self.nodes)
        beliefs = [None] * len(self.nodes)
        for i in self.order:
            node = self.nodes[i]
            p = self.parent[i]
            if p is None:
                top = float(np.max(tables[i]))
                values = np.exp(tables[i] - top)
                total = float(np.sum(values))  # >= 1: the largest cell is 1
                log_z[i] = float(np.log(total)) + top
                beliefs[i] = values / total
            elif i in scaled:
                log_z[i] = log_z[p]
                values, top = scaled.pop(i)
                shift = np.exp(self._down[i] + (top - log_z[i]))
                values *= attributes.expand(shift, self._separator(i, p), node)
                beliefs[i] = values
            else:
                log_z[i] = log_z[p]
                beliefs[i] = np.exp(self._log_table(i) - log_z[i])
            for c in self.children[i]:
                sep = self._separator(c, i)
                mass = attributes.sum_to(beliefs[i], node, sep)
                if float(np.min(mass)) > _TINY_MASS:
                    self._down[c] = np.log(mass) + log_z[i] - up[c]
                else:
                    without = self._log_table(i) - attributes.expand(up[c], sep, node)
                    self._down[c] = attributes.logsumexp_to(without, node, sep)
        self._log_beliefs = None
        self._separators = {}
        self.beliefs = beliefs

    def _log_table(self, i):
        """Node ``i``'s unnormalised log-belief: its table and every message."""
        p = self.parent[i]
        if p is None:
            return self._log_tables[i]
        sep = self._separator(i, p)
        down = self.attributes.expand(self._down[i], sep, self.nodes[i])
        return self._log_tables[i] + down

    @property
    def log_beliefs(self):
        """Each node's log-marginal (computed when first asked for)."""
        if self._log_beliefs is None:
            self._log_beliefs = [
                self._log_table(i) - self._log_z[i] for i in range(len(self.nodes))
            ]
        return self._log_beliefs

    def contains(self, clique) -> bool:
        """Whether one node of the tree determines all of ``clique``."""
        clique = tuple(clique)
        if clique not in self.home:
            self.home[clique] = self._home(clique)
        return self.home[clique] is not None

    def marginal(self, clique) -> np.ndarray:
        """Probabilities of the attributes ``clique`` (axes in that order)."""
        clique = tuple(clique)
        if self.contains(clique):
            home = self.home[clique]
            return self.attributes.sum_to(self.beliefs[home], self.nodes[home], clique)
        return np.exp(self._eliminate(clique))

    def marginals(self, cliques) -> dict:
        """:meth:`marginal` of each of ``cliques``; each node's belief read once.

        The cliques inside one node are summed from its belief together
        (:func:`marginals_of`). The others are taken widest first: each is
        summed from a wider one already eliminated that determines it, or
        else eliminated (so a pair inside an out-of-tree triple costs a sum).
        """
        attributes = self.attributes
        by_node, outside, out = {}, [], {}
        for clique in dict.fromkeys(tuple(c) for c in cliques):
            if self.contains(clique):
                by_node.setdefault(self.home[clique], []).append(clique)
            else:
                outside.append(clique)
        for home, inside in by_node.items():
            out.update(
                attributes.marginals(self.beliefs[home], self.nodes[home], inside)
            )
        holders = {}
        for clique in sorted(outside, key=attributes.cells, reverse=True):
            holder = holders.get(frozenset(clique))
            if holder is not None:
                out[clique] = attributes.sum_to(out[holder], holder, clique)
                continue
            out[clique] = self.marginal(clique)
            closure = attributes.closure(clique)
            for r in range(1, len(closure) + 1):
                for inner in itertools.combinations(closure, r):
                    holders.setdefault(frozenset(inner), clique)
        return out

    def _eliminate(self, clique) -> np.ndarray:
        """Log-marginal of ``clique`` by variable elimination on the calibrated tree.

        The joint is ``prod_nodes b_i / prod_edges b_sep``; the smallest
        subtree holding all of ``clique``'s attributes suffices (the rest
        sums to one), then attributes outside ``clique`` are summed out
        greedily, smallest intermediate table first. When the largest
        intermediate table would exceed :data:`ELIMINATION_MAX_CELLS`, the
        query is answered for one value of its widest columns at a time
        (conditioning slices every factor, a group's at the value's group),
        which bounds memory whatever the tree.
        """
        clique = tuple(clique)
        attributes = self.attributes
        factors = self._subtree_factors(set(clique))
        fixed = []
        while (
            _eliminate_factors(factors, clique, attributes.given(fixed), dry=True)[1]
            > ELIMINATION_MAX_CELLS
        ):
            free = [a for a in clique if a not in fixed and a not in attributes.base]
            if not free:
                break
            fixed.append(max(free, key=lambda a: self.sizes[a]))
        if not fixed:
            total = _eliminate_factors(factors, clique, attributes)[0]
        else:
            given_attributes = attributes.given(fixed)
            total = np.empty(attributes.shape(clique))
            for values in itertools.product(*(range(self.sizes[a]) for a in fixed)):
                given = dict(zip(fixed, values, strict=True))
                sliced = [
                    (attrs, attributes.condition(t, attrs, given))
                    for attrs, t in factors
                ]
                index = tuple(given.get(a, slice(None)) for a in clique)
                part = _eliminate_factors(sliced, clique, given_attributes)[0]
                total[index] = part.reshape(total[index].shape)
        return total - _logsumexp(total, tuple(range(total.ndim)))

    def _subtree_factors(self, wanted):
        """Log-factors of the smallest subtree holding all of ``wanted``."""
        keep = {i for i, node in enumerate(self.nodes) if wanted & set(node)}
        # Prune leaves that hold none of the wanted attributes until the
        # subtree connecting ``keep`` remains.
        sub = set(range(len(self.nodes)))
        degree = {i: 0 for i in sub}
        for i, j in self.edges:
            degree[i] += 1
            degree[j] += 1
        changed = True
        while changed:
            changed = False
            for i in list(sub):
                if i not in keep and degree[i] <= 1:
                    sub.discard(i)
                    for a, b in self.edges:
                        if a == i and b in sub:
                            degree[b] -= 1
                        elif b == i and a in sub:
                            degree[a] -= 1
                    changed = True
        factors = []
        for i in sub:
            # Attributes no other factor holds are summed out of the belief
            # here, in probability space (no exponential).
            node = self.nodes[i]
            others = set().union(*(set(self.nodes[j]) for j in sub if j != i))
            kept = tuple(a for a in node if a in wanted or a in others)
            if kept == node:
                factors.append((node, self.log_beliefs[i]))
            else:
                factors.append((kept, self._node_log_marginal(i, kept)))
        for i, j in self.edges:
            if i in sub and j in sub:
                sep = self._separator(i, j)
                if sep:
                    factors.append((sep, -self._node_log_marginal(i, sep)))
        return factors

    def _node_log_marginal(self, i, keep):
        """Log-marginal of node ``i``'s attributes ``keep``.

        Summed from the node's belief (no exponential), or by an exact
        log-sum-exp where a cell's mass is below ``1e-250``. Separators'
        are kept until the next calibration (every query reads them).
        """
        key = (i, keep)
        if key in self._separators:
            return self._separators[key]
        attributes, node = self.attributes, self.nodes[i]
        mass = attributes.sum_to(self.beliefs[i], node, keep)
        if float(np.min(mass)) > _TINY_MASS:
            out = np.log(mass)
        else:
            out = attributes.logsumexp_to(self.log_beliefs[i], node, keep)
        if any(keep == self._separator(i, j) for j in range(len(self.nodes))):
            self._separators[key] = out
        return out

    def sample(
        self, n_samples: int, rng: np.random.Generator, method: str = "iid"
    ) -> np.ndarray:
        """Codes of ``n_samples`` rows (the columns), node by node down the tree.

        Each node's attributes not yet assigned (``new``) are given to the
        rows conditionally on those already assigned (``given``, the
        separator with the parent node). ``method="iid"``: each row draws
        independently from ``p(new | given)`` (forward sampling).
        ``"rounded"``: the ``m_s`` rows of each separator cell ``s`` receive
        counts of ``new`` cells that are each ``floor`` or ``ceil`` of
        ``m_s * p(new | s)`` (systematic sampling, :func:`_systematic_counts`),
        dealt to those rows in random order. A group attribute takes its
        column's group once the column is drawn; a column drawn after its
        group is drawn given it (the node's belief with the group's axis
        written out). Only the columns are returned.
        """
        attributes = self.attributes
        codes = np.zeros((n_samples, len(self.sizes)), dtype=np.int64)
        done = set()
        for i in self.order:
            node = self.nodes[i]
            prob, axes = self.beliefs[i], attributes.axes(node)
            for g in node:
                a = attributes.base.get(g)
                if a in node and g in done and a not in done:
                    prob, axes = attributes.spell_out(prob, axes, g)
            given = tuple(a for a in axes if a in done)
            new = tuple(a for a in axes if a not in done)
            if new:
                self._draw(codes, prob, axes, given, new, done, rng, method)
            for g in node:
                if g in attributes.base and g not in done and g not in new:
                    codes[:, g] = attributes.group_codes(
                        g, codes[:, self.attributes.base[g]]
                    )
            done.update(node)
        return codes[:, : attributes.n_columns]

    def _draw(self, codes, prob, axes, given, new, done, rng, method):
        """Assign the attributes ``new`` of a node's belief ``prob`` (axes ``axes``)."""
        n_samples = len(codes)
        table = np.transpose(prob, [axes.index(a) for a in given + new])
        n_given = _cells(given, self.sizes)
        n_new = _cells(new, self.sizes)
        table = table.reshape(n_given, n_new)
        table = table / np.maximum(table.sum(axis=1, keepdims=True), 1e-300)
        rows = (
            np.ravel_multi_index(
                tuple(codes[:, a] for a in given), [self.sizes[a] for a in given]
            )
            if given
            else np.zeros(n_samples, dtype=np.int64)
        )
        if method == "rounded":
            # Stratify by the attributes assigned before but outside this
            # node, fewest values first (the largest strata).
            others = sorted(
                done - set(given), key=lambda a: (self.sizes[a], rng.random())
            )
            pick = _deal(table, rows, rng, codes[:, others])
        else:
            # Row r's conditional CDF spans [r, r + 1) of the flattened table.
            cdf = np.cumsum(table, axis=1) + np.arange(n_given)[:, np.newaxis]
            cdf = cdf.ravel()
            flat = np.searchsorted(cdf, rows + rng.uniform(size=n_samples))
            pick = np.clip(flat - rows * n_new, 0, n_new - 1)
        picked = np.unravel_index(pick, [self.sizes[a] for a in new])
        for a, column in zip(new, picked, strict=True):
            codes[:, a] = column


# --- rounded sampling -------------------------------------------------------------


def _systematic_counts(table, totals, rng) -> np.ndarray:
    """Integer counts whose row ``g`` sums to ``totals[g]``, each cell rounded.

    ``table`` (groups x cells) holds probabilities, each row summing to one.
    Row ``g`` lays its expected counts ``totals[g] * table[g]`` end to end on
    ``[0, totals[g])`` and places ``totals[g]`` points ``u_g, u_g + 1, ...``
    with one uniform offset ``u_g`` per row (systematic sampling). A cell
    covering ``[a, b)`` receives ``ceil(b - u_g) - ceil(a - u_g)`` points:
    ``floor`` or ``ceil`` of its expected count ``b - a``, with that
    expectation exactly (``E[count] = b - a`` over ``u_g``), and so does
    every run of adjacent cells. Cells of probability zero get nothing.
    """
    totals = np.asarray(totals, dtype=np.int64)
    expected = totals[:, np.newaxis] * table
    ends = np.cumsum(expected, axis=1)
    offsets = rng.uniform(size=(len(totals), 1))
    points = np.clip(np.ceil(ends - offsets), 0, totals[:, np.newaxis])
    points[:, -1] = totals  # the last end is totals[g] up to float rounding
    points = np.maximum.accumulate(points, axis=1)
    return np.diff(points, axis=1, prepend=0).astype(np.int64)


def _deal(table, groups, rng, keys=None) -> np.ndarray:
    """A cell of ``table``'s columns for each row, rounded within each group.

    ``groups[r]`` is row ``r``'s row of ``table`` (its conditioning cell).
    The ``m_g`` rows of group ``g`` get the counts of
    :func:`_systematic_counts` for ``m_g * table[g]``. Which rows get which
    cell is stratified: the group's rows are sorted by ``keys`` (columns of
    codes already assigned, most significant first; ties in random order)
    and cell ``k``'s ``c`` copies are spread through that order at the
    positions ``(i + u_k) / c``, ``i = 0, ..., c - 1`` (one uniform ``u_k``
    per cell) and the sequence is rotated by a uniform amount, so every run
    of consecutive rows -- e.g. the rows sharing a value of the first key --
    receives each cell in proportion, up to ``1 + n_cells * c / m`` copies,
    instead of a hypergeometric share, and every row receives cell ``k``
    with probability ``c_k / m`` exactly (unbiased cross-node marginals).
    """
    n_samples = len(groups)
    n_groups, n_cells = table.shape
    totals = np.bincount(groups, minlength=n_groups)
    counts = _systematic_counts(table, totals, rng).ravel()
    keys = np.empty((n_samples, 0), dtype=np.int64) if keys is None else keys
    tiebreak = rng.permutation(n_samples)
    sort_keys = [tiebreak, *(keys[:, j] for j in reversed(range(keys.shape[1])))]
    rows = np.lexsort([*sort_keys, groups])
    # The copies of every (group, cell), each at its stride position.
    item = np.repeat(np.arange(counts.size), counts)
    starts = np.cumsum(counts) - counts
    within = np.arange(n_samples) - starts[item]
    offsets = rng.uniform(size=counts.size)
    position = (within + offsets[item]) / np.maximum(counts[item], 1)
    spread = np.lexsort([position, item // n_cells])
    # A random rotation of each group's sequence (the positions live on a
    # circle, so runs keep their balance): every row then gets cell k with
    # probability exactly c_k / m_g, whatever its place in the order.
    group = (item // n_cells)[spread]
    starts = np.cumsum(totals) - totals
    shift = np.floor(rng.uniform(size=n_groups) * totals).astype(np.int64)
    rank = np.arange(n_samples) - starts[group]
    rotated = starts[group] + (rank + shift[group]) % np.maximum(totals[group], 1)
    pick = np.empty(n_samples, dtype=np.int64)
    pick[rows] = (item % n_cells)[spread][rotated]
    return pick
