"""The privacy budget that every skdp estimator spends from."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from numbers import Real

from ..exceptions import BudgetExceededError, LedgerError
from ._accountant import CompositionReport, RDPAccountant
from ._events import PrivacyEvent
from ._ledger import LedgerEntry, MemoryLedger

__all__ = ["PrivacyBudget"]

# Spends are compared with the limits up to this relative slack, so that
# 0.1 + 0.2 + 0.7 fits a budget of 1.0 despite floating-point rounding.
_RELATIVE_SLACK = 1e-9


def _check_limit(name: str, value, upper: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must not be NaN.")
    if name == "epsilon" and not value > 0:
        raise ValueError(f"epsilon must be > 0, got {value!r}.")
    if name == "delta" and not 0 <= value < 1:
        raise ValueError(f"delta must be in [0, 1), got {value!r}.")
    return value


class PrivacyBudget:
    """A total privacy budget shared by every fit that spends from it.

    Pass the same budget to several estimators (``budget=``) and each fit
    charges its privacy cost here before it touches the data. A charge that
    would take the total past ``(epsilon, delta)`` raises
    :class:`~skdp.exceptions.BudgetExceededError` and records nothing, so
    the fit produces no model.

    ``clone``, ``GridSearchCV`` and ``cross_val_score`` keep pointing at the
    same budget (``copy.deepcopy`` returns the budget itself), so every fit
    they run is recorded in the user's object.

    Parameters
    ----------
    epsilon : float
        Total epsilon allowed, > 0. ``math.inf`` records spends without a limit.
    delta : float, default=0.0
        Total delta allowed, in [0, 1). Mechanisms with Gaussian noise need
        ``delta > 0``; a common choice is well below ``1 / n_samples``.
    accountant : RDPAccountant, default=None
        How spends compose; ``None`` uses :class:`RDPAccountant` with its
        default Renyi orders.

    Attributes
    ----------
    ledger : list of LedgerEntry
        Every recorded spend, in order (a fresh list on each access).

    See Also
    --------
    skdp.accounting.RDPAccountant : The composition rules used by :meth:`spent`.

    Notes
    -----
    The total is computed by :meth:`RDPAccountant.compose`: pure events
    (Laplace, exponential mechanism, vector noise) compose by adding their
    epsilons, Gaussian and Poisson-subsampled Gaussian events by Renyi-DP,
    and the smallest valid bound is kept. Whenever Gaussian events are in
    the ledger, the reported delta is the full ``delta`` limit, since the
    Renyi-DP conversion is carried out at that delta.

    Comparisons with the limits allow a relative slack of 1e-9 for
    floating-point rounding.

    Pickling a budget (sending it to another process) gives a read-only
    snapshot: spending from the copy raises
    :class:`~skdp.exceptions.LedgerError`, because the spend would never
    reach the original.

    Examples
    --------
    >>> from skdp import PrivacyBudget
    >>> from skdp.accounting import LaplaceEvent
    >>> budget = PrivacyBudget(epsilon=1.0)
    >>> _ = budget.spend(LaplaceEvent(0.4), label="count")
    >>> budget.spent()
    (0.4, 0.0)
    >>> budget.remaining()
    (0.6, 0.0)
    >>> budget.spend(LaplaceEvent(0.7), label="too much")
    Traceback (most recent call last):
    ...
    skdp.exceptions.BudgetExceededError: Spending LaplaceEvent(epsilon=0.7) ...
    >>> [entry.label for entry in budget.ledger]
    ['count']
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, accountant=None):
        self.epsilon = _check_limit("epsilon", epsilon)
        self.delta = _check_limit("delta", delta)
        self.accountant = RDPAccountant() if accountant is None else accountant
        self._store = MemoryLedger(self.epsilon, self.delta)
        self._detached = False

    # -- sharing -----------------------------------------------------------
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        # A copy of an in-memory ledger in another process could never report
        # its spends back: it becomes a read-only snapshot.
        if not getattr(self._store, "shared_across_processes", False):
            state["_detached"] = True
        return state

    # -- spending ----------------------------------------------------------
    def _check(self, events: Sequence[PrivacyEvent]) -> CompositionReport:
        report = self.accountant.compose(events, self.delta)
        eps_ok = report.epsilon <= self.epsilon * (1 + _RELATIVE_SLACK)
        delta_ok = report.delta <= self.delta * (1 + _RELATIVE_SLACK)
        if not (eps_ok and delta_ok):
            new = events[-1]
            if math.isinf(report.epsilon) and self.delta == 0:
                why = (
                    "it needs delta > 0 (Gaussian noise) but this budget has "
                    "delta=0; create the budget with a delta > 0"
                )
            else:
                before = self.accountant.compose(events[:-1], self.delta)
                why = (
                    f"the total would be (epsilon={report.epsilon:.6g}, "
                    f"delta={report.delta:.3g}) against limits "
                    f"(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}); "
                    f"already spent (epsilon={before.epsilon:.6g}, "
                    f"delta={before.delta:.3g})"
                )
            raise BudgetExceededError(
                f"Spending {_short(new)} ('{new.label}') would exceed the privacy "
                f"budget: {why}. Nothing was recorded."
            )
        return report

    def spend(self, event: PrivacyEvent, label: str | None = None) -> LedgerEntry:
        """Record ``event`` if it fits the budget; refuse it otherwise.

        Parameters
        ----------
        event : PrivacyEvent
            What the caller is about to release.
        label : str, default=None
            What spends it; defaults to ``event.label``.

        Returns
        -------
        entry : LedgerEntry
            The recorded spend.

        Raises
        ------
        BudgetExceededError
            If the total would exceed the limits. Nothing is recorded.
        LedgerError
            If this budget is a detached copy (see Notes of the class).
        """
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {event!r}.")
        if self._detached:
            raise LedgerError(
                "This PrivacyBudget is a copy made by pickling an in-memory budget "
                "(for example when it was sent to a joblib worker process or a Dask "
                "worker); a spend here would never reach the original, so it is "
                "refused. Use a ledger that processes share, or run with n_jobs=1."
            )
        label = event.label if label is None else str(label)
        if label != event.label:
            event = event.with_label(label)
        return self._store.append_if(event, label, self._check)

    def check(self, event: PrivacyEvent) -> bool:
        """Whether ``event`` would fit now (records nothing)."""
        try:
            self._check([e.event for e in self._store.entries()] + [event])
        except BudgetExceededError:
            return False
        return True

    # -- reporting ---------------------------------------------------------
    @property
    def ledger(self) -> list[LedgerEntry]:
        return self._store.entries()

    def report(self) -> CompositionReport:
        """How the recorded events compose (total and the bound used)."""
        return self.accountant.compose(
            [e.event for e in self._store.entries()], self.delta
        )

    def spent(self) -> tuple[float, float]:
        """Total ``(epsilon, delta)`` spent, under the tightest composition."""
        report = self.report()
        return report.epsilon, report.delta

    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` limits minus what is spent, floored at 0.

        Composition is not additive under Renyi-DP, so a future event may fit
        even if its own epsilon exceeds the remaining epsilon; use
        :meth:`check` to know for sure.
        """
        eps, delta = self.spent()
        return max(self.epsilon - eps, 0.0), max(self.delta - delta, 0.0)

    def summary(self) -> str:
        """A human-readable table of the ledger and the composed total."""
        report = self.report()
        entries = self.ledger
        # The label column is as wide as the longest label, within 30..80.
        width = min(max([30] + [len(entry.label) for entry in entries]), 80)
        lines = [
            f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g})",
            f"{'#':>3}  {'label':<{width}} event",
        ]
        for entry in entries:
            label = entry.label
            if len(label) > width:
                label = label[: width - 3] + "..."
            lines.append(f"{entry.index:>3}  {label:<{width}} {_short(entry.event)}")
        lines.append(
            f"spent: epsilon={report.epsilon:.6g}, delta={report.delta:.3g} "
            f"(composition: {report.method}); remaining: "
            f"epsilon={max(self.epsilon - report.epsilon, 0):.6g}"
        )
        return "\n".join(lines)

    def __repr__(self):
        eps, delta = self.spent()
        return (
            f"PrivacyBudget(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"spent=({eps:.4g}, {delta:.3g}), n_spends={len(self.ledger)})"
        )


def _short(event: PrivacyEvent) -> str:
    """Event repr without its label."""
    from dataclasses import fields

    parts = []
    for f in fields(event):
        if f.name == "label":
            continue
        value = getattr(event, f.name)
        if f.name == "events":
            # Composition does not depend on order: identical parts are
            # shown once with their count.
            counts = Counter(_short(e) for e in value)
            value = "[" + ", ".join(_counted(k, c) for k, c in counts.items()) + "]"
        elif isinstance(value, float):
            value = f"{value:.6g}"
        parts.append(f"{f.name}={value}")
    return f"{type(event).__name__}({', '.join(parts)})"


def _counted(text: str, count: int) -> str:
    return text if count == 1 else f"{count} x {text}"
