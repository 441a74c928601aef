"""Group attributes (skdp/synthesis/_attributes.py) in the junction tree.

A grouping of a column is one more attribute of the model, tied to the
column by a deterministic factor: a potential on the group is a potential
on the column that is constant within each group. The tree must be that
model exactly (the dense table of the columns is the reference), store
fewer cells than the columns' tree, and sample columns only.
"""

import itertools

import numpy as np
import pytest
from small_models import measured_estimator

from skdp.synthesis import _loop as loop_module
from skdp.synthesis import _models as models_module
from skdp.synthesis._attributes import Attributes
from skdp.synthesis._estimation import _Estimator
from skdp.synthesis._models import DenseModel, JunctionTreeModel
from skdp.synthesis._plan import RoundSettings
from skdp.synthesis._views import (
    CoarseMarginal,
    groupings_of,
    reduce_view,
)

SIZES = (6, 4, 3, 5)
GROUPINGS = {0: (0, 2, 5), 3: (0, 3)}  # attribute 4 groups column 0, 5 column 3
GROUP = {4: 0, 5: 3}
# Cliques on groups, on columns, on a group beside a column and on two groups.
CLIQUES = [(4, 1), (1, 2), (0, 2), (5, 4), (3, 1), (5, 2)]


def _widths(g):
    starts = GROUPINGS[GROUP[g]]
    return np.diff(np.append(starts, SIZES[GROUP[g]]))


def _on_columns(theta, clique):
    """A potential on ``clique`` written on the columns: each group's value
    repeated over its codes (the reference, built without the module)."""
    columns = []
    for axis, x in enumerate(clique):
        if x in GROUP:
            theta = np.repeat(theta, _widths(x), axis=axis)
            columns.append(GROUP[x])
        else:
            columns.append(x)
    return theta, tuple(columns)


def _models(seed=0):
    """``(dense, tree)``: one random model, the tree with group attributes."""
    rng = np.random.default_rng(seed)
    attributes = Attributes(SIZES, GROUPINGS)
    potentials = {c: rng.normal(size=attributes.shape(c)) for c in CLIQUES}
    dense = DenseModel(SIZES)
    dense_potentials = {}
    for clique, theta in potentials.items():
        table, columns = _on_columns(theta, clique)
        dense_potentials[columns] = dense_potentials.get(columns, 0) + table
    dense.set_potentials(dense_potentials)
    tree = JunctionTreeModel(SIZES, CLIQUES, GROUPINGS)
    tree.set_potentials(potentials)
    return dense, tree


def _dense_marginal(dense, clique):
    """The dense model's marginal of a clique of columns and groups."""
    columns = tuple(GROUP.get(x, x) for x in clique)
    starts = tuple(GROUPINGS[GROUP[x]] if x in GROUP else None for x in clique)
    return reduce_view(dense.marginal(columns), CoarseMarginal(columns, starts))


ALL_CLIQUES = [
    c
    for r in (1, 2, 3)
    for c in itertools.permutations(range(6), r)
    if not any(GROUP.get(x) in c for x in c)  # never a group beside its column
]


def test_the_tree_with_groups_is_the_dense_model_of_the_columns():
    # Every marginal of up to three attributes, inside a node (belief
    # propagation) or not (elimination), equals the dense table's.
    dense, tree = _models()
    assert any(not tree.contains(c) for c in ALL_CLIQUES)
    for clique in ALL_CLIQUES:
        np.testing.assert_allclose(
            tree.marginal(clique), _dense_marginal(dense, clique), atol=1e-12
        )
    together = tree.marginals(ALL_CLIQUES)
    for clique in ALL_CLIQUES:
        np.testing.assert_allclose(
            together[clique], _dense_marginal(dense, clique), atol=1e-12
        )


@pytest.mark.parametrize("limit", [1, 6, 20])
def test_elimination_split_by_value_with_groups_is_exact(monkeypatch, limit):
    # Conditioning on a column slices the factors over its group at the
    # value's group.
    dense, tree = _models(seed=1)
    monkeypatch.setattr(models_module, "ELIMINATION_MAX_CELLS", limit)
    for clique in [(0, 1, 3), (3, 0), (4, 2, 3), (0, 5, 1), (1, 2, 0)]:
        np.testing.assert_allclose(
            tree.marginal(clique), _dense_marginal(dense, clique), atol=1e-12
        )


def test_a_nearly_impossible_group_keeps_the_marginals_exact():
    # A group of log-weight -2000 underflows: the calibration and the
    # groups' sums take the exact log-sum-exp (no NaN, no warning).
    rng = np.random.default_rng(2)
    attributes = Attributes(SIZES, GROUPINGS)
    potentials = {c: rng.normal(size=attributes.shape(c)) for c in CLIQUES}
    potentials[(4, 1)][1, :] -= 2000.0
    tree = JunctionTreeModel(SIZES, CLIQUES, GROUPINGS)
    dense = DenseModel(SIZES)
    dense_potentials = {}
    for clique, theta in potentials.items():
        table, columns = _on_columns(theta, clique)
        dense_potentials[columns] = dense_potentials.get(columns, 0) + table
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        tree.set_potentials(potentials)
        dense.set_potentials(dense_potentials)
    for clique in [(0,), (4,), (0, 1), (4, 3), (0, 2, 3)]:
        np.testing.assert_allclose(
            tree.marginal(clique), _dense_marginal(dense, clique), atol=1e-12
        )


