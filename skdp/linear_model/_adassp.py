"""Sufficient-statistics perturbation for linear regression (AdaSSP, Wang 2018).

Ridge regression needs only the two sufficient statistics ``Z^T Z`` and
``Z^T t``. AdaSSP releases both with Gaussian noise, together with a noisy
smallest eigenvalue of ``Z^T Z`` that sets the ridge adaptively, and solves
the noisy normal equations (Y.-X. Wang, "Revisiting differentially private
linear regression: optimal and adaptive prediction & estimation in
unbounded domain", UAI 2018, Algorithm 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..accounting._events import ComposedEvent
from ..mechanisms import NoisePlan, add_noise, plan_gaussian
from ..mechanisms._additive import grid_gaussian_noise_multiplier
from ..utils._feasibility import check_magnitudes, check_memory

__all__ = ["AdaSSPPlan", "plan_adassp", "run_adassp", "run_adassp_on_sums"]

#: Failure probability of the high-probability bounds that set the ridge.
FAILURE_PROBABILITY = 0.05

#: Share of the budget (in zCDP terms: of ``1 / s**2``) spent on the smallest
#: eigenvalue; the rest is split evenly between ``Z^T Z`` and ``Z^T t``.
#: Wang's Algorithm 2 uses 1/3. ``python benchmarks/tune_erm_defaults.py
#: --part regression`` chose 0.02 on a validation split of UCI Adult's
#: training part (never a test split): one-hot features make ``Z^T Z``
#: singular, so the eigenvalue rarely lowers the ridge there, while on
#: well-conditioned data a small share already measures it to within a few
#: ``R**2``.
EIGENVALUE_SHARE = 0.02


@dataclass(frozen=True)
class AdaSSPPlan:
    """Every setting of one AdaSSP fit (public only).

    Attributes
    ----------
    eigenvalue_noise, gram_noise, moment_noise : NoisePlan
        Gaussian mechanisms on ``lambda_min(Z^T Z)`` (sensitivity ``R**2``),
        the diagonal and ``sqrt(2)`` times the strict upper triangle of
        ``Z^T Z`` (``sqrt(2) R**2``) and ``Z^T t`` (``2 R T``).
    alpha : float
        The user's ridge, added to the adaptive one.
    n_features : int
        Columns of ``Z``.
    event : ComposedEvent
        The three Gaussian events.
    """

    eigenvalue_noise: NoisePlan
    gram_noise: NoisePlan
    moment_noise: NoisePlan
    alpha: float
    n_features: int
    event: ComposedEvent


def plan_adassp(
    *,
    epsilon: float,
    delta: float,
    row_norm: float,
    target_bound: float,
    n_samples: int,
    n_features: int,
    alpha: float,
    eigenvalue_share: float | None = None,
) -> AdaSSPPlan:
    """Plan AdaSSP from public quantities; may raise.

    Parameters
    ----------
    epsilon, delta : float
        The fit's privacy; ``delta > 0``.
    row_norm : float
        ``R``: every row of ``Z`` has norm at most ``R``.
    target_bound : float
        ``T``: every target has ``|t| <= T``.
    n_samples : int
        ``n``, rows of ``Z`` (public): the released sums are at most ``n
        R**2`` and ``n R T`` in magnitude, which the noise grid must carry.
    n_features : int
        ``d``, columns of ``Z``.
    alpha : float
        Ridge added to the adaptive one (>= 0).
    eigenvalue_share : float or None, default=None
        Share ``w_1`` of the budget spent on the smallest eigenvalue; the
        others get ``(1 - w_1) / 2`` each. ``None``: ``EIGENVALUE_SHARE``.

    Returns
    -------
    plan : AdaSSPPlan

    Notes
    -----
    Neighbours replace one row ``(z, t)`` by ``(z', t')`` (replace one
    row, ``n`` public). Sensitivities, in L2:

    - ``lambda_min(Z^T Z)``: removing ``z'`` lowers every eigenvalue by at
      most ``||z'||**2`` and adding ``z`` raises it by at most ``||z||**2``
      (Weyl), so it moves by at most ``R**2``;
    - the vector of the diagonal of ``Z^T Z`` and ``sqrt(2)`` times its
      strict upper triangle: its norm is the Frobenius norm of the
      symmetric matrix, and that of ``z z^T - z' z'^T`` has square
      ``||z||**4 + ||z'||**4 - 2 (z.z')**2 <= 2 R**4``: ``sqrt(2) R**2``.
      Dividing the released off-diagonal entries by ``sqrt(2)`` afterwards
      (post-processing) leaves them ``sqrt(2)`` times less noise than the
      diagonal: the noise matrix is a scaled Gaussian orthogonal ensemble;
    - ``Z^T t``: ``||t z - t' z'|| <= 2 R T``.

    Each is released by the Gaussian mechanism. Gaussian mechanisms with
    multipliers ``s_i`` compose to one with multiplier ``(sum_i
    s_i**-2)**-1/2`` (their privacy-loss distributions are Gaussian and
    their means add), so ``s_i = s / sqrt(w_i)`` with shares ``w_i``
    summing to 1 and ``s`` the analytic-Gaussian multiplier of ``(epsilon,
    delta)`` (Balle & Wang 2018) gives exactly ``(epsilon, delta)``-DP.
    Wang splits evenly (``w_i = 1/3``); the ridge and the solve are
    post-processing.

    Examples
    --------
    >>> from skdp.linear_model._adassp import plan_adassp
    >>> plan = plan_adassp(epsilon=1.0, delta=1e-6, row_norm=1.0,
    ...                    target_bound=1.0, n_samples=100, n_features=3,
    ...                    alpha=0.0)
    >>> [p.sensitivity for p in (plan.eigenvalue_noise, plan.moment_noise)]
    [1.0, 2.0]
    >>> len(plan.event.events)
    3
    """
    # Gaussian mechanisms with multipliers s_i compose to one with
    # multiplier (sum_i s_i**-2) ** -1/2; shares w_i of s**-2 give
    # s_i = s / sqrt(w_i).
    if eigenvalue_share is None:
        eigenvalue_share = EIGENVALUE_SHARE
    shares = (eigenvalue_share, (1 - eigenvalue_share) / 2, (1 - eigenvalue_share) / 2)
    d = int(n_features)
    check_magnitudes(
        "AdaSSP",
        **{
            "R**2": row_norm**2,
            "R T": row_norm * target_bound,
            "n R**2": n_samples * row_norm**2,
            "n R T": n_samples * row_norm * target_bound,
        },
    )
    # The released Gram matrix is dense (noise on every entry) whether or
    # not Z is sparse: a 100,000-column TF-IDF matrix would need 480 GB, so
    # such a fit is refused here, before the charge.
    check_memory(
        8.0 * 6 * d * d,
        f"AdaSSP's {d} x {d} Gram matrix (dense even for sparse X: every entry "
        "gets noise)",
        "use fewer features, or method='gradient' or 'objective', which never "
        "form a d x d matrix on large data",
    )
    # Public bounds on the released values, for the noise grids to carry
    # them exactly: lambda_min, the diagonal of Z^T Z and sqrt(2) times its
    # off-diagonal entries are at most n R**2, the entries of Z^T t at most
    # n R T; twice that leaves room for the rounding of the sums.
    gram_bound = 2.0 * n_samples * row_norm**2
    moment_bound = 2.0 * n_samples * row_norm * target_bound
    parts = [
        (row_norm**2, 1, shares[0], gram_bound),
        (math.sqrt(2.0) * row_norm**2, d * (d + 1) // 2, shares[1], gram_bound),
        (2.0 * row_norm * target_bound, d, shares[2], moment_bound),
    ]
    total = grid_gaussian_noise_multiplier(epsilon, delta, parts)
    multipliers = [total / math.sqrt(w) for w in shares]
    eigenvalue = plan_gaussian(
        row_norm**2, 1, noise_multiplier=multipliers[0], magnitude=gram_bound
    )
    gram = plan_gaussian(
        math.sqrt(2.0) * row_norm**2,
        d * (d + 1) // 2,
        noise_multiplier=multipliers[1],
        magnitude=gram_bound,
    )
    moment = plan_gaussian(
        2.0 * row_norm * target_bound,
        d,
        noise_multiplier=multipliers[2],
        magnitude=moment_bound,
    )
    return AdaSSPPlan(
        eigenvalue_noise=eigenvalue,
        gram_noise=gram,
        moment_noise=moment,
        alpha=float(alpha),
        n_features=d,
        event=ComposedEvent((eigenvalue.event, gram.event, moment.event)),
    )


def _standard_deviation(plan: NoisePlan) -> float:
    """The noise's standard deviation in value units."""
    return plan.scale * plan.gamma


