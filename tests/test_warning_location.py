"""A PrivacyLeakWarning points at the user's line, not at skdp or scikit-learn."""

import sys
import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor

from skdp.base import PrivateEstimatorMixin
from skdp.exceptions import PrivacyLeakWarning
from skdp.utils.discovery import all_estimators

PRIVATE = [
    cls
    for _, cls in all_estimators()
    if issubclass(cls, PrivateEstimatorMixin) and cls.__name__ != "PrivateSearchCV"
]


@pytest.mark.parametrize("cls", PRIVATE, ids=lambda c: c.__name__)
def test_leak_warnings_point_at_the_callers_line(cls):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(60, 3)).astype(float)
    estimator = cls(random_state=0)
    if is_classifier(estimator):
        y = (X[:, 0] > 1).astype(int)
    elif is_regressor(estimator):
        y = X[:, 0] + rng.normal(size=60)
    else:
        y = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        estimator.fit(X, y)  # defaults: public bounds missing, so it warns
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert leaks, f"{cls.__name__} read bounds from the data without warning"
    assert {(w.filename, w.lineno) for w in leaks} == {(__file__, line)}
