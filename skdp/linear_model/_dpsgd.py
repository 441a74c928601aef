"""DP-SGD for the private linear models (Abadi et al. 2016).

Every step draws a Poisson subsample, clips each row's gradient, sums the
clipped gradients and adds Gaussian noise to the sum; the regulariser's
gradient is public and added without noise. The subsample is drawn in the
process that calls ``fit``, from the fit's random source (the operating
system's CSPRNG unless seeded), a block of steps' subsamples at once, and
the clipped sum is taken over the selected rows through
:meth:`~skdp.utils._row_source.RowSource.prepared_subsamples`: in memory a
block's rows are bounded once and a step costs two matrix products over its
subsample; on dask a step is one round of tasks that gather the selected
rows on the workers, with bitwise the same sum (so the same model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ..accounting._accountant import PrivacyAccountant
from ..accounting._calibration import calibrate_gaussian_noise_multiplier
from ..accounting._events import PoissonSubsampledDiscreteGaussianEvent
from ..mechanisms import NoisePlan, plan_gaussian
from ..mechanisms._additive import (
    add_drawn_noise,
    draw_noise,
    lattice_shift_bound,
    subsampled_gaussian_event,
)
from ..utils._feasibility import check_memory, check_rounds
from ..utils._random import check_random_source
from ..utils._row_source import SUBSAMPLE_CALL_ROWS, row_source
from ._feasibility import check_magnitudes
from ._losses import MARGIN_NOISE_STD, LogisticLoss, MarginLoss
from ._problems import blas_single_thread
from ._rows import RowSpec, bounded_row_norms

__all__ = [
    "DPSGDPlan",
    "clipped_gradient_sum",
    "default_learning_rate",
    "dpsgd_logistic",
    "plan_dpsgd",
    "clipped_prepared_sum",
    "clipped_rows_sum",
    "gradient_rows",
    "run_dpsgd",
]


def clipped_gradient_sum(
    Z, Y, W, max_grad_norm, loss=None, norms=None, intercept: float = 0.0
):
    """Sum over rows of each row's loss gradient clipped to ``max_grad_norm``.

    Row ``i``'s gradient for all models is the matrix ``a_i z_i^T`` with
    ``a_ik = l'(w_k.z_i, Y_ik)`` (the logistic loss's ``-Y_ik expit(-Y_ik
    w_k.z_i)`` unless ``loss`` is given); its Frobenius norm is
    ``||a_i|| ||z_i||``, so clipping is a per-row rescaling and the sum is
    one matrix product. ``Z`` may be a CSR matrix (the sum is then a sparse
    product, dense only in its ``n_models * d`` result); ``norms``, the
    rows' norms, is computed when not given. With ``intercept`` not 0, the
    rows ``z_i`` are ``Z``'s with a last entry ``intercept`` that ``Z``
    does not hold (``W`` has the column, ``norms`` must count it): its
    part of each product is added here instead of copying ``Z`` into a
    wider array.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._dpsgd import clipped_gradient_sum
    >>> clipped_gradient_sum(np.array([[3.0, 4.0]]), np.array([[1.0]]),
    ...                      np.zeros((1, 2)), max_grad_norm=1.0)
    array([[-0.6, -0.8]])
    >>> clipped_gradient_sum(np.array([[3.0]]), np.array([[1.0]]), np.zeros((1, 2)),
    ...                      max_grad_norm=1.0, norms=np.array([5.0]), intercept=4.0)
    array([[-0.6, -0.8]])
    """
    if intercept:
        margins = np.asarray(Z @ W.T[:-1])
        margins += intercept * W[:, -1]
    else:
        margins = np.asarray(Z @ W.T)
    slopes = -Y * expit(-Y * margins) if loss is None else loss.slope(margins, Y)
    if norms is None:
        norms = bounded_row_norms(Z)
    if slopes.shape[1] == 1:
        gradient_norms = np.abs(slopes[:, 0]) * norms
    else:
        gradient_norms = np.linalg.norm(slopes, axis=1) * norms
    # min(1, max_grad_norm / norm), without dividing by a vanishing norm.
    scale = max_grad_norm / np.maximum(gradient_norms, max_grad_norm)
    weights = slopes * scale[:, None]
    if not intercept:
        return weights.T @ Z
    out = np.empty(W.shape)
    out[:, :-1] = weights.T @ Z
    out[:, -1] = np.add.reduce(weights, axis=0)
    out[:, -1] *= intercept
    return out


def gradient_rows(X, y, spec, overwrite=False):
    """What a gradient step needs of raw rows before it sees the coefficients.

    The rows bounded to the spec's ``data_norm`` (without the intercept
    column, whose part :func:`clipped_gradient_sum` adds), their targets
    and the norms of the rows with the intercept
    (:meth:`~skdp.linear_model._rows.RowSpec.gradient_rows`), each row's a
    function of that row alone. DP-SGD prepares a block of steps'
    subsamples with one call
    (:meth:`~skdp.utils._row_source.RowSource.prepared_subsamples`, whose
    gathered rows it may ``overwrite``).
    """
    rows, norms = spec.gradient_rows(X, overwrite=overwrite)
    return rows, spec.targets(y), norms


def clipped_prepared_sum(rows, Y, norms, W, max_grad_norm, loss=None, intercept=0.0):
    """:func:`clipped_gradient_sum` of rows prepared by :func:`gradient_rows`."""
    return clipped_gradient_sum(rows, Y, W, max_grad_norm, loss, norms, intercept)


@blas_single_thread
def clipped_rows_sum(X, y, spec, W, max_grad_norm, loss=None):
    """:func:`clipped_gradient_sum` of raw rows: the block function of both
    gradient mechanisms.

    Bounds the rows and reads their targets (``spec``, :func:`gradient_rows`),
    then sums their gradients clipped to ``max_grad_norm``: over a row block
    for full-batch gradient descent
    (:meth:`~skdp.utils._row_source.RowSource.block_sum`); DP-SGD computes
    the same sum over a Poisson subsample from rows prepared a block of
    steps at a time (:func:`clipped_prepared_sum`).
    """
    return clipped_prepared_sum(
        *gradient_rows(X, y, spec), W, max_grad_norm, loss, spec.intercept
    )


def default_learning_rate(
    *,
    n_samples: int,
    sampling_rate: float,
    steps: int,
    noise_multiplier: float,
    max_grad_norm: float,
    row_norm: float,
    C: float,
    margin_noise_std: float = MARGIN_NOISE_STD,
    curvature: float = 0.25,
    step_factor: float = 4.0,
) -> float:
    """DP-SGD's default step size: the largest that keeps the noise in check.

    The rule is ``min(16 / R**2, n C, s q n / (sqrt(T) sigma c R))`` with
    ``R = row_norm``, ``q = sampling_rate``, ``T = steps``,
    ``sigma = noise_multiplier``, ``c = max_grad_norm`` and
    ``s = margin_noise_std`` (2.5). Every input is public (``sigma`` is
    calibrated from epsilon, delta, ``q`` and ``T``), none is read from data.

    Parameters
    ----------
    n_samples : int
        Number of rows ``n`` (public).
    sampling_rate : float
        Poisson sampling rate ``q``.
    steps : int
        Number of steps ``T``.
    noise_multiplier : float
        Calibrated noise multiplier ``sigma``.
    max_grad_norm : float
        Clipping norm ``c``.
    row_norm : float
        Bound ``R`` on the row norms (intercept column included).
    C : float
        Inverse regularisation strength.
    margin_noise_std : float, default=MARGIN_NOISE_STD
        The bound ``s`` on the accumulated margin noise (see Notes).
    curvature : float, default=0.25
        ``c``, the loss's bound on its second derivative.
    step_factor : float, default=4.0
        The first term is ``step_factor / (c R**2)``: ``16 / R**2`` for the
        logistic loss (see :class:`~skdp.linear_model._losses.MarginLoss`).

    Returns
    -------
    learning_rate : float

    Notes
    -----
    A step adds ``-lr * noise / (q n)`` to the weights, with noise of
    standard deviation ``sigma c`` per coordinate; after ``T`` steps the
    summed noise moves the margin ``w.z`` of a row of norm ``R`` by a
    standard deviation of ``lr sqrt(T) sigma c R / (q n)``. The third term
    caps that at ``s``. The smaller epsilon, the larger ``sigma`` and the
    smaller the step, so the total distance ``lr T`` travelled shrinks with
    epsilon: an early stop, which regularises the noisy fit. When the noise
    is small the first term binds: four times the classical ``1 / L`` for the
    logistic loss's smoothness ``L = R**2 / 4``. The second keeps the
    regulariser's step ``lr / (n C)`` below 1 (on small ``n C`` a larger
    step makes the iterates diverge).

    ``s = 2.5`` was chosen on a stratified 80/20 split of UCI Adult's
    *training* part (never its test split), at epsilon in {0.05, 0.1, 0.5, 1,
    2} with 10 seeds each: ``benchmarks/tune_dpsgd_defaults.py`` prints the
    comparison. Values of ``s`` from 2 to 3 were within a standard error of
    each other at every epsilon; 2.5 had the best mean accuracy over the
    five epsilons and kept epsilon = 1 as accurate as the uncapped step
    ``16 / R**2``, while validation accuracy at epsilon = 0.1 rose from
    0.788 to 0.812. On a fit part cut to 5,000 rows the cap helped as
    much (epsilon = 0.1: 0.729 to 0.765). Smaller clipping norms, other
    batch sizes or epoch counts, other averaging of the iterates and
    momentum did no better (ibid.). A loss whose margins live on another
    scale sets its own ``s`` (``MarginLoss.margin_noise_std``): the Huber
    regression loss's predictions are scaled targets in ``[-1, 1]`` and it
    uses 0.1 (``benchmarks/tune_erm_defaults.py``).

    Examples
    --------
    >>> from skdp.linear_model._dpsgd import default_learning_rate
    >>> common = dict(n_samples=25600, sampling_rate=0.01, steps=1000,
    ...               max_grad_norm=0.5, row_norm=1.0, C=1.0)
    >>> default_learning_rate(noise_multiplier=1.0, **common)  # 16 / R**2
    16.0
    >>> round(default_learning_rate(noise_multiplier=20.0, **common), 4)
    2.0239
    """
    noise_cap = (
        margin_noise_std
        * sampling_rate
        * n_samples
        / (math.sqrt(steps) * noise_multiplier * max_grad_norm * row_norm)
    )
    return min(step_factor / (curvature * row_norm**2), n_samples * C, noise_cap)


@dataclass(frozen=True)
class DPSGDPlan:
    """Every setting of one DP-SGD fit (public only).

    Attributes
    ----------
    sampling_rate, noise_multiplier : float
    steps : int
    max_grad_norm, learning_rate : float
    C : float
    n_samples : int
    noise : NoisePlan
        The per-step Gaussian mechanism on the clipped gradient sum
        (sensitivity ``max_grad_norm``, ``n_models * d`` coordinates).
    radius : float
        Iterates are projected on the ball of this radius
        (post-processing; it contains the minimiser).
    event : PoissonSubsampledDiscreteGaussianEvent
    loss : MarginLoss or None
        The loss (``None``: logistic).
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    max_grad_norm: float
    learning_rate: float
    C: float
    n_samples: int
    noise: NoisePlan
    radius: float
    event: PoissonSubsampledDiscreteGaussianEvent
    loss: MarginLoss | None = None


