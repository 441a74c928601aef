"""skdp's PLD accountant against Google's dp_accounting (the oracle).

dp_accounting's ``PLDAccountant`` is pessimistic too (connect the dots on a
1e-4 grid), so the two should agree closely: ours must never be below
theirs (beyond floating-point noise, far below any discretisation error)
and at most 2 % above. The event mapping is in ``dp_accounting_oracle.py``.
"""

import math

import pytest

from skdp.accounting import (
    GaussianEvent,
    LaplaceEvent,
    PLDAccountant,
    PoissonSubsampledGaussianEvent,
    PureDPEvent,
    SelfComposedEvent,
)

pytestmark = pytest.mark.slow  # dp_accounting's PLD as the oracle

dp = pytest.importorskip("dp_accounting")
from dp_accounting_oracle import RELATIONS, dp_accounting_epsilon  # noqa: E402


def test_the_oracle_is_dp_accountings_pld_accountant():
    # Where its accountant accepts the events, the PLD built above is the one
    # it composes (same numbers), so the other vectors test against it too.
    event = PoissonSubsampledGaussianEvent(0.01, 1.0, 300)
    for relation, rel in RELATIONS.items():
        accountant = dp.pld.PLDAccountant(rel)
        sampled = dp.PoissonSampledDpEvent(0.01, dp.GaussianDpEvent(1.0))
        accountant.compose(dp.SelfComposedDpEvent(sampled, 300))
        accountant.compose(
            dp.GaussianDpEvent(3.0 * (2 if relation == "replace_one" else 1))
        )
        theirs = dp_accounting_epsilon([event, GaussianEvent(3.0)], relation, 1e-5)
        assert accountant.get_epsilon(1e-5) == pytest.approx(theirs, rel=1e-9)
    accountant = dp.pld.PLDAccountant(RELATIONS["add_remove"])
    accountant.compose(dp.SelfComposedDpEvent(dp.LaplaceDpEvent(2.0), 3))
    theirs = dp_accounting_epsilon([LaplaceEvent(0.5)] * 3, "add_remove", 1e-5)
    assert accountant.get_epsilon(1e-5) == pytest.approx(theirs, rel=1e-9)


VECTORS = {
    # The MNIST setting of Abadi et al. (2016).
    "abadi_mnist": ([PoissonSubsampledGaussianEvent(256 / 60000, 1.1, 14063)], 1e-5),
    # 10 epochs of batches of 256 out of 20,000 rows at epsilon about 1.
    "dpsgd_20k": ([PoissonSubsampledGaussianEvent(0.0128, 1.155, 782)], 1e-5),
    "large_q": ([PoissonSubsampledGaussianEvent(0.5, 2.0, 10)], 1e-6),
    "small_sigma": ([PoissonSubsampledGaussianEvent(0.02, 0.7, 200)], 1e-5),
    "gaussians": ([GaussianEvent(2.0)] * 3 + [GaussianEvent(5.0)], 1e-6),
    "laplace": ([SelfComposedEvent(LaplaceEvent(0.2), 20)], 1e-5),
    "pure_and_gaussian": ([PureDPEvent(0.3)] * 5 + [GaussianEvent(4.0)], 1e-5),
    "mixed_ledger": (
        [
            LaplaceEvent(0.3),
            GaussianEvent(3.0),
            PoissonSubsampledGaussianEvent(0.01, 1.0, 500),
            LaplaceEvent(0.1),
        ],
        1e-5,
    ),
}


@pytest.mark.parametrize("relation", list(RELATIONS))
@pytest.mark.parametrize("name", list(VECTORS))
def test_pld_accountant_matches_dp_accounting(name, relation):
    events, delta = VECTORS[name]
    theirs = dp_accounting_epsilon(events, relation, delta)
    report = PLDAccountant(relation).compose(events, delta)
    assert report.method == "pld"
    ours = report.epsilon
    # Never below the oracle by more than its discretisation error: both
    # discretise pessimistically on the same grid, so the two differ by
    # floating-point noise only (an FFT raised to the 14063rd power carries
    # about 1e-12 of absolute error in delta, a few 1e-8 of epsilon); 1e-6
    # is still far below the discretisation error of a 1e-4 grid.
    assert ours >= theirs * (1 - 1e-6)
    assert ours <= theirs * 1.02
    # In practice the two agree to a few parts in a million.
    assert ours == pytest.approx(theirs, rel=1e-5)


def test_replace_one_is_tighter_than_the_renyi_triangle_bound():
    # What the issue measured: at epsilon = 4 a third of the old budget was
    # slack of the Renyi-DP conversion and of the weak triangle inequality.
    from skdp.accounting import RDPAccountant

    event = PoissonSubsampledGaussianEvent(
        256 / 20000, 1.1555, math.ceil(10 * 20000 / 256)
    )
    renyi = RDPAccountant().compose([event], 1e-5).candidates["rdp"]
    pld = PLDAccountant().compose([event], 1e-5).epsilon
    assert pld < 0.75 * renyi
