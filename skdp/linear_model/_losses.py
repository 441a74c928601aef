"""Losses of the private ERM core: value, slope and curvature in the margin.

Every private method of :mod:`skdp.linear_model` (objective perturbation,
output perturbation, DP-SGD) is written once against a :class:`MarginLoss`:
a convex loss ``l(m, t)`` of the linear score ``m = w . z`` and a target
``t`` (a label in ``{-1, +1}``, or a real number for regression). What the
privacy proofs need from a loss is three public constants:

* ``lipschitz``: ``|dl/dm| <= L`` everywhere, so one row's gradient
  ``l'(m, t) z`` has norm at most ``L R`` for ``||z|| <= R``;
* ``curvature``: ``0 <= d2l/dm2 <= c`` (almost everywhere), so one row's
  Hessian ``l'' z z^T`` is positive semi-definite, of rank one, with
  eigenvalue at most ``c R**2`` (objective perturbation's Jacobian term,
  Chaudhuri, Monteleoni & Sarwate 2011, Theorem 9);
* ``zero_value``: ``sup_t l(0, t)``, so the objective at ``w = 0`` is at
  most ``C n zero_value`` (the solver's public bounds);
* ``zero_slope``: ``sup_t |l'(0, t)|``, the gradient scale where DP-SGD
  starts;
* ``clip_scale``: DP-SGD's default clipping norm in units of ``R``:
  ``zero_slope`` unless the loss says otherwise (the Huber regression loss
  clips at ``CLIP_SCALE_HUBER``, below the worst-case slope: residuals are
  mostly much smaller than the targets' public range);
* ``step_factor``: DP-SGD's default step is ``step_factor / (c R**2)``, a
  multiple of the classical ``1 / L``: 4 for the logistic loss (whose
  curvature bound is loose away from the margin), 1 for the Huber loss
  (whose curvature is 1 wherever it is quadratic: beyond ``2 / L`` gradient
  descent diverges), ``STEP_FACTOR_HUBER_HINGE`` (4) for the Huber hinge
  (curvature ``1 / (2 h)`` only inside its band).

Adding a loss is one small class here plus its tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

__all__ = ["HuberHingeLoss", "HuberLoss", "LogisticLoss", "MarginLoss"]

#: DP-SGD's default step for the Huber hinge, in units of ``1 / L`` (its
#: curvature is ``1 / (2 h)`` only inside the smoothed band); chosen in
#: ``benchmarks/tune_erm_defaults.py`` on a validation split.
STEP_FACTOR_HUBER_HINGE = 4.0

#: DP-SGD's default clipping norm for the Huber regression loss, in units of
#: ``R``: a clipped row moves the model by at most this residual (targets
#: scaled into ``[-1, 1]``). Chosen in ``benchmarks/tune_erm_defaults.py`` on
#: a validation split (mean validation R^2 over epsilon 0.1 to 5: 0.1830 at
#: 0.4, 0.1804 at 0.3, 0.1742 at 0.6, 0.1563 at the worst-case 1).
CLIP_SCALE_HUBER = 0.4

#: Standard deviation of the noise that DP-SGD's default learning rate lets
#: accumulate in the margin of a row of norm ``R``, for the classifiers'
#: losses (see ``skdp.linear_model._dpsgd.default_learning_rate``).
MARGIN_NOISE_STD = 2.5

#: DP-SGD's cap on the accumulated noise of a prediction for the Huber
#: regression loss, in units of the scaled targets (whose range is
#: ``[-1, 1]``; the classifiers' margins use ``MARGIN_NOISE_STD`` = 2.5, which
#: lets the regression model drift at small epsilon: validation R^2 -0.17 at
#: epsilon 0.1). Chosen in ``benchmarks/tune_erm_defaults.py`` (mean
#: validation R^2 over epsilon 0.1 to 5: 0.1832 at 0.1, 0.1830 at 0.15,
#: 0.1782 at 0.25, 0.1613 at 0.5, 0.1212 at 2.5); it binds only at small
#: epsilon.
MARGIN_NOISE_STD_HUBER = 0.1


class MarginLoss:
    """Interface of a convex loss ``l(m, t)`` of a margin ``m`` and a target ``t``."""

    #: Bound on ``|dl/dm|``.
    lipschitz: float
    #: Bound on ``d2l/dm2`` (which is >= 0).
    curvature: float
    #: Bound on ``l(0, t)`` over every target.
    zero_value: float
    #: Bound on ``|l'(0, t)|`` over every target.
    zero_slope: float

    @property
    def clip_scale(self) -> float:
        """DP-SGD's default clipping norm in units of ``R`` (a public constant)."""
        return self.zero_slope

    @property
    def margin_noise_std(self) -> float:
        """DP-SGD's cap on the accumulated noise of a margin (public).

        ``MARGIN_NOISE_STD``, chosen for the classifiers' margins, unless a
        loss whose margins live on another scale sets its own.
        """
        return MARGIN_NOISE_STD

    def value(self, m: np.ndarray, t: np.ndarray) -> np.ndarray:  # pragma: no cover
        """Loss of each row."""
        raise NotImplementedError

    def slope(self, m: np.ndarray, t: np.ndarray) -> np.ndarray:  # pragma: no cover
        """``dl/dm`` of each row."""
        raise NotImplementedError

    def second(self, m: np.ndarray, t: np.ndarray) -> np.ndarray:  # pragma: no cover
        """``d2l/dm2`` of each row."""
        raise NotImplementedError


