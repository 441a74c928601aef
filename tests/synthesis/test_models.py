import itertools
import math

import numpy as np
import pytest
from small_models import CLIQUES, SIZES, small_models

from skdp.synthesis import _models as _models_module
from skdp.synthesis._models import JunctionTreeModel, junction_tree


def test_junction_tree_has_the_running_intersection_property():
    nodes, edges = junction_tree(CLIQUES, SIZES)
    assert len(edges) == len(nodes) - 1
    for clique in CLIQUES:
        assert any(set(clique) <= set(node) for node in nodes)
    # The nodes holding any attribute form a connected subtree.
    for attribute in range(len(SIZES)):
        holding = {i for i, node in enumerate(nodes) if attribute in node}
        inside = [(i, j) for i, j in edges if i in holding and j in holding]
        assert len(inside) == len(holding) - 1


@pytest.mark.parametrize(
    "clique", [(0,), (1, 0), (2, 4), (0, 2, 4), (4, 1, 3), (5, 0), (0, 1, 2, 3, 4, 5)]
)
def test_tree_marginals_are_exact(clique):
    # Belief propagation (in-node marginals) and variable elimination
    # (out-of-node marginals) agree with the dense table to rounding.
    dense, tree = small_models()
    np.testing.assert_allclose(
        tree.marginal(clique), dense.marginal(clique), atol=1e-12
    )


def test_tree_is_much_smaller_than_the_universe():
    sizes = (100,) * 14
    tree = JunctionTreeModel(sizes, [(0, 1), (1, 2), (2, 3)])
    assert tree.size < 10**5 < math.prod(sizes)
    np.testing.assert_allclose(tree.marginal((0, 3)), np.full((100, 100), 1e-4))


@pytest.mark.parametrize("kind", ["dense", "tree"])
def test_samples_follow_the_model(kind):
    dense, tree = small_models(seed=1)
    model = dense if kind == "dense" else tree
    n = 100_000
    codes = model.sample(n, np.random.default_rng(0))
    assert codes.shape == (n, len(SIZES))
    for clique in [(0, 1), (1, 2, 3), (2, 5), (0, 5)]:
        p = dense.marginal(clique)
        counts = np.zeros(p.shape)
        np.add.at(counts, tuple(codes[:, a] for a in clique), 1)
        # Each cell count is binomial(n, p): 5 standard deviations, with a
        # Bonferroni margin over at most 40 cells per table.
        np.testing.assert_array_less(
            np.abs(counts - n * p), 5 * np.sqrt(n * p * (1 - p)) + 1
        )


def test_dense_answers_linear_queries():
    dense, _ = small_models()
    queries = np.random.default_rng(2).uniform(size=(5, math.prod(SIZES)))
    np.testing.assert_allclose(
        dense.answer_queries(queries), queries @ dense.probabilities.ravel()
    )


def test_elimination_matches_brute_force_for_every_pair():
    dense, tree = small_models(seed=3)
    for pair in itertools.combinations(range(len(SIZES)), 2):
        np.testing.assert_allclose(
            tree.marginal(pair), dense.marginal(pair), atol=1e-12
        )


@pytest.mark.parametrize("limit", [1, 12, 40])
def test_elimination_split_by_value_is_exact_and_bounded(monkeypatch, limit):
    # A query whose elimination would build a table larger than the limit
    # is answered one value of its widest attributes at a time: the same
    # marginal, and (once every queried attribute is fixed if need be) the
    # largest table built is bounded by what conditioning allows.
    dense, tree = small_models(seed=4)
    monkeypatch.setattr(_models_module, "ELIMINATION_MAX_CELLS", limit)
    built = []
    original = _models_module._eliminate_factors

    def recording(factors, clique, sizes, dry=False):
        table, peak = original(factors, clique, sizes, dry)
        if not dry:
            built.append(peak)
        return table, peak

    monkeypatch.setattr(_models_module, "_eliminate_factors", recording)
    for triple in [(0, 2, 5), (1, 4, 5), (3, 0, 5), (5, 3, 1)]:
        built.clear()
        np.testing.assert_allclose(
            tree.marginal(triple), dense.marginal(triple), atol=1e-12
        )
        assert len(built) > 1  # split
        unsplit = original(
            tree._subtree_factors(set(triple)), triple, tree.attributes, True
        )[1]
        assert max(built) < unsplit


@pytest.mark.parametrize("extreme", [-2000.0, -700.0, 2000.0])
def test_tree_marginals_are_exact_when_a_separator_value_is_nearly_impossible(
    extreme,
):
    # A value of the separator attribute 1 with a log-weight of -2000 has
    # probability exp(-2000): its mass underflows, and the calibration must
    # take the exact log-sum-exp there (no NaN, the same marginals as the
    # dense table); +2000 makes every other value nearly impossible.
    sizes = (3, 4, 2)
    rng = np.random.default_rng(4)
    potentials = {(0, 1): rng.normal(size=(3, 4)), (1, 2): rng.normal(size=(4, 2))}
    potentials[(0, 1)][:, 0] += extreme
    dense = _models_module.DenseModel(sizes)
    dense.set_potentials(potentials)
    tree = JunctionTreeModel(sizes, list(potentials))
    tree.set_potentials(potentials)
    assert len(tree.nodes) == 2  # the separator (1,) is summed over
    for clique in [(0,), (1,), (0, 1), (1, 2), (0, 2)]:
        np.testing.assert_allclose(
            tree.marginal(clique), dense.marginal(clique), atol=1e-12
        )
    for log_belief in tree.log_beliefs:
        assert not np.isnan(log_belief).any()
