import pytest
from sklearn.base import BaseEstimator

from skdp import BudgetExceededError, PrivacyBudget, PrivacyLeakWarning
from skdp.accounting import GaussianEvent, LaplaceEvent
from skdp.utils import PrivateEstimatorMixin, warn_data_derived


class _Toy(PrivateEstimatorMixin, BaseEstimator):
    def __init__(self, epsilon=1.0, budget=None):
        self.epsilon = epsilon
        self.budget = budget

    def fit(self, X=None, y=None):
        self.n_features_in_ = 1
        self._charge_budget(LaplaceEvent(self.epsilon))
        self.model_ = "fitted"
        return self


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


def test_gaussian_event_cost_at_the_estimators_delta():
    est = _Toy()
    est._charge_budget(GaussianEvent(3.73), delta=1e-5)
    assert est.epsilon_ == pytest.approx(1.0, abs=1e-3)
    assert est.delta_ == 1e-5


def test_warn_data_derived_says_what_leaked_and_how_to_fix():
    match = "data_norm was not given.*max norm.*pass"
    with pytest.warns(PrivacyLeakWarning, match=match):
        warn_data_derived("data_norm", "the max norm", "pass data_norm")
