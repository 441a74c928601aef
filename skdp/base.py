"""The contract every private skdp estimator follows: plan, charge, run.

A private fit has three phases, always in this order:

1. **plan** — validate the input and the parameters and decide *everything*
   the fit will do from public quantities only: the parameters, the
   declared bounds and schema, and ``n_samples`` / ``n_features`` (public
   under skdp's replace-one neighbouring relation). The plan is a
   :class:`FitPlan`: the privacy event to charge and the exact settings
   (noise scales, grid spacings, step counts, solver thresholds) the run
   will use. Every input and parameter problem, including numerical
   feasibility (overflow, memory), is found here; nothing is charged yet,
   so an error leaves the budget untouched.
2. **charge** — the budget records ``plan.event`` (or refuses it, which
   leaves no record and no model).
3. **run** — the mechanism runs with exactly the plan's settings. It cannot
   raise and emits no warning: whatever it releases (fitted attributes and
   their types and shapes) depends on the data only through the
   mechanism's noisy output.

:class:`PrivateEstimatorMixin` implements the order once; an estimator
supplies the three steps (``_prepare_fit``, ``_plan_fit``, ``_run_fit``).
:meth:`PrivateEstimatorMixin.privacy_plan` returns the plan without charging
anything: what a fit *would* spend. :meth:`PrivateEstimatorMixin.plan_fit`
returns a :class:`PlannedFit`, the first phase done: its ``plan`` is what
``run`` will charge, and ``run`` does the other two phases. A composite
(:class:`~skdp.model_selection.PrivateSearchCV`,
:class:`~skdp.synthesis.SyntheticDataClassifier`) plans its parts this way,
charges its own budget for the whole, and runs each part (whose ``budget``
is ``None``): no caller reaches into another estimator's private steps.

**One charge path.** Two functions here are the only place skdp spends a
budget and the only place it runs code after a spend: :func:`charge`
records an event (or refuses it, recording nothing), and
:func:`run_charged` runs what follows so that no exception or warning
escapes (:class:`~skdp.exceptions.ChargedFitError`, with a fixed message).
:meth:`PlannedFit.run` (every estimator's ``fit`` and every composite),
:func:`charge_and_run` (a one-shot release such as the
:mod:`skdp.tools` statistics) and :meth:`~skdp.synthesis.OnlinePMW.answer`
(each answer of an interaction charged at ``fit``) all go through them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike
from sklearn import get_config

from .accounting._accountant import PrivacyAccountant
from .accounting._budget import PrivacyBudget
from .accounting._composition import Accountant
from .accounting._events import PrivacyEvent
from .exceptions import ChargedFitError
from .utils._random import RandomSource, check_random_source
from .utils._threads import one_blas_thread

if TYPE_CHECKING:
    from .accounting import LedgerEntry

__all__ = [
    "FitPlan",
    "PlannedFit",
    "PrivateEstimatorMixin",
    "charge",
    "charge_and_run",
    "run_charged",
]

# Setting this environment variable re-raises the original exception of a
# run that failed after the charge, for debugging skdp itself; the exception
# may carry private values, so never set it where the output is released.
_DEBUG_VARIABLE = "SKDP_UNSAFE_DEBUG"

_T = TypeVar("_T")


def charge(
    budget: PrivacyBudget | None, event: PrivacyEvent, delta: float | None = 0.0
) -> LedgerEntry | None:
    """Record ``event`` in ``budget``: the one place skdp spends a budget.

    Parameters
    ----------
    budget : PrivacyBudget or None
        The budget to charge; ``None`` records nothing (the caller keeps
        the record, as an estimator does in ``privacy_event_``).
    event : PrivacyEvent
        What is about to be released, labelled: the ledger entry takes
        ``event.label``.
    delta : float or None, default=0.0
        The delta the spend is charged at (see
        :meth:`~skdp.PrivacyBudget.spend`; ignored for pure
        events).

    Returns
    -------
    entry : LedgerEntry or None
        The recorded spend, or ``None`` without a budget.

    Raises
    ------
    BudgetExceededError, LedgerError
        The spend is refused: nothing is recorded, and the caller must
        release nothing.
    """
    if budget is None:
        return None
    return budget.spend(event, event.label, delta=delta)


def run_charged(
    run: Callable[[], _T],
    what: str,
    *,
    on_failure: Callable[[], object] | None = None,
    consequence: str = "",
) -> _T:
    """Return ``run()``, run after a charge: no exception or warning escapes.

    The only place skdp runs code that follows a spend. Warnings raised by
    ``run`` are discarded and floating-point errors ignored. Should ``run``
    raise (a bug: runs are written not to, or a dask worker lost after the
    charge), ``on_failure`` is called (to drop whatever the run left) and
    :class:`~skdp.exceptions.ChargedFitError` is raised with a fixed
    message, outside the handler, so that nothing of the original error,
    which could carry private values, travels with it. Setting the
    ``SKDP_UNSAFE_DEBUG`` environment variable re-raises the original error
    instead, for debugging skdp itself.

    Parameters
    ----------
    run : callable
        What follows the charge; its result is returned.
    what : str
        What ran, for the message (``"DPPCA.fit"``, ``"skdp.tools.mean"``).
    on_failure : callable, default=None
        Called, without arguments, before the error is raised.
    consequence : str, default=""
        A clause appended to the message's first sentence: what the failure
        left behind.

    Returns
    -------
    result
        What ``run`` returned.
    """
    failed = False
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with one_blas_thread():  # skdp's thread policy
                result = run()
    except Exception:
        if os.environ.get(_DEBUG_VARIABLE):
            raise
        failed = True
    if failed:
        if on_failure is not None:
            on_failure()
        raise ChargedFitError(
            f"{what} failed after charging its budget; the spend stands and "
            f"nothing was released{consequence}. Either a dask worker failed or "
            "was lost while the run read dask collections, or this is a bug in "
            "skdp: please report it (the original error is withheld because it "
            "could reveal private data)."
        )
    return result


def charge_and_run(
    budget: PrivacyBudget | None,
    event: PrivacyEvent,
    run: Callable[[], _T],
    what: str,
    delta: float | None = 0.0,
) -> _T:
    """Charge ``event`` to ``budget``, then return ``run()``: a one-shot release.

    :func:`charge` then :func:`run_charged`: a refused spend raises before
    ``run`` is called, and nothing escapes the run but its result. The
    path of the :mod:`skdp.tools` statistics; an estimator's fit takes it
    through :meth:`PlannedFit.run`.

    Examples
    --------
    >>> from skdp import PrivacyBudget
    >>> from skdp.accounting import LaplaceEvent
    >>> from skdp.base import charge_and_run
    >>> budget = PrivacyBudget(1.0)
    >>> event = LaplaceEvent(0.5, label="a count")
    >>> charge_and_run(budget, event, lambda: 41, "a count")
    41
    >>> [entry.label for entry in budget.ledger]
    ['a count']
    """
    charge(budget, event, delta)
    return run_charged(run, what)


@dataclass(frozen=True)
class FitPlan:
    """What a fit will spend and exactly how it will run.

    Built before the charge from public quantities only (parameters,
    declared bounds and schema, ``n_samples`` and ``n_features``).

    Attributes
    ----------
    event : PrivacyEvent
        The event the fit charges; the run spends exactly this.
    delta : float
        The delta at which ``epsilon_`` is reported (0 for pure events).
    settings : Mapping
        Read-only settings of the run (noise scales, step counts, solver
        thresholds, ...), named by the estimator.

    Examples
    --------
    >>> from skdp.base import FitPlan
    >>> from skdp.accounting import LaplaceEvent
    >>> plan = FitPlan(LaplaceEvent(0.5), settings={"scale": 2.0})
    >>> plan.settings["scale"], plan.delta
    (2.0, 0.0)
    """

    event: PrivacyEvent
    delta: float = 0.0
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {self.event!r}.")
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))


class PlannedFit:
    """A private fit planned, not yet charged: :meth:`PrivateEstimatorMixin.plan_fit`.

    Attributes
    ----------
    estimator : PrivateEstimatorMixin
        The estimator that will be fitted (in place).
    plan : FitPlan
        What :meth:`run` charges: the event and the settings of the run.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import PrivacyBudget
    >>> from skdp.preprocessing import DPStandardScaler
    >>> budget = PrivacyBudget(1.0)
    >>> scaler = DPStandardScaler(epsilon=0.5, bounds=(0, 1), budget=budget)
    >>> planned = scaler.plan_fit(np.array([[0.2], [0.7], [0.4]]))
    >>> budget.spent()  # planning spends nothing
    (0.0, 0.0)
    >>> planned.run(random_state=0) is scaler, budget.spent()[0]
    (True, 0.5)
    """

    __slots__ = ("_prepared", "_ran", "estimator", "plan")

    def __init__(self, estimator, prepared, plan: FitPlan):
        self.estimator, self._prepared, self.plan = estimator, prepared, plan
        self._ran = False

    def __repr__(self) -> str:
        return f"PlannedFit({type(self.estimator).__name__}, event={self.plan.event!r})"

    def run(self, random_state=None):
        """Charge the estimator's ``budget`` (if any) and run; once only.

        Parameters
        ----------
        random_state : None, int, Generator or RandomSource, default=None
            The noise source; ``None`` takes the estimator's
            ``random_state`` (``None`` there: the OS CSPRNG).

        Returns
        -------
        estimator : PrivateEstimatorMixin
            Fitted, exactly as ``fit`` would have left it.

        Raises
        ------
        BudgetExceededError, LedgerError
            The charge was refused: nothing ran and no model is left.
        RuntimeError
            If this planned fit already ran (a plan is spent once).
        """
        if self._ran:
            raise RuntimeError("this PlannedFit already ran; plan the fit again.")
        self._ran = True
        estimator, plan = self.estimator, self.plan
        if random_state is None:
            random_state = getattr(estimator, "random_state", None)
        source = check_random_source(random_state)
        for name in estimator._privacy_attributes:
            estimator.__dict__.pop(name, None)
        label = plan.event.label or estimator._privacy_label()
        event = plan.event.with_label(label)
        budget: PrivacyBudget | None = getattr(estimator, "budget", None)
        epsilon, delta = estimator._accountant().epsilon_delta([event], plan.delta)
        try:
            entry = charge(budget, event, plan.delta)
        except Exception:
            estimator._forget_fit()
            raise
        estimator.privacy_event_ = event
        estimator.epsilon_ = epsilon
        estimator.delta_ = delta
        estimator.budget_entry_ = entry
        run_charged(
            lambda: estimator._run_fit(self._prepared, plan, source),
            f"{type(estimator).__name__}.fit",
            on_failure=estimator._forget_fit,
        )
        return estimator


class PrivateEstimatorMixin:
    """Plan, charge and run a private fit; record what it spent.

    Subclasses implement three methods and call ``_fit_private`` from
    ``fit``:

    ``_prepare_fit(X, y)``
        Validate the input and parameters; return the data in the form the
        run needs together with the public facts the plan reads. Bounds or
        labels that are not given may be read from the data here, with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`. May raise. A subclass
        whose ``plan_fit`` takes public keyword options (``PMWSynthesizer``'s
        ``initial_marginals``) receives them here as keywords.
    ``_plan_fit(prepared)``
        Return the :class:`FitPlan`, using only public quantities of
        ``prepared``. May raise (infeasible parameters).
    ``_run_fit(prepared, plan, source)``
        Compute and set the fitted attributes with exactly ``plan.settings``
        and the noise source ``source``. Must not raise.

    After a charge the fit records

    * ``privacy_event_``: the :class:`~skdp.accounting.PrivacyEvent` charged;
    * ``epsilon_``, ``delta_``: what that event alone costs at the plan's
      delta, by the budget's accountant;
    * ``budget_entry_``: the ledger entry in ``budget`` (``None`` when
      ``budget=None``: the fit is then recorded only on the estimator).

    A refused charge raises :class:`~skdp.exceptions.BudgetExceededError`
    and leaves the estimator unfitted: every fitted attribute (trailing
    underscore), including those of a previous fit, is removed. Should the
    run fail after the charge (a bug: runs are written not to), the spend
    stands, the estimator is left unfitted and
    :class:`~skdp.exceptions.ChargedFitError` is raised with a fixed
    message, because the original error could reveal private values.
    Warnings raised during the run are discarded for the same reason.

    Plan and run each hold ``one_blas_thread()``:
    a private fit's BLAS uses one thread (skdp's thread policy, explained
    there and in the user guide's performance page).

    A public parameter that ``_prepare_fit`` reads from the data when it is
    ``None`` (a bound, the labels) is listed in the class attribute
    ``_data_bound_params``, with its advice in
    ``skdp.utils._privacy.DATA_BOUND_ADVICE``: :func:`skdp.check_pipeline`
    then reports the estimator as leaking, before any fit, when one of them
    is ``None``. An estimator for which that rule is not exact (a
    synthesizer's per-column bounds) also defines ``_data_derived_params()``,
    the names of the parameters its fit would read from the data given its
    current parameters.
    """

    _privacy_attributes = ("privacy_event_", "epsilon_", "delta_", "budget_entry_")
    #: Public parameters whose ``None`` makes the fit read them from the data.
    _data_bound_params: tuple[str, ...] = ()

    # -- what subclasses provide ------------------------------------------
    def _prepare_fit(self, X, y=None):  # pragma: no cover - abstract
        raise NotImplementedError

    def _plan_fit(self, prepared) -> FitPlan:  # pragma: no cover - abstract
        raise NotImplementedError

    def _run_fit(self, prepared, plan: FitPlan, source: RandomSource) -> None:
        raise NotImplementedError  # pragma: no cover - abstract

    # -- the contract ------------------------------------------------------
    def _accountant(self) -> Accountant:
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

    def _plan_with_input(self, X, y=None, **options):
        # plan_fit and privacy_plan are public: they validate the parameters
        # as fit does (fit's own check, scikit-learn's _fit_context, came
        # first; validating twice costs microseconds).
        if hasattr(self, "_parameter_constraints") and not get_config().get(
            "skip_parameter_validation", False
        ):
            self._validate_params()
        with one_blas_thread():  # skdp's thread policy (skdp.utils._threads)
            prepared = self._prepare_fit(X, y, **options)
            plan = self._plan_fit(prepared)
        if not isinstance(plan, FitPlan):
            raise TypeError(
                f"{type(self).__name__}._plan_fit must return a FitPlan, got "
                f"{type(plan).__name__}."
            )
        return prepared, plan

    def privacy_plan(self, X: ArrayLike, y: ArrayLike | None = None) -> FitPlan:
        """What ``fit`` would charge on ``(X, y)``, without charging it.

        Validates the input exactly as ``fit`` does (so an input ``fit``
        refuses is refused here too) and returns the plan. Nothing is spent
        and no noise is drawn.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised estimators.

        Returns
        -------
        plan : FitPlan
            ``plan.event`` is what a fit would charge.
        """
        return self.plan_fit(X, y).plan

    def plan_fit(self, X: ArrayLike, y: ArrayLike | None = None) -> PlannedFit:
        """Validate and plan a fit on ``(X, y)``; charge nothing yet.

        The first phase of ``fit``: every input and parameter problem is
        raised here. ``plan_fit(X, y).run()`` is ``fit(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised estimators.

        Returns
        -------
        planned : PlannedFit
            ``planned.plan.event`` is what ``planned.run()`` charges.
        """
        prepared, plan = self._plan_with_input(X, y)
        return PlannedFit(self, prepared, plan)

    def _fit_private(self, X, y=None):
        """Plan, charge, run; the one order every private fit follows."""
        return self.plan_fit(X, y).run()
