"""Noise comes from the OS CSPRNG, and outputs carry no floating-point fingerprint.

Two kinds of evidence:

* with ``random_state=None``, every mechanism and every estimator gives
  different results on two identical calls, seeding numpy's global generator
  does not make them reproducible, and numpy's global generator is not even
  touched (so nothing an attacker does to it can matter);
* the Laplace and Gaussian mechanisms' outputs lie on one grid whatever the
  input, unlike textbook floating-point Laplace, whose set of reachable
  outputs depends on the input (Mironov 2012): an observer who sees a
  textbook output can often rule an input out with certainty.
"""

import warnings

import numpy as np
import pytest
from _data import clip_rows
from sklearn.base import clone, is_classifier, is_regressor

from skdp.accounting import gaussian_noise_multiplier
from skdp.exceptions import PrivacyLeakWarning
from skdp.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    l2_vector_mechanism,
    l2_vector_noise,
    laplace_mechanism,
)
from skdp.mechanisms._samplers import grid_spacing
from skdp.utils.discovery import all_estimators

MECHANISMS = {
    "laplace": lambda: laplace_mechanism(np.zeros(16), 1.0, 1.0)[0],
    "gaussian": lambda: gaussian_mechanism(np.zeros(16), 1.0, 1.0, 1e-5)[0],
    "exponential": lambda: np.array(
        [exponential_mechanism(np.zeros(1000), 1.0, 1.0)[0] for _ in range(8)]
    ),
    "vector noise": lambda: l2_vector_noise(16, 1.0, 1.0)[0],
    "vector mechanism": lambda: l2_vector_mechanism(np.zeros(16), 1.0, 1.0)[0],
}


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_mechanism_noise_is_fresh_and_ignores_numpy_seeding(name):
    draw = MECHANISMS[name]
    np.random.seed(0)  # noqa: NPY002 (the point of the test)
    state = np.random.get_state()  # noqa: NPY002
    first = draw()
    # numpy's global generator was not used at all ...
    after = np.random.get_state()  # noqa: NPY002
    assert all(np.array_equal(a, b) for a, b in zip(state[1:3], after[1:3]))
    np.random.seed(0)  # noqa: NPY002
    second = draw()
    # ... and the same seed does not reproduce the noise. Two secure draws of
    # 16 continuous-ish values (or 8 indices out of 1000) coincide with
    # probability below 1e-20.
    assert not np.array_equal(first, second)


# -- estimators -----------------------------------------------------------


def _fit_data(estimator):
    rng = np.random.default_rng(0)
    X = clip_rows(rng.uniform(-1, 1, (60, 3)))
    signal = X[:, 0] + 0.3 * rng.normal(size=60)
    if is_regressor(estimator):
        return X, signal
    y = (signal > 0).astype(int)
    # is_classifier reads the tags, so meta-estimators count too.
    return X, (y if is_classifier(estimator) else None)


def _fitted_arrays(estimator):
    out = {}
    for name, value in vars(estimator).items():
        if name.endswith("_") and not name.startswith("_"):
            if callable(value):
                continue
            if isinstance(value, list | tuple):
                value = np.array(value + type(value)([None]), dtype=object)[:-1]
            arr = np.asarray(value)
            if arr.dtype.kind == "O" and arr.ndim == 1:
                try:  # one array per feature (bin edges, leaf values)
                    arr = np.concatenate([np.ravel(a) for a in arr]).astype(float)
                except (TypeError, ValueError):
                    continue
            if arr.dtype.kind == "f":
                out[name] = arr
    return out


def _outputs(estimator, X):
    """Every float array a fit produces, plus a prediction or a sample."""
    arrays = _fitted_arrays(estimator)
    if hasattr(estimator, "_noisy_threshold"):
        # OnlinePMW's fit draws one noise, the sparse vector test's noisy
        # threshold: private state (answers use it), compared here.
        arrays["noisy threshold"] = np.asarray(estimator._noisy_threshold)
    for method in ("decision_function", "predict_proba", "transform"):
        if hasattr(estimator, method):
            try:
                result = getattr(estimator, method)(X)
                result = result.toarray() if hasattr(result, "toarray") else result
                arrays[method] = np.asarray(result, dtype=float)
            except (TypeError, ValueError):
                continue
    return arrays


