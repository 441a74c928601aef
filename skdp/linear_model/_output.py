"""Output perturbation for L2-regularised logistic regression.

Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 1, in scikit-learn's
parameterisation: the exact minimiser of ``1/2 ||w||^2 + C sum_i loss_i``
(binary logistic, or softmax for more than two classes) plus noise
calibrated to its L2 sensitivity ``2 C R`` (``2 sqrt(2) C R`` for softmax).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import helmert

from ..accounting._analytic_gaussian import gaussian_noise_multiplier
from ..accounting._events import GaussianEvent, PureDPEvent
from ..mechanisms import gaussian_mechanism, l2_vector_mechanism

__all__ = ["output_event", "output_perturbation", "output_sensitivity"]


def output_sensitivity(C: float, row_norm: float, n_classes: int = 2) -> float:
    """L2 sensitivity of the exact minimiser: ``2 C R``, or ``2 sqrt(2) C R``.

    Parameters
    ----------
    C : float
        Inverse regularisation strength (scikit-learn's meaning).
    row_norm : float
        ``R``, the bound on the row norms (intercept column included).
    n_classes : int, default=2
        2 for the binary logistic loss, more for the softmax loss.

    Notes
    -----
    Let ``J(w) = 1/2 ||w||^2 + C sum_i loss(w; z_i, y_i)`` on a dataset
    ``D`` and ``J'`` on ``D'``, which replaces row ``(z_i, y_i)`` by
    ``(z'_i, y'_i)``. Then ``J' = J + g`` with ``g = C (loss(w; z'_i, y'_i)
    - loss(w; z_i, y_i))``. ``J`` is 1-strongly convex, so its minimiser
    moves by at most ``sup ||grad g||`` (CMS 2011, Lemma 7):

    - binary logistic loss, ``|loss'| <= 1`` in the margin:
      ``||grad g|| <= C (||z_i|| + ||z'_i||) <= 2 C R`` (CMS's
      ``2 / (n Lambda)`` with ``Lambda = 1 / (n C R**2)`` is ``2 C R**2``
      in the rescaled variable ``v = R w``);
    - softmax loss, gradient ``(p - e_y) z^T`` of norm at most
      ``sqrt(2) ||z||`` (see
      :func:`~skdp.linear_model._objective.objective_geometry`):
      ``||grad g|| <= 2 sqrt(2) C R``.

    Examples
    --------
    >>> from skdp.linear_model._output import output_sensitivity
    >>> output_sensitivity(C=0.5, row_norm=2.0)
    2.0
    >>> round(output_sensitivity(C=0.5, row_norm=2.0, n_classes=3), 4)
    2.8284
    """
    per_row = 1.0 if n_classes == 2 else math.sqrt(2.0)
    return 2.0 * C * row_norm * per_row


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
    """Add noise to the exact minimiser ``coef``.

    Parameters
    ----------
    coef : ndarray of shape (1, d) or (K, d)
        The binary model, or the multinomial model of ``K >= 3`` classes
        (its rows sum to zero, as every minimiser of the symmetric softmax
        objective does).
    epsilon, delta : float
        Privacy parameters; ``delta > 0`` selects Gaussian noise.
    C, row_norm : float
        Give the sensitivity, :func:`output_sensitivity`.
    source : RandomSource
        Noise source.

    Returns
    -------
    noisy_coef : ndarray, same shape as ``coef``
    event : PureDPEvent or GaussianEvent
        Equal to ``output_event(epsilon, delta)``.

    Notes
    -----
    A multinomial minimiser lies in ``S = {W : 1^T W = 0}``: the softmax
    loss gradients have columns summing to zero over the classes, so the
    first-order condition gives ``1^T W = 0``. The noise is added to its
    coordinates ``V = U^T W`` in an orthonormal basis ``U`` of
    ``{u : 1^T u = 0}`` (``(K - 1) d`` numbers, the same sensitivity, as the
    map is an isometry on ``S``), and ``U V`` is released: noise along the
    complement of ``S`` would only shift all class scores equally.

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
    n_classes = 2 if coef.shape[0] == 1 else coef.shape[0]
    sensitivity = output_sensitivity(C, row_norm, n_classes)
    basis = None if n_classes == 2 else helmert(n_classes)  # rows: U^T
    value = coef.ravel() if basis is None else (basis @ coef).ravel()
    if delta > 0:
        noisy, event = gaussian_mechanism(
            value, sensitivity, epsilon, delta, random_state=source
        )
    else:
        noisy, event = l2_vector_mechanism(
            value, sensitivity, epsilon, random_state=source
        )
    if basis is None:
        return np.reshape(noisy, coef.shape), event
    return basis.T @ np.reshape(noisy, (n_classes - 1, -1)), event
