"""The private linear models on dask arrays and DataFrames.

What runs where
---------------
The **client** (the process that calls ``fit``) validates the input with one
map-reduce pass that returns public facts only (every value finite, labels
within the declared classes, the row-norm and target bounds only when the
user has not declared them, with a
:class:`~skdp.exceptions.PrivacyLeakWarning` as in memory), plans the fit
from public quantities (``n_samples`` and ``n_features`` come from the
collection's shape), charges the budget once, draws every noise vector, and
runs the optimiser. The **workers** only compute sums over their row blocks
(:func:`skdp.utils._dask.sum_over_row_blocks`): each block is bounded to
``data_norm`` and given its intercept column there, exactly as the in-memory
fit does it to the whole array, and returns

* ``'objective'`` and ``'output'``: the loss and its gradient at a point,
  the Hessian (or Hessian-vector products beyond ``MAX_DENSE_HESSIAN``
  coefficients) — the same certified solver (:func:`~skdp.linear_model.
  _newton.solve_problem`) then runs in the client on these sums, so the
  released model equals the in-memory one up to the solver's rounding
  (same seed, same noise);
* ``'gradient'``: the sum of the per-row gradients clipped to
  ``max_grad_norm`` over **all** rows: full-batch noisy gradient descent
  with Nesterov's momentum, ``max_iter`` steps (:func:`plan_full_batch_gd`,
  :func:`run_full_batch_gd`), a documented variant of DP-SGD, because
  Poisson-sampled DP-SGD needs one task round per (small) step;
* ``'adassp'`` (:class:`~skdp.linear_model.DPLinearRegression`): ``Z^T Z``
  and ``Z^T t``.

Only these sums (``d``, ``K d`` or ``d**2`` numbers) travel back; the data
never leaves the workers. A worker failure after the charge surfaces as
:class:`~skdp.exceptions.ChargedFitError`: the spend stands (the noise may
already have been drawn) and nothing is released.

References
----------
.. [BST14] R. Bassily, A. Smith, A. Thakurta, "Private Empirical Risk
   Minimization: Efficient Algorithms and Tight Error Bounds", FOCS 2014
   (noisy gradient descent, Algorithm 1, here full-batch).
.. [BW18] B. Balle, Y.-X. Wang, "Improving the Gaussian Mechanism for
   Differential Privacy: Analytical Calibration and Optimal Denoising",
   ICML 2018 (the composed Gaussian's exact profile).
.. [N83] Y. Nesterov, "A method of solving a convex programming problem with
   convergence rate O(1/k^2)", Soviet Math. Doklady 27, 1983; A. Beck,
   M. Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm", SIAM J.
   Imaging Sciences 2(1), 2009 (the momentum ``t / (t + 3)``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..accounting._calibration import calibrate_parameter
from ..accounting._events import SelfComposedEvent
from ..mechanisms import NoisePlan, add_noise, plan_gaussian
from ..utils._dask import as_row_blocks, sum_over_row_blocks
from ..utils._privacy import warn_data_derived
from ._dpsgd import MAX_STEPS, _project, clipped_gradient_sum, default_learning_rate
from ._feasibility import check_magnitudes
from ._losses import LogisticLoss, MarginLoss
from ._newton import (
    TREE_FAN_IN,
    _total,
    blocked_row_sum,
    gradient_block_size,
    single_hessian,
    solve_problem,
)
from ._rows import row_norms, scale_rows

__all__ = [
    "FULL_BATCH_GD",
    "FullBatchGDPlan",
    "RowBlocks",
    "plan_full_batch_gd",
    "run_full_batch_gd",
]

_TINY = np.finfo(float).tiny

#: The name of the gradient variant that runs on dask input.
FULL_BATCH_GD = "full_batch_gd"


# --------------------------------------------------------------- row blocks
@dataclass(frozen=True)
class _BlockSpec:
    """How a worker turns a raw block into the rows ``Z`` and targets ``Y``.

    Public settings only: the bound, the intercept column, the classes or the
    target bounds.
    """

    data_norm: float | None
    intercept: float
    classes: Any = None
    bounds: tuple[float, float] | None = None

    def rows(self, X, y):
        """The block's rows bounded to ``data_norm``, with the intercept column.

        The same rows as the in-memory fit's ``bound_rows`` and
        ``with_constant_column``, built in one array: every pass of a solver
        rebuilds them, so copies count. Rows of a narrower dtype than
        float64 cannot overflow when squared in float64 and take the direct
        norm; float64 rows take the overflow-safe ``row_norms``.
        """
        X = np.asarray(X)
        n, d = X.shape
        Z = np.empty((n, d + (1 if self.intercept else 0)))
        Z[:, :d] = X
        if self.data_norm is not None:
            if X.dtype == np.float64:
                norms = row_norms(X)
            else:
                norms = np.sqrt(np.einsum("ij,ij->i", Z[:, :d], Z[:, :d]))
            factor = np.minimum(1.0, self.data_norm / np.maximum(norms, _TINY))
            Z[:, :d] *= factor[:, None]
        if self.intercept:
            Z[:, d] = self.intercept
        y = np.asarray(y).ravel()
        if self.bounds is not None:
            low, high = self.bounds
            middle, half = (low + high) / 2.0, (high - low) / 2.0
            t = (np.clip(y.astype(np.float64), low, high) - middle) / half
            return Z, np.clip(t, -1.0, 1.0)[:, None]
        classes = self.classes
        if classes.size == 2:
            return Z, np.where(y == classes[1], 1.0, -1.0)[:, None]
        return Z, np.where(y[:, None] == classes[None, :], 1.0, -1.0)


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """The process's thread pools, found once (a scan costs ~40 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _on_rows(X, y, spec, func, *args):
    # One BLAS thread per task: dask runs the blocks in parallel, and the
    # blocks' products are too small for threads to pay (on a loaded
    # machine they cost 100x; the in-memory fit does the same).
    with _blas_controller().limit(limits=1, user_api="blas"):
        Z, Y = spec.rows(X, y)
        return func(Z, Y, *args)


