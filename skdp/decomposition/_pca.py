"""Principal component analysis with differential privacy (covariance perturbation)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)

from ..accounting._delta import resolve_delta
from ..accounting._events import PureDPEvent
from ..base import FitPlan, PrivateEstimatorMixin
from ..linear_model._rows import row_norms
from ..mechanisms import add_noise, plan_gaussian, plan_l2_vector
from ..utils._bounds import refuse_undeclared
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._feasibility import check_magnitudes, check_memory
from ..utils._privacy import warn_data_derived
from ..utils._row_checks import FactsRequest, check_finite, fit_rows, read_facts
from ..utils._row_source import RowSource, row_source
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    Real,
    check_is_fitted,
    fit_context,
    validate_data,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPPCA", "MEAN_WEIGHT", "moment_sensitivity", "noisy_moments"]

#: The column sum is released beside the Gram matrix scaled by ``w =
#: MEAN_WEIGHT * data_norm``: the joint sensitivity is then ``(sqrt(2) +
#: MEAN_WEIGHT**2 / sqrt(2)) R**2`` (12.5 % above the Gram matrix's alone)
#: and the sum's noise is ``1 / MEAN_WEIGHT`` times larger than the Gram
#: matrix's diagonal noise. Chosen on UCI Adult's training part (see
#: ``benchmarks/_models_pca.py``); 0.25 and 1 were within a few per cent.
MEAN_WEIGHT = 0.5


def moment_sensitivity(data_norm: float, weight: float) -> float:
    """L2 sensitivity of the released moment vector under replace-one.

    The vector is ``(diag(G), sqrt(2) * triu(G, 1), weight * s)`` with ``G =
    X^T X`` and ``s`` the column sums of ``X``, every row of norm at most
    ``R = data_norm``. See :class:`DPPCA`, Notes, for the derivation.

    Examples
    --------
    >>> from skdp.decomposition._pca import moment_sensitivity
    >>> round(moment_sensitivity(1.0, 0.5), 4)
    1.591
    """
    r2, w2 = data_norm**2, weight**2
    if w2 <= 2.0 * r2:
        return math.sqrt(2.0) * r2 + w2 / math.sqrt(2.0)
    return 2.0 * weight * data_norm


def bounded_moments(X, _, data_norm: float | None):
    """``(X^T X, column sums of X)`` of one block, rows scaled to ``data_norm``.

    The block function of the fit: each row of norm above ``data_norm`` is
    scaled down to it in the block (on the workers for dask), never in a
    copy of the whole ``X``. ``data_norm=None`` leaves the rows as they are.
    """
    X = np.asarray(X, dtype=np.float64)
    if data_norm is not None:
        tiny = np.finfo(float).tiny
        X = X * np.minimum(1.0, data_norm / np.maximum(row_norms(X), tiny))[:, None]
    return X.T @ X, X.sum(axis=0)


def _pack_moments(gram: np.ndarray, column_sum: np.ndarray, weight: float):
    """``(diag(G), sqrt(2) triu(G, 1), weight * s)`` as one vector."""
    rows, cols = np.triu_indices(gram.shape[0])
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    return np.concatenate([gram[rows, cols] * scale, weight * column_sum])


def _moment_vector(X: np.ndarray, weight: float) -> np.ndarray:
    """The moment vector of the rows ``X`` as they are."""
    return _pack_moments(*bounded_moments(X, None, None), weight)


def _unpack_moments(vector: np.ndarray, d: int, weight: float):
    """The symmetric Gram matrix and the column sums from a moment vector."""
    rows, cols = np.triu_indices(d)
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    upper = vector[: rows.size] / scale
    gram = np.zeros((d, d))
    gram[rows, cols] = upper
    gram[cols, rows] = upper
    return gram, vector[rows.size :] / weight


def noisy_moments(X, noise, weight: float, source, data_norm: float | None = None):
    """The Gram matrix and column sums of the rows released with ``noise``.

    ``X`` is an array or a :class:`~skdp.utils._row_source.RowSource` (in
    memory or on dask); its rows are scaled to ``data_norm`` block by block
    (``None``: as they are) and the moments summed in one pass
    (:func:`bounded_moments`). Returns ``(gram, column_sum)``: ``gram``
    symmetric, ``d x d``.
    """
    rows = X if isinstance(X, RowSource) else row_source(np.asarray(X, dtype=float))
    gram, column_sum = rows.block_sum(bounded_moments, data_norm)
    noisy = add_noise(noise, _pack_moments(gram, column_sum, weight), source)
    return _unpack_moments(noisy, rows.n_features, weight)


@dataclass(frozen=True)
class _PCAInput:
    """Validated data of one fit and the public facts its plan reads."""

    rows: RowSource
    data_norm: float
    clip_norm: float | None  # None when data_norm was read (no row exceeds it)
    n_components: int
    delta: float


class DPPCA(
    PrivateEstimatorMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    BaseEstimator,
):
    """Principal component analysis with differential privacy.

    Covariance perturbation: the Gram matrix ``X^T X`` and the column sums
    of ``X`` are released once with noise (the Gaussian mechanism, "Analyze
    Gauss", when ``delta > 0``; the L2 vector mechanism, pure epsilon-DP,
    when ``delta = 0``), the covariance matrix of the centred data is formed
    from them, and its leading eigenvectors are the components. Everything
    after the noise is post-processing. The fit charges ``budget`` once,
    before touching the data, and records what it spent in
    ``privacy_event_``.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of components kept; ``None`` keeps ``min(n_samples,
        n_features)`` (public numbers). Must not exceed that. The privacy
        cost does not depend on it: the whole covariance matrix is released.
    epsilon : float, default=1.0
        Privacy parameter, > 0.
    delta : float or None, default=None
        ``delta > 0``: Gaussian noise, (epsilon, delta)-DP (Analyze Gauss,
        much the more accurate: its noise grows like ``sqrt(d)`` per entry
        of the Gram matrix, the pure method's like ``d``). ``delta = 0``:
        the L2 vector mechanism, pure epsilon-DP. ``None`` follows skdp's
        default-delta rule (:ref:`default_delta`): Analyze Gauss at
        :data:`~skdp.accounting.DEFAULT_DELTA`. Choose ``delta`` well below
        ``1 / n_samples``; the default suits up to about 100,000 rows per
        ``1e-1`` of acceptable risk, so lower it for larger data.
    data_norm : float or None, default=None
        Public bound ``R`` on the L2 norm of a row; rows with a larger norm
        are scaled down to it (the public contract). ``None`` reads the
        largest row norm from ``X`` and emits a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (that norm is then not
        protected). Dask input needs a declared ``data_norm``.
    whiten : bool, default=False
        Divide the projections by the square root of ``explained_variance_``
        (post-processing), as scikit-learn's ``PCA(whiten=True)``.
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the operating system's CSPRNG: the only
        choice for a release. A seed makes fits reproducible, which is for
        tests and examples only: whoever knows the seed can remove the noise.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by every fit; ``None`` records the spend only
        on the estimator.

    Attributes
    ----------
    components_ : ndarray of shape (`n_components_`, n_features)
        Leading eigenvectors of the noisy covariance matrix, by decreasing
        eigenvalue; the sign of each makes its largest-magnitude entry
        positive.
    explained_variance_ : ndarray of shape (`n_components_`,)
        The corresponding eigenvalues of the noisy covariance matrix
        (divided by ``n_samples - 1`` as in scikit-learn), raised to 0 when
        the noise makes them negative.
    explained_variance_ratio_ : ndarray of shape (`n_components_`,)
        ``explained_variance_`` over the sum of all (raised) eigenvalues.
    singular_values_ : ndarray of shape (`n_components_`,)
        ``sqrt(explained_variance_ * (n_samples - 1))``.
    mean_ : ndarray of shape (n_features,)
        The noisy column mean (of the rows after scaling to ``data_norm``).
    n_components_ : int
        Components kept.
    n_samples_ : int
        ``n_samples`` of the training data (public).
    noise_variance_ : float
        Mean of the remaining (raised) eigenvalues, the probabilistic-PCA
        noise variance of Tipping & Bishop (1999); 0 when every component is
        kept.
    data_norm_ : float
        The row-norm bound used (``data_norm`` or the one read from data).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` has string feature names.
    privacy_event_ : PrivacyEvent
        What the fit charged: a ``GaussianEvent`` (``delta > 0``) or a
        ``PureDPEvent`` (``delta = 0``).
    epsilon_, delta_ : float
        What ``privacy_event_`` costs.
    budget_entry_ : LedgerEntry or None
        The fit's entry in ``budget``.

    See Also
    --------
    sklearn.decomposition.PCA : The non-private estimator.

    Notes
    -----
    **Guarantee.** Neighbouring datasets differ in one row (*replace one
    row*); ``n_samples`` and ``n_features`` are public. Every row is scaled
    to norm at most ``R = data_norm``. The fit is (epsilon, delta)-DP for
    ``delta > 0`` and epsilon-DP for ``delta = 0``; the components, the
    variances and the mean are all post-processing of one noisy release, so
    epsilon is not split.

    **What is released.** With ``G = X^T X``, ``s`` the column sums and
    ``w = 0.5 R`` (``MEAN_WEIGHT``), the vector ``v = (diag(G), sqrt(2)
    triu(G, 1), w s)`` of ``d (d + 1) / 2 + d`` numbers. Its first part has
    the Frobenius norm of ``G`` as its Euclidean norm.

    **Sensitivity.** Replacing a row ``x`` by ``x'`` changes ``G`` by ``D =
    x x^T - x' x'^T`` and ``s`` by ``x - x'``. With ``a = ||x||**2``, ``b =
    ||x'||**2`` and ``t = x . x'``: ``||D||_F**2 = a**2 + b**2 - 2 t**2``
    and ``||x - x'||**2 = a + b - 2 t``, so

        ``||v - v'||**2 = a**2 + b**2 - 2 t**2 + w**2 (a + b - 2 t)``.

    This grows with ``a`` and ``b`` (for fixed ``t``), so is largest at
    ``a = b = R**2``; it is a concave quadratic in ``t`` in ``[-R**2,
    R**2]``, largest at ``t = -w**2 / 2`` (inside since ``w**2 <= 2 R**2``),
    where it equals ``2 R**4 + 2 w**2 R**2 + w**4 / 2 = (sqrt(2) R**2 +
    w**2 / sqrt(2))**2``. The L2 sensitivity is therefore

        ``Delta_2 = sqrt(2) R**2 + w**2 / sqrt(2) = 1.591 R**2``,

    attained by two rows of norm ``R`` at an angle with cosine ``-1/8``.
    (The Gram matrix alone has ``sqrt(2) R**2``, attained by orthogonal
    rows; Dwork et al. state ``R**2`` for adding or removing a row. The
    centred covariance matrix itself would have sensitivity close to ``4
    R**2``, which is why the mean is released beside ``G`` rather than
    subtracted first.)

    **delta > 0** (Dwork, Talwar, Thakurta & Zhang 2014, Algorithm 1,
    "Analyze Gauss"): Gaussian noise of standard deviation ``sigma =
    s Delta_2`` on every entry of ``v``, with ``s`` the analytic-Gaussian
    multiplier of ``(epsilon, delta)`` (Balle & Wang 2018, Theorem 8),
    discrete Gaussian on a grid (:func:`~skdp.mechanisms.plan_gaussian`).
    Dividing the off-diagonal entries back by ``sqrt(2)`` leaves the Gram
    matrix a symmetric noise matrix with variance ``sigma**2`` on the
    diagonal and ``sigma**2 / 2`` off it (a scaled Gaussian orthogonal
    ensemble, spectral norm about ``sigma sqrt(2 d)``); the column sums get
    noise of standard deviation ``sigma / w``.

    **delta = 0**: the L2 vector mechanism (noise of density proportional
    to ``exp(-epsilon ||b|| / Delta_2)`` on ``v``, on a grid;
    :func:`~skdp.mechanisms.plan_l2_vector`), epsilon-DP by the triangle
    inequality. Its noise norm is Gamma distributed with mean about ``m
    Delta_2 / epsilon`` for ``m = d (d + 1) / 2 + d`` coordinates, so each
    entry carries noise of order ``d Delta_2 / epsilon``, against ``sqrt(
    log(1 / delta)) Delta_2 / epsilon`` for the Gaussian: the pure method
    needs far more data. (Wishart noise, sometimes proposed for pure-DP
    PCA, is not used: a positive semi-definite perturbation gives outputs
    one dataset can produce and its neighbour cannot.)

    **Post-processing.** ``mean_ = s~ / n``; the covariance ``(G~ - n
    mean_ mean_^T) / (n - 1)``; its eigen-decomposition gives
    ``components_`` and the variances, negative eigenvalues raised to 0.

    References
    ----------
    .. [1] C. Dwork, K. Talwar, A. Thakurta, L. Zhang, "Analyze Gauss:
       Optimal Bounds for Privacy-Preserving Principal Component Analysis",
       STOC 2014, Algorithm 1.
    .. [2] B. Balle, Y.-X. Wang, "Improving the Gaussian Mechanism for
       Differential Privacy: Analytical Calibration and Optimal Denoising",
       ICML 2018, Theorem 8.
    .. [3] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially
       Private Empirical Risk Minimization", JMLR 12, 2011, Section 5 (the
       L2 vector mechanism's noise).
    .. [4] M. E. Tipping, C. M. Bishop, "Probabilistic Principal Component
       Analysis", JRSS B 61(3), 1999 (``noise_variance_``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.decomposition import DPPCA
    >>> from skdp import PrivacyBudget
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 4)) * [3.0, 1.0, 0.3, 0.1]
    >>> X /= np.maximum(1.0, np.linalg.norm(X, axis=1) / 5.0)[:, None]
    >>> budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    >>> pca = DPPCA(n_components=2, epsilon=1.0, data_norm=5.0, budget=budget,
    ...             random_state=0).fit(X)
    >>> int(np.abs(pca.components_[0]).argmax())
    0
    >>> pca.transform(X).shape
    (5000, 2)
    >>> round(pca.epsilon_, 6), pca.delta_
    (1.0, 1e-06)
    """

    _data_bound_params = ("data_norm",)
    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "epsilon": [EPSILON_CONSTRAINT],
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "whiten": ["boolean"],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
    }

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        data_norm: float | None = None,
        whiten: bool = False,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.whiten = whiten
        self.random_state = random_state
        self.budget = budget

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With random_state=None the noise comes from the OS CSPRNG.
        tags.non_deterministic = self.random_state is None
        return tags

    # ------------------------------------------------------------------ fit
    def _prepare_fit(self, X, y=None):
        """Validated rows and the public facts the plan reads (one pass)."""
        name = type(self).__name__
        rows = fit_rows(self, X)
        n_samples, n_features = rows.n_samples, rows.n_features
        limit = min(n_samples, n_features)
        if self.n_components is None:
            n_components = limit
        elif self.n_components > limit:
            raise ValueError(
                f"n_components={self.n_components} must be between 1 and "
                f"min(n_samples, n_features)={limit}."
            )
        else:
            n_components = int(self.n_components)
        if self.data_norm is None:
            if rows.is_dask:
                refuse_undeclared(name, "data_norm")
            warn_data_derived("data_norm")
        facts = read_facts(
            rows, FactsRequest(row_norm=row_norms if self.data_norm is None else None)
        )
        check_finite(facts, name)
        if self.data_norm is None:
            if not np.isfinite(facts.row_norm):
                raise ValueError(
                    "data_norm=None reads the largest row norm from X, but a row "
                    "norm overflows float64; pass data_norm, a public bound."
                )
            # Any positive bound is valid for all-zero data.
            bound, clip = (facts.row_norm if facts.row_norm > 0 else 1.0), None
        else:
            bound = clip = float(self.data_norm)
        check_magnitudes(name, data_norm=bound)  # before squaring it
        check_magnitudes(name, **{"data_norm**2 * n_samples": bound**2 * n_samples})
        check_memory(
            8.0 * 8 * n_features * n_features,
            f"{name}'s {n_features} x {n_features} covariance matrix",
            "use fewer features",
        )
        delta = resolve_delta(self.delta, needs_delta=True)
        return _PCAInput(rows, bound, clip, n_components, delta)

    def _plan_fit(self, prepared) -> FitPlan:
        """The noise of the moment vector, from public quantities only."""
        d = prepared.rows.n_features
        weight = MEAN_WEIGHT * prepared.data_norm
        sensitivity = moment_sensitivity(prepared.data_norm, weight)
        size = d * (d + 1) // 2 + d
        if prepared.delta > 0:
            noise = plan_gaussian(
                sensitivity, size, epsilon=float(self.epsilon), delta=prepared.delta
            )
        else:
            noise = plan_l2_vector(sensitivity, float(self.epsilon), size)
        # add_noise carries values exactly up to 2**50 grid steps (the grid
        # is ~2**-32 of the noise scale) and clips beyond; every entry of
        # the moment vector is at most n R**2 in magnitude (the diagonal of
        # G; sqrt(2) |G_ij| <= n R**2 / sqrt(2), w |s_j| <= n R**2 / 2).
        n_samples = prepared.rows.n_samples
        largest = n_samples * prepared.data_norm**2
        carried = 2.0**50 * noise.gamma
        if largest > carried:
            raise ValueError(
                f"{type(self).__name__}: n_samples * data_norm**2 = {largest:.3g} "
                f"exceeds {carried:.3g}, the largest value the noise grid "
                "carries exactly at this noise level (2**50 steps of about "
                "2**-32 noise scales); the moments would be clipped. Lower "
                "epsilon, or fit on fewer rows."
            )
        delta = 0.0 if isinstance(noise.event, PureDPEvent) else prepared.delta
        settings = {
            "noise": noise,
            "weight": weight,
            "n_components": prepared.n_components,
        }
        return FitPlan(noise.event, delta, settings)

    def _run_fit(self, prepared, plan, source) -> None:
        """Release the moments, then post-process; cannot raise."""
        rows = prepared.rows
        n, d = rows.n_samples, rows.n_features
        weight = plan.settings["weight"]
        k = plan.settings["n_components"]
        # One pass: rows are scaled to data_norm inside each block.
        gram, column_sum = noisy_moments(
            rows, plan.settings["noise"], weight, source, prepared.clip_norm
        )
        mean = column_sum / n
        covariance = (gram - n * np.outer(mean, mean)) / max(n - 1, 1)
        values, vectors = np.linalg.eigh(covariance)
        values, vectors = values[::-1], vectors[:, ::-1].T
        # Sign convention: the largest-magnitude entry of each component > 0.
        pivots = np.abs(vectors).argmax(axis=1)
        signs = np.sign(vectors[np.arange(d), pivots])
        vectors *= np.where(signs == 0, 1.0, signs)[:, None]
        variances = np.maximum(values, 0.0)
        total = variances.sum()

        self.data_norm_ = prepared.data_norm
        self.n_samples_ = n
        self.n_components_ = k
        self.mean_ = mean
        self.components_ = vectors[:k].copy()
        self.explained_variance_ = variances[:k].copy()
        self.explained_variance_ratio_ = (
            variances[:k] / total if total > 0 else np.zeros(k)
        )
        self.singular_values_ = np.sqrt(variances[:k] * max(n - 1, 1))
        self.noise_variance_ = (
            float(variances[k : min(n, d)].mean()) if k < min(n, d) else 0.0
        )

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> Self:
        """Fit the model privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (dense), or a dask array or DataFrame: the Gram
            matrix and column sums are then summed over row blocks on the
            workers and only they reach the client (``data_norm`` must be
            declared).
        y : None
            Ignored.

        Returns
        -------
        self : DPPCA
            Fitted estimator.
        """
        return self._fit_private(X)

    # ------------------------------------------------------------ transform
    def _whitening_scale(self) -> np.ndarray:
        # A zero (noise-raised) variance would divide by zero; it is floored
        # at a tiny fraction of the largest.
        largest = float(self.explained_variance_.max(initial=0.0))
        floor = max(largest * 1e-12, np.finfo(float).tiny)
        return np.sqrt(np.maximum(self.explained_variance_, floor))

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Project ``X`` on the components (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, `n_components_`)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        projected = (X - self.mean_) @ self.components_.T
        if self.whiten:
            projected /= self._whitening_scale()
        return projected

    def inverse_transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Map projections back to the feature space.

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_components_`)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = np.asarray(X, dtype=np.float64)
        if self.whiten:
            X = X * self._whitening_scale()
        return X @ self.components_ + self.mean_

    @property
    def _n_features_out(self):
        """Number of transformed output features."""
        return self.components_.shape[0]