def calibrate_dpsgd_noise_multiplier(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    clip: float,
    size: int,
    *,
    magnitude: float | None = None,
) -> float:
    """Smallest-found noise multiplier whose DP-SGD event is within budget.

    The event is the discrete one that runs
    (:class:`~skdp.accounting.PoissonSubsampledDiscreteGaussianEvent`): the
    continuous calibration, then a multiplier raised just enough to leave
    room for the lattice shift (at most ``steps * 4 sqrt(size) / (s
    2**32)``), checked with the same accountant.

    Examples
    --------
    >>> from skdp.linear_model._dpsgd import calibrate_dpsgd_noise_multiplier
    >>> s = calibrate_dpsgd_noise_multiplier(1.0, 1e-5, 0.01, 1000, 1.0, 10)
    >>> round(s, 2)
    2.36
    """
    accountant = PrivacyAccountant()
    continuous = calibrate_gaussian_noise_multiplier(
        epsilon, delta, sampling_rate, steps, accountant=accountant
    )
    room = 2.0 * steps * lattice_shift_bound(continuous, size)
    for _ in range(64):
        multiplier = continuous * (1.0 + 2.0 * room / epsilon)
        noise = plan_gaussian(
            clip, size, noise_multiplier=multiplier, magnitude=magnitude
        )
        event = subsampled_gaussian_event(noise, sampling_rate, steps)
        if accountant._accepts(event, delta, epsilon):
            return multiplier
        room *= 2.0
    raise ValueError(  # pragma: no cover - the shift is below 1e-6 of epsilon
        f"No DP-SGD noise multiplier reaches epsilon={epsilon!r} on a grid."
    )


