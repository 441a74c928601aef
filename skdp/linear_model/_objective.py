"""Objective perturbation for L2-regularised logistic regression (pure DP).

Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 2, restated in
scikit-learn's parameterisation ``1/2 ||w||^2 + C sum_i loss_i``: the
binary logistic loss for two classes, the multinomial (softmax) loss for
more, with the noise and the curvature term of each derived in
:func:`objective_noise_scale`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..accounting._events import ApproxDPEvent, PrivacyEvent, PureDPEvent
from ..mechanisms import NoisePlan, draw_l2_noise, plan_l2_noise
from ..utils._random import check_random_source
from ..utils._row_source import row_source
from ._feasibility import check_magnitudes, check_solver
from ._losses import MarginLoss
from ._newton import SolverPlan, plan_solver, solve_rows
from ._rows import RowSpec
from ._sum_zero import to_sum_zero

__all__ = [
    "LOGISTIC_CURVATURE",
    "ObjectivePlan",
    "objective_noise_scale",
    "objective_perturbation",
    "plan_objective",
    "run_objective",
]

#: Upper bound ``c`` on the second derivative of the binary logistic loss.
LOGISTIC_CURVATURE = 0.25

#: Smallest share of epsilon left to the noise term; extra regularisation
#: pays for the rest. CMS Algorithm 2 uses 1/2. 0.95 had the smallest mean
#: and worst-case loss of validation accuracy against the best share in
#: {0.5, 0.75, 0.9, 0.95, 0.98} per problem and epsilon; see
#: ``benchmarks/tune_objective_share.py`` for how this value was chosen
#: (a validation split of UCI Adult's training part, never its test split,
#: and synthetic multiclass problems).
NOISE_SHARE = 0.95

#: Probability that the drawn noise's norm exceeds the bound the plan's work
#: bound assumes (:func:`_noise_norm_bound`).
NOISE_TAIL = 1e-12

#: Share of epsilon spent on the noise that covers the solver's residual
#: (approximate minima perturbation; see :func:`plan_objective`).
RESIDUAL_SHARE = 0.01


def objective_geometry(
    n_classes: int, loss: MarginLoss | None = None
) -> tuple[int, float, float]:
    """Rank, eigenvalue bound and gradient sensitivity of one row's loss.

    Parameters
    ----------
    n_classes : int
        2 for the binary logistic loss, ``K >= 3`` for the softmax loss.
    loss : MarginLoss or None, default=None
        A margin loss (one model for two classes, ``K`` one-vs-rest models
        otherwise) instead of the logistic/softmax loss.

    Returns
    -------
    rank : int
        Largest rank of one row's loss Hessian: 1, ``K - 1`` (softmax) or
        ``K`` (one-vs-rest).
    curvature : float
        ``beta``: with ``||z|| <= R``, the Hessian's nonzero eigenvalues
        ``mu_j`` satisfy ``prod_j (1 + mu_j / a) <= (1 + beta R**2 / a)**rank``
        for every ``a > 0``: ``c = 1/4`` for the binary loss, ``1/K`` for the
        softmax loss.
    sensitivity : float
        Bound on ``||grad l(z, y) - grad l(z', y')|| / R`` over two rows:
        2 for the binary loss, ``2 sqrt(2)`` for the softmax loss.

    Notes
    -----
    Softmax loss, coefficients ``W`` of shape ``(K, d)``, ``p = softmax(W z)``:
    the gradient is ``(p - e_y) z^T``, of Frobenius norm
    ``||p - e_y|| ||z|| <= sqrt(2) R`` because
    ``||p - e_y||**2 = (1 - p_y)**2 + sum_{k != y} p_k**2 <= 2 (1 - p_y)**2``;
    two rows give at most ``2 sqrt(2) R``. The Hessian is
    ``M kron z z^T`` with ``M = diag(p) - p p^T``: its nonzero eigenvalues
    are ``||z||**2`` times those of ``M``, which has rank ``K - 1``
    (``M 1 = 0``) and trace ``1 - ||p||**2 <= 1 - 1/K``; by the AM-GM
    inequality ``prod_j (1 + ||z||**2 m_j / a)`` is largest when the
    ``K - 1`` eigenvalues ``m_j`` are equal, at ``(1 + R**2 / (K a))**(K-1)``.

    Examples
    --------
    >>> from skdp.linear_model._objective import objective_geometry
    >>> objective_geometry(2)
    (1, 0.25, 2.0)
    >>> objective_geometry(3)
    (2, 0.333..., 2.828...)
    """
    if loss is not None:
        # Margin loss, one model per class beyond two (one-vs-rest, fitted
        # jointly): a row's Hessian is block diagonal with one rank-one
        # block per model, each of eigenvalue at most c R**2, and its
        # gradient has one block per model of norm at most L R.
        models = 1 if n_classes == 2 else n_classes
        return models, loss.curvature, 2.0 * loss.lipschitz * math.sqrt(models)
    if n_classes == 2:
        return 1, LOGISTIC_CURVATURE, 2.0
    return n_classes - 1, 1.0 / n_classes, 2.0 * math.sqrt(2.0)


def objective_noise_scale(
    epsilon: float,
    C: float,
    row_norm: float,
    n_classes: int = 2,
    loss: MarginLoss | None = None,
) -> tuple[float, float]:
    """Privacy left for the noise term and the regularisation to use.

    Parameters
    ----------
    epsilon : float
        Total privacy parameter of the fit, > 0.
    C : float
        scikit-learn's inverse regularisation strength.
    row_norm : float
        ``R``, the bound on every row's L2 norm (intercept column included).
    n_classes : int, default=2
        2 (binary logistic loss) or more (softmax loss).

    Returns
    -------
    epsilon_noise : float
        ``epsilon'``: the noise ``b`` has density proportional to
        ``exp(-epsilon' ||b|| / Delta)``, ``Delta`` the ``sensitivity`` of
        :func:`objective_geometry`.
    alpha : float
        Coefficient of ``1/2 ||w||^2`` in the perturbed objective: 1 when no
        extra regularisation is needed, more otherwise.

    Notes
    -----
    The released minimiser ``w`` of ``J_D(w) = alpha/2 ||w||^2 +
    C sum_i l(w; z_i, y_i) + C R b.w`` determines the noise,
    ``b = -grad(alpha/2 ||w||^2 + C sum_i l_i)(w) / (C R)``, through a
    bijection, so its density is ``nu(b_D(w)) |det grad b_D(w)|`` (CMS
    2011, proof of Theorem 9). For neighbours ``D, D'`` (row ``n``
    replaced) at the same ``w``:

    - noise factor: ``||b_D(w) - b_D'(w)|| <= Delta`` (see
      :func:`objective_geometry`), so ``nu(b_D) / nu(b_D') <=
      exp(epsilon')``;
    - Jacobian factor: ``det(A + C H_n) / det(A + C H'_n)`` with
      ``A = alpha I + C sum_{i != n} H_i >= alpha I`` and ``H_n, H'_n``
      the two rows' loss Hessians at ``w`` (positive semi-definite). As
      ``det(A + C H'_n) >= det(A)``, the ratio is at most
      ``det(I + C A^{-1/2} H_n A^{-1/2}) <= prod_j (1 + C mu_j / alpha)
      <= (1 + beta C R**2 / alpha)**rank``.

    So ``epsilon = epsilon' + rank * log(1 + beta C R**2 / alpha)``.
    (CMS state ``2 log(1 + c / (n Lambda))`` for the binary loss, from a
    rank-2 difference; the monotonicity of the determinant gives one
    factor. ``c / (n Lambda)`` is ``c C R**2`` here: with ``u = z / R`` and
    ``v = R w`` the objective is ``n C`` times theirs with
    ``Lambda = 1 / (n C R**2)``, so the curvature term scales with
    ``R**2``.) Their argument allows any extra regularisation: ``alpha = 1``
    is kept while it leaves ``epsilon' >= s epsilon`` with
    ``s = NOISE_SHARE``; otherwise ``alpha = beta C R**2 /
    (exp((1 - s) epsilon / rank) - 1)``, which leaves exactly
    ``epsilon' = s epsilon``. ``alpha`` depends on public quantities only.
    ``tests/linear_model/test_maths.py`` checks the density ratio
    numerically for both losses.

    Examples
    --------
    >>> from skdp.linear_model._objective import objective_noise_scale
    >>> objective_noise_scale(10.0, C=1.0, row_norm=1.0)
    (9.776856..., 1.0)
    >>> epsilon_noise, alpha = objective_noise_scale(1.0, C=1.0, row_norm=2.0)
    >>> epsilon_noise, round(alpha, 3)
    (0.95, 19.504)
    """
    rank, curvature, _ = objective_geometry(n_classes, loss)
    curvature *= C * row_norm**2
    epsilon_noise = epsilon - rank * math.log1p(curvature)
    if epsilon_noise >= NOISE_SHARE * epsilon:
        return epsilon_noise, 1.0
    # Solve NOISE_SHARE * epsilon = epsilon - rank log(1 + curvature / alpha).
    per_rank = (1.0 - NOISE_SHARE) * epsilon / rank
    return NOISE_SHARE * epsilon, max(1.0, curvature / math.expm1(per_rank))


@dataclass(frozen=True)
class ObjectivePlan:
    """Every setting of one objective-perturbation fit (public only).

    Attributes
    ----------
    n_classes : int
        2 (binary loss) or ``K`` (softmax).
    epsilon_noise, alpha : float
        From :func:`objective_noise_scale` at ``epsilon_objective``.
    epsilon_objective, epsilon_residual : float
        The split of epsilon between the perturbed objective and the noise
        that covers the solver's residual (they sum to epsilon).
    noise : NoisePlan
        The objective's noise ``b`` (``rank * d`` coordinates).
    residual_noise : NoisePlan
        Continuous L2 noise covering the solver's residual ``r``:
        sensitivity ``2 r``, ``epsilon_residual``.
    solver : SolverPlan
        The certified solve (threshold, residual ``r``).
    row_norm, C : float
    event : PureDPEvent
        ``PureDPEvent(epsilon)``.
    loss : MarginLoss or None
        A margin loss (one-vs-rest beyond two classes), or ``None`` for the
        logistic/softmax loss.
    """

    n_classes: int
    epsilon_noise: float
    alpha: float
    epsilon_objective: float
    epsilon_residual: float
    noise: NoisePlan
    residual_noise: NoisePlan
    solver: SolverPlan
    row_norm: float
    C: float
    event: PrivacyEvent
    loss: MarginLoss | None = None
    gaussian_sigma: float | None = None


def gaussian_objective_sigma(
    epsilon_noise: float, delta: float, sensitivity: float, span: int
) -> float:
    """Standard deviation of Gaussian objective-perturbation noise.

    Parameters
    ----------
    epsilon_noise : float
        The share of epsilon the noise term may spend (the Jacobian term's
        share is separate), > 0.
    delta : float
        In (0, 1).
    sensitivity : float
        ``Delta``, the bound on ``||b_D(w) - b_D'(w)||``.
    span : int
        ``k``, the dimension of a subspace that contains ``b_D(w) -
        b_D'(w)`` for every ``w`` (2 for one model of a margin loss: the
        span of the two rows; ``2 m`` for ``m`` models).

    Returns
    -------
    sigma : float

    Notes
    -----
    For ``w`` drawn from the output on ``D``, ``b = b_D(w)`` is exactly the
    noise, ``N(0, sigma**2 I)``, and the noise factor of the privacy loss is
    ``(||b + v||**2 - ||b||**2) / (2 sigma**2) = (2 b.v + ||v||**2) / (2
    sigma**2)`` with ``v = b_D'(w) - b_D(w)``, ``||v|| <= Delta``. ``v``
    depends on ``w`` but always lies in the fixed ``k``-dimensional subspace
    spanned by the replaced rows' gradient directions, so ``|b.v| <=
    ||P b|| Delta`` with ``P`` the projection on it, and ``||P b||**2 /
    sigma**2`` is chi-square with ``k`` degrees of freedom. With ``r**2``
    its upper ``delta`` quantile, the loss is at most ``Delta r / sigma +
    Delta**2 / (2 sigma**2)`` except with probability ``delta``, which is
    ``epsilon_noise`` for ``sigma = Delta / (sqrt(r**2 + 2 epsilon_noise) -
    r)``. This is the Gaussian objective perturbation of Kifer, Smith &
    Thakurta (2012), with the chi-square tail of the low-dimensional
    projection in place of their constants.

    Examples
    --------
    >>> from skdp.linear_model._objective import gaussian_objective_sigma
    >>> round(gaussian_objective_sigma(1.0, 1e-5, 2.0, 2), 3)
    9.801
    """
    r = math.sqrt(stats.chi2.isf(delta, span))
    return sensitivity / (math.sqrt(r * r + 2.0 * epsilon_noise) - r)


def plan_objective(
    *,
    epsilon: float,
    C: float,
    row_norm: float,
    n_samples: int,
    n_features: int,
    n_classes: int,
    tol: float,
    max_iter: int,
    loss: MarginLoss | None = None,
    delta: float = 0.0,
    block_rows: int | None = None,
    sparse: bool = False,
) -> ObjectivePlan:
    """Plan objective perturbation from public quantities; may raise.

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon.
    C : float
        Inverse regularisation strength.
    row_norm : float
        ``R`` (intercept column included).
    n_samples, n_features : int
        Rows and columns of ``Z``.
    n_classes : int
        2 or ``K >= 3``.
    tol, max_iter :
        The solver's stopping rule (``plan_solver``).
    loss : MarginLoss or None, default=None
        A margin loss with ``L`` and ``c`` (``skdp.linear_model._losses``);
        beyond two classes, one-vs-rest models fitted jointly. ``None``: the
        logistic loss (two classes) or the softmax loss.
    delta : float, default=0.0
        ``0``: the noise has density proportional to ``exp(-epsilon' ||b||
        / Delta)``, pure epsilon-DP (CMS 2011). ``delta > 0``: Gaussian noise
        (Kifer, Smith & Thakurta 2012; :func:`gaussian_objective_sigma`),
        ``(epsilon, delta)``-DP, with a noise norm ``sqrt(d)`` rather than
        ``d`` times its scale: better in high dimension.
    block_rows : int or None, default=None
        Rows per block of the row source the run sums over
        (:func:`~skdp.linear_model._newton.plan_solver`).
    sparse : bool, default=False
        Whether the rows are CSR (for the memory check, ``check_solver``).

    Returns
    -------
    plan : ObjectivePlan

    Notes
    -----
    **Approximate minimisers** (Iyengar et al. 2019, approximate minima
    perturbation, in its pure-DP form). The solver returns ``w`` within a
    public radius ``r`` of the exact minimiser ``w*`` of the perturbed
    objective, for every dataset and noise draw
    (``solve``); ``w + b2`` is released,
    ``b2`` of density proportional to ``exp(-epsilon_residual ||b2|| /
    (2 r))``. For neighbours ``D, D'``, write the release as ``w*_D +
    e_D(w*_D) + b2`` where, given ``w*_D = t``, the residual ``e_D(t)`` is a
    deterministic function with ``||e_D(t)|| <= r``. Given ``t``, the two
    kernels differ by a shift of at most ``2 r``, so their densities are
    within ``exp(epsilon_residual)``; the densities of ``w*`` are within
    ``exp(epsilon_objective)`` (:func:`objective_noise_scale`). Integrating
    over ``t``, the release is ``(epsilon_objective + epsilon_residual)``-DP
    = epsilon-DP. ``epsilon_residual`` is ``RESIDUAL_SHARE`` (1%) of
    epsilon: ``r`` is about ``1e-7`` of the sensitivity at the default
    ``tol``, so the residual noise is negligible next to the objective's.

    Examples
    --------
    >>> from skdp.linear_model._objective import plan_objective
    >>> plan = plan_objective(epsilon=1.0, C=1.0, row_norm=1.0, n_samples=1000,
    ...                       n_features=3, n_classes=2, tol=1e-12, max_iter=100)
    >>> plan.epsilon_objective + plan.epsilon_residual
    1.0
    >>> plan.event
    PureDPEvent(label='', epsilon=1.0)
    """
    epsilon_residual = RESIDUAL_SHARE * epsilon
    epsilon_objective = epsilon - epsilon_residual
    rank, _, sensitivity = objective_geometry(n_classes, loss)
    epsilon_noise, alpha = objective_noise_scale(
        epsilon_objective, C, row_norm, n_classes, loss
    )
    dimension = rank * n_features
    noise = plan_l2_noise(dimension, sensitivity, epsilon_noise)
    check_magnitudes(
        "objective perturbation",
        **{
            "C * R * (expected noise norm)": C * row_norm * dimension * noise.scale,
            "alpha": alpha,
        },
    )
    solver = plan_solver(
        n_samples=n_samples,
        n_features=n_features,
        n_classes=n_classes,
        row_norm=row_norm,
        C=C,
        alpha=alpha,
        tol=tol,
        max_iter=max_iter,
        loss=loss,
        block_rows=block_rows,
    )
    # Each of the rank models (or the one softmax model) is within r: the
    # joint residual is at most r sqrt(models) (one model for softmax).
    models = rank if loss is not None else 1
    residual_noise = plan_l2_noise(
        dimension, 2.0 * solver.residual * math.sqrt(models), epsilon_residual
    )
    sigma, event = None, PureDPEvent(epsilon)
    if delta > 0:
        # The replaced rows' gradient directions: two per model (softmax:
        # two per class but the last, in the (K - 1) d subspace).
        span = 2 * (rank if loss is not None or n_classes == 2 else n_classes - 1)
        sigma = gaussian_objective_sigma(epsilon_noise, delta, sensitivity, span)
        check_magnitudes(
            "objective perturbation",
            **{"C * R * (Gaussian noise norm)": C * row_norm * sigma * dimension},
        )
        event = ApproxDPEvent(epsilon, delta)
    linear_norm = C * row_norm * _noise_norm_bound(noise, sigma)
    check_solver(solver, n_classes, n_features, sparse, linear_norm)
    return ObjectivePlan(
        n_classes=n_classes,
        epsilon_noise=epsilon_noise,
        alpha=alpha,
        epsilon_objective=epsilon_objective,
        epsilon_residual=epsilon_residual,
        noise=noise,
        residual_noise=residual_noise,
        solver=solver,
        row_norm=row_norm,
        C=C,
        event=event,
        loss=loss,
        gaussian_sigma=sigma,
    )


def _noise_norm_bound(noise: NoisePlan, sigma: float | None) -> float:
    """The noise norm's ``1 - NOISE_TAIL`` quantile (for the work bound only).

    The norm is Gamma(``size``, ``scale``) for the pure mechanism, and
    ``sigma`` times a chi variable with ``size`` degrees of freedom for the
    Gaussian one. The fallback's step count grows with the logarithm of the
    drawn norm, so the plan's work bound holds except with probability
    ``NOISE_TAIL`` over the noise, and exceeds it by little even then.
    """
    if sigma is None:
        return float(stats.gamma.isf(NOISE_TAIL, noise.size, scale=noise.scale))
    return sigma * math.sqrt(float(stats.chi2.isf(NOISE_TAIL, noise.size)))


def run_objective(rows, spec, plan: ObjectivePlan, source) -> np.ndarray:
    """Run a planned objective perturbation; returns the released coefficients.

    Parameters
    ----------
    rows : RowSource
        The rows and labels (in memory or on dask).
    spec : RowSpec
        Bounds a block's rows to ``||z_i|| <= row_norm`` (intercept column
        included) and gives its targets: binary labels in ``{-1, +1}`` (one
        column), or for ``K >= 3`` classes ``+1`` in class ``k``'s column,
        else -1.
    plan : ObjectivePlan
    source : RandomSource

    Returns
    -------
    coef : ndarray of shape (1, d) or (K, d)

    Notes
    -----
    Binary: ``b`` in ``R^d`` has density proportional to
    ``exp(-epsilon' ||b|| / 2)`` (CMS Algorithm 2). Softmax: every row's
    gradient ``(p - e_y) z^T`` has columns summing to zero over the classes,
    so the differences ``b_D(W) - b_D'(W)`` lie in the subspace
    ``S = {B : 1^T B = 0}`` of dimension ``(K - 1) d``; ``B`` is drawn in
    ``S`` with density proportional to ``exp(-epsilon' ||B|| /
    (2 sqrt(2)))`` (as ``U V`` with ``U`` an orthonormal basis of
    ``{u : 1^T u = 0}``, a norm-preserving map). The minimiser then lies in
    ``S`` too (the first-order condition gives ``alpha 1^T W = 0``), the map
    ``W -> B`` is a bijection of ``S``, and the loss Hessians vanish on
    ``S``'s complement, so the proof of :func:`objective_noise_scale` holds
    on ``S``. Newton's and the fallback's iterates stay in ``S``, and the
    residual noise is drawn in ``S`` the same way. Noise along the
    complement of ``S`` would only shift every class's score equally and
    change no prediction.
    """
    d = spec.n_coef
    softmax = plan.loss is None and plan.n_classes > 2
    rank = plan.noise.size // d
    if plan.gaussian_sigma is None:
        b = draw_l2_noise(plan.noise, source).reshape(rank, d)
    else:
        b = plan.gaussian_sigma * source.standard_normal(rank * d).reshape(rank, d)
    B = to_sum_zero(b) if softmax else b
    linear = plan.C * plan.row_norm * B
    coef = solve_rows(rows, spec, plan.solver, linear=linear, loss=plan.loss)
    coef = np.reshape(coef, B.shape)
    residual = draw_l2_noise(plan.residual_noise, source).reshape(rank, d)
    return coef + (to_sum_zero(residual) if softmax else residual)


def objective_perturbation(
    Z: np.ndarray,
    Y: np.ndarray,
    *,
    epsilon: float,
    C: float,
    row_norm: float,
    source,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> tuple[np.ndarray, PureDPEvent]:
    """Plan and run objective perturbation in one call; epsilon-DP (replace one).

    See :func:`plan_objective` (the guarantee) and :func:`run_objective`.

    Returns
    -------
    coef : ndarray of shape (1, d) or (K, d)
    event : PureDPEvent
        ``PureDPEvent(epsilon)``, for all classes together.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._objective import objective_perturbation
    >>> from skdp.utils import check_random_source
    >>> Z = np.array([[0.6, 0.8], [-0.6, 0.8], [0.8, 0.6], [-0.8, 0.6]])
    >>> y = np.array([1, -1, 1, -1])
    >>> coef, event = objective_perturbation(
    ...     Z, y, epsilon=1.0, C=1.0, row_norm=1.0, source=check_random_source(0))
    >>> coef.shape, event.epsilon
    ((1, 2), 1.0)
    """
    Y = np.asarray(Y, dtype=float)
    Y = Y[:, None] if Y.ndim == 1 else Y
    n_classes = max(2, Y.shape[1])
    plan = plan_objective(
        epsilon=epsilon,
        C=C,
        row_norm=row_norm,
        n_samples=Z.shape[0],
        n_features=Z.shape[1],
        n_classes=n_classes,
        tol=tol,
        max_iter=max_iter,
    )
    rows, spec = row_source(Z, Y), RowSpec(n_features=Z.shape[1])
    return run_objective(rows, spec, plan, check_random_source(source)), plan.event