def noisy_gram_matrix(gram: np.ndarray, noise: NoisePlan, source) -> np.ndarray:
    """Release a symmetric matrix by the Gaussian mechanism on its Frobenius norm.

    The released vector is the diagonal and ``sqrt(2)`` times the strict
    upper triangle, whose Euclidean norm is the matrix's Frobenius norm (so
    ``noise``'s sensitivity is a Frobenius-norm bound); the off-diagonal
    entries are divided back by ``sqrt(2)``. The noise matrix is ``s /
    sqrt(2)`` times a Gaussian-orthogonal-ensemble matrix, ``s`` the
    diagonal's standard deviation.
    """
    d = gram.shape[0]
    rows, cols = np.triu_indices(d)
    weights = np.where(rows == cols, 1.0, math.sqrt(2.0))
    upper = add_noise(noise, gram[rows, cols] * weights, source) / weights
    noisy = np.zeros((d, d))
    noisy[rows, cols] = upper
    noisy[cols, rows] = upper
    return noisy


def _gram_and_moment(X, y, spec):
    """``Z^T Z`` (dense) and ``Z^T t`` of a block's bounded rows."""
    Z, t = spec.rows(X), spec.targets(y)[:, 0]
    gram = Z.T @ Z
    # A CSR Z gives a sparse Gram matrix; the plan has checked that its dense
    # d x d form (noise makes every entry nonzero) fits in memory.
    gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
    return gram, np.asarray(Z.T @ t).ravel()


