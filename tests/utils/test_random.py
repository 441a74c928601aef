import math

import numpy as np
import pytest

from skdp.mechanisms import gaussian_mechanism, laplace_mechanism
from skdp.utils import RandomSource, check_random_source


def test_none_is_the_os_csprng_and_unaffected_by_numpy_seeding():
    np.random.seed(0)  # noqa: NPY002 (the point of the test)
    a, _ = laplace_mechanism(np.zeros(8), 1.0, 1.0)
    np.random.seed(0)  # noqa: NPY002 (the point of the test)
    b, _ = laplace_mechanism(np.zeros(8), 1.0, 1.0)
    assert not np.array_equal(a, b)
    assert check_random_source(None).is_secure


def test_explicit_seed_is_reproducible():
    a, _ = gaussian_mechanism(np.zeros(8), 1.0, 1.0, 1e-5, random_state=3)
    b, _ = gaussian_mechanism(np.zeros(8), 1.0, 1.0, 1e-5, random_state=3)
    assert np.array_equal(a, b)
    assert not check_random_source(3).is_secure


def test_random_state_kinds():
    assert isinstance(check_random_source(np.random.RandomState(0)), RandomSource)
    assert isinstance(check_random_source(np.random.default_rng(0)), RandomSource)
    src = RandomSource()
    assert check_random_source(src) is src
    with pytest.raises(ValueError, match="random_state"):
        check_random_source("seed")


def test_exponential_sampler_is_exponential():
    e = check_random_source(0).exponential(200_000)
    # Mean 1 and variance 1; standard error of the mean 1/sqrt(n).
    assert abs(e.mean() - 1) < 5 / math.sqrt(200_000)
    # No porous tail: values above 20 still occur at their rate (e**-20 * n ~ 0),
    # and the attainable values near 10 are dense.
    tail = np.sort(e[e > 8])
    assert tail.size > 0


def test_poisson_subsample_rate():
    src = check_random_source(1)
    sizes = [src.poisson_subsample(1000, 0.1).size for _ in range(2000)]
    # Binomial(1000, 0.1): mean 100, sd 9.49; mean over 2000 runs has sd 0.21.
    assert abs(np.mean(sizes) - 100) < 5 * 9.49 / math.sqrt(2000)
    idx = src.poisson_subsample(1000, 0.5)
    assert np.all(np.diff(idx) > 0) and idx.min() >= 0 and idx.max() < 1000
    assert src.poisson_subsample(10, 1.0).tolist() == list(range(10))
