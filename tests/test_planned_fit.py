"""``plan_fit`` / ``PlannedFit``: the public form of the plan-charge-run path."""

import numpy as np
import pytest

from skdp import BudgetExceededError, PrivacyBudget
from skdp.base import PlannedFit
from skdp.linear_model import DPLogisticRegression


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (60, 3)) / 2
    return X, (X[:, 0] > 0).astype(int)


def _model(budget=None):
    return DPLogisticRegression(
        epsilon=0.5, data_norm=1.0, classes=[0, 1], budget=budget, random_state=3
    )


def test_planning_spends_nothing_and_running_is_fitting():
    X, y = _data()
    budget = PrivacyBudget(1.0, 1e-4)
    planned = _model(budget).plan_fit(X, y)
    assert isinstance(planned, PlannedFit) and budget.ledger == []
    assert planned.plan.event == _model().privacy_plan(X, y).event
    fitted = planned.run()
    assert len(budget.ledger) == 1
    reference = _model(PrivacyBudget(1.0, 1e-4)).fit(X, y)
    np.testing.assert_array_equal(fitted.coef_, reference.coef_)


def test_a_planned_fit_runs_once():
    X, y = _data()
    planned = _model().plan_fit(X, y)
    planned.run()
    with pytest.raises(RuntimeError, match="already ran"):
        planned.run()


def test_a_refused_run_leaves_no_model_and_no_record():
    X, y = _data()
    budget = PrivacyBudget(0.1)
    planned = _model(budget).plan_fit(X, y)
    with pytest.raises(BudgetExceededError):
        planned.run()
    assert budget.ledger == []
    assert not hasattr(planned.estimator, "coef_")


def test_no_composite_reaches_into_another_estimators_private_steps():
    # PrivateSearchCV planned and ran its trials through _plan_with_input,
    # _charge and _run_charged (issue 27's "four charge paths").
    from pathlib import Path

    import skdp

    root = Path(skdp.__file__).parent
    private = ("._plan_with_input(", "._charge(", "._run_charged(")
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "base.py"
        for line in path.read_text().splitlines()
        if any(call in line and "self." + call[1:] not in line for call in private)
    ]
    assert offenders == []