@dataclass(frozen=True, eq=False)
class _TargetShape:
    """Stands for the target matrix ``Y`` of a dask fit: only its shape."""

    shape: tuple[int, int]


@dataclass(frozen=True, eq=False)
class RowBlocks:
    """The rows ``Z`` of a fit on a dask collection, kept on the workers.

    Has the ``shape`` of ``Z`` (intercept column included), and a
    :meth:`solve` that :func:`~skdp.linear_model._newton.solve` calls.
    """

    X: Any
    y: Any
    spec: _BlockSpec
    n_samples: int
    n_coef: int
    n_outputs: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_samples, self.n_coef)

    def sum(self, func, *args):
        """``sum(func(Z_block, Y_block, *args))`` over the row blocks."""
        # The fan-in is the one :func:`~skdp.linear_model._newton.
        # summation_terms` counts in the certified gradient's rounding bound.
        return sum_over_row_blocks(
            _on_rows, self.X, self.y, self.spec, func, *args, split_every=TREE_FAN_IN
        )

    def solve(self, plan, linear=None, loss=None) -> np.ndarray:
        """:func:`~skdp.linear_model._newton.solve` with worker-side sums."""
        d = self.n_coef
        single = single_hessian(plan)
        if loss is None and self.n_outputs > 1:  # softmax
            shape = (self.n_outputs, d)
            linear = np.zeros(shape) if linear is None else np.asarray(linear, float)
            problem = _DaskSoftmaxProblem(self, plan.alpha, plan.C, linear, single)
            return solve_problem(problem, plan, linear, d).reshape(shape)
        loss = LogisticLoss() if loss is None else loss
        linear = np.zeros((self.n_outputs, d)) if linear is None else linear
        linear = np.reshape(np.asarray(linear, dtype=float), (self.n_outputs, d))
        coef = []
        for k in range(self.n_outputs):
            problem = _DaskMarginProblem(
                self, k, loss, plan.alpha, plan.C, linear[k], single
            )
            coef.append(solve_problem(problem, plan, linear[k], d))
        return np.vstack(coef)

    def gram_and_moment(self):
        """``Z^T Z`` and ``Z^T t`` (one model), summed over the blocks."""
        return self.sum(_gram_and_moment)


def _gram_and_moment(Z, Y):
    return Z.T @ Z, Z.T @ Y[:, 0]