@pytest.mark.parametrize(
    "estimator", [cls() for _, cls in all_estimators()], ids=lambda e: type(e).__name__
)
def test_estimator_fits_differ_with_secure_noise(estimator):
    if "random_state" not in estimator.get_params():
        pytest.skip("no random_state: nothing random to check")
    X, y = _fit_data(estimator)
    fits = []
    for _ in range(2):
        np.random.seed(0)  # noqa: NPY002 (the point of the test)
        est = clone(estimator).set_params(random_state=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            est.fit(X) if y is None else est.fit(X, y)
        fits.append(_outputs(est, X))
    shared = set(fits[0]) & set(fits[1])
    assert shared, "the fit produced no float output to compare"
    assert any(not np.array_equal(fits[0][k], fits[1][k]) for k in shared)


def test_seeded_estimator_fits_are_reproducible():
    # The contrast: an explicit seed (for tests only) reproduces the fit.
    for _, cls in all_estimators():
        est = cls()
        if "random_state" not in est.get_params():
            continue
        X, y = _fit_data(est)
        fits = []
        for _ in range(2):
            fitted = clone(est).set_params(random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                fitted.fit(X) if y is None else fitted.fit(X, y)
            fits.append(_fitted_arrays(fitted))
        for key in fits[0]:
            np.testing.assert_array_equal(fits[0][key], fits[1][key], err_msg=key)


# -- floating-point fingerprints ------------------------------------------

TWO_POW_53 = 2.0**53


def _textbook_laplace(x, u):
    """numpy's Laplace algorithm, ``x + scale * X`` with scale 1 and U on a
    grid of 2**-53: ``X = log(2U)`` for ``U < 1/2``, ``-log(2 - 2U)`` otherwise."""
    return np.where(u < 0.5, x + np.log(u + u), x - np.log(2.0 - u - u))


def _reachable_by_textbook_laplace(outputs, x):
    """Whether each output can be produced by the textbook sampler from ``x``.

    Inverts the sampler to the uniform it would need, then tries every grid
    uniform ``k 2**-53`` nearby: the sampler is monotone in ``k`` and its
    steps are wider than the inversion error, so +-8 grid points suffice.
    """
    d = outputs - x
    u = np.where(d < 0, np.exp(d) / 2, 1 - np.exp(-d) / 2)
    k0 = np.rint(u * TWO_POW_53)
    found = np.zeros(outputs.shape, dtype=bool)
    for shift in range(-8, 9):
        k = np.clip(k0 + shift, 1, TWO_POW_53 - 1)
        found |= _textbook_laplace(x, k / TWO_POW_53) == outputs
    return found


def test_textbook_laplace_outputs_betray_their_input():
    # Mironov (2012): floating-point Laplace noise added to different inputs
    # reaches different sets of floats. The check is sound: every output from
    # input 0 is found reachable from input 0.
    rng = np.random.default_rng(0)
    u = rng.random(20_000)  # k * 2**-53, as numpy draws it
    u[u == 0] = 1 / TWO_POW_53  # numpy rejects U = 0
    from_zero = _textbook_laplace(0.0, u)
    from_other = _textbook_laplace(0.1, u)
    assert _reachable_by_textbook_laplace(from_zero, 0.0).all()
    # Most outputs computed from 0.1 could not have come from 0: seeing one of
    # them rules the input 0 out with certainty (an infinite privacy loss).
    impossible = ~_reachable_by_textbook_laplace(from_other, 0.0)
    assert impossible.mean() > 0.5


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_skdp_outputs_lie_on_one_grid_for_every_input(mechanism):
    n, sensitivity, epsilon, delta = 20_000, 1.0, 1.0, 1e-5
    if mechanism == "laplace":
        gamma = grid_spacing(sensitivity / epsilon)

        def release(x, seed):
            return laplace_mechanism(
                np.full(n, x), sensitivity, epsilon, random_state=seed
            )[0]
    else:
        gamma = grid_spacing(gaussian_noise_multiplier(epsilon, delta) * sensitivity)

        def release(x, seed):
            return gaussian_mechanism(
                np.full(n, x), sensitivity, epsilon, delta, random_state=seed
            )[0]

    # The grid depends only on public parameters (sensitivity, epsilon,
    # delta), and outputs from both inputs are exact multiples of it: no
    # output rules either input out, since the discrete noise puts mass on
    # every grid point.
    for x, seed in ((0.0, 0), (0.1, 1), (1 / 3, 2)):
        steps = release(x, seed) / gamma
        assert np.array_equal(steps, np.rint(steps))
    # The same grid test that exposes textbook Laplace: outputs from 0.1 are
    # all "reachable" from 0.
    from_other = release(0.1, 3)
    reachable_from_zero = from_other / gamma - np.rint(0.0 / gamma)
    assert np.array_equal(reachable_from_zero, np.rint(reachable_from_zero))


def test_vector_mechanism_outputs_lie_on_one_grid():
    gamma = grid_spacing(1.0 / 1.0)
    for value, seed in (([0.0, 0.0], 0), ([0.1, 1 / 3], 1)):
        steps = l2_vector_mechanism(value, 1.0, 1.0, random_state=seed)[0] / gamma
        assert np.array_equal(steps, np.rint(steps))
