"""Audits of every mechanism: the lower bound never exceeds the claimed epsilon,
and a deliberately mis-calibrated copy of each is caught.

Each audit runs a mechanism 4000 times on each of two neighbouring inputs
that differ by exactly the sensitivity (the worst case), with a fixed seed, so
the outcome is deterministic. The "never exceeds" audits use confidence 0.99:
a different seed would push a correct mechanism above its epsilon with
probability below 1%, and the bounds below sit well under the claims. The
bug-injection audits show the same audit has power: each broken mechanism
really is (2 epsilon)-DP or worse, and its bound clears the claimed epsilon.
"""

import numpy as np
import pytest

from skdp.audit import audit_epsilon
from skdp.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    l2_vector_mechanism,
    laplace_mechanism,
)

pytestmark = pytest.mark.slow  # thousands of draws per audit

N_RUNS = 4000
CONFIDENCE = 0.99
EPSILON = 1.0
DELTA = 1e-5
N_CANDIDATES = 20

# Exponential mechanism, worst case for non-monotone scores of sensitivity 1:
# candidate 0 gains one point while every other candidate loses one, so
# P[0 | D] / P[0 | D'] tends to exp(epsilon) as the number of candidates
# grows (about exp(0.95) for 20 candidates at epsilon = 1).
SCORES = [1.0] + [0.0] * (N_CANDIDATES - 1)
SCORES_NEIGHBOUR = [0.0] + [1.0] * (N_CANDIDATES - 1)

# Vector noise in 3 dimensions; the neighbours differ by the sensitivity and
# the statistic is the log-likelihood ratio of the two output densities (up
# to the factor epsilon / sensitivity), the most powerful statistic there is.
V0, V1 = np.zeros(3), np.array([1.0, 0.0, 0.0])


def _log_likelihood_ratio(output):
    return np.linalg.norm(output - V0) - np.linalg.norm(output - V1)


def _laplace(sensitivity_used):
    def run(value, random_state):
        noisy, _ = laplace_mechanism(
            value, sensitivity_used, EPSILON, random_state=random_state
        )
        return noisy

    return run


def _gaussian(sensitivity_used):
    def run(value, random_state):
        noisy, _ = gaussian_mechanism(
            value, sensitivity_used, EPSILON, DELTA, random_state=random_state
        )
        return noisy

    return run


def _exponential(monotonic):
    def run(scores, random_state):
        index, _ = exponential_mechanism(
            scores, 1.0, EPSILON, monotonic=monotonic, random_state=random_state
        )
        return index

    return run


def _vector(sensitivity_used):
    def run(value, random_state):
        noisy, _ = l2_vector_mechanism(
            value, sensitivity_used, EPSILON, random_state=random_state
        )
        return noisy

    return run


# name: (run, dataset, neighbour, statistic, delta, smallest bound expected)
CORRECT = {
    "laplace": (_laplace(1.0), 0.0, 1.0, None, 0.0, 0.5),
    "gaussian": (_gaussian(1.0), 0.0, 1.0, None, DELTA, 0.0),
    "exponential": (_exponential(False), SCORES, SCORES_NEIGHBOUR, None, 0.0, 0.3),
    "vector": (_vector(1.0), V0, V1, _log_likelihood_ratio, 0.0, 0.3),
}

# Bugs, each making the mechanism at least (2 epsilon)-DP while it claims
# epsilon: the noise scale halved (sensitivity passed as half its value),
# the sensitivity forgotten (a sum of values in [0, 10] released with the
# sensitivity of one unit), and the exponential mechanism's factor 2 dropped
# for scores that are not monotone.
BROKEN = {
    "laplace, noise scale halved": (_laplace(0.5), 0.0, 1.0, None, 0.0),
    "gaussian, sensitivity forgotten": (_gaussian(1.0), 0.0, 10.0, None, DELTA),
    "exponential, factor 2 dropped": (
        _exponential(True),
        SCORES,
        SCORES_NEIGHBOUR,
        None,
        0.0,
    ),
    "vector, noise scale halved": (_vector(0.5), V0, V1, _log_likelihood_ratio, 0.0),
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_audited_epsilon_never_exceeds_the_claim(name):
    run, dataset, neighbour, statistic, delta, floor = CORRECT[name]
    result = audit_epsilon(
        run,
        dataset,
        neighbour,
        statistic=statistic,
        n_runs=N_RUNS,
        delta=delta,
        confidence=CONFIDENCE,
        random_state=0,
    )
    assert result.epsilon_lower_bound <= EPSILON, str(result)
    # The audit is not vacuous: it finds a good part of the claimed epsilon
    # (not for the Gaussian, whose privacy loss only gets large on events too
    # rare for 2000 evaluation runs at delta = 1e-5).
    assert result.epsilon_lower_bound >= floor, str(result)


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_miscalibrated_mechanism_is_caught(name):
    run, dataset, neighbour, statistic, delta = BROKEN[name]
    result = audit_epsilon(
        run,
        dataset,
        neighbour,
        statistic=statistic,
        n_runs=N_RUNS,
        delta=delta,
        confidence=CONFIDENCE,
        random_state=0,
    )
    assert result.epsilon_lower_bound > EPSILON, str(result)
