"""Differentially private linear (ridge) regression."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from ..base import FitPlan
from ..utils._feasibility import check_magnitudes
from ..utils._privacy import warn_data_derived
from ..utils._sklearn_compat import Interval, Real, StrOptions, fit_context
from ._adassp import plan_adassp, run_adassp
from ._base import _BaseDPLinear
from ._forecast import warn_if_noise_swamps_learning
from ._losses import HuberLoss

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPLinearRegression"]


class DPLinearRegression(_BaseDPLinear, RegressorMixin, BaseEstimator):
    """Linear (ridge) regression with differential privacy.

    Ridge regression, ``min ||y - X w - b||^2 + alpha ||w||^2`` as in
    scikit-learn's :class:`~sklearn.linear_model.Ridge`, with targets clipped
    to public bounds, trained with one of four private methods:

    - ``'gradient'`` (default): DP-SGD on the squared loss with per-row
      clipping (or, with ``batch_size='full'``, full-batch noisy gradient
      descent), (epsilon, delta)-DP. The most accurate on the validation
      protocol behind the defaults (``benchmarks/tune_erm_defaults.py``) at
      every epsilon from 0.5 to 5: its default clipping norm, below the
      worst case, pays for the residuals the data has, not for the width
      of ``y_bounds``;
    - ``'adassp'``: sufficient-statistics perturbation with an adaptive
      ridge (AdaSSP, Wang 2018), (epsilon, delta)-DP: noisy ``X^T X`` and
      ``X^T y`` solved like the normal equations, in one pass (the fastest
      method: about 1.5 times scikit-learn's ``Ridge``). Its noise is
      calibrated to the worst-case target, so it gains on ``'gradient'``
      when the targets fill ``y_bounds``;
    - ``'objective'``: objective perturbation (Chaudhuri, Monteleoni &
      Sarwate 2011) of the Huber loss that equals the squared loss on the
      targets' range, epsilon-DP;
    - ``'output'``: the minimiser of the same objective plus noise,
      epsilon-DP (or (epsilon, delta) with ``delta > 0``); its noise scales
      as ``1 / alpha`` and does not shrink with the number of rows, so it
      needs an ``alpha`` of the order of that number.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0.
    delta : float or None, default=None
        Privacy parameter delta in ``[0, 1)``. ``None`` follows skdp's
        default-delta rule (:ref:`default_delta`):
        :data:`~skdp.accounting.DEFAULT_DELTA` for ``'adassp'`` and
        ``'gradient'`` (they need ``delta > 0``) and 0 for ``'objective'``
        and ``'output'``.
    alpha : float, default=1.0
        Ridge strength, scikit-learn's meaning (in units of the targets
        scaled into ``[-1, 1]`` by ``y_bounds``, the scale that Ridge's
        ``alpha`` refers to after such a scaling), >= 0. ``'objective'``,
        ``'output'`` and ``'gradient'`` need ``alpha > 0``; ``'adassp'``
        adds its own adaptive ridge to it.
    method : {'gradient', 'adassp', 'objective', 'output'}, default='gradient'
        How privacy is obtained (see Notes).
    data_norm : float or None, default=None
        Public bound on the L2 norm of each row of ``X``; rows with a larger
        norm are scaled down to it. ``None`` reads the largest row norm from
        the data and emits a :class:`~skdp.PrivacyLeakWarning`.
    y_bounds : tuple (low, high) or None, default=None
        Public bounds of the target; ``y`` is clipped into them. ``None``
        reads the smallest and largest target from the data and emits a
        :class:`~skdp.PrivacyLeakWarning`.
    fit_intercept : bool, default=True
        Fit an intercept as the (regularised) coefficient of an appended
        constant column of value ``intercept_scaling``; the targets are
        centred on the middle of ``y_bounds`` first.
    intercept_scaling : float, default=0.5
        Value of that column, > 0; it counts in the row-norm bound ``R``.
    max_iter, tol :
        ``'objective'``, ``'output'``: the certified solver's settings (see
        :class:`~skdp.linear_model.DPLogisticRegression`).
    batch_size, epochs, learning_rate, max_grad_norm :
        ``'gradient'``: as in :class:`~skdp.linear_model.DPLogisticRegression`;
        ``batch_size`` below ``n_samples`` runs DP-SGD, ``'full'`` (or at
        least ``n_samples``) full-batch noisy gradient descent for
        ``epochs`` steps.
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the operating system's CSPRNG (the only
        choice for a release); a seed is for tests and examples.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by every fit.
    verbose : int, default=0
        Print the privacy parameters of each fit when > 0.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
    y_bounds_ : tuple of float
        The target bounds used (given, or read from the data).
    data_norm_ : float
    n_iter_ : int
        Public: ``max_iter`` (``'objective'``, ``'output'``), the DP-SGD
        steps (``'gradient'``), or 1 (``'adassp'``, one solve).
    gradient_variant_ : {'dpsgd', 'full_batch_gd'}
        ``'gradient'`` only: the mechanism ``batch_size`` chose, DP-SGD or
        full-batch noisy gradient descent.
    privacy_event_ : PrivacyEvent
    epsilon_, delta_ : float
    budget_entry_ : LedgerEntry or None

    See Also
    --------
    sklearn.linear_model.Ridge : The non-private estimator.

    Notes
    -----
    Neighbouring datasets differ in one row, target included (replace one
    row); ``n_samples`` is public. The targets are mapped to ``t = (y -
    m) / h`` with ``m`` and ``h`` the middle and half-width of ``y_bounds``,
    so ``|t| <= 1``; ``R`` bounds the rows of ``[X, intercept_scaling]``.

    **adassp** (Wang 2018, Algorithm 2): Gaussian noise on
    ``lambda_min(Z^T Z)`` (sensitivity ``R**2``), on ``Z^T Z`` in Frobenius
    norm (its diagonal and ``sqrt(2)`` times its upper triangle,
    ``sqrt(2) R**2``) and on ``Z^T t`` (``2 R``), calibrated so that their
    composition (one Gaussian mechanism) is exactly ``(epsilon,
    delta)``-DP; the ridge and the solve are post-processing. See
    ``plan_adassp``.

    **objective, output** use the Huber loss with threshold 2 on the
    residual: it is the squared loss for every prediction in the targets'
    range ``[-1, 1]``, its slope is at most ``L = 2`` and its curvature at
    most ``c = 1``, so the classifiers' proofs apply with these constants
    (``skdp.linear_model._losses``), with ``C = 1 / alpha``:
    objective-perturbation noise of sensitivity ``2 L = 4`` (units of ``C
    R``) and Jacobian term ``log(1 + C R**2 / alpha_o)``; output
    sensitivity ``2 C L R`` plus the solver's residual.

    **gradient**: DP-SGD on the same loss (per-row gradients clipped to
    ``max_grad_norm``, default ``0.4 R``: a public constant chosen on a
    validation split, below the worst-case slope ``R`` at ``w = 0`` because
    residuals are mostly much smaller than the targets' range; clipping
    biases the fit of rows with larger residuals, never the privacy), or
    full-batch noisy gradient descent with the same clipping
    (``batch_size='full'``: the ``epochs``-fold composition of Gaussian
    releases of sensitivity ``2 c``).

    **Sparse input.** Every method accepts any scipy sparse matrix (as
    CSR, never densified; see
    :class:`~skdp.linear_model.DPLogisticRegression`). ``'adassp'``
    releases the ``d x d`` Gram matrix with noise on every entry, so it is
    dense whatever ``X`` is: the plan refuses it, before the charge, when
    ``48 d**2`` bytes exceed the machine's memory (a 100,000-column matrix
    would need 480 GB), and points to ``'gradient'`` or ``'objective'``.

    **Dask input**: dask arrays and DataFrames are fitted as by
    :class:`~skdp.linear_model.DPLogisticRegression` (its Notes): every
    method, ``'adassp'`` too (``Z^T Z`` and ``Z^T t`` summed on the
    workers), releases bitwise the in-memory model for the same
    ``random_state``; ``y_bounds`` omitted is read by the validation pass,
    with the same warning.

    References
    ----------
    .. [1] Y.-X. Wang, "Revisiting differentially private linear regression:
       optimal and adaptive prediction & estimation in unbounded domain",
       UAI 2018.
    .. [2] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially
       Private Empirical Risk Minimization", JMLR 12, 2011.
    .. [3] M. Abadi et al., "Deep Learning with Differential Privacy",
       CCS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import PrivacyBudget
    >>> from skdp.linear_model import DPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 2)) / np.sqrt(2)
    >>> y = np.clip(3 * X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=5000), -3, 3)
    >>> budget = PrivacyBudget(epsilon=1.0, delta=1e-5)
    >>> reg = DPLinearRegression(epsilon=1.0, data_norm=1.0, y_bounds=(-3, 3),
    ...                          budget=budget, random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.9
    True
    """

    _y_numeric = True
    _approximate_methods = ("adassp", "gradient")
    _data_bound_params = ("data_norm", "y_bounds")
    _parameter_constraints: dict = {
        **_BaseDPLinear._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "method": [StrOptions({"adassp", "objective", "output", "gradient"})],
        "y_bounds": [tuple, list, None],
    }
    _parameter_constraints.pop("C")

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        alpha: float = 1.0,
        method: Literal["adassp", "objective", "output", "gradient"] = "gradient",
        data_norm: float | None = None,
        y_bounds: tuple[float, float] | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 0.5,
        max_iter: int = 100,
        tol: float = 1e-12,
        batch_size: int | Literal["full"] = 256,
        epochs: int = 10,
        learning_rate: float | None = None,
        max_grad_norm: float | None = None,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
        verbose: int = 0,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.method = method
        self.data_norm = data_norm
        self.y_bounds = y_bounds
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.max_grad_norm = max_grad_norm
        self.random_state = random_state
        self.budget = budget
        self.verbose = verbose

    # the core reads C: Ridge's alpha is 1 / C for 1/2 ||w||^2 + C sum l
    @property
    def C(self) -> float:
        return 1.0 / self.alpha if self.alpha > 0 else math.inf

    def _loss(self):
        return HuberLoss(2.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # At the default epsilon = 1, scikit-learn's 200-row check problem
        # (standardised rows of norm up to 5) leaves every private method a
        # signal-to-noise ratio near 1: R^2 of AdaSSP -0.04 to 0.20 over ten
        # noise seeds, where non-private Ridge has 0.81. The R^2 > 0.5 that
        # check_regressors_train asks for needs about 10x the rows or the
        # epsilon (see the class Notes); the other checks all run.
        tags.regressor_tags.poor_score = True
        return tags

    def _read_targets(self, y):
        y = np.asarray(y, dtype=float).ravel()
        y_range = None if self.y_bounds is not None else (np.min(y), np.max(y))
        return None, self._target_bounds(y_range)

    def _target_bounds(self, y_range) -> tuple[float, float]:
        """``y_bounds`` checked, or ``y_range`` (read from data) with a warning."""
        if self.y_bounds is None:
            low, high = (float(v) for v in y_range)
            warn_data_derived("y_bounds")
            if not high > low:
                low, high = low - 0.5, high + 0.5
        else:
            if len(self.y_bounds) != 2:
                raise ValueError(
                    f"y_bounds must be a pair (low, high), got {self.y_bounds!r}."
                )
            low, high = (float(b) for b in self.y_bounds)
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise ValueError(
                    f"y_bounds must be finite with low < high, got {self.y_bounds!r}."
                )
        middle, half = (low + high) / 2.0, (high - low) / 2.0
        check_magnitudes("DPLinearRegression", **{"y_bounds": max(abs(low), abs(high))})
        if not (math.isfinite(middle) and half > 0 and math.isfinite(half)):
            raise ValueError(f"y_bounds {(low, high)!r} cannot be scaled in float64.")
        return low, high

    def _n_outputs(self, prepared) -> int:
        return 2  # one model

    def _plan_fit(self, prepared) -> FitPlan:
        if self.method != "adassp" and not self.alpha > 0:
            raise ValueError(
                f"method={self.method!r} needs alpha > 0 (strong convexity); "
                "alpha=0 is only for method='adassp'."
            )
        if self.method != "adassp":
            return super()._plan_fit(prepared)
        plan = plan_adassp(
            epsilon=float(self.epsilon),
            delta=prepared.delta,
            row_norm=prepared.row_norm,
            target_bound=1.0,
            n_samples=prepared.n_samples,
            n_features=prepared.n_coef,
            alpha=float(self.alpha),
        )
        warn_if_noise_swamps_learning(
            "DPLinearRegression(method='adassp')",
            plan,
            n_features=prepared.n_coef,
            n_samples=prepared.n_samples,
            epsilon=float(self.epsilon),
            loss=self._loss(),
        )
        return FitPlan(plan.event, prepared.delta, {"method": plan})

    def _run_fit(self, prepared, plan, source) -> None:
        if self.method != "adassp":
            return super()._run_fit(prepared, plan, source)
        coef = run_adassp(prepared.rows, prepared.spec, plan.settings["method"], source)
        self.n_iter_ = 1
        self.data_norm_ = prepared.data_norm
        self._set_targets_fitted(prepared)
        d = prepared.n_features
        self._set_coefficients(
            coef[None, :d],
            coef[d:] * prepared.intercept if prepared.intercept else np.zeros(1),
            prepared,
        )

    def _set_targets_fitted(self, prepared) -> None:
        self.y_bounds_ = prepared.extra["bounds"]

    def _set_coefficients(self, coef, intercept, prepared) -> None:
        low, high = prepared.extra["bounds"]
        middle, half = (low + high) / 2.0, (high - low) / 2.0
        self.coef_ = half * np.asarray(coef, dtype=float).ravel()
        self.intercept_ = float(middle + half * np.ravel(intercept)[0])
        if self.method in ("objective", "output", "gradient"):
            self.n_iter_ = int(np.ravel(self.n_iter_)[0])

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data. Sparse matrices are converted to CSR and never
            densified.
        y : array-like of shape (n_samples,)
            Targets (clipped into ``y_bounds``).

        Returns
        -------
        self : DPLinearRegression
            Fitted estimator.
        """
        return self._fit_private(X, y)

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """Predicted targets, ``X coef_ + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self._linear_scores(X)
