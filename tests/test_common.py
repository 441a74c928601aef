"""scikit-learn's estimator checks over every estimator skdp exports."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.utils.discovery import all_estimators


def _instances():
    # Each estimator with its default parameters (a seed only, so that the
    # checks comparing two fits see the same noise).
    out = []
    for _, cls in all_estimators():
        est = cls()
        if "random_state" in est.get_params():
            est.set_params(random_state=0)
        out.append(est)
    return out


@parametrize_with_checks(_instances())
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_discovery_finds_only_estimators():
    from sklearn.base import BaseEstimator

    for name, cls in all_estimators():
        assert issubclass(cls, BaseEstimator), name