def test_the_tree_stores_the_groups_not_the_values():
    # A coarse (age, x, y) as (group, x, y): 15 * 9 * 16 cells and the
    # factor's node (age's 85 values), not 85 * 9 * 16.
    starts = tuple(range(0, 85, 6))
    tree = JunctionTreeModel((85, 9, 16), [(3, 1, 2)], {0: starts})
    assert tree.size == 15 * 9 * 16 + 85
    assert not any({0, 1, 2} <= set(node) for node in tree.nodes)


@pytest.mark.parametrize("method", ["iid", "rounded"])
def test_samples_are_columns_that_follow_the_model(method):
    dense, tree = _models(seed=3)
    n = 100_000
    codes = tree.sample(n, np.random.default_rng(0), method=method)
    assert codes.shape == (n, len(SIZES))
    assert ((codes >= 0) & (codes < np.array(SIZES))).all()
    for clique in [(0,), (0, 1), (3, 2), (0, 3), (1, 2, 3)]:
        p = dense.marginal(clique)
        counts = np.zeros(p.shape)
        np.add.at(counts, tuple(codes[:, a] for a in clique), 1)
        # Each count is at most binomial(n, p) in spread: 5 standard
        # deviations, a Bonferroni margin over at most 60 cells per table.
        np.testing.assert_array_less(
            np.abs(counts - n * p), 5 * np.sqrt(n * p * (1 - p)) + 1
        )


VIEWS = [
    (1,),
    CoarseMarginal((0, 1), ((0, 2, 5), None)),
    (1, 2),
    CoarseMarginal((3, 0), ((0, 3), (0, 2, 5))),
    CoarseMarginal((3,), ((0, 3),)),
    (0, 2),
]


def _estimator(model, seed=0):
    return measured_estimator(model, SIZES, VIEWS, 8, seed)


def test_coarse_views_are_fitted_on_groups_with_the_same_steps():
    # The estimation over the tree with groups takes the steps the dense
    # model of the columns takes (which measures every coarse view through
    # its columns' marginal): the same model after eight steps.
    grouped = _estimator(JunctionTreeModel(SIZES, groupings=groupings_of(VIEWS)))
    dense = _estimator(DenseModel(SIZES))
    assert set(grouped.potentials) == {(4, 1), (1, 2), (5, 4), (0, 2)}
    assert grouped.n_iter == dense.n_iter
    for clique in [(0, 1), (0, 2, 3), (1, 3)]:
        np.testing.assert_allclose(
            grouped.model.marginal(clique), dense.model.marginal(clique), atol=1e-10
        )


@pytest.mark.parametrize("cap", [100, 1000, 1500, 1600, 2000, 10**6])
def test_the_selection_offers_what_the_columns_model_offers(monkeypatch, cap):
    # The size cap is priced on the columns' tree (a coarse view at full
    # resolution), so the groups change what a step costs, not which
    # candidates are offered: the same offers as a model without groups.
    # (60, 5, 5) at full resolution is 1500 cells; its coarse view on the
    # groups is 10 * 25 cells beside the factor's 60.
    sizes, starts = (60, 5, 5), tuple(range(0, 60, 6))
    plain, coarse = (0, 1, 2), CoarseMarginal((0, 1, 2), (starts, None, None))
    pair = CoarseMarginal((0, 1), (starts, None))
    truth = {
        plain: np.full((60, 5, 5), 1 / 1500),
        coarse: np.full((10, 5, 5), 0.004),
        pair: np.full((10, 5), 0.02),
        (1, 2): np.full((5, 5), 0.04),
    }
    settings = RoundSettings.from_unit("gaussian", 0.5, 1500, 10**6)

    def offered(model):
        estimator = _Estimator(model)
        estimator.add_marginal((1, 2), truth[(1, 2)], sigma=0.01)
        seen = []

        def recording(scores, sensitivity, epsilon, random_state):
            seen.append(len(scores))
            return 0, None

        monkeypatch.setattr(loop_module, "exponential_mechanism", recording)
        loop_module._select_marginal(
            estimator, list(truth), truth, sizes, settings, None, 10**6, cap
        )
        return seen

    grouped = offered(JunctionTreeModel(sizes, groupings={0: starts}))
    columns = offered(JunctionTreeModel(sizes))
    # Offered at full resolution: (1, 2) is always (already in the tree);
    # the coarse pair needs 300 + 25 cells, either triple 1500.
    expected = 1 if cap < 325 else 2 if cap < 1500 else 4
    assert grouped == columns == [expected]


@pytest.mark.parametrize("seed", range(20))
def test_the_tree_with_groups_is_never_larger_than_the_columns_tree(seed):
    # Random cliques on columns and groups: the model's tree stores at most
    # the cells of the tree of the same cliques on the columns (each group
    # replaced by its column), and is a junction tree (running intersection).
    rng = np.random.default_rng(seed)
    sizes, groupings = (40, 30, 6, 5, 4, 50), {0: (0, 10, 20, 30), 5: (0, 25)}
    attributes = Attributes(sizes, groupings)  # groups: 6 (of 0), 7 (of 5)
    cliques = []
    for _ in range(int(rng.integers(1, 7))):
        clique = list(rng.choice(8, size=int(rng.integers(1, 4)), replace=False))
        clique = [x for x in clique if attributes.base.get(x) not in clique]
        cliques.append(tuple(int(x) for x in clique))
    on_columns = [tuple(attributes.base.get(x, x) for x in c) for c in cliques]
    tree = JunctionTreeModel(sizes, cliques, groupings)
    assert tree.size <= JunctionTreeModel(sizes, on_columns).size
    assert all(tree.contains(c) for c in cliques)
    for attribute in range(8):
        holding = {i for i, node in enumerate(tree.nodes) if attribute in node}
        inside = [(i, j) for i, j in tree.edges if {i, j} <= holding]
        assert len(inside) == len(holding) - 1  # a connected subtree
