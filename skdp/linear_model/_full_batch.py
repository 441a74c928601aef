"""Full-batch noisy gradient descent: DP-SGD's mechanism without subsampling.

``method='gradient'`` runs one of two mechanisms, chosen by the plan from
public parameters (``batch_size`` against ``n_samples``), never by where
the rows are:

* ``batch_size < n_samples``: DP-SGD (:mod:`skdp.linear_model._dpsgd`),
  Poisson-subsampled, ``ceil(epochs / q)`` small steps;
* ``batch_size='full'`` or ``batch_size >= n_samples``: this module,
  ``epochs`` steps, each releasing the noisy clipped gradient sum over
  **all** rows, with Nesterov's momentum. One pass over the data a step
  (a single round of tasks on dask), so it is the variant to choose on
  large or distributed data.

Both run on any :class:`~skdp.utils._row_source.RowSource`: memory (dense
or CSR) or dask, with bitwise the same sums.

References
----------
.. [BST14] R. Bassily, A. Smith, A. Thakurta, "Private Empirical Risk
   Minimization: Efficient Algorithms and Tight Error Bounds", FOCS 2014
   (noisy gradient descent, Algorithm 1, here full-batch).
.. [N83] Y. Nesterov, "A method of solving a convex programming problem with
   convergence rate O(1/k^2)", Soviet Math. Doklady 27, 1983; A. Beck,
   M. Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm", SIAM J.
   Imaging Sciences 2(1), 2009 (the momentum ``t / (t + 3)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..accounting._events import PoissonSubsampledDiscreteGaussianEvent
from ..mechanisms import NoisePlan, add_noise, plan_gaussian
from ..mechanisms._additive import subsampled_gaussian_event
from ..utils._feasibility import check_rounds
from ..utils._row_source import canonical_block_rows
from ._dpsgd import (
    _project,
    calibrate_dpsgd_noise_multiplier,
    check_gradient_memory,
    clipped_rows_sum,
    default_learning_rate,
)
from ._feasibility import check_magnitudes
from ._losses import LogisticLoss, MarginLoss

__all__ = [
    "FULL_BATCH_GD",
    "FullBatchGDPlan",
    "plan_full_batch_gd",
    "run_full_batch_gd",
    "uses_full_batch",
]

#: ``gradient_variant_`` of a fit that ran full-batch gradient descent.
FULL_BATCH_GD = "full_batch_gd"
#: ``gradient_variant_`` of a fit that ran Poisson-subsampled DP-SGD.
DPSGD = "dpsgd"


def uses_full_batch(batch_size, n_samples: int) -> bool:
    """Whether ``method='gradient'`` runs full-batch GD (public quantities only).

    ``batch_size='full'``, or a batch at least as large as the data (a
    Poisson rate ``min(1, batch_size / n)`` of 1 samples every row: there is
    nothing to subsample).

    Examples
    --------
    >>> from skdp.linear_model._full_batch import uses_full_batch
    >>> uses_full_batch("full", 10), uses_full_batch(256, 1000)
    (True, False)
    >>> uses_full_batch(256, 100)
    True
    """
    return batch_size == "full" or int(batch_size) >= int(n_samples)


@dataclass(frozen=True)
class FullBatchGDPlan:
    """Every setting of one full-batch noisy gradient descent (public only).

    Attributes
    ----------
    steps : int
        ``T``, one pass over all rows each.
    noise_multiplier : float
        Noise standard deviation over ``max_grad_norm``, as DP-SGD's (the
        clipped sum's replace-one sensitivity is twice that).
    max_grad_norm, learning_rate, C : float
    n_samples : int
    noise : NoisePlan
        The per-step Gaussian mechanism on the clipped gradient sum
        (``n_models * d`` coordinates).
    radius : float
        Iterates are projected on the ball of this radius (post-processing).
    event : PoissonSubsampledDiscreteGaussianEvent
        At sampling rate 1: ``T`` Gaussian releases of sensitivity ``2 c``.
    loss : MarginLoss or None
    """

    steps: int
    noise_multiplier: float
    max_grad_norm: float
    learning_rate: float
    C: float
    n_samples: int
    noise: NoisePlan
    radius: float
    event: PoissonSubsampledDiscreteGaussianEvent
    loss: MarginLoss | None = None
    sampling_rate: float = 1.0

    @property
    def noise_std(self) -> float:
        """Standard deviation of each coordinate of a step's noise."""
        return self.noise.scale * self.noise.gamma


