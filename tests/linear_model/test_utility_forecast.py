"""The utility forecast of output perturbation, from public quantities only."""

import warnings

import numpy as np
import pytest

from skdp import PrivacyBudget
from skdp.exceptions import BudgetExceededError, UtilityWarning
from skdp.linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression


def _rows(seed, n=331, d=10):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / np.sqrt(d)
    return X, X @ rng.standard_normal(d)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearSVC, DPLinearRegression])
def test_output_noise_that_swamps_every_score_is_forecast(cls):
    # Diabetes-sized data (331 rows) at C=1, epsilon=1: output perturbation's
    # noise moves every score by several units (R^2 near -45,000 on diabetes).
    X, t = _rows(0)
    y = t if cls is DPLinearRegression else (t > 0).astype(int)
    extra = {"y_bounds": (-3.0, 3.0)} if cls is DPLinearRegression else {}
    extra.update({} if cls is DPLinearRegression else {"classes": [0, 1]})
    est = cls(method="output", epsilon=1.0, data_norm=1.0, random_state=0, **extra)
    with pytest.warns(UtilityWarning, match=r"standard deviation of \d") as record:
        est.fit(X, y)
    (message,) = [str(w.message) for w in record if w.category is UtilityWarning]
    remedy = "alpha >=" if cls is DPLinearRegression else "C <="
    (where,) = [w.filename for w in record if w.category is UtilityWarning]
    assert where == __file__, "the warning points at the user's fit call"
    assert "epsilon" in message and remedy in message
    assert "data were not read" in message


def test_the_forecast_is_the_same_for_any_data_and_comes_before_the_charge():
    messages = []
    for seed in (0, 1):
        X, t = _rows(seed)
        budget = PrivacyBudget(0.5)  # refuses the fit's epsilon=1
        est = DPLogisticRegression(
            method="output",
            epsilon=1.0,
            delta=0.0,
            data_norm=1.0,
            classes=[0, 1],
            budget=budget,
        )
        with pytest.warns(UtilityWarning) as record:
            with pytest.raises(BudgetExceededError):
                est.fit(X, (t > 0).astype(int))
        messages.append(str(record[0].message))
        assert budget.ledger == []
    assert messages[0] == messages[1]


def test_no_forecast_where_the_noise_is_small():
    X, t = _rows(0, n=2000)
    est = DPLogisticRegression(
        method="output", C=1e-3, epsilon=5.0, data_norm=1.0, classes=[0, 1]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est.fit(X, (t > 0).astype(int))
