import math

import numpy as np
import pytest
from scipy import integrate, stats

from skdp.accounting import gaussian_delta, gaussian_epsilon, gaussian_noise_multiplier


def _delta_by_integration(epsilon, s):
    # Independent check of Balle & Wang (2018), Theorem 8: delta is
    # E[(1 - exp(epsilon - L))_+] for the privacy loss L ~ N(mu, 2 mu),
    # mu = 1 / (2 s**2), integrated numerically.
    mu = 1.0 / (2 * s * s)
    sd = math.sqrt(2 * mu)

    def integrand(loss):
        return stats.norm.pdf(loss, mu, sd) * max(0.0, 1.0 - math.exp(epsilon - loss))

    value, _ = integrate.quad(integrand, epsilon, mu + 40 * sd, limit=200)
    return value


@pytest.mark.parametrize(
    "epsilon, s", [(0.5, 1.0), (1.0, 3.0), (5.0, 0.5), (0.1, 10.0)]
)
def test_delta_matches_numerical_integration(epsilon, s):
    assert gaussian_delta(epsilon, s) == pytest.approx(
        _delta_by_integration(epsilon, s), rel=1e-6
    )


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 5.0, 20.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 0.01])
def test_calibration_is_tight_and_valid(epsilon, delta):
    s = gaussian_noise_multiplier(epsilon, delta)
    assert gaussian_delta(epsilon, s) <= delta
    assert gaussian_delta(epsilon, s * (1 - 1e-6)) > delta
    assert gaussian_epsilon(s, delta) <= epsilon * (1 + 1e-9)


def test_known_value_and_better_than_classical():
    s = gaussian_noise_multiplier(1.0, 1e-5)
    assert s == pytest.approx(3.7306, abs=1e-4)
    classical = math.sqrt(2 * math.log(1.25 / 1e-5))
    assert s < classical


def test_epsilon_is_an_upper_bound():
    for s in np.geomspace(0.3, 30, 9):
        eps = gaussian_epsilon(s, 1e-6)
        assert gaussian_delta(eps, s) <= 1e-6


@pytest.mark.parametrize("epsilon, delta", [(0, 1e-5), (-1, 1e-5), (1, 0), (1, 1)])
def test_invalid_arguments(epsilon, delta):
    with pytest.raises(ValueError):
        gaussian_noise_multiplier(epsilon, delta)
