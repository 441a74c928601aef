"""Additive noise mechanisms: Laplace, Gaussian and the L2 vector mechanism.

Each function takes the exact value, its sensitivity and the privacy
parameters, and returns ``(noisy_value, event)``: the noisy value and the
:class:`~skdp.accounting.PrivacyEvent` the caller must charge. The caller
charges the event *before* releasing the value (``PrivacyBudget.spend``);
these functions only draw noise.
"""

from __future__ import annotations

import math

import numpy as np

from ..accounting._analytic_gaussian import gaussian_noise_multiplier
from ..accounting._events import GaussianEvent, LaplaceEvent, PureDPEvent
from ..utils._random import check_random_source
from ._samplers import (
    grid_spacing,
    round_to_grid,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

__all__ = [
    "gaussian_mechanism",
    "l2_vector_mechanism",
    "l2_vector_noise",
    "laplace_mechanism",
]


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(
        value, int | float | np.floating | np.integer
    ):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


def _as_output(noisy: np.ndarray, value):
    return float(noisy) if np.ndim(value) == 0 else noisy


def _finite_array(value) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"value must be numeric: {error}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError("value must be finite (no NaN or infinity).")
    return arr


def laplace_mechanism(value, sensitivity, epsilon, *, random_state=None, label=""):
    """Release ``value`` with Laplace noise, epsilon-DP.

    Parameters
    ----------
    value : float or array-like
        The exact answer (scalar or array).
    sensitivity : float
        L1 sensitivity of ``value``: the largest ``sum |f(D) - f(D')|`` over
        neighbouring datasets, > 0.
    epsilon : float
        Privacy parameter, > 0.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG and is the only choice for a release; a
        seed gives reproducible noise for testing.
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noisy_value : float or ndarray
        Same shape as ``value``; every entry a multiple of the grid spacing.
    event : LaplaceEvent
        ``LaplaceEvent(epsilon)`` to charge.

    Notes
    -----
    Dwork, McSherry, Nissim & Smith (2006), Theorem 1 / Dwork & Roth (2014),
    Theorem 3.6: adding noise with density proportional to
    ``exp(-|z| epsilon / Delta_1)`` to each coordinate is epsilon-DP for L1
    sensitivity ``Delta_1``, under any neighbouring relation for which
    ``Delta_1`` bounds the change.

    Implemented as the discrete Laplace on a grid of spacing
    ``gamma = 2**floor(log2(b) - 32)``, ``b = Delta_1 / epsilon``: the value is
    rounded to the grid, which can increase the L1 distance between
    neighbours' values by ``d * gamma``, so the discrete scale is
    ``(Delta_1 + d gamma) / (epsilon gamma)`` grid steps (Canonne, Kamath &
    Steinke 2020; Mironov 2012 for the attack this avoids). Entries beyond
    ``2**50`` grid steps are clipped.

    Examples
    --------
    >>> from skdp.mechanisms import laplace_mechanism
    >>> noisy, event = laplace_mechanism(10.0, sensitivity=1.0, epsilon=0.5,
    ...                                  random_state=0)
    >>> event
    LaplaceEvent(label='', epsilon=0.5)
    >>> abs(noisy - 10.0) < 40
    True
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    arr = _finite_array(value)
    source = check_random_source(random_state)
    gamma = grid_spacing(sensitivity / epsilon)
    scale_steps = (sensitivity + arr.size * gamma) / (epsilon * gamma)
    noise = sample_discrete_laplace(scale_steps, arr.shape, source)
    noisy = (round_to_grid(arr, gamma) + noise) * gamma
    return _as_output(noisy, value), LaplaceEvent(epsilon, label=label)


def gaussian_mechanism(
    value,
    sensitivity,
    epsilon=None,
    delta=None,
    *,
    noise_multiplier=None,
    random_state=None,
    label="",
):
    """Release ``value`` with Gaussian noise, (epsilon, delta)-DP.

    Give either ``epsilon`` and ``delta`` (analytic calibration) or
    ``noise_multiplier`` directly.

    Parameters
    ----------
    value : float or array-like
        The exact answer.
    sensitivity : float
        L2 sensitivity of ``value``, > 0.
    epsilon, delta : float, optional
        Target guarantee; ``epsilon > 0`` (any size), ``0 < delta < 1``.
    noise_multiplier : float, optional
        Noise standard deviation in units of the sensitivity.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noisy_value : float or ndarray
    event : GaussianEvent
        ``GaussianEvent(noise_multiplier)``; its exact (epsilon, delta)
        profile is that of Balle & Wang (2018), Theorem 8.

    Notes
    -----
    Balle & Wang (2018), Theorem 8 and Algorithm 1: noise of standard
    deviation ``sigma = s * Delta_2`` is (epsilon, delta)-DP iff
    ``Phi(1/(2s) - epsilon s) - exp(epsilon) Phi(-1/(2s) - epsilon s) <=
    delta``; ``s`` is the smallest multiplier satisfying it, found by
    bisection. Valid for every epsilon, unlike the classical
    ``sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth 2014, Theorem A.1).

    Implemented as the discrete Gaussian on a grid of spacing ``gamma``
    (Canonne, Kamath & Steinke 2020, Algorithm 3), calibrated to the L2
    sensitivity plus the rounding slack ``sqrt(d) gamma``. The discrete
    Gaussian has the same zero-concentrated-DP guarantee as the continuous
    one (ibid., Theorem 4), hence the same Renyi-DP curve used by the
    accountant.

    Examples
    --------
    >>> from skdp.mechanisms import gaussian_mechanism
    >>> noisy, event = gaussian_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1.0,
    ...                                   delta=1e-5, random_state=0)
    >>> noisy.shape, round(event.noise_multiplier, 3)
    ((2,), 3.731)
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    if noise_multiplier is None:
        if epsilon is None or delta is None:
            raise ValueError("Give epsilon and delta, or noise_multiplier.")
        epsilon = _check_positive("epsilon", epsilon)
        delta = float(delta)
        if not 0 < delta < 1:
            raise ValueError(
                f"delta must be in (0, 1) for Gaussian noise, got {delta!r}."
            )
        noise_multiplier = gaussian_noise_multiplier(epsilon, delta)
    else:
        if epsilon is not None or delta is not None:
            raise ValueError(
                "Give either (epsilon, delta) or noise_multiplier, not both."
            )
        noise_multiplier = _check_positive("noise_multiplier", noise_multiplier)
    arr = _finite_array(value)
    source = check_random_source(random_state)
    gamma = grid_spacing(noise_multiplier * sensitivity)
    sigma_steps = noise_multiplier * (sensitivity + math.sqrt(arr.size) * gamma) / gamma
    noise = sample_discrete_gaussian(sigma_steps, arr.shape, source)
    noisy = (round_to_grid(arr, gamma) + noise) * gamma
    return _as_output(noisy, value), GaussianEvent(noise_multiplier, label=label)