def _sum_bound(n_samples: int, clip: float) -> float:
    """Public bound on a batch's clipped gradient sum, per coordinate.

    A Poisson batch holds at most ``n`` rows of norm at most ``clip``;
    twice that leaves room for the rounding of the sum, so the noise grid
    carries every sum exactly (:func:`~skdp.mechanisms.plan_gaussian`).
    """
    return 2.0 * n_samples * clip


#: Steps whose noise and subsamples are drawn in one call, and the most
#: noise entries held at once (8 MiB of float64): :func:`step_block`.
NOISE_BLOCK_STEPS = 64
NOISE_BLOCK_ENTRIES = 2**20

#: Arrays of the coefficients' shape (``n_models x d``) a gradient step
#: holds at once, counted generously: the iterate, its average, the
#: clipped sum, its noise, the noisy sum, the gradient and the step's
#: temporaries.
_COEFFICIENT_COPIES = 12
#: Arrays of a call's ``rows x n_models`` (margins, targets, slopes and
#: their temporaries) and of its ``rows x d`` (the bounded rows) held at
#: once.
_CALL_COPIES = 8


def check_gradient_memory(
    what: str, n_models: int, n_features: int, call_rows: int
) -> None:
    """Refuse, before the charge, a gradient step beyond this machine's memory.

    A step of DP-SGD or full-batch descent holds a dozen arrays of the
    coefficients' shape and, per call of the clipped-gradient sum
    (:func:`clipped_rows_sum`, on at most ``call_rows`` rows), a few of
    ``call_rows x n_models`` numbers: with many classes these dominate
    (issue 26: ``classes=range(10**7)`` on 40 rows took more than 13 GB
    after the charge). All counts are public.
    """
    n_bytes = 8.0 * (
        _COEFFICIENT_COPIES * n_models * n_features
        + _CALL_COPIES * call_rows * (n_models + n_features)
    )
    check_memory(
        n_bytes,
        f"{what} ({n_models} x {n_features} coefficients, {call_rows} rows a call)",
        "use fewer classes or features, or the exact methods for many classes",
    )


