import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from skdp import BudgetExceededError, PrivacyBudget, PrivacyLeakWarning
from skdp.accounting import GaussianEvent, LaplaceEvent
from skdp.base import FitPlan, PrivateEstimatorMixin
from skdp.exceptions import ChargedFitError
from skdp.utils import warn_data_derived


class _Toy(PrivateEstimatorMixin, BaseEstimator):
    def __init__(self, epsilon=1.0, budget=None, event=None, fail=False):
        self.epsilon = epsilon
        self.budget = budget
        self.event = event
        self.fail = fail

    def fit(self, X=None, y=None):
        return self._fit_private(X, y)

    def _prepare_fit(self, X, y=None):
        if X is not None and not np.all(np.isfinite(X)):
            raise ValueError("Input contains NaN.")
        return X

    def _plan_fit(self, prepared):
        if self.event is not None:
            return FitPlan(self.event, 1e-5)
        return FitPlan(LaplaceEvent(self.epsilon))

    def _run_fit(self, prepared, plan, source):
        self.n_features_in_ = 1
        if self.fail:
            warnings.warn("private detail 42.5", stacklevel=2)
            raise RuntimeError("private value 42.5 in row 7")
        self.model_ = "fitted"


def test_charge_records_on_estimator_and_budget():
    budget = PrivacyBudget(1.0)
    est = _Toy(epsilon=0.4, budget=budget).fit()
    assert est.epsilon_ == 0.4 and est.delta_ == 0.0
    assert est.privacy_event_ == LaplaceEvent(0.4, label="_Toy(epsilon=0.4).fit")
    assert budget.ledger[0] == est.budget_entry_


def test_without_budget_the_fit_still_records_its_spend():
    est = _Toy(epsilon=0.7).fit()
    assert est.epsilon_ == 0.7 and est.budget_entry_ is None


def test_refused_fit_leaves_no_model():
    budget = PrivacyBudget(1.0)
    est = _Toy(epsilon=0.6, budget=budget).fit()
    with pytest.raises(BudgetExceededError):
        est.fit()
    assert not hasattr(est, "model_") and not hasattr(est, "n_features_in_")
    assert not hasattr(est, "epsilon_")
    assert len(budget.ledger) == 1


def test_gaussian_event_cost_at_the_plans_delta():
    est = _Toy(event=GaussianEvent(3.73)).fit()
    assert est.epsilon_ == pytest.approx(1.0, abs=1e-3)
    assert est.delta_ == 1e-5


def test_bad_input_fails_before_the_charge():
    budget = PrivacyBudget(1.0)
    with pytest.raises(ValueError, match="NaN"):
        _Toy(budget=budget).fit(np.array([np.nan]))
    assert budget.ledger == []


def test_a_failure_after_the_charge_withholds_its_detail():
    """The spend stands, no model, and nothing of the original error leaks."""
    budget = PrivacyBudget(1.0)
    est = _Toy(epsilon=0.3, budget=budget, fail=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ChargedFitError) as info:
            est.fit()
    assert "42.5" not in str(info.value) and "row 7" not in str(info.value)
    assert info.value.__context__ is None and info.value.__cause__ is None
    assert record == []  # the run's warning is not shown either
    assert len(budget.ledger) == 1 and budget.spent() == (0.3, 0.0)
    assert not hasattr(est, "model_") and not hasattr(est, "n_features_in_")


def test_privacy_plan_charges_nothing():
    budget = PrivacyBudget(1.0)
    plan = _Toy(epsilon=0.4, budget=budget).privacy_plan(np.zeros(3))
    assert plan.event == LaplaceEvent(0.4) and budget.ledger == []


def test_warn_data_derived_says_what_leaked_and_how_to_fix():
    match = "data_norm was not given.*max norm.*pass"
    with pytest.warns(PrivacyLeakWarning, match=match):
        warn_data_derived("data_norm", "the max norm", "pass data_norm")