# ------------------------------------------------ the solver's sums, per block
def _margin_value_gradient(Z, Y, k, loss, w, block):
    # The certified gradient: summed in row blocks of ``block`` rows
    # (``blocked_row_sum``), as its rounding bound (``summation_terms``) assumes.
    t = Y[:, k]
    margins = Z @ w
    slope = loss.slope(margins, t)
    gradient = blocked_row_sum(lambda rows: Z[rows].T @ slope[rows], len(Z), block)
    return loss.value(margins, t).sum(), gradient


def _margin_hessian(Z, Y, k, loss, w, C, single):
    second = loss.second(Z @ w, Y[:, k])
    Zs = Z.astype(np.float32) if single else Z
    weighted = scale_rows(Zs, np.sqrt(C * second).astype(Zs.dtype))
    return (weighted.T @ weighted).astype(np.float64)


def _margin_product(Z, Y, k, loss, w, C, v):
    return Z.T @ ((C * loss.second(Z @ w, Y[:, k])) * (Z @ v))


def _margin_diagonal(Z, Y, k, loss, w, C):
    return (C * loss.second(Z @ w, Y[:, k])) @ (Z * Z)


def _softmax_proba(Z, W):
    logits = Z @ W.T
    log_norm = logsumexp(logits, axis=1)
    return logits, log_norm, np.exp(logits - log_norm[:, None])


def _softmax_value_gradient(Z, Y, W, block):
    # The certified gradient, blocked as in ``_margin_value_gradient``.
    Y = (Y > 0).astype(float)
    logits, log_norm, proba = _softmax_proba(Z, W)
    loss = (log_norm - (logits * Y).sum(axis=1)).sum()
    residual = proba - Y
    gradient = blocked_row_sum(lambda rows: residual[rows].T @ Z[rows], len(Z), block)
    return loss, gradient


def _softmax_hessian(Z, Y, W, C, single):
    K, d = W.shape
    _, _, proba = _softmax_proba(Z, W)
    Zs = Z.astype(np.float32) if single else Z
    C_proba = (C * proba).astype(Zs.dtype)
    hessian = np.empty((K * d, K * d))
    for k in range(K):
        for m in range(k, K):
            weights = C_proba[:, k] * ((k == m) - proba[:, m].astype(Zs.dtype))
            block = (Zs.T @ scale_rows(Zs, weights)).astype(np.float64)
            hessian[k * d : (k + 1) * d, m * d : (m + 1) * d] = block
            hessian[m * d : (m + 1) * d, k * d : (k + 1) * d] = block.T
    return hessian


def _softmax_product(Z, Y, W, V):
    _, _, proba = _softmax_proba(Z, W)
    mixed = proba * (Z @ V.T)
    mixed -= proba * mixed.sum(axis=1, keepdims=True)
    return mixed.T @ Z


def _softmax_diagonal(Z, Y, W):
    _, _, proba = _softmax_proba(Z, W)
    return (proba * (1.0 - proba)).T @ (Z * Z)


class _DaskMarginProblem:
    """``_MarginProblem`` of :mod:`~skdp.linear_model._newton`, summed on workers.

    The cache of a point is the point and its loss gradient (one pass gives
    both); the Hessian-free interface's "curvature" is the point itself.
    """

    def __init__(self, rows, k, loss, alpha, C, linear, single):
        self.rows, self.k, self.loss = rows, k, loss
        self.alpha, self.C, self.linear = alpha, C, np.ravel(linear)
        self.single = single
        self.shape = (rows.n_coef,)

    def value(self, w):
        loss_sum, gradient = self.rows.sum(
            _margin_value_gradient,
            self.k,
            self.loss,
            w,
            gradient_block_size(self.rows.n_samples),
        )
        terms = (0.5 * self.alpha * (w @ w), self.C * float(loss_sum))
        return _total(terms, self.linear @ w) + (self.C * gradient,)

    def gradient(self, w, cache):
        return self.alpha * w + cache + self.linear

    def hessian(self, w, cache):
        hessian = self.rows.sum(
            _margin_hessian, self.k, self.loss, w, self.C, self.single
        )
        hessian.flat[:: hessian.shape[0] + 1] += self.alpha
        return hessian

    def curvature(self, w, cache):
        return w

    def hessian_product(self, w, v):
        product = self.rows.sum(_margin_product, self.k, self.loss, w, self.C, v)
        return self.alpha * v + product

    def hessian_diagonal(self, w):
        return self.alpha + self.rows.sum(
            _margin_diagonal, self.k, self.loss, w, self.C
        )


