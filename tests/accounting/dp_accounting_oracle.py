"""Google's dp_accounting as the oracle for skdp's accountants.

One mapping of skdp events to dp_accounting's, shared by the cross-check
tests (``test_pld_crosscheck.py``, ``test_dpsgd_claims.py``) and by
``benchmarks/accounting_crosscheck.py``. dp_accounting is a test
dependency only; this module is not part of the package.

* ``PoissonSubsampledGaussianEvent(q, s, T)`` is ``SelfComposedDpEvent(
  PoissonSampledDpEvent(q, GaussianDpEvent(s)), T)`` under the same
  relation (for replace-one, dp_accounting's pair is the row moving from
  ``+C`` to ``-C``);
* ``GaussianEvent(s)`` has sensitivity 1 under skdp's relation: the pair
  ``N(0, s^2)`` against ``N(1, s^2)``, which is ``GaussianDpEvent(s)`` under
  add/remove and ``GaussianDpEvent(2 s)`` under replace-one (where
  dp_accounting's sensitivity is 2);
* ``LaplaceEvent(eps)`` is the pair ``Lap(0, 1/eps)`` against ``Lap(1,
  1/eps)``, ``LaplaceDpEvent(1 / eps)`` (dp_accounting's accountant only
  accepts it under add/remove, so under replace-one the same PLD is built
  with its ``privacy_loss_distribution`` module, which is what its
  accountant does internally);
* ``PureDPEvent(eps)`` is dp_accounting's ``from_privacy_parameters(eps,
  0)`` PLD (randomised response).
"""

import dp_accounting as dp
from dp_accounting.pld import common as dp_common
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from skdp.accounting import (
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PureDPEvent,
    SelfComposedEvent,
)

RELATIONS = {
    "replace_one": dp.NeighboringRelation.REPLACE_ONE,
    "add_remove": dp.NeighboringRelation.ADD_OR_REMOVE_ONE,
}


def dp_pld_of(event, relation):
    """dp_accounting's PLD of one skdp event (see the module docstring)."""
    rel = RELATIONS[relation]
    if isinstance(event, SelfComposedEvent):
        return dp_pld_of(event.event, relation).self_compose(event.count)
    if isinstance(event, PoissonSubsampledGaussianEvent):
        one = dp_pld.from_gaussian_mechanism(
            event.noise_multiplier,
            sampling_prob=event.sampling_rate,
            neighboring_relation=rel,
        )
        return one.self_compose(event.steps)
    if isinstance(event, GaussianEvent):
        sd = event.noise_multiplier * (2.0 if relation == "replace_one" else 1.0)
        return dp_pld.from_gaussian_mechanism(sd, neighboring_relation=rel)
    if isinstance(event, LaplaceEvent):
        return dp_pld.from_laplace_mechanism(1.0 / event.epsilon)
    if isinstance(event, DiscreteLaplaceEvent):
        # P(z) ~ exp(-a |z|) with a = 1 / t, an integer shift k.
        return dp_pld.from_discrete_laplace_mechanism(
            1.0 / event.noise_scale, sensitivity=event.sensitivity
        )
    if isinstance(event, PureDPEvent):
        parameters = dp_common.DifferentialPrivacyParameters(event.epsilon, 0.0)
        return dp_pld.from_privacy_parameters(parameters)
    raise TypeError(event)


def dp_accounting_epsilon(events, relation, delta):
    """dp_accounting's pessimistic epsilon of ``events`` composed."""
    total = None
    for event in events:
        pld = dp_pld_of(event, relation)
        total = pld if total is None else total.compose(pld)
    return total.get_epsilon_for_delta(delta)


def dpsgd_replace_one_epsilon(q, sigma, steps, delta):
    """dp_accounting's replace-one PLD epsilon of a DP-SGD run."""
    accountant = dp.pld.PLDAccountant(RELATIONS["replace_one"])
    sampled = dp.PoissonSampledDpEvent(q, dp.GaussianDpEvent(sigma))
    accountant.compose(dp.SelfComposedDpEvent(sampled, steps))
    return accountant.get_epsilon(delta)