def plan_full_batch_gd(
    *,
    epsilon: float,
    delta: float,
    C: float,
    n_samples: int,
    n_features: int,
    n_models: int,
    row_norm: float,
    steps: int,
    learning_rate: float | None,
    max_grad_norm: float | None,
    loss: MarginLoss | None = None,
) -> FullBatchGDPlan:
    """Plan full-batch noisy gradient descent from public quantities; may raise.

    The variant of ``method='gradient'`` for ``batch_size='full'`` (or at
    least ``n_samples``): ``T = steps`` steps (the estimators pass
    ``epochs``), each releasing the sum over **all** rows of the per-row
    loss gradients clipped to ``c = max_grad_norm`` plus Gaussian noise.

    Notes
    -----
    *Sensitivity.* Under replace-one, the clipped sum ``S(W) = sum_i
    clip_c(g_i(W))`` of two neighbours differs in one term, so ``||S_D(W) -
    S_D'(W)|| <= 2 c`` at every ``W``.

    *Mechanism.* A step adds discrete Gaussian noise on a grid of spacing
    ``gamma`` (coarse enough to carry ``|S| <= n c`` exactly) with
    standard deviation ``s (c + sqrt(p) gamma)``, ``p = n_models * d``
    coordinates (:func:`~skdp.mechanisms.plan_gaussian`, the ``sqrt(p)
    gamma`` covering the rounding to the grid). The step's point ``W_t`` is
    a function of the previous releases only (the update, the regulariser's
    gradient, the projection are post-processing), so the ``T`` steps are
    an adaptive composition of ``T`` such mechanisms. That is DP-SGD's
    mechanism at sampling rate 1, and it is charged as such:
    ``PoissonSubsampledDiscreteGaussianEvent(1, s, ..., T)``, whose
    multiplier ``s`` is relative to ``c`` as DP-SGD's; at rate 1 the
    accountants treat it as the Gaussian mechanism of sensitivity ``2 c``
    (``tests/accounting/test_accounting_bugs.py``), ``T`` of them
    composing to one of multiplier ``s / (2 sqrt(T))`` against ``2 c``.
    ``s`` is the smallest found for which the default accountant (replace
    one row) gives ``(epsilon, delta)``
    (:func:`~skdp.linear_model._dpsgd.calibrate_dpsgd_noise_multiplier`,
    DP-SGD's calibration, lattice shift included).

    *Defaults.* ``c = R sqrt(n_models) l'(0)`` as DP-SGD's. The step size
    is ``1 / (beta R**2 + 1 / (n C))``, the inverse of the worst-case
    smoothness of the mean objective (``beta`` the loss's curvature bound,
    ``1 / (n C)`` the regulariser's), the step of Nesterov's method (see
    :func:`run_full_batch_gd`), capped like DP-SGD's
    so that the accumulated noise of a margin stays below the loss's
    ``margin_noise_std`` (:func:`~skdp.linear_model._dpsgd.
    default_learning_rate` with ``step_factor=1``, sampling rate 1 and the
    step's noise standard deviation). All public. With the noise of a step
    about ``s c / n`` on the mean gradient, the optimisation, not the
    noise, limits the accuracy at large ``n``: Nesterov's method is within
    ``2 L ||W*||**2 / (T + 1)**2`` of the optimum after ``T`` exact steps,
    so tens of steps (``epochs``) already do well there.
    """
    steps = int(steps)
    check_rounds(steps, "full-batch gradient steps", "use fewer epochs")
    check_magnitudes(
        "full-batch gradient descent",
        C=C,
        R=row_norm,
        **{"n_samples * C * R": n_samples * C * row_norm},
    )
    check_gradient_memory(
        "A full-batch gradient step",
        n_models,
        n_features,
        min(n_samples, canonical_block_rows(n_samples)),
    )
    shape = LogisticLoss() if loss is None else loss
    clip = max_grad_norm
    if clip is None:
        clip = row_norm * math.sqrt(n_models) * shape.clip_scale
    clip = float(clip)

    size = n_models * n_features
    # Every row adds at most c to each coordinate of the clipped sum, so
    # |S| <= n c: the noise grid must carry that (twice it leaves room for
    # the rounding of the sum), or a large n would be clipped.
    magnitude = 2.0 * n_samples * clip
    noise_multiplier = calibrate_dpsgd_noise_multiplier(
        epsilon, delta, 1.0, steps, clip, size, magnitude=magnitude
    )
    noise = plan_gaussian(
        clip, size, noise_multiplier=noise_multiplier, magnitude=magnitude
    )
    if learning_rate is None:
        learning_rate = min(
            default_learning_rate(
                n_samples=n_samples,
                sampling_rate=1.0,
                steps=steps,
                noise_multiplier=noise_multiplier,
                max_grad_norm=clip,
                row_norm=row_norm,
                C=C,
                curvature=shape.curvature,
                step_factor=1.0,
                margin_noise_std=shape.margin_noise_std,
            ),
            1.0 / (shape.curvature * row_norm**2 + 1.0 / (n_samples * C)),
        )
    lipschitz = 1.0 if loss is None else loss.lipschitz
    radius = 2.0 * n_samples * C * lipschitz * row_norm * math.sqrt(n_models)
    check_magnitudes(
        "full-batch gradient descent",
        max_grad_norm=clip,
        **{
            "the noise standard deviation": noise.scale * noise.gamma,
            "the projection radius": radius,
        },
    )
    return FullBatchGDPlan(
        steps=steps,
        noise_multiplier=float(noise_multiplier),
        max_grad_norm=clip,
        learning_rate=float(learning_rate),
        C=float(C),
        n_samples=int(n_samples),
        noise=noise,
        radius=radius,
        event=subsampled_gaussian_event(noise, 1.0, steps),
        loss=loss,
    )


