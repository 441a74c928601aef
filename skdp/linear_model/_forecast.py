"""A utility forecast for output perturbation, from public quantities only.

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
from ..utils._privacy import user_stacklevel

__all__ = ["score_noise_std", "warn_if_noise_swamps_scores"]

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
    unit = noise.scale * noise.gamma if noise.gamma > 0 else noise.scale
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