class _DaskSoftmaxProblem:
    """``_SoftmaxProblem`` of :mod:`~skdp.linear_model._newton`, on workers."""

    def __init__(self, rows, alpha, C, linear, single):
        self.rows, self.alpha, self.C = rows, alpha, C
        self.linear = np.ravel(linear)
        self.single = single
        self.shape = (rows.n_outputs, rows.n_coef)

    def value(self, w):
        W = w.reshape(self.shape)
        loss_sum, gradient = self.rows.sum(
            _softmax_value_gradient, W, gradient_block_size(self.rows.n_samples)
        )
        terms = (0.5 * self.alpha * (w @ w), self.C * float(loss_sum))
        return _total(terms, self.linear @ w) + (self.C * np.ravel(gradient),)

    def gradient(self, w, cache):
        return self.alpha * w + cache + self.linear

    def hessian(self, w, cache):
        hessian = self.rows.sum(
            _softmax_hessian, w.reshape(self.shape), self.C, self.single
        )
        hessian.flat[:: hessian.shape[0] + 1] += self.alpha
        return hessian

    def curvature(self, w, cache):
        return w

    def hessian_product(self, w, v):
        W, V = w.reshape(self.shape), v.reshape(self.shape)
        return self.alpha * v + self.C * np.ravel(self.rows.sum(_softmax_product, W, V))

    def hessian_diagonal(self, w):
        diagonal = self.rows.sum(_softmax_diagonal, w.reshape(self.shape))
        return self.alpha + self.C * np.ravel(diagonal)


# ------------------------------------------------------------- validation
def _block_facts(X, y, classes, read_norm, read_labels, read_range):
    """Public facts of one raw block (plus what the user chose to read)."""
    X = np.asarray(X)
    y = np.asarray(y).ravel()
    finite = bool(np.all(np.isfinite(X)))
    if y.dtype.kind in "fc":
        finite = finite and bool(np.all(np.isfinite(y)))
    norm = float(row_norms(X.astype(np.float64)).max(initial=0.0)) if read_norm else 0.0
    labels_ok = True if classes is None else bool(np.all(np.isin(y, classes)))
    labels = np.unique(y) if read_labels else None
    if read_range and y.size:
        y_range = (float(np.min(y)), float(np.max(y)))
    else:
        y_range = None
    return finite, norm, labels_ok, labels, y_range


def _validation_pass(X, y, classes, read_norm, read_labels, read_range):
    """One map-reduce pass; only the combined facts return to the client."""
    import dask

    x_blocks = X.to_delayed(optimize_graph=False).ravel()
    y_blocks = y.to_delayed(optimize_graph=False).ravel()
    parts = [
        dask.delayed(_block_facts)(xb, yb, classes, read_norm, read_labels, read_range)
        for xb, yb in zip(x_blocks, y_blocks)
    ]
    combine = dask.delayed(_combine_facts, pure=True)
    while len(parts) > 1:
        parts = [combine(*parts[i : i + 8]) for i in range(0, len(parts), 8)]
    (facts,) = dask.compute(parts[0])
    return facts


def _combine_facts(*facts):
    finite = all(f[0] for f in facts)
    norm = max(f[1] for f in facts)
    labels_ok = all(f[2] for f in facts)
    labels = None
    if facts[0][3] is not None:
        labels = np.unique(np.concatenate([f[3] for f in facts]))
    ranges = [f[4] for f in facts if f[4] is not None]
    y_range = None
    if ranges:
        y_range = (min(r[0] for r in ranges), max(r[1] for r in ranges))
    return finite, norm, labels_ok, labels, y_range


@dataclass(frozen=True)
class DaskInput:
    """What :func:`prepare_dask_input` found, before the charge."""

    rows: RowBlocks
    targets: _TargetShape
    classes: np.ndarray | None
    bounds: tuple[float, float] | None
    data_norm: float
    intercept: float
    n_features: int


