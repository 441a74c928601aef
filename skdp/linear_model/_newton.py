"""Exact minimisers of the regularised logistic and softmax objectives.

Objective and output perturbation are private only for the *exact*
minimiser of a strongly convex objective, so both solve

.. math::

    J(w) = \\frac{\\alpha}{2} \\|w\\|^2 + C \\sum_i \\ell(w; z_i, y_i)
           + b^T w

to machine precision with Newton's method (:func:`minimize_loss`), for the
binary logistic loss ``l = log(1 + exp(-y z.w))`` and for the multinomial
(softmax) loss ``l = logsumexp(W z) - (W z)_y``: a Cholesky solve of the
Hessian per step and a backtracking (Armijo) line search, which makes the
method globally convergent on these strongly convex functions and
quadratically convergent near the optimum. Once a step cuts the gradient
norm ten-fold the Hessian is kept (its factor reused) until progress slows,
and it is formed in single precision: neither changes the fixed point,
which only the
double-precision gradient determines.

Beyond ``MAX_DENSE_HESSIAN`` coefficients (a 100,000-column TF-IDF
matrix would need an 80 GB Hessian) the plan picks a Hessian-free
truncated Newton method instead (``_newton_cg``): each step solves the
Newton system by preconditioned conjugate gradients with Hessian-vector
products ``alpha v + C Z^T (D (Z v))``, one pass over the rows each, so
memory is a few vectors of ``K d`` numbers beside one row block's
temporaries. Both solvers stop on the same floating-point certificate
(:func:`solve_rows`), so the guarantee does not depend on which one ran.

The work is bounded from public quantities (:meth:`SolverPlan.work_bound`):
Newton reads the rows at most ``PASSES_PER_STEP * max_iter`` times in all
before the accelerated-gradient fallback, whose step count is proven, takes
over; the plan refuses a bound beyond
:func:`~skdp.utils._feasibility.max_work` before the charge.

The solver reads the data only through the problems of
:mod:`skdp.linear_model._problems`, sums over the row blocks of a
:class:`~skdp.utils._row_source.RowSource`: rows in memory (dense or CSR)
or in a dask collection, with bitwise the same sums, so the released model
does not depend on where the rows are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ..utils._row_source import TREE_FAN_IN, canonical_block_rows, row_source
from ._losses import LogisticLoss, MarginLoss
from ._problems import MarginProblem, SoftmaxProblem, margin_terms
from ._rows import RowSpec, row_norms

__all__ = [
    "MAX_DENSE_HESSIAN",
    "NewtonResult",
    "SolverPlan",
    "minimize_loss",
    "plan_solver",
    "solve",
    "solve_rows",
    "summation_terms",
]

# Armijo constant and step shrink factor of the backtracking line search.
_ARMIJO = 1e-4
_SHRINK = 0.5
_MAX_HALVINGS = 60
_ROUNDING = 16 * np.finfo(float).eps
# Keep the previous Hessian while each step still cuts the gradient norm by
# this factor (the iteration is then already in its fast phase).
_REUSE_BELOW = 0.1


@dataclass(frozen=True)
class NewtonResult:
    """Solution of :func:`minimize_loss`.

    Attributes
    ----------
    coef : ndarray of shape (d,) or (n_classes, d)
    n_iter : int
        Newton steps taken.
    gradient_norm : float
        ``||grad J(coef)||_2`` at the returned point. ``J`` is
        ``alpha``-strongly convex, so the exact minimiser is within
        ``gradient_norm / alpha`` of ``coef``.
    converged : bool
        Whether ``gradient_norm <= tol`` was reached.
    """

    coef: np.ndarray
    n_iter: int
    gradient_norm: float
    converged: bool


def summation_terms(
    n_samples: int, block_size: int | None = None, fan_in: int = TREE_FAN_IN
) -> int:
    """``T``: most rounding errors a row's term meets in the gradient sum.

    Public: a function of ``n``, the block size ``B``
    (:func:`~skdp.utils._row_source.canonical_block_rows` by default) and
    the tree's fan-in ``f`` only. ``T = min(n, min(B, n) + (f - 1) L)``
    with ``L = ceil(log_f k)`` the number of levels of a fan-in ``f`` tree
    over the ``k = ceil(n / B)`` blocks.

    Notes
    -----
    Higham (2002) Lemma 3.1: a product of ``T`` factors ``(1 + delta_i)``,
    ``|delta_i| <= u``, is ``1 + theta`` with ``|theta| <= gamma_T = T u /
    (1 - T u)``. Each row's term ``x_i`` (a product of one row entry and
    its loss derivative) reaches the computed sum multiplied by such
    factors, one per rounding it meets, so the computed sum is ``sum_i
    x_i (1 + theta_i)`` and errs by at most ``gamma_T sum_i |x_i|``
    (entrywise) when no term meets more than ``T`` roundings. The sum is
    that of a :class:`~skdp.utils._row_source.RowSource`'s
    :meth:`~skdp.utils._row_source.RowSource.block_sum`, the same in
    memory (dense or CSR) and on dask:

    * the rows are cut into ``k = ceil(n / B)`` consecutive blocks of at
      most ``B`` rows, and a block's sum is one BLAS or sparse product over
      its ``m <= min(B, n)`` rows, which computes each entry as an inner
      product of length ``m``: in any order of summation (blocked,
      pairwise, with or without FMA), each term meets at most ``m``
      roundings (its product and at most ``m - 1`` additions; Higham 2002,
      section 3.1 and Theorem 3.1 / eq. (3.5));
    * the ``k`` block results are added by a tree of fan-in ``f``
      (:func:`~skdp.utils._row_source.tree_sum`): each node copies its
      first input (exactly: float64 to float64) and adds the others left to
      right, so an input meets at most ``f - 1`` roundings at a node; a
      level of the tree divides the number of values by ``f`` (rounded
      up), so a block result passes ``L = ceil(log_f k)`` nodes before it
      is the total (none when ``k = 1``).

    So no term meets more than ``min(B, n) + (f - 1) L`` roundings; nor more
    than ``n`` in any order of summation (the whole computation is a
    summation tree over ``n`` leaves: at most ``n - 1`` additions and its
    product), the bound of earlier releases. At ``n = 2e6`` (``B = 1415``,
    ``k = 1414``, ``L = 4``) ``T = 1443`` instead of ``n``: the total bound
    ``gamma_T sum_i |x_i|`` grows as ``n**1.5 u``, not ``n**2 u``. (Earlier
    versions added a run of blocks left to right before the tree, and
    counted ``k - 1`` more roundings for it: ``T = 2877`` at ``n = 2e6``.)

    Examples
    --------
    >>> from skdp.linear_model._newton import summation_terms
    >>> summation_terms(1000), summation_terms(2_000_000)
    (1000, 1443)
    """
    n = max(1, int(n_samples))
    block = canonical_block_rows(n) if block_size is None else int(block_size)
    levels, parts = 0, -(-n // block)
    while parts > 1:
        parts = -(-parts // fan_in)
        levels += 1
    return min(n, min(block, n) + (fan_in - 1) * levels)


def _line_search(problem, w, value, magnitude, step, slope, gradient_norm, passes):
    """Backtracking (Armijo) along ``step``; ``None`` when no step is taken.

    Each trial is a pass over the rows, taken from ``passes``
    (:class:`_Passes`); ``None`` too when they run out.

    Returns ``(point, value, magnitude, cache)`` of the accepted point.

    Near the optimum the decrease a step promises (about ``-slope / 2``)
    can fall below the rounding error of the computed value, which then
    cannot tell a good step from a bad one. The value sums ``m`` squared
    coefficients and ``n`` rows' losses, and a sum of ``m`` terms errs by
    up to ``gamma_m`` times their magnitudes (Higham 2002, eq. (3.5)): with
    many classes (``m = K d``), equal coefficients of the classes absent
    from the data round alike and the error grows with ``m`` (issue 26: at
    ``K = 3e4`` on 40 rows ``||W||**2`` erred by ``9e-11`` against a
    decrease of ``9e-13`` a step, and every Newton step was halved ~28
    times for a vanishing move, 100 steps, then the fallback). So a
    candidate whose value is within that rounding bound of the current one
    is accepted when its computed gradient norm is smaller (scikit-learn's
    Newton solver makes a similar second check, on the gradient's L1
    norm). Either test only moves the point:
    the stopping certificate of :func:`solve_rows` is checked on the point
    whichever test accepted it.
    """
    size = 1.0
    resolution = _value_rounding(problem, w.size, magnitude)
    for _ in range(_MAX_HALVINGS):
        if not passes.take():
            return None  # the public budget is spent: the fallback takes over
        candidate = w + size * step
        new_value, new_magnitude, new_cache = problem.value(candidate)
        # Allow rounding error in the comparison at the optimum.
        slack = _ROUNDING * magnitude
        if new_value <= value + _ARMIJO * size * slope + slack:
            break
        if new_value <= value + resolution and gradient_norm > float(
            np.linalg.norm(problem.gradient(candidate, new_cache))
        ):
            break  # the values agree within rounding: the gradient decides
        size *= _SHRINK
    else:
        # No decrease representable in floating point: at the optimum.
        return None
    if np.array_equal(candidate, w):
        return None  # the step vanished in rounding: at the optimum
    return candidate, new_value, new_magnitude, new_cache


def _value_rounding(problem, n_coef: int, magnitude: float) -> float:
    """Bound on the rounding error of a computed value of ``problem``.

    ``gamma_m`` times the terms' magnitudes with ``m`` the coefficients
    plus the rows (the most terms any of the value's sums adds).
    """
    terms = n_coef + problem.rows.n_samples
    return terms * _UNIT_ROUNDOFF / (1.0 - terms * _UNIT_ROUNDOFF) * magnitude


class _Passes:
    """A public budget of passes over the rows (value, product, diagonal)."""

    def __init__(self, total: float) -> None:
        self.left = total

    def take(self, count: int = 1) -> bool:
        """Spend ``count`` passes; ``False`` (nothing spent) if too few are left."""
        if self.left < count:
            return False
        self.left -= count
        return True


def _damped_newton(
    problem, threshold, max_iter, certified=None, max_passes=math.inf
) -> NewtonResult:
    """Damped Newton from zero until ``||gradient|| <= threshold``.

    Stops there whether or not ``certified(w, gradient_norm)`` (the
    floating-point certificate of :func:`solve`), if given, holds: it reads
    only ``||w||``, which further steps do not move; ``converged`` says
    whether it held. At most ``max_iter``
    Hessians and ``max_passes`` passes over the rows for the values.
    """
    passes = _Passes(max_passes - 1)
    w = np.zeros(int(np.prod(problem.shape)))
    value, magnitude, cache = problem.value(w)
    gradient_norm = previous_norm = np.inf
    factor = None
    converged = False
    for n_iter in range(max_iter + 1):
        gradient = problem.gradient(w, cache)
        gradient_norm = float(np.linalg.norm(gradient))
        converged = gradient_norm <= threshold and (
            certified is None or certified(w, gradient_norm)
        )
        if gradient_norm <= threshold or n_iter == max_iter:
            break  # certified, or never will be here (see solve_rows)
        try:
            if factor is None or gradient_norm > _REUSE_BELOW * previous_norm:
                factor = cho_factor(problem.hessian(w, cache), check_finite=False)
            step = -cho_solve(factor, gradient, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            break  # a Hessian rounding made indefinite: the fallback takes over
        if not np.all(np.isfinite(step)):
            break
        previous_norm = gradient_norm
        accepted = _line_search(
            problem, w, value, magnitude, step, gradient @ step, gradient_norm, passes
        )
        if accepted is None:
            break
        w, value, magnitude, cache = accepted
    return NewtonResult(
        coef=w.reshape(problem.shape),
        n_iter=n_iter,
        gradient_norm=gradient_norm,
        converged=bool(converged),
    )


def _conjugate_gradient(product, diagonal, rhs, target, max_iter):
    """Approximately solve ``H x = rhs`` by Jacobi-preconditioned CG.

    Stops when the residual norm is at most ``target``, after ``max_iter``
    products, or when rounding makes a curvature ``p.Hp`` non-positive.
    Every iterate of CG started at zero on a positive definite ``H`` is a
    descent direction for ``rhs = -gradient`` (``x.rhs > 0``); if no
    product was taken the preconditioned gradient ``rhs / diag`` is returned.
    """
    x = np.zeros_like(rhs)
    residual = rhs.copy()
    preconditioned = residual / diagonal
    direction = preconditioned.copy()
    rho = residual @ preconditioned
    taken = 0
    for _ in range(max_iter):
        if np.linalg.norm(residual) <= target:
            break
        product_direction = product(direction)
        curvature = direction @ product_direction
        if not curvature > 0:
            break
        size = rho / curvature
        x += size * direction
        residual -= size * product_direction
        taken += 1
        preconditioned = residual / diagonal
        rho, previous = residual @ preconditioned, rho
        direction = preconditioned + (rho / previous) * direction
    return x if taken else rhs / diagonal


def _newton_cg(
    problem, threshold, max_iter, max_cg_iter, certified=None, max_passes=math.inf
):
    """Truncated Newton from zero: Newton steps solved by CG, no Hessian.

    The same loop as :func:`_damped_newton` (start at zero, Armijo line
    search, stop on ``||gradient|| <= threshold``, ``converged`` if certified); each
    Newton system is solved by ``_conjugate_gradient`` to a relative
    residual ``min(1/2, sqrt(||g|| / ||g_0||))`` (superlinear convergence,
    Nocedal & Wright 2006, Theorem 7.2), but never below a tenth of the
    threshold, at most ``max_cg_iter`` Hessian-vector products a step.
    Values, products and diagonals together read the rows at most
    ``max_passes`` times.
    """
    passes = _Passes(max_passes - 1)
    w = np.zeros(int(np.prod(problem.shape)))
    value, magnitude, cache = problem.value(w)
    gradient_norm = first_norm = np.inf
    converged = False
    for n_iter in range(max_iter + 1):
        gradient = problem.gradient(w, cache)
        gradient_norm = float(np.linalg.norm(gradient))
        converged = gradient_norm <= threshold and (
            certified is None or certified(w, gradient_norm)
        )
        if gradient_norm <= threshold or n_iter == max_iter:
            break  # certified, or never will be here (see solve_rows)
        if not np.isfinite(gradient_norm):
            break
        if not np.isfinite(first_norm):
            first_norm = gradient_norm
        if not passes.take():  # the diagonal
            break
        forcing = min(0.5, math.sqrt(gradient_norm / max(first_norm, gradient_norm)))
        curvature = problem.curvature(w, cache)
        diagonal = problem.hessian_diagonal(curvature)

        def product(v, c=curvature):
            passes.take()
            return problem.hessian_product(c, v)

        step = _conjugate_gradient(
            product,
            diagonal,
            -gradient,
            max(forcing * gradient_norm, 0.1 * threshold),
            int(min(max_cg_iter, max(passes.left - 1, 0))),  # one for a value
        )
        slope = gradient @ step
        if not (np.all(np.isfinite(step)) and slope < 0):
            break
        accepted = _line_search(
            problem, w, value, magnitude, step, slope, gradient_norm, passes
        )
        if accepted is None:
            break
        w, value, magnitude, cache = accepted
    return NewtonResult(
        coef=w.reshape(problem.shape),
        n_iter=n_iter,
        gradient_norm=gradient_norm,
        converged=bool(converged),
    )


def minimize_loss(
    Z: np.ndarray,
    Y: np.ndarray,
    *,
    alpha: float,
    C: float,
    linear: np.ndarray | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> NewtonResult:
    """Minimise ``alpha/2 ||W||^2 + C sum_i loss(W; z_i, y_i) + <linear, W>``.

    The binary logistic loss ``log(1 + exp(-y z.w))`` for one column of
    labels; the multinomial (softmax, cross-entropy) loss
    ``logsumexp(W z) - (W z)_y`` with one coefficient row per class, all
    regularised (the symmetric parameterisation), for ``K >= 3`` columns.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows ``z_i`` (intercept column already appended if wanted).
    Y : ndarray of shape (n,), (n, 1) or (n, K)
        Binary labels in ``{-1, +1}``, or for ``K >= 3`` classes
        ``Y[i, k] > 0`` if row ``i`` is in class ``k`` (``+1 / -1`` or
        one-hot).
    alpha : float
        Strong convexity of the regulariser, > 0.
    C : float
        Weight of the summed loss, > 0.
    linear : ndarray, optional
        The linear (perturbation) term, shaped like the coefficients; zero
        if omitted.
    tol : float, default=1e-12
        Stop when ``||grad J||_2 <= tol * (alpha + C * sum_i ||z_i||)``,
        i.e. relative to the scale of the gradient's terms.
    max_iter : int, default=100
        Maximum number of Newton steps.

    Returns
    -------
    NewtonResult
        ``coef`` has shape ``(d,)``, ``(1, d)`` or ``(K, d)``, following
        ``Y``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._newton import minimize_loss
    >>> Z = np.array([[1.0, 1.0], [-1.0, 1.0], [0.5, 1.0]])
    >>> res = minimize_loss(Z, np.array([1, -1, 1]), alpha=1.0, C=1.0)
    >>> res.coef.shape, res.converged, res.gradient_norm < 1e-9
    ((2,), True, True)
    >>> minimize_loss(Z, np.eye(3), alpha=1.0, C=1.0).coef.shape
    (3, 2)
    """
    Y = np.asarray(Y, dtype=float)
    d = Z.shape[1]
    rows, spec = _given_rows(Z, Y)
    if Y.ndim == 1 or Y.shape[1] == 1:
        shape = (d,) if Y.ndim == 1 else (1, d)
        linear = np.zeros(d) if linear is None else linear
        problem = MarginProblem(rows, spec, LogisticLoss(), alpha, C, linear)
    else:
        shape = (Y.shape[1], d)
        linear = np.zeros(shape) if linear is None else linear
        problem = SoftmaxProblem(rows, spec, alpha, C, linear, Y.shape[1])
    threshold = tol * (alpha + C * row_norms(Z).sum())
    result = _damped_newton(problem, threshold, max_iter)
    return replace(result, coef=result.coef.reshape(shape))


def _given_rows(Z, Y):
    """A row source of rows ``Z`` and targets ``Y`` used as they are."""
    return row_source(Z, Y), RowSpec(n_features=Z.shape[1])


# --- the certified solve of objective and output perturbation ---------------

#: Unit roundoff of float64.
_UNIT_ROUNDOFF = 2.0**-53
#: Largest condition bound ``beta / alpha`` for a single-precision Hessian.
_SINGLE_PRECISION_CONDITION = 1e6
#: Largest Hessian scale ``beta`` for single precision (max about 3.4e38).
_SINGLE_PRECISION_SCALE = 1e30
#: Largest condition bound ``beta / alpha`` a plan accepts (float64 Cholesky).
MAX_CONDITION = 1e13
#: Most coefficients of one solve for which the plan forms the dense Hessian
#: (``3 * 8 * 2048**2`` bytes, about 100 MB with its factor and a copy);
#: beyond it the Hessian-free Newton-CG solver runs.
MAX_DENSE_HESSIAN = 2048
#: Hessian-vector products per Newton-CG step (each costs two products with
#: ``Z``); the public cap keeps the run's work bounded.
MAX_CG_ITER = 250
#: Passes over the rows (values, Hessian-vector products, diagonals) the
#: Newton phase may take per allowed Newton step, in total: beyond them the
#: accelerated-gradient fallback takes over. Fits that converge read the
#: rows 10 to 250 times (Adult, digits, a 100,000-column TF-IDF problem at
#: C=100, 100,000 classes); the cap only bounds the public work of a solve
#: that does not (``SolverPlan.work_bound``), which would otherwise allow
#: up to 311 passes a step.
PASSES_PER_STEP = 20


@dataclass(frozen=True)
class SolverPlan:
    """How :func:`solve` reaches a point within a public radius of the minimiser.

    Built from public quantities only (:func:`plan_solver`).

    Attributes
    ----------
    alpha, C : float
        The objective ``alpha/2 ||W||^2 + C sum_i loss_i + <linear, W>``.
    threshold : float
        ``tau``: the public gradient-norm threshold of the stopping test.
    residual : float
        ``r = 2 tau / alpha``: every point :func:`solve` returns is within
        ``r`` of the exact minimiser.
    max_iter : int
        Newton steps before the accelerated-gradient fallback.
    smoothness : float
        ``beta``, a bound on the largest eigenvalue of the Hessian.
    n_samples, n_coef : int
        Rows and number of coefficients.
    row_norm : float
        ``R``, the bound on every row's norm.
    zero_value : float
        A bound on the loss of a row at ``W = 0`` (``log K`` for the
        logistic and softmax losses).
    row_gradient : float
        Bound on one row's loss gradient norm over ``R`` (1, or ``sqrt 2``
        for softmax).
    slope_lipschitz : float
        Lipschitz constant of the loss derivative in the margin (1/4, or 1
        as a safe value for softmax).
    hessian_free : bool
        ``True`` when ``n_coef > MAX_DENSE_HESSIAN``: Newton steps are
        solved by conjugate gradients with Hessian-vector products
        (``_newton_cg``) instead of a Cholesky factor of the dense
        Hessian. Public (it depends on ``n_coef`` only); the certificate and
        the fallback are the same either way.
    max_cg_iter : int
        Hessian-vector products per Newton-CG step.
    max_passes : int
        Passes over the rows the Newton phase may take in all
        (``PASSES_PER_STEP * max_iter``); then the fallback runs.
    block_size : int
        ``B``: rows per block of the certified gradient's sum
        (:func:`~skdp.utils._row_source.canonical_block_rows`, the row
        source's blocks); ``0`` means one block (the sum unblocked,
        bounded with ``n`` terms).
    summation_terms : int
        ``T``: the most roundings a row's term meets in that sum
        (:func:`summation_terms`); ``0`` means ``n_samples``.
    """

    alpha: float
    C: float
    threshold: float
    residual: float
    max_iter: int
    smoothness: float
    n_samples: int
    n_coef: int
    row_norm: float
    zero_value: float
    row_gradient: float
    slope_lipschitz: float
    hessian_free: bool = False
    max_cg_iter: int = MAX_CG_ITER
    block_size: int = 0
    summation_terms: int = 0
    max_passes: int = 0

    def work_bound(self, linear_norm: float) -> float:
        """Most products of a row entry and a coefficient one solve computes.

        Public: from the plan and a bound on the perturbation's norm
        ``||linear||`` (0 for output perturbation).

        Notes
        -----
        A pass over the rows (a value with its gradient, a Hessian-vector
        product, the Hessian's diagonal) multiplies each of the ``n`` rows
        by the ``n_coef`` coefficients a few times: ``n * n_coef`` products,
        counted for every column of a CSR matrix too (its stored entries
        depend on the data, so the plan cannot count them). The Newton
        phase reads the rows at most ``max_passes`` times and forms at most
        ``max_iter`` dense Hessians (``n * n_coef**2`` products and a
        Cholesky factor of ``n_coef**3 / 3``); the fallback takes at most
        :meth:`fallback_steps` steps of two passes; one more pass counts a
        CSR row's stored entries.

        Examples
        --------
        >>> from skdp.linear_model._newton import plan_solver
        >>> plan = plan_solver(n_samples=1000, n_features=3, n_classes=2,
        ...                    row_norm=1.0, C=1.0, alpha=1.0, tol=1e-12,
        ...                    max_iter=100)
        >>> pass_work = 1000 * 3
        >>> plan.work_bound(0.0) == pass_work * (
        ...     plan.max_passes + 2 * plan.fallback_steps(0.0) + 1
        ... ) + 100 * (1000 * 3**2 + 3**3 / 3)
        True
        """
        pass_work = float(self.n_samples) * self.n_coef
        passes = self.max_passes + 2 * self.fallback_steps(linear_norm) + 1
        work = passes * pass_work
        if not self.hessian_free:
            work += self.max_iter * (pass_work * self.n_coef + self.n_coef**3 / 3.0)
        return work

    def gradient_error(
        self, w_norm: float, linear_norm: float, margin_terms: int | None = None
    ) -> float:
        """Bound on the rounding error of a computed gradient at ``||W||``.

        ``margin_terms`` is the most terms a margin sums, ``d``: at most
        ``n_coef`` (the default); a CSR row with ``k`` stored entries
        sums ``k`` (:func:`solve_rows` passes the largest ``k``).

        Notes
        -----
        With unit roundoff ``u`` and ``gamma_k = k u / (1 - k u)``, a
        computed margin ``z.w`` (``d`` terms) errs by at most
        ``gamma_d R ||w||``, which moves a loss derivative by at most
        ``slope_lipschitz`` times that; each row's gradient has norm at most
        ``row_gradient R``, and their sum over the row source's blocks,
        added by its tree (:func:`summation_terms`), errs by at
        most ``gamma_T`` times the sum of their entries' magnitudes, whose
        norm is at most the sum of the rows' gradient norms (Minkowski),
        ``T = summation_terms`` (:func:`summation_terms`: the most
        roundings a row's term meets; earlier releases used ``T = n``,
        Higham 2002, section 3.1). The regulariser and linear terms add
        relative ``3 u``. So the computed gradient is within

        ``C n g R (gamma_T + 2 u + gamma_d R ||w|| s) + 3 u (alpha ||w|| +
        ||linear||)``

        of the exact one, ``g = row_gradient``, ``s = slope_lipschitz``.
        """
        u = _UNIT_ROUNDOFF
        terms = self.summation_terms or self.n_samples
        gamma_n = terms * u / (1 - terms * u)
        d = self.n_coef if margin_terms is None else min(margin_terms, self.n_coef)
        d = max(1, d)
        gamma_d = d * u / (1 - d * u)
        data = (
            self.C
            * self.n_samples
            * self.row_gradient
            * self.row_norm
            * (
                gamma_n
                + 2 * u
                + gamma_d * self.row_norm * w_norm * self.slope_lipschitz
            )
        )
        return data + 3 * u * (self.alpha * w_norm + linear_norm)

    def fallback_steps(self, linear_norm: float) -> int:
        """Accelerated-gradient steps that guarantee the residual ``r``.

        Notes
        -----
        Nesterov's method for an ``alpha``-strongly convex, ``beta``-smooth
        ``J`` started at ``x_1`` satisfies ``J(y_t) - J* <= (alpha + beta)
        / 2 ||x_1 - x*||**2 exp(-(t - 1) / sqrt(kappa))``, ``kappa = beta /
        alpha`` (Bubeck 2015, Theorem 3.18), and strong convexity gives
        ``||y - x*||**2 <= 2 (J(y) - J*) / alpha``. The fallback starts
        from Newton's last point, whose value is at most ``J(0) <= C n l_0``
        (Newton's line search only decreases ``J``, up to the rounding
        slack of its tests: at most ``max_passes`` accepted values, each at
        most ``gamma_m`` times the terms' magnitudes above the last, ``m``
        the coefficients plus the rows, so ``m u < 1e-6`` for any problem
        that fits in memory; the factor 2 below absorbs it); the loss is
        nonnegative, so ``J* >= -||linear||**2 / (2 alpha)`` and
        ``||x_1 - x*||**2 <= 2 D / alpha`` with ``D = 2 (C n l_0 +
        ||linear||**2 / (2 alpha))``. Hence ``t = 1 + sqrt(kappa)
        log((alpha + beta) 2 D / (alpha**2 r**2))`` steps reach ``r``.
        ``||linear||`` is the norm of the (data-independent) perturbation.
        """
        gap = self.C * self.n_samples * self.zero_value
        gap += linear_norm**2 / (2.0 * self.alpha)
        gap *= 2.0
        ratio = (self.alpha + self.smoothness) * 2.0 * gap
        ratio /= self.alpha**2 * self.residual**2
        kappa = self.smoothness / self.alpha
        return 1 + max(0, math.ceil(math.sqrt(kappa) * math.log(max(ratio, 1.0))))


def plan_solver(
    *,
    n_samples: int,
    n_features: int,
    n_classes: int,
    row_norm: float,
    C: float,
    alpha: float,
    tol: float,
    max_iter: int,
    loss: MarginLoss | None = None,
    block_rows: int | None = None,
) -> SolverPlan:
    """The public stopping rule of the exact methods' solver.

    Parameters
    ----------
    n_samples, n_features : int
        Rows and columns of ``Z`` (intercept column included).
    n_classes : int
        2 (one binary model) or more (softmax, unless ``loss`` is given:
        then each of the one-vs-rest models is solved on its own with this
        plan).
    row_norm : float
        ``R``.
    C, alpha : float
        The objective's weights.
    tol : float
        The user's relative tolerance.
    max_iter : int
        Newton steps before the fallback.
    loss : MarginLoss or None, default=None
        The loss of a single-output model; ``None`` means the logistic loss
        (two classes) or the softmax loss (more).
    block_rows : int or None, default=None
        Rows per block of the row source the solve will sum over (its
        ``block_rows``, a function of ``n``); ``None``: the canonical
        :func:`~skdp.utils._row_source.canonical_block_rows`.

    Returns
    -------
    plan : SolverPlan

    Notes
    -----
    ``tau = max(tol (alpha + C n L R), 4 e)`` where ``L`` bounds the loss's
    slope and ``e`` is the rounding bound of
    :meth:`SolverPlan.gradient_error` at the largest norm a point of value
    at most ``J(0)`` can have without perturbation, ``||W|| <= sqrt(2 C n
    l_0 / alpha)`` with ``l_0 = sup_t l(0, t)`` (``log K`` for the
    logistic and softmax losses). Every number here is public: ``n`` and the
    declared bounds, never the data (the stopping test of earlier releases
    used ``sum_i ||z_i||``, which is not).

    Examples
    --------
    >>> from skdp.linear_model._newton import plan_solver
    >>> plan = plan_solver(n_samples=1000, n_features=3, n_classes=2,
    ...                    row_norm=1.0, C=1.0, alpha=1.0, tol=1e-12, max_iter=100)
    >>> plan.residual == 2 * plan.threshold, plan.threshold < 1e-8
    (True, True)
    """
    block = canonical_block_rows(n_samples) if block_rows is None else int(block_rows)
    if loss is None and n_classes == 2:
        loss = LogisticLoss()
    if loss is not None:
        n_coef, curvature = n_features, loss.curvature
        zero_value, row_gradient = loss.zero_value, loss.lipschitz
        slope_lipschitz = loss.curvature
    else:  # softmax: Boehning's bound 1/2 on the Hessian, gradient sqrt(2) R
        n_coef, curvature = n_features * n_classes, 0.5
        zero_value, row_gradient, slope_lipschitz = math.log(n_classes), 2**0.5, 1.0
    plan = SolverPlan(
        alpha=float(alpha),
        C=float(C),
        threshold=0.0,
        residual=0.0,
        max_iter=int(max_iter),
        smoothness=float(alpha + C * n_samples * row_norm**2 * curvature),
        n_samples=int(n_samples),
        n_coef=int(n_coef),
        row_norm=float(row_norm),
        zero_value=float(zero_value),
        row_gradient=float(row_gradient),
        slope_lipschitz=float(slope_lipschitz),
        hessian_free=bool(n_coef > MAX_DENSE_HESSIAN),
        block_size=block,
        summation_terms=summation_terms(n_samples, block),
        max_passes=PASSES_PER_STEP * int(max_iter),
    )
    w_norm = math.sqrt(2.0 * C * n_samples * plan.zero_value / alpha)
    scale = alpha + C * n_samples * row_gradient * row_norm
    threshold = max(tol * scale, 4.0 * plan.gradient_error(w_norm, 0.0))
    return replace(plan, threshold=threshold, residual=2.0 * threshold / alpha)


def _accelerated_gradient(problem, plan, start, steps, certified):
    """Nesterov's method for strongly convex functions (Bubeck 2015, 3.7.1)."""
    beta, alpha = plan.smoothness, plan.alpha
    root = math.sqrt(beta / alpha)
    momentum = (root - 1.0) / (root + 1.0)
    x = start.copy()
    y_previous = x.copy()
    for _ in range(steps):
        _, _, cache = problem.value(x)
        gradient = problem.gradient(x, cache)
        y = x - gradient / beta
        x = (1.0 + momentum) * y - momentum * y_previous
        y_previous = y
        _, _, cache = problem.value(y)
        gradient_norm = float(np.linalg.norm(problem.gradient(y, cache)))
        if gradient_norm <= plan.threshold and certified(y, gradient_norm):
            break
    return y_previous


def solve_rows(rows, spec, plan: SolverPlan, linear=None, loss=None) -> np.ndarray:
    """A point near the exact minimiser, within ``plan.residual``; never raises.

    Minimises ``alpha/2 ||W||^2 + C sum_i loss(W; z_i, y_i) + <linear, W>``
    over the rows of ``rows``: every sum over the data is a block sum of
    :mod:`~skdp.linear_model._problems`, so memory, CSR and dask run the
    same solve on bitwise the same sums.

    Parameters
    ----------
    rows : RowSource
        The raw rows and labels (in memory or on dask).
    spec : RowSpec
        How a block of them becomes rows ``z_i`` of norm at most
        ``plan.row_norm`` and targets: one column for a binary model,
        ``K`` columns (one-vs-rest targets with ``loss``, class indicators
        ``> 0`` for softmax).
    plan : SolverPlan
    linear : ndarray or None
        The perturbation's linear term.
    loss : MarginLoss or None
        A margin loss: ``Y`` of shape ``(n, K)`` then holds ``K``
        one-vs-rest targets, each model solved on its own (the objective is
        separable), every one within ``r``. ``None``: the logistic or
        softmax loss, following ``Y``.

    Returns
    -------
    coef : ndarray of shape (n_models, d)

    Notes
    -----
    Damped Newton runs for at most ``plan.max_iter`` steps and
    ``plan.max_passes`` passes over the rows, and stops once
    the computed gradient norm is at most ``tau`` and the rounding bound of
    :meth:`SolverPlan.gradient_error` at the current point is at most
    ``tau`` too: the exact gradient norm is then at most ``2 tau`` and, by
    ``alpha``-strong convexity, the exact minimiser within ``2 tau / alpha
    = r``. The Newton steps are Cholesky solves of the dense Hessian, or,
    when ``plan.hessian_free``, conjugate-gradient solves with
    Hessian-vector products (``_newton_cg``); the certificate only reads
    the point and its computed gradient, so it holds whichever solver
    produced the point. For CSR rows the rounding bound counts the
    largest number of stored entries in a row as the margin's terms (a
    sparse dot product sums only those). If Newton has not certified that
    within ``max_iter`` steps, or its computed gradient norm is at most
    ``tau`` at a point whose rounding bound is not (the bound reads only
    ``||W||``, which no further step moves by more than ``r``, so more
    Newton steps cannot certify), the
    accelerated gradient method of :meth:`SolverPlan.fallback_steps`
    continues from Newton's point for as many steps as guarantee the same
    ``r`` (stopping earlier once certified). Which branch runs, and how
    many steps it takes, depends on the data and is not released.

    The certificate is checked in floating point, so a point Newton stops
    at is within ``r``. The fallback's step count is a theorem in exact
    arithmetic: with a perturbation ``linear`` so large that its rounding
    alone exceeds ``tau`` (``||linear||`` beyond about ``tau / (3 u)``, with
    ``u`` the unit roundoff), no point can be certified and the fallback's
    guarantee is the exact-arithmetic one. skdp's objective perturbation
    raises ``alpha`` with the noise, which keeps it far from that regime.
    """
    d = spec.n_coef
    n_models = _n_models(rows, spec)
    single = single_hessian(plan)
    terms = margin_terms(rows, spec)
    if loss is None and n_models > 1:  # softmax
        shape = (n_models, d)
        linear = np.zeros(shape) if linear is None else np.asarray(linear, float)
        problem = SoftmaxProblem(
            rows, spec, plan.alpha, plan.C, linear, n_models, single=single
        )
        return solve_problem(problem, plan, linear, terms).reshape(shape)
    loss = LogisticLoss() if loss is None else loss
    linear = np.zeros((n_models, d)) if linear is None else linear
    linear = np.reshape(np.asarray(linear, dtype=float), (n_models, d))
    coef = []
    for k in range(n_models):
        problem = MarginProblem(
            rows, spec, loss, plan.alpha, plan.C, linear[k], k=k, single=single
        )
        coef.append(solve_problem(problem, plan, linear[k], terms))
    return np.vstack(coef)


def _n_models(rows, spec) -> int:
    """Columns of the targets: from the spec, or from the given targets."""
    if spec.bounds is not None:
        return 1
    if spec.classes is not None:
        return 1 if spec.classes.size == 2 else int(spec.classes.size)
    y = rows.y
    return 1 if y.ndim == 1 else int(y.shape[1])


def solve(Z, Y, plan: SolverPlan, linear=None, loss=None) -> np.ndarray:
    """:func:`solve_rows` on in-memory rows ``Z`` and targets ``Y`` as given.

    ``Z`` (dense or CSR, rows of norm at most ``plan.row_norm``) and ``Y``
    (as in :func:`minimize_loss`; ``K`` one-vs-rest target columns with a
    margin ``loss``) are used as they are. The coefficients are shaped
    like :func:`minimize_loss`'s.
    """
    Y = np.asarray(Y, dtype=float)
    rows, spec = _given_rows(Z, Y)
    coef = solve_rows(rows, spec, plan, linear, loss)
    return coef.ravel() if Y.ndim == 1 else coef


def single_hessian(plan: SolverPlan) -> bool:
    """Whether the dense Hessian may be formed in single precision."""
    # Single precision moves the Hessian by about 6e-8 of its scale; beyond
    # a condition number of 1e6 that could make it indefinite.
    return (
        not plan.hessian_free
        and plan.smoothness / plan.alpha <= _SINGLE_PRECISION_CONDITION
        and plan.smoothness <= _SINGLE_PRECISION_SCALE
    )


def solve_problem(problem, plan: SolverPlan, linear, terms: int) -> np.ndarray:
    """The certified solve of :func:`solve` on a built problem; raveled ``coef``.

    ``problem`` has the interface of
    :class:`~skdp.linear_model._problems.MarginProblem` (``value``,
    ``gradient``, ``hessian`` or the Hessian-free ``curvature``,
    ``hessian_product``, ``hessian_diagonal``); ``terms`` is the most terms a
    margin sums (see :meth:`SolverPlan.gradient_error`).
    """
    linear_norm = 0.0 if linear is None else float(np.linalg.norm(linear))

    def certified(w, gradient_norm):
        error = plan.gradient_error(float(np.linalg.norm(w)), linear_norm, terms)
        return error <= plan.threshold

    max_passes = plan.max_passes or math.inf
    if plan.hessian_free:
        result = _newton_cg(
            problem,
            plan.threshold,
            plan.max_iter,
            plan.max_cg_iter,
            certified,
            max_passes,
        )
    else:
        result = _damped_newton(
            problem, plan.threshold, plan.max_iter, certified, max_passes
        )
    coef = result.coef.ravel()
    if not result.converged:
        steps = plan.fallback_steps(linear_norm)
        coef = _accelerated_gradient(problem, plan, coef, steps, certified)
    if not np.all(np.isfinite(coef)):  # cannot happen for finite inputs
        coef = np.zeros_like(coef)
    return coef