def l2_vector_noise(dimension, sensitivity, epsilon, *, random_state=None, label=""):
    """Draw b in R^d with density proportional to exp(-epsilon ||b||_2 / Delta_2).

    The noise vector of objective and output perturbation (Chaudhuri,
    Monteleoni & Sarwate 2011, Algorithms 1 and 2).

    Parameters
    ----------
    dimension : int
        ``d``, >= 1.
    sensitivity : float
        ``Delta_2``, the L2 sensitivity the noise protects, > 0.
    epsilon : float
        > 0.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noise : ndarray of shape (d,)
    event : PureDPEvent
        ``PureDPEvent(epsilon)``.

    Notes
    -----
    In polar form the norm ``||b||`` follows a Gamma distribution with shape
    ``d`` and scale ``Delta_2 / epsilon`` and the direction is uniform on the
    sphere (CMS 2011, Section 5, "Algorithm 1"). Adding ``b`` to a quantity
    of L2 sensitivity ``Delta_2`` is epsilon-DP: the density ratio at any
    point is at most ``exp(epsilon ||v - v'|| / Delta_2) <= exp(epsilon)``
    by the triangle inequality. The norm is a sum of ``d`` secure
    exponentials; the direction a normalised vector of secure normals.

    Examples
    --------
    >>> from skdp.mechanisms import l2_vector_noise
    >>> b, event = l2_vector_noise(5, sensitivity=2.0, epsilon=1.0, random_state=0)
    >>> b.shape, event.epsilon
    ((5,), 1.0)
    """
    if (
        isinstance(dimension, bool)
        or not isinstance(dimension, int | np.integer | float | np.floating)
        or not math.isfinite(dimension)
        or int(dimension) != dimension
        or dimension < 1
    ):
        raise ValueError(f"dimension must be an integer >= 1, got {dimension!r}.")
    dimension = int(dimension)
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    source = check_random_source(random_state)
    norm = source.exponential(dimension).sum() * sensitivity / epsilon
    direction = source.standard_normal(dimension)
    direction /= np.linalg.norm(direction)
    return norm * direction, PureDPEvent(epsilon, label=label)


def l2_vector_mechanism(value, sensitivity, epsilon, *, random_state=None, label=""):
    """Release a vector with :func:`l2_vector_noise`, epsilon-DP.

    Parameters
    ----------
    value : array-like of shape (d,)
        The exact vector (e.g. a regularised minimiser for output
        perturbation).
    sensitivity : float
        L2 sensitivity of ``value``, > 0.
    epsilon : float
        > 0.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    noisy_value : ndarray of shape (d,)
        On a grid of spacing ``gamma``.
    event : PureDPEvent

    Notes
    -----
    CMS 2011, Algorithm 1 (output perturbation) with the noise of
    :func:`l2_vector_noise`. The value is rounded to a grid of spacing
    ``gamma = 2**floor(log2(Delta_2 / epsilon) - 32)`` first, which adds at
    most ``sqrt(d) gamma`` to the L2 sensitivity the noise is calibrated to,
    and the noisy vector is snapped to the same grid, so every input has the
    same set of possible outputs.

    Examples
    --------
    >>> from skdp.mechanisms import l2_vector_mechanism
    >>> out, event = l2_vector_mechanism([0.5, -0.5], sensitivity=0.1, epsilon=1.0,
    ...                                  random_state=0)
    >>> out.shape
    (2,)
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    arr = _finite_array(value).ravel()
    gamma = grid_spacing(sensitivity / epsilon)
    noise, event = l2_vector_noise(
        arr.size,
        sensitivity + math.sqrt(arr.size) * gamma,
        epsilon,
        random_state=random_state,
        label=label,
    )
    noisy = (round_to_grid(arr, gamma) + np.rint(noise / gamma)) * gamma
    return noisy, event