def run_full_batch_gd(rows, spec, plan: FullBatchGDPlan, source) -> np.ndarray:
    """Run a planned full-batch noisy gradient descent; the last iterate.

    ``rows`` is a :class:`~skdp.utils._row_source.RowSource` and ``spec``
    its :class:`~skdp.linear_model._rows.RowSpec`: each step is one block
    sum of the clipped gradient sums (one pass, one round of tasks on
    dask). Step ``t`` (from 0) releases the noisy clipped sum ``S_t`` at the
    look-ahead point ``V_t`` (``V_0 = 0``) and sets ``W_{t+1} = project(V_t
    - lr (S_t / n + V_t / (n C)))``, ``V_{t+1} = W_{t+1} + t / (t + 3)
    (W_{t+1} - W_t)``: Nesterov's accelerated gradient method for smooth
    convex functions (Nesterov 1983; the momentum of Beck & Teboulle's
    FISTA), post-processing of the released sums. The noise is drawn in
    the process that calls ``fit``.
    """
    d = spec.n_coef
    n_models = plan.noise.size // d
    n = plan.n_samples
    W = np.zeros((n_models, d))
    V = W  # the point where the gradient is taken (Nesterov's look-ahead)
    for step in range(plan.steps):
        clipped = rows.block_sum(
            clipped_rows_sum, spec, V, plan.max_grad_norm, plan.loss
        )
        noisy_sum = add_noise(plan.noise, clipped, source)
        gradient = noisy_sum / n + V / (n * plan.C)
        W_next = _project(V - plan.learning_rate * gradient, plan.radius)
        V = W_next + (step / (step + 3.0)) * (W_next - W)
        W = W_next
    return W