def plan_dpsgd(
    *,
    epsilon: float,
    delta: float,
    C: float,
    n_samples: int,
    n_features: int,
    n_models: int,
    row_norm: float,
    batch_size: int,
    epochs: int,
    learning_rate: float | None,
    max_grad_norm: float | None,
    loss: MarginLoss | None = None,
) -> DPSGDPlan:
    """Plan DP-SGD from public quantities; may raise.

    The sampling rate is ``min(1, batch_size / n)``, the number of steps
    ``ceil(epochs / q)``, the noise multiplier the smallest for which the
    accountant gives ``(epsilon, delta)``, the clipping norm
    ``R sqrt(n_models) / 2`` unless given, and the step size
    :func:`default_learning_rate` unless given.

    Notes
    -----
    Iterates are projected on the ball of radius ``2 n C R sqrt(n_models)``
    (post-processing of the released noisy gradients). The averaged
    objective ``||W||**2 / (2 n C) + mean_i loss_i`` has its minimiser
    inside it, since each row's loss gradient has norm at most
    ``R sqrt(n_models)``; the projection only keeps an absurd step size
    from overflowing.

    Examples
    --------
    >>> from skdp.linear_model._dpsgd import plan_dpsgd
    >>> plan = plan_dpsgd(epsilon=1.0, delta=1e-5, C=1.0, n_samples=2560,
    ...                   n_features=3, n_models=1, row_norm=1.0, batch_size=256,
    ...                   epochs=10, learning_rate=None, max_grad_norm=None)
    >>> plan.sampling_rate, plan.steps, plan.max_grad_norm
    (0.1, 100, 0.5)
    """
    sampling_rate = min(1.0, batch_size / n_samples)
    steps = math.ceil(epochs / sampling_rate)
    check_rounds(
        steps,
        "DP-SGD steps",
        f"use fewer epochs (epochs={epochs}) or a larger batch_size "
        f"(batch_size={batch_size}, {n_samples} rows)",
    )
    check_magnitudes(
        "DP-SGD", C=C, R=row_norm, **{"n_samples * C * R": n_samples * C * row_norm}
    )
    check_gradient_memory(
        "A DP-SGD step",
        n_models,
        n_features,
        min(n_samples, SUBSAMPLE_CALL_ROWS),
    )
    shape = LogisticLoss() if loss is None else loss
    clip = max_grad_norm
    if clip is None:
        clip = row_norm * math.sqrt(n_models) * shape.clip_scale
    noise_multiplier = calibrate_dpsgd_noise_multiplier(
        epsilon,
        delta,
        sampling_rate,
        steps,
        clip,
        n_models * n_features,
        magnitude=_sum_bound(n_samples, clip),
    )
    if learning_rate is None:
        learning_rate = default_learning_rate(
            n_samples=n_samples,
            sampling_rate=sampling_rate,
            steps=steps,
            noise_multiplier=noise_multiplier,
            max_grad_norm=clip,
            row_norm=row_norm,
            C=C,
            curvature=shape.curvature,
            step_factor=shape.step_factor,
            margin_noise_std=shape.margin_noise_std,
        )
    plan = _dpsgd_plan(
        sampling_rate,
        noise_multiplier,
        steps,
        clip,
        learning_rate,
        C,
        n_samples,
        n_features,
        n_models,
        row_norm,
        loss,
    )
    check_magnitudes(
        "DP-SGD",
        max_grad_norm=clip,
        **{
            "the noise standard deviation": noise_multiplier * clip,
            "the projection radius": plan.radius,
        },
    )
    return plan