@dataclass(frozen=True)
class LogisticLoss(MarginLoss):
    """``l(m, t) = log(1 + exp(-t m))``, ``t`` in ``{-1, +1}``.

    ``|l'| = expit(-t m) < 1`` and ``l'' = expit(m) expit(-m) <= 1/4``;
    ``l(0, t) = log 2``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._losses import LogisticLoss
    >>> loss = LogisticLoss()
    >>> bool(loss.value(np.array([0.0]), np.array([1.0]))[0] == np.log(2))
    True
    >>> loss.lipschitz, loss.curvature
    (1.0, 0.25)
    """

    lipschitz: float = 1.0
    curvature: float = 0.25
    zero_value: float = math.log(2.0)
    zero_slope: float = 0.5
    step_factor: float = 4.0

    def value(self, m, t):
        return np.logaddexp(0.0, -t * m)

    def slope(self, m, t):
        return -t * expit(-t * m)

    def second(self, m, t):
        p = expit(-t * m)
        return p * (1.0 - p)


@dataclass(frozen=True)
class HuberHingeLoss(MarginLoss):
    """The hinge loss smoothed over a width ``2 h`` (CMS 2011, Section 3.4.2).

    With ``z = t m``::

        l = 0                         if z > 1 + h
        l = (1 + h - z)**2 / (4 h)    if |1 - z| <= h
        l = 1 - z                     if z < 1 - h

    ``|l'| <= 1`` and ``l'' <= 1 / (2 h)`` (it is 0 outside the smoothed
    band and the two kinks have measure zero, which Chaudhuri, Monteleoni &
    Sarwate use for the Huber loss in their SVM experiments); ``l(0, t) =
    1`` for ``h < 1``.

    Parameters
    ----------
    h : float
        Half-width of the smoothed band, > 0. Larger is smoother (less
        curvature, so less objective-perturbation noise), smaller is
        closer to the hinge.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._losses import HuberHingeLoss
    >>> loss = HuberHingeLoss(0.5)
    >>> loss.value(np.array([-1.0, 1.0, 2.0]), np.ones(3)).tolist()
    [2.0, 0.125, 0.0]
    >>> loss.curvature
    1.0
    """

    h: float = 0.5

    @property
    def lipschitz(self) -> float:
        return 1.0

    @property
    def curvature(self) -> float:
        return 1.0 / (2.0 * self.h)

    @property
    def zero_value(self) -> float:
        h = self.h
        return 1.0 if h < 1 else (1.0 + h) ** 2 / (4.0 * h)

    @property
    def zero_slope(self) -> float:
        h = self.h
        return 1.0 if h < 1 else (1.0 + h) / (2.0 * h)

    @property
    def step_factor(self) -> float:
        return STEP_FACTOR_HUBER_HINGE

    def value(self, m, t):
        z = t * m
        h = self.h
        band = (1.0 + h - z) ** 2 / (4.0 * h)
        return np.where(z > 1.0 + h, 0.0, np.where(z < 1.0 - h, 1.0 - z, band))

    def slope(self, m, t):
        z = t * m
        h = self.h
        dz = np.where(
            z > 1.0 + h, 0.0, np.where(z < 1.0 - h, -1.0, -(1.0 + h - z) / (2.0 * h))
        )
        return t * dz

    def second(self, m, t):
        z = t * m
        return np.where(np.abs(1.0 - z) <= self.h, 1.0 / (2.0 * self.h), 0.0)


@dataclass(frozen=True)
class HuberLoss(MarginLoss):
    """Squared error near the target, absolute error beyond ``delta``.

    With ``r = m - t``: ``l = r**2 / 2`` if ``|r| <= delta``, else
    ``delta |r| - delta**2 / 2``. ``|l'| = min(|r|, delta) <= delta``,
    ``l'' <= 1``, and ``l(0, t) <= delta**2 / 2`` when ``|t| <= delta``
    (targets scaled into ``[-1, 1]`` and ``delta = 2`` make it the squared
    loss for every prediction in the targets' range).

    Parameters
    ----------
    delta : float
        Where the squared error turns linear, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._losses import HuberLoss
    >>> HuberLoss(1.0).value(np.array([0.5, 3.0]), np.zeros(2)).tolist()
    [0.125, 2.5]
    """

    delta: float = 2.0

    @property
    def lipschitz(self) -> float:
        return float(self.delta)

    @property
    def curvature(self) -> float:
        return 1.0

    @property
    def zero_value(self) -> float:
        return 0.5 * self.delta**2

    @property
    def zero_slope(self) -> float:
        # Targets are scaled into [-1, 1] by the regression estimator.
        return min(1.0, self.delta)

    @property
    def step_factor(self) -> float:
        return 1.0

    @property
    def clip_scale(self) -> float:
        return CLIP_SCALE_HUBER

    @property
    def margin_noise_std(self) -> float:
        return MARGIN_NOISE_STD_HUBER

    def value(self, m, t):
        r = np.abs(m - t)
        return np.where(
            r <= self.delta, 0.5 * r * r, self.delta * r - 0.5 * self.delta**2
        )

    def slope(self, m, t):
        return np.clip(m - t, -self.delta, self.delta)

    def second(self, m, t):
        return (np.abs(m - t) <= self.delta).astype(float)
