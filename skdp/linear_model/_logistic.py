"""Differentially private logistic regression."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy.special import expit, log_expit, log_softmax, logsumexp, softmax
from sklearn.base import BaseEstimator, ClassifierMixin

from ..utils._sklearn_compat import fit_context
from ._base import _BaseDPLinearClassifier, row_norms

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPLogisticRegression", "row_norms"]


class DPLogisticRegression(_BaseDPLinearClassifier, ClassifierMixin, BaseEstimator):
    """Logistic regression with differential privacy.

    L2-regularised logistic regression, ``min 1/2 ||w||^2 + C sum_i
    log(1 + exp(-y_i (x_i.w + b)))`` as in scikit-learn, trained with one
    of three private methods:

    - ``'objective'``: objective perturbation (Chaudhuri, Monteleoni &
      Sarwate 2011, Algorithm 2), epsilon-DP;
    - ``'output'``: the exact minimiser plus noise calibrated to its
      sensitivity (ibid., Algorithm 1), epsilon-DP, or (epsilon, delta)-DP
      with Gaussian noise when ``delta > 0``;
    - ``'gradient'``: DP-SGD with Poisson sampling, per-example clipping and
      Gaussian noise (Abadi et al. 2016), or with ``batch_size='full'``
      full-batch noisy gradient descent (Bassily, Smith & Thakurta 2014),
      (epsilon, delta)-DP.

    Every fit charges ``budget`` once, after validating its input and before
    computing anything released, and records what it spent in
    ``epsilon_``, ``delta_`` and ``privacy_event_``. A refused fit raises
    :class:`~skdp.BudgetExceededError` and leaves no model.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of one fit, > 0.
    delta : float or None, default=None
        Privacy parameter delta in ``[0, 1)``. ``None`` follows skdp's
        default-delta rule (:ref:`default_delta`): 0 for ``'objective'`` and
        ``'output'`` (pure epsilon-DP), :data:`~skdp.accounting.DEFAULT_DELTA`
        for ``'gradient'``, which needs ``delta > 0``; choose ``delta`` well
        below ``1 / n_samples`` for large data. ``'output'`` with ``delta > 0``
        uses the Gaussian mechanism; ``'objective'`` with ``delta > 0`` uses
        Gaussian noise in the objective (Kifer, Smith & Thakurta 2012, see
        ``gaussian_objective_sigma``),
        whose norm grows like ``sqrt(d)`` instead of ``d``.
    C : float, default=1.0
        Inverse regularisation strength, scikit-learn's meaning (weight of
        the summed loss against ``1/2 ||w||^2``), > 0. Smaller ``C`` means
        less noise for ``'output'`` and ``'objective'``.
    method : {'objective', 'output', 'gradient'}, default='gradient'
        How privacy is obtained (see Notes). ``'gradient'`` is the default
        because it is the most accurate at moderate epsilon (see
        ``benchmarks/logreg_adult.py``).
    data_norm : float or None, default=None
        Public bound on the L2 norm of each row of ``X``. Rows with a larger
        norm are scaled down to it (never rejected; norms are computed
        without overflow). ``None`` reads the
        largest row norm from the data and emits a
        :class:`~skdp.PrivacyLeakWarning`: that norm is not protected.
    fit_intercept : bool, default=True
        Fit an intercept, as the coefficient of an appended constant column
        of value ``intercept_scaling``. That coefficient is regularised like
        the others (the privacy proofs need strong convexity in every
        coordinate), and the column counts in the row-norm bound
        ``R = sqrt(data_norm**2 + intercept_scaling**2)``.
    intercept_scaling : float, default=0.5
        Value of the appended constant column, > 0. Smaller values shrink the
        norm bound ``R`` (less noise) but regularise the intercept more; 0.5
        beat 1.0 and 0.25 on a validation split of UCI Adult's training part
        for both 'gradient' and 'objective'.
    classes : array-like or None, default=None
        The public list of possible labels. ``None`` reads it from ``y`` and
        emits a :class:`~skdp.PrivacyLeakWarning` (which labels occur in the
        data is then not protected). Labels of ``y`` outside ``classes``
        raise an error.
    max_iter : int, default=100
        ``'objective'`` and ``'output'``: Newton steps (Newton-CG steps
        beyond 2048 coefficients) before the solver falls back to an
        accelerated gradient method with a public step bound (see Notes).
        Any value is valid.
    tol : float, default=1e-12
        ``'objective'`` and ``'output'``: the solver stops at a gradient norm
        of ``tau = tol * (alpha + C n R)`` (at least four times its rounding
        error), a public threshold; the residual it leaves is added to the
        noise (see Notes), so a larger ``tol`` means more noise, never less
        privacy.
    batch_size : int or 'full', default=256
        ``'gradient'`` only, and it chooses the mechanism (from public
        quantities: ``batch_size`` and ``n_samples``, never from where the
        rows are): an int below ``n_samples`` is DP-SGD's expected Poisson
        batch size, the sampling rate ``batch_size / n_samples``; ``'full'``
        (or an int of at least ``n_samples``) runs full-batch noisy
        gradient descent, every row at every step. Full batches suit large
        or distributed data: a step is one pass over the rows (one round of
        tasks on dask), against thousands of small steps for DP-SGD.
    epochs : int, default=10
        ``'gradient'`` only: passes over the data. DP-SGD takes
        ``ceil(epochs / sampling_rate)`` steps, full-batch gradient descent
        ``epochs`` steps (try ``epochs=100`` there: each step is exact up to
        its noise, and Nesterov's method needs tens of them).
    learning_rate : float or None, default=None
        ``'gradient'`` only: constant step size on the averaged objective
        ``||w||^2 / (2 n C) + mean_i loss_i``. ``None`` means
        ``min(16 / R**2, n C, 2.5 q n / (sqrt(T) sigma c R))`` (``q`` the
        sampling rate, ``T`` the number of steps, ``sigma`` the noise
        multiplier, ``c`` the clipping norm): four times the classical
        ``1 / L`` for the logistic loss's smoothness ``L = R**2 / 4``, capped
        at ``n C`` so that the regulariser's step never overshoots (small
        ``n C``), and capped so that the noise summed over all steps moves
        the margin of a row of norm ``R`` by a standard deviation of at most
        2.5. The last cap shortens training as epsilon shrinks (an early
        stop that regularises the noisy fit); it was chosen on a validation
        split of UCI Adult's training part, never its test split (see
        ``default_learning_rate`` and
        ``benchmarks/tune_dpsgd_defaults.py``). Full-batch gradient descent:
        the same rule with ``q = 1`` and Nesterov's step ``1 / (c R**2)``
        in place of ``16 / R**2`` (``plan_full_batch_gd``).
    max_grad_norm : float or None, default=None
        ``'gradient'`` only: clipping norm of one row's gradient (over all
        one-vs-rest models together). ``None`` means ``R sqrt(n_models) / 2``,
        the largest per-row gradient norm at the starting point ``w = 0``
        (where ``|loss'| = 1/2``): no clipping bias at the start, and half the
        noise of the worst-case bound ``R sqrt(n_models)``.
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the operating system's CSPRNG: the only
        choice for a release. A seed makes fits reproducible, which is for
        tests and examples only: whoever knows the seed can remove the noise.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by every fit; ``None`` records the spend only
        on the estimator.
    verbose : int, default=0
        Print the privacy parameters of each fit when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` has string feature names.
    n_iter_ : ndarray of shape (n_models,)
        Public: ``max_iter`` for ``'objective'`` and ``'output'`` (the number
        of steps actually taken depends on the data and is not released),
        the number of DP-SGD steps for ``'gradient'``.
    multi_class_ : {'ovr', 'multinomial'}
        ``'multinomial'`` for ``'objective'`` and ``'output'`` with more than
        two classes (one softmax model; :meth:`predict_proba` is its
        softmax), ``'ovr'`` otherwise.
    data_norm_ : float
        The row-norm bound used (``data_norm`` or the one read from data).
    noise_multiplier_, sampling_rate_, n_steps_ : float, float, int
        ``'gradient'`` only: the DP-SGD noise multiplier (calibrated so that
        the accountant gives exactly ``(epsilon, delta)``), the Poisson
        sampling rate and the number of steps.
    learning_rate_, max_grad_norm_ : float, float
        ``'gradient'`` only: the step size and clipping norm used (the
        parameters, or the defaults they resolved to).
    gradient_variant_ : {'dpsgd', 'full_batch_gd'}
        ``'gradient'`` only: the mechanism the plan chose from
        ``batch_size``: Poisson-sampled DP-SGD, or full-batch noisy gradient
        descent (``sampling_rate_`` is then 1; ``noise_multiplier_`` is
        relative to ``max_grad_norm`` for both).
    privacy_event_ : PrivacyEvent
        What the fit charged.
    epsilon_, delta_ : float
        What ``privacy_event_`` costs.
    budget_entry_ : LedgerEntry or None
        The fit's entry in ``budget``.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : The non-private estimator.

    Notes
    -----
    Neighbouring datasets differ in one row, label included (*replace one
    row*), for every method; ``n_samples`` is public.
    ``R`` is ``data_norm`` (with the intercept column counted,
    ``sqrt(data_norm**2 + intercept_scaling**2)``) and labels are coded
    ``y in {-1, +1}``. With ``K > 2`` classes, ``'objective'`` and
    ``'output'`` fit one multinomial (softmax) model with all coefficients
    regularised; ``'gradient'`` fits ``K`` one-vs-rest models and releases
    them as one mechanism. Either way one fit is one event.

    **objective** (CMS 2011, Algorithm 2 and Theorem 9). The fit returns
    the exact minimiser of ``alpha/2 ||W||^2 + C sum_i l(W; z_i, y_i) +
    C R <b, W>``, with ``l`` the binary logistic loss (two classes) or the
    multinomial softmax loss (``K > 2`` classes, one model for all classes,
    ``multi_class_ == 'multinomial'``), and ``b`` of density proportional to
    ``exp(-epsilon' ||b|| / Delta)``: ``Delta = 2`` (binary) or
    ``2 sqrt(2)`` (softmax; ``b`` drawn in the ``(K - 1) d``-dimensional
    subspace where the loss gradients live). The density of the output
    changes by at most ``exp(epsilon')`` through the noise and by at most
    ``(1 + beta C R**2 / alpha)**r`` through the Jacobian, with ``r = 1``,
    ``beta = 1/4`` (binary) or ``r = K - 1``, ``beta = 1/K`` (softmax): so
    ``epsilon_o = epsilon' + r log(1 + beta C R**2 / alpha)``, epsilon_o-DP
    for all classes together, where ``epsilon_o = 0.99 epsilon`` (the other
    1% covers the solver's residual, see below). The curvature term scales
    with ``R**2``. ``alpha`` is 1 (scikit-learn's regularisation) while that
    leaves ``epsilon' >= 0.95 epsilon_o``, and is raised to leave exactly
    ``0.95 epsilon_o`` otherwise (CMS's extra regularisation ``Delta``;
    their Algorithm 2 leaves ``epsilon / 2``). The derivation is in
    ``objective_noise_scale``.

    **output** (CMS 2011, Algorithm 1 and Corollary 8). Replacing one row
    changes ``J(w) = 1/2 ||w||^2 + C sum_i loss`` by a function whose
    gradient has norm at most ``C (||z_i|| + ||z'_i||) <= 2 C R`` (the
    logistic loss is 1-Lipschitz in the margin); ``J`` is 1-strongly
    convex, so the minimiser moves by at most ``Delta = 2 C R`` (CMS
    Lemma 7). The softmax loss's gradient has norm at most ``sqrt(2) R``,
    so a multinomial minimiser moves by at most ``Delta = 2 sqrt(2) C R``,
    within the ``(K - 1) d``-dimensional subspace where such minimisers
    lie; the noise is drawn in that subspace
    (``output_perturbation``). Noise of
    density proportional to
    ``exp(-epsilon ||b|| / Delta)`` gives epsilon-DP; with ``delta > 0``,
    Gaussian noise calibrated by the analytic Gaussian mechanism (Balle &
    Wang 2018, Theorem 8) gives (epsilon, delta)-DP.

    **Solver residual.** Both proofs are for the exact minimiser; the
    solver's residual is paid for. Its stopping threshold is public,
    ``tau = max(tol (alpha + C n R), 4 e)`` with ``e`` a bound on the
    rounding error of a computed gradient
    (``plan_solver``), and every point it
    returns is within ``r = 2 tau / alpha`` of the exact minimiser: damped
    Newton stops once the computed gradient norm and the rounding bound are
    both at most ``tau``, and if ``max_iter`` Newton steps do not get there,
    Nesterov's accelerated gradient method runs for a public number of steps
    that guarantees ``r`` (``solve``).
    ``'output'`` calibrates its noise to ``Delta + 2 r``; ``'objective'``
    spends 1% of epsilon on noise of sensitivity ``2 r`` added to the
    returned point (approximate minima perturbation, Iyengar et al. 2019,
    in its pure form; ``plan_objective``).
    At the default ``tol``, ``r`` grows like ``n**1.5`` times the unit
    roundoff (the certified gradient is summed in row blocks of about
    ``sqrt(n)`` rows added by a tree, ``_newton.summation_terms``): about
    ``4e-10`` at ``n = 1,000``, ``1e-8`` at ``n = 30,000`` and ``1e-6`` at
    ``n = 2e6`` (``C = 1``, ``data_norm = 1``, 10 features); any ``tol`` and
    ``max_iter`` stay valid.
    How many steps were taken depends on the data and is not released
    (``n_iter_`` is ``max_iter``), and no ``ConvergenceWarning`` is emitted.

    Every fit plans from public quantities, charges, then runs without
    raising or warning (:mod:`skdp.base`);
    :meth:`~skdp.base.PrivateEstimatorMixin.privacy_plan` returns the plan
    without charging. Parameters that would overflow float64 or need
    more memory than the machine has are refused before the charge.

    **Sparse input.** ``X`` may be any scipy sparse matrix or array; it is
    converted to CSR and never densified: row norms are read from the
    stored values and clipping scales them, DP-SGD multiplies sparse
    batches, and predictions are sparse products. With more than
    ``MAX_DENSE_HESSIAN`` (2048) coefficients per solve (``d + 1``, times
    ``K`` for softmax) the plan, from ``n_features`` and the number of
    classes only, replaces the dense Hessian (80 GB for 100,000 columns)
    by a Hessian-free Newton-CG solver: conjugate gradients with
    Hessian-vector products ``alpha v + C Z^T (D (Z v))``, memory a few
    vectors of ``n`` and ``K d`` numbers beside the data, checked in the
    plan. It stops on the same certificate (the computed gradient norm and
    its rounding bound at most ``tau``, the bound counting a sparse row's
    stored entries as its terms) and falls back to the same accelerated
    gradient method, so the residual ``r`` and everything calibrated to it
    are unchanged. Results on CSR equal the dense fit's to rounding (same
    seed). The pure methods' noise norm grows like ``d``: with tens of
    thousands of columns prefer ``'gradient'`` or ``delta > 0``, whose
    Gaussian noise grows like ``sqrt(d)`` (``benchmarks/sparse.py``).

    **gradient** (Abadi et al. 2016, Algorithm 1). Each of ``T`` steps
    includes every row independently with probability ``q``, clips each
    row's gradient to ``max_grad_norm`` and adds Gaussian noise of standard
    deviation ``noise_multiplier * max_grad_norm`` to the clipped sum;
    the regulariser's gradient is added without noise and the returned
    model is the average of the second half of the iterates
    (post-processing). The default step size depends on the calibrated
    noise multiplier, a public quantity, not on the data. The noise
    multiplier is the smallest for which the Renyi-DP accountant (Mironov,
    Talwar & Zhang 2019) gives
    ``(epsilon, delta)`` for ``PoissonSubsampledGaussianEvent(q,
    noise_multiplier, T)`` under *replace one row*: the add/remove curve
    of Mironov, Talwar & Zhang (2019) turned into a replace-one curve with
    Mironov's weak triangle inequality
    (``skdp.accounting._rdp.rdp_poisson_subsampled_gaussian_replace_one``),
    so DP-SGD composes in the budget under the same relation as the other
    methods. The noise is the discrete
    Gaussian drawn from the secure source. The Poisson subsample of each
    step is drawn from the fit's random source (the operating system's
    CSPRNG unless ``random_state`` is set) in the process that calls
    ``fit``.

    **Full-batch gradient descent** (``batch_size='full'``, or at least
    ``n_samples``; Bassily, Smith & Thakurta 2014, Algorithm 1 with full
    batches). Each of ``T = epochs`` steps releases the sum of every row's
    gradient clipped to ``c = max_grad_norm`` plus Gaussian noise, at
    Nesterov's look-ahead point; the update is post-processing. Replacing
    one row moves the sum by at most ``2 c``: it is DP-SGD's mechanism at
    sampling rate ``q = 1``, and charged as such,
    ``PoissonSubsampledDiscreteGaussianEvent(1, s, ..., T)``, which the
    accountants treat as ``T`` Gaussian releases of sensitivity ``2 c``
    and standard deviation ``s c`` (plus the grid's rounding allowance),
    ``s`` the smallest that costs ``(epsilon, delta)`` under replace one
    row (``plan_full_batch_gd``).

    **Dask input** (``pip install skdp[dask]``). ``X`` and ``y`` may be
    dask arrays or a dask DataFrame and Series: the fit is the same call,
    ``fit(dask_X, dask_y)``, and every method releases **the same model**
    as the in-memory fit with the same ``random_state``, bitwise. The rows
    are read through one row source whatever holds them
    (``skdp.utils._row_source``): canonical blocks of ``max(1024,
    ceil(sqrt(n)))`` rows, each bounded to ``data_norm`` inside the block
    function (on the workers), their sums added by one tree of fan-in 8. The
    client validates the input in one pass that returns only public facts
    (finite values, labels within ``classes``), plans from ``n_samples`` and
    ``n_features`` (the collection's shape), charges once and draws every
    noise vector and subsample; the workers only sum. ``'objective'`` and
    ``'output'`` run the certified solver on worker-side sums (a pass per
    Newton step, line-search trial or Hessian product); full-batch
    gradient descent is one pass per step; DP-SGD one round of tasks per
    step, which gathers the sampled rows from their blocks on the workers
    (``ceil(epochs / q)`` rounds: prefer ``batch_size='full'`` on large
    data). A worker failure
    after the charge raises :class:`~skdp.exceptions.ChargedFitError`: the
    spend stands. Prefer ``X.persist()`` when the data fits in the
    cluster's memory.

    ``sample_weight`` and ``class_weight`` are not supported: weights
    change the sensitivity, and ``class_weight='balanced'`` reads class
    counts from the data.

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially
       Private Empirical Risk Minimization", JMLR 12, 2011.
    .. [2] M. Abadi et al., "Deep Learning with Differential Privacy",
       CCS 2016.
    .. [3] I. Mironov, K. Talwar, L. Zhang, "Renyi Differential Privacy of
       the Sampled Gaussian Mechanism", 2019.
    .. [4] R. Iyengar, J. P. Near, D. Song, O. Thakkar, A. Thakurta, L. Wang,
       "Towards Practical Differentially Private Convex Optimization",
       IEEE S&P 2019.
    .. [5] S. Bubeck, "Convex Optimization: Algorithms and Complexity",
       Foundations and Trends in Machine Learning 8(3-4), 2015.
    .. [6] R. Bassily, A. Smith, A. Thakurta, "Private Empirical Risk
       Minimization: Efficient Algorithms and Tight Error Bounds", FOCS
       2014.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression, PrivacyBudget
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    >>> y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    >>> budget = PrivacyBudget(epsilon=3.0)
    >>> clf = DPLogisticRegression(epsilon=1.0, method="objective", data_norm=1.0,
    ...                            classes=[0, 1], budget=budget, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.8
    True
    >>> clf.epsilon_, budget.spent()
    (1.0, (1.0, 0.0))

    Sparse text features, from a stateless vectorizer whose rows have unit
    norm (4,097 coefficients: the Hessian-free solver):

    >>> from sklearn.feature_extraction.text import HashingVectorizer
    >>> from sklearn.pipeline import make_pipeline
    >>> docs = ["a good film", "great acting", "bad plot", "an awful film"] * 2500
    >>> labels = [1, 1, 0, 0] * 2500
    >>> text_clf = make_pipeline(
    ...     HashingVectorizer(n_features=2**12),
    ...     DPLogisticRegression(epsilon=1.0, delta=1e-5, method="objective",
    ...                          data_norm=1.0, classes=[0, 1], random_state=0))
    >>> text_clf.fit(docs, labels).score(docs, labels)
    1.0
    """

    _parameter_constraints: dict = {**_BaseDPLinearClassifier._parameter_constraints}

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        C: float = 1.0,
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
        return None  # the logistic loss, or softmax beyond two classes

    def _set_targets_fitted(self, prepared) -> None:
        super()._set_targets_fitted(prepared)
        multinomial = self.method != "gradient" and prepared.classes.size > 2
        self.multi_class_ = "multinomial" if multinomial else "ovr"

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data. Sparse matrices are converted to CSR and never
            densified (see Notes).
        y : array-like of shape (n_samples,)
            Labels.

        Returns
        -------
        self : DPLogisticRegression
            Fitted estimator.
        """
        return self._fit_private(X, y)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities.

        The softmax of the scores for a multinomial model
        (``multi_class_ == 'multinomial'``), the one-vs-rest sigmoids
        normalised to sum to one otherwise.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            return np.column_stack([1.0 - positive, positive])
        if self.multi_class_ == "multinomial":
            return softmax(scores, axis=1)
        proba = expit(scores)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        # In log space throughout: log(predict_proba) is -inf (with a
        # warning) wherever a probability underflows.
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        if self.multi_class_ == "multinomial":
            return log_softmax(scores, axis=1)
        log_proba = log_expit(scores)
        return log_proba - logsumexp(log_proba, axis=1, keepdims=True)
