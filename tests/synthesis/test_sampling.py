"""Rows that follow the model: PMWSynthesizer(sampling="rounded").

The rounded sampler (``_models._systematic_counts`` / ``_deal``) promises:
each cell of the first junction-tree node (the whole table of a dense
model) within one count of ``n p``, also for the marginals over a leading
run of its attributes; every count unbiased; and for every node an L1
distance to ``n p`` below the number of cells on its path from the root.
"""

from functools import partial

import numpy as np
import pandas as pd
import pytest
from _data import marginal_counts
from small_models import CLIQUES, SIZES, small_models

from skdp.accounting import PrivacyBudget
from skdp.synthesis import PMWSynthesizer
from skdp.synthesis._models import (
    JunctionTreeModel,
    _cells,
    _deal,
    _systematic_counts,
)

_counts = partial(marginal_counts, sizes=SIZES)  # the oracle on SIZES


def test_systematic_counts_round_every_cell_and_keep_the_totals():
    rng = np.random.default_rng(0)
    table = rng.dirichlet(np.full(7, 0.5), size=5)
    table[2, 3] = 0.0  # a zero cell
    table[2] /= table[2].sum()
    totals = np.array([0, 1, 13, 250, 1001])
    expected = totals[:, None] * table
    runs = np.stack([_systematic_counts(table, totals, rng) for _ in range(400)])
    assert (runs.sum(axis=2) == totals).all()
    assert (runs >= np.floor(expected - 1e-9)).all()
    assert (runs <= np.ceil(expected + 1e-9)).all()
    assert (runs[:, 2, 3] == 0).all()
    # Runs of adjacent cells are rounded too (the cumulative counts).
    cumulative = np.cumsum(runs, axis=2)
    assert (np.abs(cumulative - np.cumsum(expected, axis=1)) < 1 + 1e-9).all()
    # Unbiased: each count is floor(e) + Bernoulli(frac(e)), standard deviation
    # <= 1/2, so the mean of 400 runs has standard error <= 0.025; 0.15 is six.
    assert np.abs(runs.mean(axis=0) - expected).max() < 0.15


def test_dealing_spreads_each_cell_through_the_strata():
    # One group of 997 rows sorted by a key with 4 strata: in every run of
    # consecutive rows (each stratum) a cell with c copies out of m appears
    # L * c / m times, up to 1 + n_cells * c / m (see _deal).
    rng = np.random.default_rng(1)
    n, n_cells = 997, 6
    table = rng.dirichlet(np.ones(n_cells))[None, :]
    key = rng.integers(0, 4, size=n)
    pick = _deal(table, np.zeros(n, dtype=np.int64), rng, key[:, None])
    copies = np.bincount(pick, minlength=n_cells)
    for stratum in range(4):
        inside = key == stratum
        share = inside.sum() * copies / n
        got = np.bincount(pick[inside], minlength=n_cells)
        assert (np.abs(got - share) <= 1 + n_cells * copies / n + 1e-9).all()


@pytest.mark.parametrize("n_samples", [1, 57, 1003])
def test_dense_rounded_rows_round_every_cell(n_samples):
    dense, _ = small_models()
    codes = dense.sample(n_samples, np.random.default_rng(2), method="rounded")
    assert codes.shape == (n_samples, len(SIZES))
    expected = n_samples * dense.probabilities
    assert (np.abs(_counts(codes, tuple(range(len(SIZES)))) - expected) < 1).all()
    # The first attribute's one-way marginal: round(n * p) within one count.
    assert (np.abs(_counts(codes, (0,)) - n_samples * dense.marginal((0,))) < 1).all()


def _path_cells(tree, i):
    total = 0
    while i is not None:
        total += _cells(tree.nodes[i], tree.sizes)
        i = tree.parent[i]
    return total


@pytest.mark.parametrize("n_samples", [40, 1003, 20000])
def test_tree_rounded_rows_meet_the_rounding_bound(n_samples):
    _, tree = small_models()
    codes = tree.sample(n_samples, np.random.default_rng(3), method="rounded")
    root = tree.nodes[tree.order[0]]
    error = _counts(codes, root) - n_samples * tree.marginal(root)
    assert (np.abs(error) < 1).all()
    assert (
        np.abs(_counts(codes, root[:1]) - n_samples * tree.marginal(root[:1])) < 1
    ).all()
    for i, node in enumerate(tree.nodes):
        l1 = np.abs(_counts(codes, node) - n_samples * tree.marginal(node)).sum()
        assert l1 < _path_cells(tree, i)
        # Any clique inside the node inherits the bound (marginalising).
        for clique in CLIQUES:
            if set(clique) <= set(node):
                l1 = np.abs(_counts(codes, clique) - n_samples * tree.marginal(clique))
                assert l1.sum() < _path_cells(tree, i)


def test_rounded_rows_follow_the_model_closer_than_iid_draws():
    for model in small_models():
        errors = {}
        for method in ("rounded", "iid"):
            codes = model.sample(20000, np.random.default_rng(4), method=method)
            errors[method] = sum(
                np.abs(_counts(codes, c) / 20000 - model.marginal(c)).sum()
                for c in CLIQUES
            )
        # i.i.d. draws err by about sqrt(cells / n) per marginal (~0.03 here);
        # rounding by at most (path cells) / n (~0.003).
        assert errors["rounded"] < errors["iid"] / 4


