"""Output perturbation for L2-regularised logistic regression.

Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 1, in scikit-learn's
parameterisation: the exact minimiser of ``1/2 ||w||^2 + C sum_i loss_i``
(binary logistic, or softmax for more than two classes) plus noise
calibrated to its L2 sensitivity ``2 C R`` (``2 sqrt(2) C R`` for softmax).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..accounting._events import PrivacyEvent
from ..mechanisms import NoisePlan, add_noise, plan_gaussian, plan_l2_vector
from ..utils._random import check_random_source
from ._feasibility import check_magnitudes, check_solver
from ._losses import MarginLoss
from ._newton import SolverPlan, plan_solver, solve_rows
from ._sum_zero import from_sum_zero, to_sum_zero

__all__ = [
    "OutputPlan",
    "output_perturbation",
    "output_sensitivity",
    "plan_output",
    "run_output",
]


def output_sensitivity(
    C: float, row_norm: float, n_classes: int = 2, loss: MarginLoss | None = None
) -> float:
    """L2 sensitivity of the exact minimiser: ``2 C R``, or ``2 sqrt(2) C R``.

    With a margin ``loss`` of slope at most ``L``: ``2 C L R sqrt(m)`` for
    ``m`` models (1 for two classes, ``K`` one-vs-rest otherwise; replacing
    a row changes every one-vs-rest problem by one row).

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
    if loss is not None:
        models = 1 if n_classes == 2 else n_classes
        return 2.0 * C * loss.lipschitz * row_norm * math.sqrt(models)
    per_row = 1.0 if n_classes == 2 else math.sqrt(2.0)
    return 2.0 * C * row_norm * per_row


@dataclass(frozen=True)
class OutputPlan:
    """Every setting of one output-perturbation fit (public only).

    Attributes
    ----------
    n_classes : int
    sensitivity : float
        ``Delta + 2 r``: the exact minimiser's sensitivity
        (:func:`output_sensitivity`) plus twice the solver's residual.
    solver : SolverPlan
        The certified solve (``alpha = 1``).
    noise : NoisePlan
        L2 vector mechanism (pure) or Gaussian mechanism (``delta > 0``)
        on the ``rank * d`` coordinates.
    event : PureDPEvent or GaussianEvent
    loss : MarginLoss or None
        A margin loss (one-vs-rest beyond two classes), or ``None``.
    """

    n_classes: int
    sensitivity: float
    solver: SolverPlan
    noise: NoisePlan
    event: PrivacyEvent
    loss: MarginLoss | None = None


def plan_output(
    *,
    epsilon: float,
    delta: float,
    C: float,
    row_norm: float,
    n_samples: int,
    n_features: int,
    n_classes: int,
    tol: float,
    max_iter: int,
    loss: MarginLoss | None = None,
    block_rows: int | None = None,
    sparse: bool = False,
) -> OutputPlan:
    """Plan output perturbation from public quantities; may raise.

    ``block_rows`` and ``sparse`` are as in
    :func:`~skdp.linear_model._objective.plan_objective`.

    Notes
    -----
    The solver returns a point within a public radius ``r`` of the exact
    minimiser for every dataset (``solve``),
    so two neighbours' released points differ by at most
    ``||w*_D - w*_D'|| + 2 r <= Delta + 2 r`` (triangle inequality), and the
    noise is calibrated to that. ``r`` is about ``1e-7`` of ``Delta`` at the
    default ``tol``; a large ``tol`` or a small ``max_iter`` stays valid,
    with more noise or more solver steps, never less privacy.

    Examples
    --------
    >>> from skdp.linear_model._output import plan_output
    >>> plan = plan_output(epsilon=1.0, delta=0.0, C=0.5, row_norm=2.0,
    ...                    n_samples=100, n_features=3, n_classes=2,
    ...                    tol=1e-12, max_iter=100)
    >>> 2.0 < plan.sensitivity < 2.0 + 1e-9, plan.event.epsilon
    (True, 1.0)
    """
    models = 1 if n_classes == 2 else n_classes
    rank = models if loss is not None else (1 if n_classes == 2 else n_classes - 1)
    check_magnitudes("output perturbation", C=C, R=row_norm, **{"C * R": C * row_norm})
    solver = plan_solver(
        n_samples=n_samples,
        n_features=n_features,
        n_classes=n_classes,
        row_norm=row_norm,
        C=C,
        alpha=1.0,
        tol=tol,
        max_iter=max_iter,
        loss=loss,
        block_rows=block_rows,
    )
    check_solver(solver, n_classes, n_features, sparse)
    # Every one-vs-rest model is within r: jointly within r sqrt(models).
    residual = solver.residual * (math.sqrt(models) if loss is not None else 1.0)
    sensitivity = output_sensitivity(C, row_norm, n_classes, loss) + 2.0 * residual
    size = rank * n_features
    noise = _noise_plan(sensitivity, size, epsilon, delta)
    check_magnitudes(
        "output perturbation", **{"the noise scale": noise.scale * noise.gamma * size}
    )
    return OutputPlan(n_classes, sensitivity, solver, noise, noise.event, loss)


def run_output(rows, spec, plan: OutputPlan, source) -> np.ndarray:
    """Run a planned output perturbation; returns the released coefficients.

    ``rows`` (a :class:`~skdp.utils._row_source.RowSource`) and ``spec`` are
    as in :func:`~skdp.linear_model._objective.run_objective`.

    Notes
    -----
    A multinomial minimiser lies in ``S = {W : 1^T W = 0}``: the softmax
    loss gradients have columns summing to zero over the classes, so the
    first-order condition gives ``1^T W = 0``. The noise is added to its
    coordinates ``V = U^T W`` in an orthonormal basis ``U`` of
    ``{u : 1^T u = 0}`` (``(K - 1) d`` numbers, the same sensitivity, as the
    map is an isometry on ``S``), and ``U V`` is released: noise along the
    complement of ``S`` would only shift all class scores equally.
    """
    coef = solve_rows(rows, spec, plan.solver, loss=plan.loss)
    softmax = plan.loss is None and plan.n_classes > 2
    return _noisy(coef, plan.noise, softmax, source)


def _noisy(coef: np.ndarray, noise: NoisePlan, softmax: bool, source) -> np.ndarray:
    """``coef`` plus the planned noise; a softmax model's in its subspace ``S``."""
    if not softmax:
        return np.reshape(add_noise(noise, coef.ravel(), source), coef.shape)
    n_classes = coef.shape[0]
    noisy = add_noise(noise, from_sum_zero(coef).ravel(), source)
    return to_sum_zero(np.reshape(noisy, (n_classes - 1, -1)))


def _noise_plan(sensitivity, size, epsilon, delta) -> NoisePlan:
    """Gaussian noise when ``delta > 0``, else the pure L2-vector mechanism."""
    if delta > 0:
        return plan_gaussian(sensitivity, size, epsilon=epsilon, delta=delta)
    return plan_l2_vector(sensitivity, epsilon, size)


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
    event : PureDPEvent or DiscreteGaussianEvent
        The noise plan's event: the L2 vector mechanism (pure) when
        ``delta == 0``, the discrete Gaussian on the grid otherwise.

    Notes
    -----
    A multinomial model gets its noise in the subspace ``1^T W = 0`` of the
    minimiser, as :func:`run_output` explains.

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
    size = coef.shape[1] * (n_classes - 1)
    plan = _noise_plan(sensitivity, size, epsilon, delta)
    noisy = _noisy(coef, plan, n_classes > 2, check_random_source(source))
    return noisy, plan.event
