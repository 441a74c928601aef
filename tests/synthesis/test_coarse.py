"""Coarse marginals (PMWSynthesizer(coarsen=...), skdp/synthesis/_views.py).

A coarse marginal adds up fixed groups of consecutive codes of a marginal:
a public linear map, so it must keep a marginal's sensitivities, and the
estimation must fit the model's coarse table to its measurement.
"""

import itertools
import pickle
from functools import partial

import numpy as np
import pytest
from _data import marginal_counts

from skdp.accounting import PrivacyBudget
from skdp.synthesis import PMWSynthesizer
from skdp.synthesis._plan import MARGINAL_L1, MARGINAL_L2
from skdp.synthesis._views import (
    CoarseMarginal,
    base_clique,
    coarse_views,
    expand_view,
    reduce_view,
    view_cells,
)

SIZES = (7, 3, 5)
VIEW = CoarseMarginal((0, 2), ((0, 3, 6), (0, 2)))


_counts = partial(marginal_counts, sizes=SIZES)  # the oracle on SIZES


def test_the_view_adds_up_groups_of_consecutive_codes():
    table = np.arange(35.0).reshape(7, 5)
    coarse = reduce_view(table, VIEW)
    assert (
        coarse.shape == (3, 2) == tuple(len(s) for s in VIEW.starts)
    )  # groups {0,1,2},{3,4,5},{6} x {0,1},{2,3,4}
    assert coarse[0, 0] == table[0:3, 0:2].sum()
    assert coarse[2, 1] == table[6:, 2:].sum()
    assert coarse.sum() == table.sum()
    assert view_cells(VIEW, SIZES) == 6
    assert base_clique(VIEW) == (0, 2) and base_clique((1, 2)) == (1, 2)


def test_expand_is_the_adjoint_of_reduce():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(7, 5)), rng.normal(size=(3, 2))
    lhs = float(np.sum(reduce_view(x, VIEW) * y))
    rhs = float(np.sum(x * expand_view(y, VIEW, x.shape)))
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_replacing_one_row_moves_a_coarse_table_by_a_marginals_sensitivity():
    # Exhaustive over every replacement of one row of a small dataset: the
    # coarse counts move by at most 2 in L1 and sqrt(2) in L2, the bounds
    # its measurement is calibrated to, and both bounds are attained.
    rng = np.random.default_rng(1)
    rows = np.column_stack([rng.integers(0, s, size=12) for s in SIZES])
    base = reduce_view(_counts(rows, VIEW.clique), VIEW)
    l1 = l2 = 0.0
    for i in range(len(rows)):
        for new in itertools.product(*(range(s) for s in SIZES)):
            other = rows.copy()
            other[i] = new
            diff = reduce_view(_counts(other, VIEW.clique), VIEW) - base
            l1 = max(l1, np.abs(diff).sum())
            l2 = max(l2, float(np.sqrt((diff**2).sum())))
    assert l1 == MARGINAL_L1
    assert l2 == pytest.approx(MARGINAL_L2)


def test_coarse_views_follow_their_clique_with_every_grouped_attribute_grouped():
    views = coarse_views([(0,), (1,), (0, 1), (1, 2), (0, 2)], {0: (0, 4), 2: (0, 2)})
    assert views == [
        (0,),
        CoarseMarginal((0,), ((0, 4),)),
        (1,),
        (0, 1),
        CoarseMarginal((0, 1), ((0, 4), None)),
        (1, 2),
        CoarseMarginal((1, 2), (None, (0, 2))),
        (0, 2),
        CoarseMarginal((0, 2), ((0, 4), (0, 2))),
    ]
    coarse = [v for v in views if isinstance(v, CoarseMarginal)]
    assert repr(coarse[1]) == "CoarseMarginal((0, 1), 2 groups, all)"
    assert pickle.loads(pickle.dumps(coarse[3])) == coarse[3]