def _as_dask_pair(estimator, X, y):
    """Row-chunked dask arrays of ``X`` and ``y``; checks from metadata only."""
    name = type(estimator).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    columns = getattr(X, "columns", None)
    X, y = as_row_blocks(X, y)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D dask array or DataFrame for X, got {X.ndim}D.")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape}.")
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if any(math.isnan(c) for c in y.chunks[0]):
        y = y.compute_chunk_sizes()
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk({0: X.chunks[0]})
    if 0 in X.chunks[0] and X.shape[0] > 0:
        # Empty row blocks dropped (public chunk sizes): the tree sum then
        # has at most n_samples leaves, as the rounding bound of the
        # certified gradient (``_newton.summation_terms``) counts.
        nonempty = tuple(c for c in X.chunks[0] if c)
        X, y = X.rechunk({0: nonempty}), y.rechunk({0: nonempty})
    if X.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} needs numeric X; got a dask collection of dtype {X.dtype}."
        )
    if estimator._y_numeric and y.dtype.kind not in "biuf":
        raise ValueError(f"{name} needs numeric y; got dtype {y.dtype}.")
    n_samples, n_features = X.shape
    if y.shape[0] != n_samples:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{n_samples}, {y.shape[0]}]"
        )
    if n_samples < 1:
        raise ValueError(
            f"Found array with 0 sample(s) while a minimum of 1 is required by {name}."
        )
    if n_features < 1:
        raise ValueError(
            f"Found array with 0 feature(s) while a minimum of 1 is required by {name}."
        )
    return X, y, columns


