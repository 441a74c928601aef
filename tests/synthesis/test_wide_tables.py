"""Wide tables: MWEM's work grows with its rounds, and the plan bounds it.

Issue 26: ``SyntheticDataClassifier`` on 1,000 wide columns ran for about
15 minutes after the charge (400 columns: 155 s). Each of the ``d``
initial measurements rebuilt the junction tree (``d**2`` node pairs each,
cubic in all); the tree is now built once for all of them. The run's
work is bounded from public counts in the plan and refused beyond
``SKDP_MAX_WORK`` before the charge.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skdp import PrivacyBudget
from skdp.synthesis import PMWSynthesizer, SyntheticDataClassifier, _estimation, _models
from skdp.synthesis._cost import mwem_work
from skdp.synthesis._estimation import _Estimator, max_refits
from skdp.synthesis._models import JunctionTreeModel


class _Counted:
    """Counts calls of a wrapped method (on the class)."""

    def __init__(self, monkeypatch, owner, name):
        self.calls = 0
        original = getattr(owner, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


def test_the_initial_measurements_build_one_junction_tree(monkeypatch):
    # 60 columns, each measured with the label (SyntheticDataClassifier's
    # start): one tree for all 60 (main built 60, each over all pairs).
    d = 60
    sizes = (5,) * d + (2,)
    estimator = _Estimator(JunctionTreeModel(sizes))
    builds = _Counted(monkeypatch, _models, "junction_tree")
    for a in range(d):
        estimator.add_marginal((a, d), np.full((5, 2), 0.1), 0.01)
    estimator.run(2)
    assert builds.calls == 1
    nodes = sorted(tuple(sorted(node)) for node in estimator.model.nodes)
    assert nodes == [(a, d) for a in range(d)]


def test_a_new_clique_after_a_run_rebuilds_the_tree(monkeypatch):
    # The model read after a new measurement covers it.
    sizes = (3, 3, 3)
    estimator = _Estimator(JunctionTreeModel(sizes))
    estimator.add_marginal((0,), np.full(3, 1 / 3), 0.01)
    estimator.run(1)
    estimator.add_marginal((1, 2), np.full((3, 3), 1 / 9), 0.01)
    assert estimator.model.contains((1, 2))


def test_every_run_stays_within_its_refits(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(400, 4))
    per_run = []
    original = _Estimator.run

    def run(self, max_iter, tol=0.0):
        refits = _Counted(monkeypatch, _Estimator, "_apply")
        done = original(self, max_iter, tol)
        per_run.append((max_iter, refits.calls))
        monkeypatch.setattr(_Estimator, "_apply", _APPLY)
        return done

    _APPLY = _Estimator._apply
    monkeypatch.setattr(_Estimator, "run", run)
    PMWSynthesizer(
        epsilon=1.0, categories=[[0, 1, 2]] * 4, schedule="fixed", random_state=0
    ).fit(X)
    assert per_run and all(calls <= max_refits(n) for n, calls in per_run)


def test_a_run_out_of_trials_keeps_its_last_accepted_model(monkeypatch):
    # No trial beyond 2 n: the run stops early, and the model is the one
    # of the potentials it kept (the refit restores it).
    monkeypatch.setattr(_estimation, "EXTRA_TRIALS", 0)
    sizes = (4, 4)
    estimator = _Estimator(JunctionTreeModel(sizes))
    target = np.array([0.7, 0.1, 0.1, 0.1])
    estimator.add_marginal((0,), target, 1e-3)
    estimator.run(1)
    kept = JunctionTreeModel(sizes, list(estimator.potentials))
    kept.set_potentials(estimator.potentials)
    np.testing.assert_allclose(estimator.model.marginal((0,)), kept.marginal((0,)))
    assert estimator.model.marginal((0,))[0] > 0.25  # it did move


def test_a_wide_plan_beyond_the_work_limit_is_refused_before_the_charge(
    monkeypatch,
):
    # 100 columns: the bound grows with the rounds (100) times the tree's
    # nodes (100). Over the limit, refused with the limit and how to raise
    # it, and nothing spent; under the default limit, planned.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 100))
    y = np.arange(30) % 2
    budget = PrivacyBudget(1.0, 1e-6)
    clf = SyntheticDataClassifier(
        epsilon=1.0, classes=[0, 1], bounds=(-4.0, 4.0), budget=budget
    )
    work = clf.plan_fit(X, y)  # within the default limit
    monkeypatch.setenv("SKDP_MAX_WORK", "1e10")
    with pytest.raises(ValueError, match=r"more than the 1e\+10.*SKDP_MAX_WORK"):
        clf.fit(X, y)
    with pytest.raises(ValueError, match="SKDP_MAX_WORK"):
        PMWSynthesizer(epsilon=1.0, bounds=(-4.0, 4.0), budget=budget).fit(X)
    assert len(budget.ledger) == 0
    assert work is not None


def test_the_bound_grows_with_rounds_times_columns():
    # Twice the columns (and so twice the rounds and the tree's nodes)
    # bound about four times the work: quadratic, as the run is.
    def bound(d):
        sizes = (5,) * d + (2,)
        initial = [(a, d) for a in range(d)]
        return mwem_work(
            sizes=sizes,
            initial=initial,
            n_rounds=d,
            candidates=initial,
            dense=False,
            max_model_size=1_000_000,
            n_queries=0,
            round_iter=30,
            final_iter=100,
        )

    ratio = bound(2000) / bound(1000)
    assert 3.0 < ratio < 4.5
    assert math.isfinite(bound(10_000))


def test_maximal_cliques_by_subsets_agrees_with_the_pairwise_test(monkeypatch):
    # The plan finds the counted cliques of a 2- and 3-way workload by
    # marking subsets (linear); the pairwise test it replaces took minutes
    # before the charge at 300 columns.
    from skdp.synthesis import _counting

    rng = np.random.default_rng(0)
    cliques = [
        tuple(sorted(rng.choice(12, size=rng.integers(1, 4), replace=False)))
        for _ in range(300)
    ]
    fast = _counting.maximal_cliques(cliques)
    monkeypatch.setattr(_counting, "_SUBSET_ENUMERATION", 0)
    assert fast == _counting.maximal_cliques(cliques)