def _dpsgd_plan(
    sampling_rate,
    noise_multiplier,
    steps,
    clip,
    learning_rate,
    C,
    n_samples,
    n_features,
    n_models,
    row_norm,
    loss,
) -> DPSGDPlan:
    """The plan of resolved settings: the noise and the projection radius."""
    lipschitz = 1.0 if loss is None else loss.lipschitz
    noise = plan_gaussian(
        clip,
        n_models * n_features,
        noise_multiplier=noise_multiplier,
        magnitude=_sum_bound(n_samples, clip),
    )
    return DPSGDPlan(
        sampling_rate=sampling_rate,
        noise_multiplier=noise_multiplier,
        steps=steps,
        max_grad_norm=float(clip),
        learning_rate=float(learning_rate),
        C=float(C),
        n_samples=int(n_samples),
        noise=noise,
        radius=2.0 * n_samples * C * lipschitz * row_norm * math.sqrt(n_models),
        event=subsampled_gaussian_event(noise, sampling_rate, steps),
        loss=loss,
    )


def run_dpsgd(rows, spec, plan: DPSGDPlan, source) -> np.ndarray:
    """Train one-vs-rest models jointly with a planned DP-SGD.

    Parameters
    ----------
    rows : RowSource
        The rows and labels, in memory (dense or CSR; a CSR matrix is read
        row by row for each batch, never densified) or on dask.
    spec : RowSpec
        Bounds a block's rows (intercept column included) and gives its
        targets: ``+1`` if row ``i`` belongs to model ``k``'s positive
        class, else -1 (or the scaled regression target).
    plan : DPSGDPlan
    source : RandomSource
        Sampling and noise source.

    Returns
    -------
    coef : ndarray of shape (n_models, d)
        The average of the iterates over the second half of training
        (post-processing of the released noisy gradients).

    Notes
    -----
    The released sequence is, for each step, the clipped gradient sum of a
    Poisson subsample plus Gaussian noise of standard deviation
    ``noise_multiplier * max_grad_norm``: the Poisson-subsampled Gaussian
    mechanism whose per-row contribution is bounded by ``max_grad_norm``,
    composed adaptively ``steps`` times (Abadi et al. 2016, Algorithm 1;
    Mironov, Talwar & Zhang 2019 for its add/remove Renyi-DP curve, which
    the accountant turns into a replace-one curve, see
    ``skdp.accounting._rdp.rdp_poisson_subsampled_gaussian_replace_one``). The
    noise is the discrete Gaussian on a grid of spacing ``gamma``, with its
    standard deviation calibrated to ``max_grad_norm + sqrt(d) gamma`` to
    cover rounding the sum to the grid (:func:`~skdp.mechanisms.plan_gaussian`).
    Everything else (the update, the regulariser, the projection, the
    averaging) is post-processing.

    Neither the noise nor the subsamples depend on the data, so they are
    drawn a block of steps at a time (:func:`step_block`: at most 64 steps,
    about 16,384 expected rows and 2**20 noise numbers, so memory does not
    grow with the number of steps): per block, first the noise of its steps
    (:func:`~skdp.mechanisms._additive.draw_noise`), then their subsamples
    (:meth:`~skdp.utils.RandomSource.poisson_subsamples`: every row kept
    independently with probability ``q`` in every step, from the operating
    system's CSPRNG unless seeded). A seeded fit's stream is that order of
    draws: the same ``random_state`` gives the same model, and a version
    that changes the order changes the model a seed gives (not its law).

    The selected rows are summed where they are:
    :meth:`~skdp.utils._row_source.RowSource.prepared_subsamples` bounds a
    block's rows once in memory (:func:`gradient_rows`) and each step sums
    its slice (:func:`clipped_prepared_sum`); on dask a step's rows are
    gathered from their blocks on the workers (the positions sent are
    random numbers, not data), prepared and summed there on the same array
    the in-memory fit slices, and only the total comes back. So the same
    ``random_state`` draws the same subsamples and noise in memory and on
    dask, and the sums are bitwise equal: the same model. On dask each
    step is one round of tasks, ``T`` in all (``T = ceil(epochs / q)``,
    thousands at the default batch size on large data); full-batch
    gradient descent (``batch_size='full'``) needs only ``epochs`` passes.
    """
    n = rows.n_samples
    d = spec.n_coef
    W = np.zeros((plan.noise.size // d, d))
    expected_batch = plan.sampling_rate * n
    average = np.zeros_like(W)
    start_average = plan.steps // 2
    block = step_block(plan.noise.size, expected_batch)
    shrink = 1.0 - plan.learning_rate / (n * plan.C)
    step_size = plan.learning_rate / expected_batch
    step = 0
    for first in range(0, plan.steps, block):
        count = min(block, plan.steps - first)
        # Neither the noise nor the subsamples depend on the data: a block of
        # steps' worth is drawn at once, each step's with its planned law,
        # independent of every other draw.
        noise = draw_noise(plan.noise, count, source)
        batches = source.poisson_subsamples(n, plan.sampling_rate, count)
        # The rows a source hands `prepare` are its own gathered copy.
        subsamples = rows.prepared_subsamples(gradient_rows, batches, spec, True)
        for drawn, subsample in zip(noise, subsamples, strict=True):
            clipped_sum = subsample.sum(
                clipped_prepared_sum, W, plan.max_grad_norm, plan.loss, spec.intercept
            )
            noisy_sum = add_drawn_noise(plan.noise, clipped_sum, drawn)
            # W - learning_rate (noisy_sum / expected_batch + W / (n C))
            W = _project(shrink * W - step_size * noisy_sum, plan.radius)
            if step >= start_average:
                average += W
            step += 1
    return average / (plan.steps - start_average)


def step_block(noise_size: int, expected_batch: float) -> int:
    """Steps of DP-SGD whose noise and subsamples are drawn in one call.

    At most :data:`NOISE_BLOCK_STEPS`, at most :data:`NOISE_BLOCK_ENTRIES`
    noise numbers, and at most about
    :data:`~skdp.utils._row_source.SUBSAMPLE_CALL_ROWS` expected selected
    rows, whose row numbers the block holds (their rows are prepared in
    smaller, cache-sized groups,
    :meth:`~skdp.utils._row_source.RowSource.prepared_subsamples`). Public
    inputs only.

    Examples
    --------
    >>> from skdp.linear_model._dpsgd import step_block
    >>> step_block(104, 256.0), step_block(104, 20000.0), step_block(10**6, 1.0)
    (64, 1, 1)
    """
    by_rows = int(SUBSAMPLE_CALL_ROWS // max(expected_batch, 1.0))
    by_noise = NOISE_BLOCK_ENTRIES // max(noise_size, 1)
    return max(1, min(NOISE_BLOCK_STEPS, by_noise, by_rows))


def _project(W: np.ndarray, radius: float) -> np.ndarray:
    """Projection on the Frobenius ball of ``radius``; infinities land on it."""
    W = np.minimum(np.maximum(W, -radius), radius)  # a new array; NaN stays
    np.copyto(W, 0.0, where=np.isnan(W))
    scaled = W.ravel() / radius  # its squares cannot overflow
    norm = math.sqrt(float(np.dot(scaled, scaled))) * radius
    return W if norm <= radius else W * (radius / norm)


def dpsgd_logistic(
    Z: np.ndarray,
    Y: np.ndarray,
    *,
    C: float,
    sampling_rate: float,
    steps: int,
    noise_multiplier: float,
    max_grad_norm: float,
    learning_rate: float,
    source,
) -> tuple[np.ndarray, PoissonSubsampledDiscreteGaussianEvent]:
    """Train one-vs-rest logistic models jointly with DP-SGD, given its settings.

    A one-call form of :func:`run_dpsgd` for explicit settings (tests and
    experiments); :class:`~skdp.linear_model.DPLogisticRegression` plans
    them with :func:`plan_dpsgd`.

    Returns
    -------
    coef : ndarray of shape (n_models, d)
    event : PoissonSubsampledDiscreteGaussianEvent
        ``PoissonSubsampledDiscreteGaussianEvent(q, noise_multiplier, steps)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._dpsgd import dpsgd_logistic
    >>> from skdp.utils import check_random_source
    >>> Z = np.array([[0.6, 0.8], [-0.6, 0.8]] * 50)
    >>> Y = np.array([[1.0], [-1.0]] * 50)
    >>> coef, event = dpsgd_logistic(
    ...     Z, Y, C=1.0, sampling_rate=0.5, steps=20, noise_multiplier=1.0,
    ...     max_grad_norm=1.0, learning_rate=1.0, source=check_random_source(0))
    >>> coef.shape, event.steps
    ((1, 2), 20)
    """
    n, d = Z.shape
    row_norm = float(bounded_row_norms(Z).max(initial=0.0)) or 1.0
    plan = _dpsgd_plan(
        sampling_rate,
        noise_multiplier,
        steps,
        max_grad_norm,
        learning_rate,
        C,
        n,
        d,
        Y.shape[1],
        row_norm,
        None,
    )
    rows, spec = row_source(Z, Y), RowSpec(n_features=d)
    return run_dpsgd(rows, spec, plan, check_random_source(source)), plan.event