def _set_input_features(estimator, n_features, columns) -> None:
    """``n_features_in_`` and ``feature_names_in_``, as ``validate_data`` does."""
    estimator.n_features_in_ = int(n_features)
    if (
        columns is not None
        and len(columns)
        and all(isinstance(c, str) for c in columns)
    ):
        estimator.feature_names_in_ = np.asarray(list(columns), dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def _declared_classes(classes, name) -> np.ndarray:
    declared = np.unique(np.asarray(classes))
    if declared.size < 2:
        raise ValueError(
            f"classes must hold at least 2 distinct labels, got {classes!r}."
        )
    return declared


def prepare_dask_input(estimator, X, y) -> DaskInput:
    """Validate a dask fit's input before the charge; one pass over the data.

    The pass returns only public facts (all values finite; every label
    within the declared classes) and, when the user has not declared them,
    the row-norm bound, the label set or the target range, each with a
    :class:`~skdp.exceptions.PrivacyLeakWarning`, exactly as the in-memory
    fit reads them. Everything that can raise raises here.
    """
    from sklearn.utils.multiclass import check_classification_targets

    name = type(estimator).__name__
    X, y, columns = _as_dask_pair(estimator, X, y)
    n_samples, n_features = (int(s) for s in X.shape)
    regression = estimator._y_numeric
    declared = None
    if not regression and estimator.classes is not None:
        declared = _declared_classes(estimator.classes, name)
    read_labels = not regression and declared is None
    read_range = regression and estimator.y_bounds is None
    read_norm = estimator.data_norm is None
    finite, norm, labels_ok, labels, y_range = _validation_pass(
        X, y, declared, read_norm, read_labels, read_range
    )
    if not finite:
        raise ValueError(
            f"Input contains NaN or infinity; {name} needs finite X and y."
        )
    _set_input_features(estimator, n_features, columns)
    classes = bounds = None
    if regression:
        bounds = estimator._target_bounds(y_range)
    elif declared is not None:
        if not labels_ok:
            raise ValueError(
                f"y contains labels that are not in classes={list(declared)!r}; "
                "classes must list every possible label."
            )
        classes = declared
    else:
        check_classification_targets(labels)
        warn_data_derived("classes")
        if labels.size < 2:
            raise ValueError(
                f"{name} needs samples of at least 2 classes in the data, but "
                "the data contains only one class. Pass classes=[...] to fit anyway."
            )
        classes = labels
    if read_norm:
        warn_data_derived("data_norm")
        if not np.isfinite(norm):
            raise ValueError(
                "data_norm=None reads the largest row norm from X, but a row "
                "norm overflows float64; pass data_norm, a public bound."
            )
        data_norm = norm if norm > 0 else 1.0
    else:
        data_norm = float(estimator.data_norm)
    intercept = float(estimator.intercept_scaling) if estimator.fit_intercept else 0.0
    spec = _BlockSpec(
        data_norm=None if read_norm else data_norm,
        intercept=intercept,
        classes=classes,
        bounds=bounds,
    )
    n_outputs = 1 if regression or classes.size == 2 else int(classes.size)
    n_coef = n_features + (1 if intercept else 0)
    rows = RowBlocks(X, y, spec, n_samples, n_coef, n_outputs)
    return DaskInput(
        rows=rows,
        targets=_TargetShape((n_samples, n_outputs)),
        classes=classes,
        bounds=bounds,
        data_norm=data_norm,
        intercept=intercept,
        n_features=n_features,
    )


# ------------------------------------------------ full-batch noisy gradient descent
@dataclass(frozen=True)
class FullBatchGDPlan:
    """Every setting of one full-batch noisy gradient descent (public only).

    Attributes
    ----------
    steps : int
        ``T``, one pass over all rows each.
    noise_multiplier : float
        Noise standard deviation over the clipped sum's replace-one
        sensitivity ``2 max_grad_norm`` (the ``GaussianEvent``'s parameter).
    max_grad_norm, learning_rate, C : float
    n_samples : int
    noise : NoisePlan
        The per-step Gaussian mechanism on the clipped gradient sum
        (sensitivity ``2 max_grad_norm``, ``n_models * d`` coordinates).
    radius : float
        Iterates are projected on the ball of this radius (post-processing).
    event : SelfComposedEvent
        ``SelfComposedEvent(GaussianEvent(noise_multiplier), steps)``.
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
    event: SelfComposedEvent
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

    The variant of ``method='gradient'`` that runs on dask input: ``T =
    steps`` steps, each releasing the sum over **all** rows of the per-row
    loss gradients clipped to ``c = max_grad_norm`` plus Gaussian noise.

    Notes
    -----
    *Sensitivity.* Under replace-one, the clipped sum ``S(W) = sum_i
    clip_c(g_i(W))`` of two neighbours differs in one term, so ``||S_D(W) -
    S_D'(W)|| <= 2 c`` at every ``W``. (DP-SGD's
    ``PoissonSubsampledGaussianEvent`` states its noise relative to ``c``
    and lets the accountant account for the ``2 c`` of replace-one; here
    the event is a plain Gaussian one, so its multiplier is relative to
    ``2 c``.)

    *Mechanism.* A step adds discrete Gaussian noise on a grid of spacing
    ``gamma`` (coarse enough to carry ``|S| <= n c`` exactly) with
    standard deviation ``s (2 c + sqrt(p) gamma)``, ``p =
    n_models * d`` coordinates (:func:`~skdp.mechanisms.plan_gaussian`, the
    ``sqrt(p) gamma`` covering the rounding to the grid): a Gaussian
    mechanism of noise multiplier ``s``, ``GaussianEvent(s)``. The step's
    point ``W_t`` is a function of the previous releases only (the update,
    the regulariser's gradient, the projection are post-processing), so the
    ``T`` steps are an adaptive composition of ``T`` such mechanisms:
    ``SelfComposedEvent(GaussianEvent(s), T)``, which the accountant
    composes exactly (its privacy loss is that of one Gaussian mechanism of
    multiplier ``s / sqrt(T)``). ``s`` is the smallest for which the
    default accountant (replace one row) gives ``(epsilon, delta)``
    (:func:`~skdp.accounting.calibrate_parameter`, on the safe side).

    *Defaults.* ``c = R sqrt(n_models) l'(0)`` as DP-SGD's. The step size
    is ``1 / (beta R**2)``, the inverse of the worst-case smoothness of the
    mean loss (``beta`` the loss's curvature bound), the step of
    Nesterov's method (see :func:`run_full_batch_gd`), capped like DP-SGD's
    so that the accumulated noise of a margin stays below the loss's
    ``margin_noise_std`` (:func:`~skdp.linear_model._dpsgd.
    default_learning_rate` with ``step_factor=1``, sampling rate 1 and the
    step's noise standard deviation). All public. With the noise of a step
    about ``2 s c / n`` on the mean gradient, the optimisation, not the
    noise, limits the accuracy at large ``n``: Nesterov's method is within
    ``2 L ||W*||**2 / (T + 1)**2`` of the optimum after ``T`` exact steps,
    hence the default ``T = max_iter = 100``.
    """
    steps = int(steps)
    if steps > MAX_STEPS:
        raise ValueError(f"{steps} full-batch steps is more than {MAX_STEPS}.")
    check_magnitudes(
        "full-batch gradient descent",
        C=C,
        R=row_norm,
        **{"n_samples * C * R": n_samples * C * row_norm},
    )
    shape = LogisticLoss() if loss is None else loss
    clip = max_grad_norm
    if clip is None:
        clip = row_norm * math.sqrt(n_models) * shape.clip_scale
    clip = float(clip)

    size = n_models * n_features

    def event(multiplier):
        # The discrete Gaussian that runs (sensitivity 2c: replace one row).
        grid = plan_gaussian(2.0 * clip, size, noise_multiplier=multiplier).event
        return SelfComposedEvent(grid, steps)

    noise_multiplier = calibrate_parameter(
        event,
        epsilon,
        delta,
        increasing=False,
        bracket=(0.5 * math.sqrt(steps), 2.0 * math.sqrt(steps)),
    )
    # Every row adds at most c to each coordinate of the clipped sum, so
    # |S| <= n c: the noise grid must carry that (twice it leaves room for
    # the rounding of the sum), or a large n would be clipped.
    noise = plan_gaussian(
        2.0 * clip,
        n_models * n_features,
        noise_multiplier=noise_multiplier,
        magnitude=2.0 * n_samples * clip,
    )
    if learning_rate is None:
        learning_rate = default_learning_rate(
            n_samples=n_samples,
            sampling_rate=1.0,
            steps=steps,
            noise_multiplier=noise.scale * noise.gamma / clip,
            max_grad_norm=clip,
            row_norm=row_norm,
            C=C,
            curvature=shape.curvature,
            step_factor=1.0,
            margin_noise_std=shape.margin_noise_std,
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
        event=event(noise_multiplier),
        loss=loss,
    )


def _clipped_sum(Z, Y, W, clip, loss):
    return clipped_gradient_sum(Z, Y, W, clip, loss)


def run_full_batch_gd(rows, plan: FullBatchGDPlan, source) -> np.ndarray:
    """Run a planned full-batch noisy gradient descent; the last iterate.

    ``rows`` is a :class:`RowBlocks` (each step is one map-reduce of the
    clipped gradient sums over the row blocks) or, for tests, a pair
    ``(Z, Y)`` of in-memory arrays. Step ``t`` (from 0) releases the noisy
    clipped sum ``S_t`` at the look-ahead point ``V_t`` (``V_0 = 0``) and
    sets ``W_{t+1} = project(V_t - lr (S_t / n + V_t / (n C)))``, ``V_{t+1}
    = W_{t+1} + t / (t + 3) (W_{t+1} - W_t)``: Nesterov's accelerated
    gradient method for smooth convex functions (Nesterov 1983; the
    momentum of Beck & Teboulle's FISTA), post-processing of the released
    sums. The noise is drawn in the client.
    """
    if isinstance(rows, RowBlocks):
        n_models, d = rows.n_outputs, rows.n_coef

        def clipped(W):
            return rows.sum(_clipped_sum, W, plan.max_grad_norm, plan.loss)

    else:
        Z, Y = rows
        n_models, d = Y.shape[1], Z.shape[1]

        def clipped(W):
            return _clipped_sum(Z, Y, W, plan.max_grad_norm, plan.loss)

    n = plan.n_samples
    W = np.zeros((n_models, d))
    V = W  # the point where the gradient is taken (Nesterov's look-ahead)
    for step in range(plan.steps):
        noisy_sum = add_noise(plan.noise, clipped(V), source)
        gradient = noisy_sum / n + V / (n * plan.C)
        W_next = _project(V - plan.learning_rate * gradient, plan.radius)
        V = W_next + (step / (step + 3.0)) * (W_next - W)
        W = W_next
    return W
