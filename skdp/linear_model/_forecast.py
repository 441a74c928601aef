"""Utility forecasts of the linear models, from public quantities only.

Output perturbation adds noise of a fixed distribution to the minimiser's
coefficients. Its effect on the released model's scores is public: for a
row of norm ``R`` (``data_norm`` with the intercept's column) the noise
moves the score ``z . w`` by a random amount whose standard deviation is

* ``sigma R`` for Gaussian noise of standard deviation ``sigma`` per
  coordinate;
* ``theta R sqrt(k + 1)`` for the L2-vector mechanism in ``k``
  coordinates, whose norm is Gamma(``k``, ``theta``) and direction uniform
  (``E[(z . b)**2] = R**2 E||b||**2 / k = R**2 theta**2 (k + 1)``).

Scores are in margin units for the classifiers (the logistic and hinge
losses change regime over one unit) and in half-ranges of ``y_bounds`` for
regression (the targets are scaled into ``[-1, 1]``), so a standard
deviation above 1 means the noise alone decides most predictions. The
sensitivity is linear in ``C``, and the noise roughly inversely
proportional to ``epsilon``: the message gives both remedies.
"""

from __future__ import annotations

import math
import warnings

from ..exceptions import UtilityWarning
from ..mechanisms import NoisePlan
from ..utils._forecast import warn_if_noise_swamps
from ..utils._privacy import user_stacklevel
from ._losses import HuberLoss

__all__ = [
    "gradient_noise_ratio",
    "moment_noise_ratio",
    "noise_limit",
    "objective_noise_ratio",
    "score_noise_std",
    "warn_if_noise_swamps_learning",
    "warn_if_noise_swamps_scores",
]

#: Standard deviation of the score noise above which the forecast warns.
SWAMPED = 1.0


def score_noise_std(noise: NoisePlan, row_norm: float) -> float:
    """Standard deviation of the noise a plan adds to one row's score.

    Examples
    --------
    >>> from skdp.mechanisms import plan_gaussian
    >>> from skdp.linear_model._forecast import score_noise_std
    >>> plan = plan_gaussian(1.0, 3, epsilon=1.0, delta=1e-5)
    >>> 3.5 < score_noise_std(plan, 1.0) < 5.5
    True
    """
    unit = _unit(noise)
    if noise.kind == "gaussian":
        return unit * row_norm
    if noise.kind in ("l2_vector", "l2_noise"):
        return unit * row_norm * math.sqrt(noise.size + 1.0)
    raise ValueError(f"no score forecast for {noise.kind!r} noise")


def warn_if_noise_swamps_scores(
    name: str,
    noise: NoisePlan,
    row_norm: float,
    *,
    C: float,
    epsilon: float,
    alpha: bool = False,
) -> None:
    """Warn (:class:`~skdp.exceptions.UtilityWarning`) when the planned noise
    moves a score by more than :data:`SWAMPED` standard deviations' worth.

    Runs in the plan, before the charge, on public quantities only.
    ``alpha=True`` words the remedy for ``alpha = 1 / C`` (regression).
    """
    std = score_noise_std(noise, row_norm)
    if not std > SWAMPED:
        return
    if alpha:
        regularise = f"alpha >= {std / C:.3g} (the noise scales with 1 / alpha)"
    else:
        regularise = f"C <= {C / std:.3g} (the noise scales with C)"
    warnings.warn(
        f"{name}(method='output'): the noise planned for this fit moves every "
        f"score by a standard deviation of {std:.3g} (scores are in margin "
        "units, or half-ranges of y_bounds for regression), so noise alone "
        "decides most predictions. The forecast comes from epsilon, delta, the "
        "regularisation, data_norm and the numbers of rows and features; the "
        f"data were not read. A standard deviation of 1 needs {regularise}, "
        f"or an epsilon of about {epsilon * std:.3g}; method='objective' or "
        "'gradient' adds far less noise at this size.",
        UtilityWarning,
        stacklevel=user_stacklevel(),
    )


# --- objective perturbation, gradient methods and AdaSSP ----------------------
#
# These mechanisms add noise to what the fit learns from: the objective's
# gradient (objective perturbation), the averaged clipped gradients of the
# steps (DP-SGD, full-batch descent) or the moments ``Z^T t`` (AdaSSP). Each
# forecast is the ratio of that noise's norm to the largest signal the data
# could give it in the same units (every row's gradient, or moment, aligned
# at its bound): 0.1 means the noise is a tenth of the strongest possible
# signal. The limits beyond which the plan warns were read from
# ``benchmarks/utility_forecast.py`` (Adult, diabetes, synthetic linear
# problems of 10 and 100 features). Above them, the fits kept at most about
# two thirds of what the non-private model gains over the trivial one, and
# mostly far less (diabetes by DP-SGD at epsilon 5: R^2 0.09 of 0.36; 300
# rows of 100 features: nothing). Below them the forecast can still miss:
# how much of the noise reaches the predictions depends on how many
# directions the data spans, which the plan cannot see (Adult by objective
# perturbation at epsilon 0.1, forecast 0.092, fell below the majority
# class; synthetic data of 10 features at forecast 0.08 kept two thirds of
# the gain). The limits are set to warn rarely where utility is fine: Adult
# by DP-SGD at epsilon 1 (0.832 of 0.838) is at a thirtieth of its limit.
# Regression needs the tighter limit: its predictions must be right to a
# fraction of the targets' half-range, a classifier's only to the margin's
# sign.

