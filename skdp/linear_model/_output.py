"""Output perturbation for L2-regularised logistic regression.

Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 1, in scikit-learn's
parameterisation: the exact minimiser of ``1/2 ||w||^2 + C sum_i loss_i``
plus noise calibrated to its L2 sensitivity ``2 C R``.
"""

from __future__ import annotations

import numpy as np

from ..accounting._analytic_gaussian import gaussian_noise_multiplier
from ..accounting._events import GaussianEvent, PureDPEvent
from ..mechanisms import gaussian_mechanism, l2_vector_mechanism

__all__ = ["output_event", "output_perturbation", "output_sensitivity"]


def output_sensitivity(C: float, row_norm: float, n_models: int = 1) -> float:
    """L2 sensitivity of the stacked minimisers, ``2 C R sqrt(n_models)``.

    Notes
    -----
    Let ``J(w) = 1/2 ||w||^2 + C sum_i loss(y_i z_i.w)`` on a dataset ``D``
    and ``J'`` on ``D'``, which replaces row ``(z_i, y_i)`` by
    ``(z'_i, y'_i)``. Then ``J' = J + g`` with
    ``g(w) = C (loss(y'_i z'_i.w) - loss(y_i z_i.w))``; since
    ``|loss'| <= 1``, ``||grad g|| <= C (||z_i|| + ||z'_i||) <= 2 C R``.
    ``J`` is 1-strongly convex, so its minimiser moves by at most
    ``||grad g|| / 1 = 2 C R`` (CMS 2011, Lemma 7; their
    ``2 / (n Lambda)`` with ``Lambda = 1 / (n C R**2)`` is ``2 C R**2``
    in the rescaled variable ``v = R w``). One-vs-rest fits ``n_models``
    such minimisers on the same rows, each moving by at most ``2 C R``, so
    the stacked vector moves by at most ``2 C R sqrt(n_models)``.

    Examples
    --------
    >>> from skdp.linear_model._output import output_sensitivity
    >>> output_sensitivity(C=0.5, row_norm=2.0)
    2.0
    """
    return 2.0 * C * row_norm * float(np.sqrt(n_models))


def output_event(epsilon: float, delta: float):
    """The event output perturbation spends: pure, or Gaussian when delta > 0.

    Examples
    --------
    >>> from skdp.linear_model._output import output_event
    >>> output_event(1.0, 0.0)
    PureDPEvent(label='', epsilon=1.0)
    >>> round(output_event(1.0, 1e-5).noise_multiplier, 3)
    3.731
    """
    if delta > 0:
        return GaussianEvent(gaussian_noise_multiplier(epsilon, delta))
    return PureDPEvent(epsilon)


def output_perturbation(coef, *, epsilon, delta, C, row_norm, source):
    """Add noise to the exact minimisers ``coef`` (shape ``(n_models, d)``).

    Returns
    -------
    noisy_coef : ndarray, same shape as ``coef``
    event : PureDPEvent or GaussianEvent
        Equal to ``output_event(epsilon, delta)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._output import output_perturbation
    >>> noisy, event = output_perturbation(
    ...     np.zeros((1, 3)), epsilon=1.0, delta=0.0, C=1.0, row_norm=1.0,
    ...     source=0)
    >>> noisy.shape, event.epsilon
    ((1, 3), 1.0)
    """
    coef = np.asarray(coef, dtype=float)
    sensitivity = output_sensitivity(C, row_norm, coef.shape[0])
    if delta > 0:
        noisy, event = gaussian_mechanism(
            coef, sensitivity, epsilon, delta, random_state=source
        )
    else:
        noisy, event = l2_vector_mechanism(
            coef.ravel(), sensitivity, epsilon, random_state=source
        )
    return np.reshape(noisy, coef.shape), event
