"""Audits of the estimators: every DPLogisticRegression method and
PMWSynthesizer, on tiny datasets with one worst-case replaced row.

The lower bound must never exceed the epsilon the fit claims (``epsilon_``,
at the fit's ``delta_``). Fixed seeds make each audit deterministic;
confidence 0.99 means a correct estimator would fail with probability below
1% under another seed. Run counts keep the whole file within about 30 s on
two cores; ``benchmarks/audit.py`` runs the same audits longer.

Worst case for logistic regression under replace-one (label included): rows
at ``x = 0`` carry no gradient and no curvature, so the fit is driven by the
one row at the norm bound whose label flips between the two datasets, which
moves the coefficient by about ``C`` (half the ``2 C R`` the proofs allow:
the logistic loss's slope is 1/2 at the margin 0).
"""

import warnings

import numpy as np
import pytest

import skdp
from skdp.audit import audit_estimator

pytestmark = pytest.mark.slow  # thousands of fits per audit

DPLogisticRegression = getattr(skdp, "DPLogisticRegression", None)
PMWSynthesizer = getattr(skdp, "PMWSynthesizer", None)

CONFIDENCE = 0.99

N_ROWS = 10
X = np.zeros((N_ROWS, 1))
X[0, 0] = 1.0
Y = np.arange(N_ROWS) % 2
Y[0] = 1
Y_NEIGHBOUR = Y.copy()
Y_NEIGHBOUR[0] = 0


def _coefficient(estimator):
    return estimator.coef_[0, 0]


LOGISTIC = {
    # method: (extra parameters, runs per dataset)
    "objective": ({"C": 0.3}, 1000),
    "output": ({"C": 0.3}, 1000),
    # One full-batch step: the release is one Gaussian measurement of the
    # clipped gradient, the most an audit of the final model can see.
    "gradient": ({"C": 1.0, "epochs": 1}, 1000),
}


@pytest.mark.skipif(DPLogisticRegression is None, reason="not merged yet")
@pytest.mark.parametrize("method", list(LOGISTIC))
def test_logistic_regression_audit(method):
    params, n_runs = LOGISTIC[method]
    estimator = DPLogisticRegression(
        epsilon=1.0,
        method=method,
        data_norm=1.0,
        fit_intercept=False,
        classes=[0, 1],
        **params,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_estimator(
            estimator,
            (X, Y),
            (X, Y_NEIGHBOUR),
            statistic=_coefficient,
            n_runs=n_runs,
            confidence=CONFIDENCE,
            random_state=0,
        )
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert not result.violation, str(result)


# PMW on the universe {0, 1}^2: the dataset holds ten rows (0, 0), the
# neighbour moves one of them to (1, 1), and the statistic is the model's
# probability of the cell (1, 1).
PMW_X = np.zeros((N_ROWS, 2), dtype=int)
PMW_X_NEIGHBOUR = PMW_X.copy()
PMW_X_NEIGHBOUR[0] = [1, 1]


@pytest.mark.skipif(PMWSynthesizer is None, reason="not merged yet")
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_pmw_synthesizer_audit(noise):
    estimator = PMWSynthesizer(
        epsilon=1.0, noise=noise, categories=[[0, 1], [0, 1]], n_rounds=2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_estimator(
            estimator,
            (PMW_X, None),
            (PMW_X_NEIGHBOUR, None),
            statistic=lambda est: est.marginal([0, 1])[1, 1],
            n_runs=200,
            confidence=CONFIDENCE,
            random_state=0,
        )
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert not result.violation, str(result)