#: Forecast limit of the classifiers (logistic, softmax, hinge losses).
NOISE_LIMIT = 0.1
#: Forecast limit of regression (the Huber loss of ``DPLinearRegression``).
NOISE_LIMIT_REGRESSION = 0.015


def noise_limit(loss=None) -> float:
    """The ratio beyond which the forecast warns, by the kind of loss.

    Examples
    --------
    >>> from skdp.linear_model._forecast import noise_limit
    >>> from skdp.linear_model._losses import HuberLoss
    >>> noise_limit(), noise_limit(HuberLoss(2.0))
    (0.1, 0.015)
    """
    return NOISE_LIMIT_REGRESSION if isinstance(loss, HuberLoss) else NOISE_LIMIT


def gradient_noise_ratio(plan, n_features: int) -> float:
    """DP-SGD or full-batch descent: noise of the run's mean gradient / clip.

    A step adds noise of standard deviation ``sigma c`` per coordinate to a
    sum of about ``B = q n`` clipped gradients of norm at most ``c``; over
    ``T`` steps the mean gradient's noise has norm about ``sigma c sqrt(d)
    / (B sqrt(T))`` against a signal of norm at most ``c`` (Bassily, Smith
    & Thakurta 2014: the excess risk of noisy gradient descent scales so).
    Full-batch descent has ``B = n``.

    Examples
    --------
    >>> from skdp.linear_model._dpsgd import plan_dpsgd
    >>> from skdp.linear_model._forecast import gradient_noise_ratio
    >>> plan = plan_dpsgd(epsilon=1.0, delta=1e-5, C=1.0, n_samples=10000,
    ...                   n_features=11, n_models=1, row_norm=1.0,
    ...                   batch_size=256, epochs=10, learning_rate=None,
    ...                   max_grad_norm=None)
    >>> 0.001 < gradient_noise_ratio(plan, 11) < 0.01
    True
    """
    batch = getattr(plan, "sampling_rate", 1.0) * plan.n_samples
    noise = plan.noise_multiplier * math.sqrt(n_features)
    return noise / (batch * math.sqrt(plan.steps))


def objective_noise_ratio(plan) -> float:
    """Objective perturbation: expected norm of ``b`` / ``n`` row gradients.

    The objective's linear term is ``C R b``; a row's loss gradient is at
    most ``C R g`` with ``g`` half the noise's sensitivity (1 for the
    logistic loss, ``sqrt 2`` for softmax, ``L`` for a margin loss), so the
    data's gradient is at most ``C n R g``. ``E||b||`` is ``size * scale``
    (Gamma norm) or ``sigma sqrt(size)`` (Gaussian noise).
    """
    noise = plan.noise
    if plan.gaussian_sigma is None:
        norm = noise.size * noise.scale
    else:
        norm = plan.gaussian_sigma * math.sqrt(noise.size)
    n_samples = plan.solver.n_samples
    return norm / (n_samples * noise.sensitivity / 2.0)


def moment_noise_ratio(plan, n_samples: int) -> float:
    """AdaSSP: noise norm of ``Z^T t`` / ``n`` times a row's largest ``z t``.

    A row's ``z t`` has norm at most ``R T``, half the moment's sensitivity.
    """
    noise = plan.moment_noise
    return _unit(noise) * math.sqrt(noise.size) / (n_samples * noise.sensitivity / 2)


def _unit(noise: NoisePlan) -> float:
    """Standard deviation of a coordinate (Gaussian), in value units."""
    return noise.scale * noise.gamma if noise.gamma > 0 else noise.scale


def warn_if_noise_swamps_learning(
    name: str, plan, *, n_features: int, n_samples: int, epsilon: float, loss=None
) -> None:
    """The forecast of objective perturbation, DP-SGD, full batch or AdaSSP.

    Runs in the plan, before the charge, on public quantities only.
    """
    if hasattr(plan, "moment_noise"):
        ratio = moment_noise_ratio(plan, n_samples)
        what = "the noise of X^T y over its largest value (n rows at their bounds)"
    elif hasattr(plan, "solver"):
        ratio = objective_noise_ratio(plan)
        what = "the perturbation's expected norm over the largest data gradient"
    else:
        ratio = gradient_noise_ratio(plan, n_features)
        what = (
            "the noise of the mean clipped gradient over the run, over the "
            "clipping norm"
        )
    warn_if_noise_swamps(
        name,
        ratio=ratio,
        limit=noise_limit(loss),
        what=what,
        n_samples=n_samples,
        epsilon=epsilon,
    )