def run_adassp(rows, spec, plan: AdaSSPPlan, source) -> np.ndarray:
    """Release the coefficients ``v`` of a ridge fit of the targets on the rows.

    ``rows`` is a :class:`~skdp.utils._row_source.RowSource` and ``spec``
    its :class:`~skdp.linear_model._rows.RowSpec` (one target column):
    ``Z^T Z`` and ``Z^T t`` are one block sum, in memory or on dask, then
    :func:`run_adassp_on_sums` releases the model.

    Returns
    -------
    coef : ndarray of shape (d,)

    Notes
    -----
    With ``rho = 0.05`` and the noise standard deviations ``s_1`` (the
    eigenvalue) and ``s_2`` (the Gram matrix):

    1. ``lambda_min`` is released with noise and lowered to a bound that
       holds with probability ``1 - rho / 2``:
       ``l = max(0, noisy - s_1 sqrt(2 log(2 / rho)))``;
    2. the Gram matrix's noise ``E`` is ``s_2 / sqrt(2)`` times a matrix
       ``W`` of the Gaussian orthogonal ensemble (diagonal variance
       ``s_2**2``, off-diagonal ``s_2**2 / 2``; see :func:`plan_adassp`).
       ``E lambda_max(W) <= 2 sqrt(d)`` (Davidson & Szarek 2001, Gordon's
       inequality) and ``lambda_max(E)`` is ``s_2``-Lipschitz in the
       standard normal draws, so by Gaussian concentration on both ends of
       the spectrum ``||E|| <= s_2 (sqrt(2 d) + sqrt(2 log(4 / rho)))``
       with probability ``1 - rho / 2``. Wang's Algorithm 2 uses the
       looser union bound ``s_2 sqrt(2 d log(2 d**2 / rho))`` on
       equal-variance noise. The ridge is the bound minus ``l``, if
       positive, plus the user's ``alpha``;
    3. ``v`` solves the noisy normal equations. Their matrix is symmetric
       but may be indefinite (noise): its eigenvalues are raised to at
       least the ridge (post-processing) before solving.

    The probabilities concern accuracy only; privacy holds always.
    """
    gram, moment = rows.block_sum(_gram_and_moment, spec)
    return run_adassp_on_sums(gram, moment, plan, source)


def run_adassp_on_sums(gram, moment, plan: AdaSSPPlan, source) -> np.ndarray:
    """:func:`run_adassp` from the sums ``Z^T Z`` and ``Z^T t``."""
    d = plan.n_features
    smallest = float(np.linalg.eigvalsh(gram)[0])
    noisy_smallest = float(add_noise(plan.eigenvalue_noise, [smallest], source)[0])
    noisy_gram = noisy_gram_matrix(gram, plan.gram_noise, source)
    noisy_moment = add_noise(plan.moment_noise, moment, source)

    rho = FAILURE_PROBABILITY
    s1 = _standard_deviation(plan.eigenvalue_noise)
    s2 = _standard_deviation(plan.gram_noise)
    lower = max(0.0, noisy_smallest - s1 * math.sqrt(2.0 * math.log(2.0 / rho)))
    spread = s2 * (math.sqrt(2.0 * d) + math.sqrt(2.0 * math.log(4.0 / rho)))
    ridge = max(0.0, spread - lower) + plan.alpha
    values, vectors = np.linalg.eigh(noisy_gram + ridge * np.eye(d))
    floor = max(ridge, np.finfo(float).tiny)
    values = np.maximum(values, floor)
    coef = vectors @ ((vectors.T @ noisy_moment) / values)
    return np.where(np.isfinite(coef), coef, 0.0)
