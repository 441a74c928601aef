"""How the rounds of an MWEM fit spend their budget, and when they stop.

``schedule="fixed"`` runs ``n_rounds`` equal rounds; ``schedule="adaptive"``
anneals the rounds' budget as AIM does (McKenna et al. 2022, Algorithm 1)
within the one budget the fit charged (:class:`RoundSchedule`).
"""

from __future__ import annotations

from ._plan import RoundSettings

__all__ = ["ANNEAL_FACTOR", "RoundSchedule"]

#: Adaptive schedule: a round whose measurement moved the model's answer
#: by less than the noise explains gets this many times more budget (zCDP
#: rho, or pure epsilon with Laplace noise) in the following rounds. 4 is
#: AIM's (sigma halved and the selection epsilon doubled).
ANNEAL_FACTOR = 4.0

#: Relative margin kept when the last round spends "the remainder", so that
#: rounding in ``1 / (2 s**2)`` can never push the total past the budget.
_REMAINDER_MARGIN = 1e-9


class RoundSchedule:
    """Each round's settings, and when to stop; spends at most the plan's budget.

    ``"fixed"`` plans: ``plan.n_rounds`` rounds at the plan's settings.
    ``"adaptive"`` plans (AIM's rule, McKenna et al. 2022, Algorithm 1):
    the rounds start at the plan's first-round settings (unit ``u``); a
    round is the last if it is round ``plan.n_rounds`` or the budget left
    is at most ``2u``, and then spends everything left (less a relative
    ``1e-9``); after a round, :meth:`end_round` with ``anneal=True``
    multiplies ``u`` by :data:`ANNEAL_FACTOR`.

    Every round spends ``u <= left / 2`` or ``(1 - 1e-9) left``, so the
    budget spent never exceeds ``plan.total``, whatever the sequence of
    annealing decisions; and at most ``plan.n_rounds`` rounds run.

    Parameters
    ----------
    plan : MWEMPlan

    Attributes
    ----------
    settings : RoundSettings
        Of the current (or next) round.
    spent : float
        Budget spent so far, including the initial measurements (zCDP rho
        or pure epsilon).
    rounds : int
        Rounds ended.
    done : bool
    """

    def __init__(self, plan):
        self.plan = plan
        self.adaptive = plan.schedule == "adaptive"
        self.settings = plan.first_round
        self.spent = plan.n_init * self.settings.measure_cost
        self.rounds = 0
        self.last = False
        self.done = plan.n_rounds == 0

    def next_round(self):
        """Settings of the next round and whether it is the last."""
        self.last = self.rounds + 1 >= self.plan.n_rounds
        if self.adaptive:
            left = self.plan.total - self.spent
            # Two rounds' worth left is not merged into one (a relative
            # 1e-9 for rounding: an exact tie would otherwise depend on it).
            if self.last or left < 2.0 * self.settings.cost * (1.0 - 1e-9):
                self.settings = RoundSettings.from_unit(
                    self.plan.noise,
                    left * (1.0 - _REMAINDER_MARGIN),
                    self.plan.max_cells,
                    self.plan.n_samples,
                )
                self.last = True
        return self.settings, self.last

    def size_cap(self, max_model_size):
        """Model cells allowed this round: AIM's share of the budget spent."""
        if max_model_size is None or not self.adaptive:
            return max_model_size
        share = min(1.0, (self.spent + self.settings.cost) / self.plan.total)
        return max_model_size * share

    def end_round(self, anneal=False):
        """Record the round's spend; raise the next rounds' budget if ``anneal``."""
        self.spent += self.settings.cost
        self.rounds += 1
        if self.last:
            self.done = True
        elif anneal and self.adaptive:
            self.settings = RoundSettings.from_unit(
                self.plan.noise,
                ANNEAL_FACTOR * self.settings.cost,
                self.plan.max_cells,
                self.plan.n_samples,
            )
