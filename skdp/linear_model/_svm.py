"""Differentially private linear support vector classification."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from sklearn.base import BaseEstimator, ClassifierMixin

from ..utils._sklearn_compat import Interval, Real, fit_context
from ._base import _BaseDPLinearClassifier
from ._losses import HuberHingeLoss

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPLinearSVC"]


class DPLinearSVC(_BaseDPLinearClassifier, ClassifierMixin, BaseEstimator):
    """Linear support vector classification with differential privacy.

    L2-regularised linear SVM, ``min 1/2 ||w||^2 + C sum_i l_h(y_i (x_i.w +
    b))`` with the Huber-smoothed hinge loss ``l_h`` (Chaudhuri, Monteleoni &
    Sarwate 2011, Section 3.4.2; the hinge loss itself is not differentiable,
    which objective perturbation needs), trained with one of three private
    methods on the private-ERM core shared with
    :class:`~skdp.linear_model.DPLogisticRegression`:

    - ``'objective'``: objective perturbation, epsilon-DP;
    - ``'output'``: the minimiser plus noise calibrated to its sensitivity,
      epsilon-DP, or (epsilon, delta)-DP with Gaussian noise when
      ``delta > 0``;
    - ``'gradient'``: DP-SGD, or full-batch noisy gradient descent with
      ``batch_size='full'``, (epsilon, delta)-DP.

    More than two classes are fitted one-vs-rest, all ``K`` models as one
    mechanism with one charge (see Notes).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0.
    delta : float or None, default=None
        Privacy parameter delta in ``[0, 1)``. ``None`` follows skdp's
        default-delta rule (:ref:`default_delta`): 0 for ``'objective'`` and
        ``'output'``, :data:`~skdp.accounting.DEFAULT_DELTA` for
        ``'gradient'``, which needs ``delta > 0``.
    C : float, default=1.0
        Inverse regularisation strength, scikit-learn's meaning, > 0.
    huber_h : float, default=2.0
        Half-width ``h`` of the band over which the hinge is smoothed, > 0
        (public). The loss's curvature is ``1 / (2 h)``: a larger ``h`` means
        less objective-perturbation noise and, for ``h > 1``, a smaller
        DP-SGD clipping norm ``(1 + h) / (2 h)``; a smaller one a loss
        closer to the hinge. The default was chosen for the default method
        on a validation split (``benchmarks/tune_erm_defaults.py``); with
        ``method='objective'``, ``h`` between 0.5 and 1 scored higher there.
    method : {'objective', 'output', 'gradient'}, default='gradient'
        How privacy is obtained (see Notes).
    data_norm : float or None, default=None
        Public bound on the L2 norm of each row of ``X``; rows with a larger
        norm are scaled down to it. ``None`` reads the largest row norm from
        the data and emits a :class:`~skdp.PrivacyLeakWarning`.
    fit_intercept : bool, default=True
        Fit an intercept, as the (regularised) coefficient of an appended
        constant column of value ``intercept_scaling``; the column counts in
        ``R = sqrt(data_norm**2 + intercept_scaling**2)``.
    intercept_scaling : float, default=0.5
        Value of the appended constant column, > 0.
    classes : array-like or None, default=None
        The public list of possible labels. ``None`` reads it from ``y``
        with a :class:`~skdp.PrivacyLeakWarning`.
    max_iter : int, default=100
        ``'objective'``, ``'output'``: Newton steps before the certified
        fallback (see :class:`~skdp.linear_model.DPLogisticRegression`).
    tol : float, default=1e-12
        ``'objective'``, ``'output'``: relative gradient-norm threshold of
        the solver; its residual is paid for in the noise.
    batch_size : int or 'full', default=256
        ``'gradient'``: below ``n_samples``, DP-SGD's expected Poisson batch
        size; ``'full'`` (or at least ``n_samples``), full-batch noisy
        gradient descent, one pass over the rows a step (the mechanism the
        plan picks, in memory and on dask alike; see
        :class:`~skdp.linear_model.DPLogisticRegression`).
    epochs : int, default=10
        ``'gradient'``: DP-SGD takes ``ceil(epochs / q)`` steps, full-batch
        gradient descent ``epochs``.
    learning_rate : float or None, default=None
        ``'gradient'``: step size; ``None`` is the rule of
        ``default_learning_rate`` with the
        loss's curvature ``c = 1 / (2 h)``.
    max_grad_norm : float or None, default=None
        ``'gradient'``: clipping norm of one row's gradient (all models
        together). ``None`` means ``R sqrt(n_models)``, the largest gradient
        norm at ``w = 0`` (the hinge's slope is 1 there).
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the operating system's CSPRNG (the only
        choice for a release); a seed is for tests and examples.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by every fit.
    verbose : int, default=0
        Print the privacy parameters of each fit when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
    n_iter_ : ndarray of shape (n_models,)
        Public: ``max_iter`` (exact methods) or the DP-SGD steps.
    multi_class_ : 'ovr'
    data_norm_ : float
    noise_multiplier_, sampling_rate_, n_steps_, learning_rate_, max_grad_norm_
        ``'gradient'`` only.
    gradient_variant_ : {'dpsgd', 'full_batch_gd'}
        ``'gradient'`` only: DP-SGD, or full-batch noisy gradient descent
        (``batch_size='full'``; see
        :class:`~skdp.linear_model.DPLogisticRegression`).
    privacy_event_ : PrivacyEvent
    epsilon_, delta_ : float
    budget_entry_ : LedgerEntry or None

    See Also
    --------
    sklearn.svm.LinearSVC : The non-private estimator (squared hinge).
    DPLogisticRegression : The same core with the logistic loss.

    Notes
    -----
    Neighbouring datasets differ in one row, label included (replace one
    row); ``n_samples`` is public. The Huber hinge has slope at most
    ``L = 1`` and curvature at most ``c = 1 / (2 h)``
    (``HuberHingeLoss``), which is all the
    three proofs use:

    - **objective** (CMS 2011, Theorem 9 with their Huber loss): noise of
      sensitivity ``2 L sqrt(m)`` (in units of ``C R``) and the Jacobian
      term ``m log(1 + c C R**2 / alpha)``, ``m`` the number of models;
    - **output** (CMS 2011, Corollary 8): sensitivity ``2 C L R sqrt(m)``
      plus twice the solver's public residual;
    - **gradient**: clipped per-row gradients, the accountant's
      Poisson-subsampled Gaussian event (DP-SGD), or the ``epochs``-fold
      composition of the Gaussian mechanism of sensitivity ``2 c`` on the
      full clipped sum (full-batch gradient descent).

    **One-vs-rest, one mechanism.** With ``K > 2`` classes the ``K`` binary
    problems share the rows: replacing one row changes one row of *every*
    problem. Their joint objective is separable, so the joint gradient
    changes by at most ``2 L R sqrt(K)`` (one block of norm ``2 L R`` per
    model) and a row's Hessian is block diagonal with ``K`` rank-one
    blocks, each of eigenvalue at most ``c R**2``; objective perturbation
    draws one noise vector for all ``K d`` coefficients with these constants,
    and output perturbation and DP-SGD treat the ``K`` models as one vector.
    The whole fit is one event of the fit's epsilon (not ``K`` events).

    **Sparse input** goes through every method as CSR, never densified, as
    for :class:`~skdp.linear_model.DPLogisticRegression` (whose Notes
    describe the Hessian-free solver the exact methods switch to beyond
    2048 coefficients per model).

    **Dask input**: dask arrays and DataFrames are fitted as by
    :class:`~skdp.linear_model.DPLogisticRegression` (its Notes): every
    method releases bitwise the in-memory model for the same
    ``random_state``; choose ``batch_size='full'`` for ``'gradient'`` on
    large data (one pass per step).

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially
       Private Empirical Risk Minimization", JMLR 12, 2011.
    .. [2] M. Abadi et al., "Deep Learning with Differential Privacy",
       CCS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import PrivacyBudget
    >>> from skdp.linear_model import DPLinearSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    >>> y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    >>> budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    >>> svc = DPLinearSVC(epsilon=1.0, data_norm=1.0, classes=[0, 1],
    ...                   budget=budget, random_state=0)
    >>> svc.fit(X, y).score(X, y) > 0.8
    True
    >>> svc.decision_function(X[:2]).shape
    (2,)
    """

    _parameter_constraints: dict = {
        **_BaseDPLinearClassifier._parameter_constraints,
        "huber_h": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        C: float = 1.0,
        huber_h: float = 2.0,
        method: Literal["objective", "output", "gradient"] = "gradient",
        data_norm: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 0.5,
        classes: ArrayLike | None = None,
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
        self.C = C
        self.huber_h = huber_h
        self.method = method
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.max_grad_norm = max_grad_norm
        self.random_state = random_state
        self.budget = budget
        self.verbose = verbose

    def _loss(self):
        return HuberHingeLoss(float(self.huber_h))

    def _set_targets_fitted(self, prepared) -> None:
        super()._set_targets_fitted(prepared)
        self.multi_class_ = "ovr"

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data. Sparse matrices are converted to CSR and never
            densified.
        y : array-like of shape (n_samples,)
            Labels.

        Returns
        -------
        self : DPLinearSVC
            Fitted estimator.
        """
        return self._fit_private(X, y)
