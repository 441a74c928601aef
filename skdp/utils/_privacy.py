"""What every private estimator does with its budget, in one place."""

from __future__ import annotations

import warnings

from ..accounting._accountant import PrivacyAccountant
from ..accounting._budget import PrivacyBudget
from ..accounting._events import PrivacyEvent
from ..exceptions import PrivacyLeakWarning

__all__ = ["PrivateEstimatorMixin", "warn_data_derived"]


def warn_data_derived(what: str, leaked: str, fix: str, *, stacklevel: int = 3) -> None:
    """Emit a :class:`PrivacyLeakWarning` for a bound read from the data.

    Parameters
    ----------
    what : str
        The parameter that was not given (e.g. ``"data_norm"``).
    leaked : str
        What the output can now reveal (e.g. ``"the largest row norm"``).
    fix : str
        How to avoid it (e.g. ``"pass data_norm=1.0 after scaling rows"``).
    """
    warnings.warn(
        f"{what} was not given, so it was computed from the private data; the "
        f"output can reveal {leaked}, which the privacy guarantee does not "
        f"cover. To avoid this, {fix}.",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )


class PrivateEstimatorMixin:
    """Charges a fit's privacy event and records it on the estimator.

    Estimators call :meth:`_charge_budget` in ``fit`` after validating
    parameters and input, and before computing anything from the data that
    could be released. It sets

    * ``privacy_event_``: the :class:`~skdp.accounting.PrivacyEvent` charged;
    * ``epsilon_``, ``delta_``: what that event alone costs at the
      estimator's ``delta`` (tightest bound of
      :class:`~skdp.accounting.PrivacyAccountant`);
    * ``budget_entry_``: the ledger entry in ``budget`` (``None`` when
      ``budget=None``: the fit is then recorded only on the estimator).

    A refused charge raises :class:`~skdp.exceptions.BudgetExceededError`
    and leaves the estimator unfitted: every fitted attribute (trailing
    underscore), including those of a previous fit, is removed.
    """

    _privacy_attributes = ("privacy_event_", "epsilon_", "delta_", "budget_entry_")

    def _accountant(self) -> PrivacyAccountant:
        """The accountant of ``budget``, or a default one when there is none."""
        budget: PrivacyBudget | None = getattr(self, "budget", None)
        return budget.accountant if budget is not None else PrivacyAccountant()

    def _privacy_label(self) -> str:
        params = self.get_params(deep=False)
        shown = {
            k: v
            for k, v in params.items()
            if k in ("epsilon", "delta", "method", "C", "n_rounds") and v is not None
        }
        args = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"{type(self).__name__}({args}).fit"

    def _forget_fit(self) -> None:
        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__"):
                delattr(self, name)

    def _charge_budget(self, event: PrivacyEvent, delta: float = 0.0) -> None:
        for name in self._privacy_attributes:
            self.__dict__.pop(name, None)
        label = event.label or self._privacy_label()
        event = event.with_label(label)
        budget: PrivacyBudget | None = getattr(self, "budget", None)
        epsilon_spent, delta_spent = self._accountant().epsilon_delta([event], delta)
        try:
            entry = budget.spend(event, label) if budget is not None else None
        except Exception:
            self._forget_fit()
            raise
        self.privacy_event_ = event
        self.epsilon_ = epsilon_spent
        self.delta_ = delta_spent
        self.budget_entry_ = entry