def _wide(n=3000, seed=0):
    """A smooth 60-valued column (ordered numbers), a binary one, a 3-valued one."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(30, 12, size=n).round(), 0, 59).astype(int)
    flag = (rng.uniform(size=n) < (age / 60.0)).astype(int)
    third = rng.integers(0, 3, size=n)
    return np.column_stack([age, flag, third])


CATEGORIES = [list(range(60)), [0, 1], [0, 1, 2]]
SIZES_WIDE = tuple(len(c) for c in CATEGORIES)


def test_auto_groups_wide_ordered_columns_only():
    X = _wide()
    synth = PMWSynthesizer(categories=CATEGORIES, epsilon=2.0, random_state=0)
    synth.fit(X)
    domains = synth.domains_
    # 60 values > 32: groups of ceil(60 / 16) = 4 consecutive values.
    assert synth._groupings(domains) == {0: tuple(range(0, 60, 4))}
    unordered = list(reversed(range(60)))
    synth.set_params(categories=[unordered, [0, 1], [0, 1, 2]]).fit(X)
    assert synth._groupings(synth.domains_) == {}
    names = [f"v{i:02d}" for i in range(60)]  # ordered, but not numbers
    synth.set_params(categories=[names, [0, 1], [0, 1, 2]])
    synth.fit(np.column_stack([np.array(names)[X[:, 0]], X[:, 1:]]).astype(object))
    assert synth._groupings(synth.domains_) == {}


def test_a_dict_sets_widths_and_the_missing_code_stays_apart():
    X = _wide().astype(float)
    X[:5, 0] = np.nan
    synth = PMWSynthesizer(
        categories=CATEGORIES,
        missing_values={0: "category"},
        coarsen={0: 25, 2: 1},
        epsilon=2.0,
        random_state=0,
    ).fit(X)
    assert synth._groupings(synth.domains_) == {0: (0, 25, 50, 60)}


@pytest.mark.parametrize("width", [0, -2, 2.5, True, "4"])
def test_a_bad_width_is_refused_before_the_charge(width):
    budget = PrivacyBudget(10.0, 1e-6)
    synth = PMWSynthesizer(categories=CATEGORIES, coarsen={0: width}, budget=budget)
    with pytest.raises(ValueError, match=r"coarsen\[0\] must be an int >= 1"):
        synth.fit(_wide())
    assert budget.ledger == []


def test_an_unknown_column_is_refused_before_the_charge():
    budget = PrivacyBudget(10.0, 1e-6)
    synth = PMWSynthesizer(categories=CATEGORIES, coarsen={7: 3}, budget=budget)
    with pytest.raises(ValueError, match="Unknown column 7"):
        synth.fit(_wide())
    assert budget.ledger == []


def test_coarsening_changes_what_is_measured_never_what_is_charged():
    X = _wide()
    plain = PMWSynthesizer(categories=CATEGORIES, coarsen=None, random_state=3)
    coarse = PMWSynthesizer(categories=CATEGORIES, random_state=3)
    plain.fit(X)
    coarse.fit(X)
    assert plain.privacy_event_ == coarse.privacy_event_
    assert plain.epsilon_ == coarse.epsilon_
    assert not any(isinstance(v, CoarseMarginal) for v in plain.selected_)
    assert any(isinstance(v, CoarseMarginal) for v in coarse.selected_)


def test_without_wide_columns_auto_is_the_plain_fit():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(500, 3))
    kwargs = dict(categories=[[0, 1, 2]] * 3, random_state=5)
    a = PMWSynthesizer(coarsen="auto", **kwargs).fit(X)
    b = PMWSynthesizer(coarsen=None, **kwargs).fit(X)
    assert a.selected_ == b.selected_
    np.testing.assert_array_equal(a.marginal([0, 1]), b.marginal([0, 1]))


def test_the_model_fits_a_precise_coarse_measurement():
    # At a large epsilon the noise is negligible: after the fit the model's
    # coarse tables of every measured coarse marginal match the data's.
    X = _wide(n=5000)
    synth = PMWSynthesizer(
        epsilon=200.0,
        categories=CATEGORIES,
        coarsen={0: 10},
        workload=[(0, 1)],
        random_state=0,
    ).fit(X)
    views = [v for v in synth.selected_ if isinstance(v, CoarseMarginal)]
    assert views
    for view in views:
        data = reduce_view(_counts_of(X, view.clique), view) / len(X)
        model = reduce_view(synth.marginal(list(view.clique)), view)
        assert np.abs(data - model).sum() < 0.02


_counts_of = partial(marginal_counts, sizes=SIZES_WIDE)


def test_the_dask_fit_with_coarse_marginals_is_the_in_memory_fit():
    da = pytest.importorskip("dask.array")
    X = _wide(n=1200)
    kwargs = dict(categories=CATEGORIES, epsilon=3.0, random_state=11)
    local = PMWSynthesizer(**kwargs).fit(X)
    remote = PMWSynthesizer(**kwargs).fit(da.from_array(X, chunks=(400, 3)))
    assert any(isinstance(v, CoarseMarginal) for v in local.selected_)
    assert remote.selected_ == local.selected_
    np.testing.assert_array_equal(remote.marginal([0, 1]), local.marginal([0, 1]))


def test_coarse_measurements_carry_the_calibrated_noise(monkeypatch):
    # Every measurement of a coarse marginal is planned with a marginal's L2
    # sensitivity, and its noise, in units of the planned standard deviation,
    # has mean 0 and standard deviation 1 over all coarse cells measured in
    # several seeded fits (a plan with the wrong sensitivity, or one sized
    # for the full clique, would move the spread well outside the bounds).
    from skdp.synthesis import _loop

    calls = []
    original = _loop._measure

    def recording(value_counts, noise_plan, plan, source, n):
        noisy, sigma = original(value_counts, noise_plan, plan, source, n)
        calls.append((np.asarray(value_counts, float), noisy * n, noise_plan, sigma))
        return noisy, sigma

    monkeypatch.setattr(_loop, "_measure", recording)
    X = _wide(n=2000)
    z = []
    for seed in range(8):
        calls.clear()
        synth = PMWSynthesizer(categories=CATEGORIES, epsilon=1.0, random_state=seed)
        synth.fit(X)
        measured = [(0,), (1,), (2,)] + list(synth.selected_)
        assert len(measured) == len(calls)
        for view, (counts, noisy, noise_plan, sigma) in zip(measured, calls):
            if not isinstance(view, CoarseMarginal):
                continue
            assert noise_plan.sensitivity == MARGINAL_L2
            assert counts.size == view_cells(view, SIZES_WIDE)
            std = noise_plan.scale * noise_plan.gamma
            assert sigma * len(X) == pytest.approx(std, rel=0.05)
            z.extend(((noisy - counts) / std).ravel())
    z = np.asarray(z)
    assert z.size >= 300
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.std() - 1.0) < 5 / np.sqrt(2 * z.size)