def test_tree_rounded_counts_are_unbiased():
    _, tree = small_models()
    n, runs = 200, 300
    clique = (0, 2, 4)  # spans nodes: outside the within-one guarantee
    draws = np.stack(
        [
            _counts(tree.sample(n, np.random.default_rng(s), method="rounded"), clique)
            for s in range(runs)
        ]
    )
    expected = n * tree.marginal(clique)
    standard_error = draws.std(axis=0) / np.sqrt(runs)
    # A 6-sigma z-test per cell (cells with no spread must be exact).
    assert (np.abs(draws.mean(axis=0) - expected) <= 6 * standard_error + 1e-6).all()


# --- through PMWSynthesizer ---------------------------------------------------------


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, size=n)
    b = (a + rng.integers(0, 2, size=n)) % 4
    c = rng.integers(0, 2, size=n)
    return np.column_stack([a, b, c])


CATEGORIES = [[0, 1, 2], [0, 1, 2, 3], [0, 1]]


def test_default_is_rounded_and_the_first_column_is_rounded():
    X = _data()
    synth = PMWSynthesizer(
        epsilon=1.0, categories=CATEGORIES, random_state=0, n_rounds=2
    ).fit(X)
    assert synth.sampling == "rounded"
    for n in (1, 10, 599):
        rows = synth.sample(n)
        counts = np.bincount(rows[:, 0].astype(int), minlength=3)
        assert (np.abs(counts - n * synth.marginal([0])) < 1).all()


def test_iid_option_draws_independent_rows():
    X = _data()
    synth = PMWSynthesizer(
        epsilon=1.0, categories=CATEGORIES, sampling="iid", random_state=0, n_rounds=2
    ).fit(X)
    rows = synth.sample(600)
    assert rows.shape == (600, 3)
    again = synth.sample(600)
    np.testing.assert_array_equal(rows, again)
    # i.i.d. draws miss round(n p) by about sqrt(n p (1 - p)) (~10 here).
    counts = np.bincount(rows[:, 1].astype(int), minlength=4)
    rounded = synth.set_params(sampling="rounded").sample(600)
    assert not np.array_equal(rows, rounded)
    assert np.abs(counts - 600 * synth.marginal([1])).max() >= 1


def test_transform_uses_only_the_row_count():
    X = _data()
    synth = PMWSynthesizer(
        epsilon=1.0, categories=CATEGORIES, random_state=0, n_rounds=2
    ).fit(X)
    other = _data(n=len(X), seed=9)
    np.testing.assert_array_equal(synth.transform(X), synth.transform(other))
    np.testing.assert_array_equal(synth.transform(X[:17]), synth.sample(17))
    assert synth.transform(X[:17]).shape == (17, 3)


def test_rounded_rows_are_reproducible_with_a_seed():
    X = _data()
    first = PMWSynthesizer(
        epsilon=1.0, categories=CATEGORIES, random_state=5, n_rounds=2
    ).fit(X)
    second = PMWSynthesizer(
        epsilon=1.0, categories=CATEGORIES, random_state=5, n_rounds=2
    ).fit(X)
    np.testing.assert_array_equal(first.sample(300), second.sample(300))
    np.testing.assert_array_equal(
        first.sample(300, random_state=1), second.sample(300, random_state=1)
    )
    assert not np.array_equal(
        first.sample(300, random_state=1), first.sample(300, random_state=2)
    )


def test_rounded_rows_as_a_dataframe():
    X = pd.DataFrame(_data(), columns=["a", "b", "c"])
    X["c"] = pd.Categorical.from_codes(X["c"], categories=["no", "yes"])
    synth = PMWSynthesizer(
        epsilon=1.0,
        categories={"a": [0, 1, 2], "b": [0, 1, 2, 3]},
        n_rounds=2,
        random_state=0,
    ).fit(X)
    rows = synth.fit_transform(X)
    assert isinstance(rows, pd.DataFrame)
    assert list(rows.columns) == ["a", "b", "c"]
    assert (rows.dtypes == X.dtypes).all()
    counts = rows["a"].value_counts().reindex([0, 1, 2], fill_value=0).to_numpy()
    assert (np.abs(counts - len(X) * synth.marginal(["a"])) < 1).all()


def test_junction_tree_model_through_the_synthesizer():
    # 6 columns of 8 values: 262,144 cells, beyond the dense limit.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 8, size=(2000, 6))
    X[:, 1] = (X[:, 0] + rng.integers(0, 2, size=2000)) % 8
    synth = PMWSynthesizer(
        epsilon=2.0,
        categories=[list(range(8))] * 6,
        workload=[(0, 1, 2), (3, 4), (4, 5)],
        n_rounds=3,
        random_state=0,
    ).fit(X)
    assert isinstance(synth.model_, JunctionTreeModel)
    model = synth.model_
    codes = synth.sample(2000).astype(int)
    for i, node in enumerate(model.nodes):
        sizes = [model.sizes[a] for a in node]
        flat = np.ravel_multi_index(tuple(codes[:, a] for a in node), sizes)
        counts = np.bincount(flat, minlength=int(np.prod(sizes))).reshape(sizes)
        l1 = np.abs(counts - 2000 * model.marginal(node)).sum()
        assert l1 < _path_cells(model, i)


def test_bad_sampling_is_refused_before_the_charge():
    budget = PrivacyBudget(5.0, 1e-6)
    synth = PMWSynthesizer(categories=CATEGORIES, sampling="exact", budget=budget)
    with pytest.raises(ValueError, match="sampling"):
        synth.fit(_data())
    assert budget.spent() == (0.0, 0.0)
    fitted = PMWSynthesizer(categories=CATEGORIES, random_state=0, n_rounds=1)
    fitted.fit(_data())
    fitted.sampling = "exact"
    with pytest.raises(ValueError, match="sampling must be"):
        fitted.sample(3)
