"""Differentially private k-means: noisy Lloyd iterations over a public box."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
)

from ..accounting._events import ComposedEvent
from ..base import FitPlan, PrivateEstimatorMixin
from ..mechanisms import add_noise, plan_laplace
from ..utils._bounds import (
    bounds_from_extremes,
    declared_bounds,
    refuse_undeclared,
    warn_bounds_read,
)
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._forecast import warn_if_noise_swamps
from ..utils._row_checks import FactsRequest, check_finite, fit_rows, read_facts
from ..utils._row_source import RowSource
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    check_is_fitted,
    fit_context,
    validate_data,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPKMeans"]

#: Share of epsilon spent on the noisy mean that places the initial centres.
MEAN_SHARE = 0.1
#: The shares are scaled by this factor so that their floating-point sum
#: never exceeds epsilon (a hair less privacy loss, never more).
_SHARE_SLACK = 1.0 - 1e-12


@dataclass(frozen=True)
class _KMeansInput:
    """Validated rows and the public facts the plan reads."""

    rows: RowSource  # in memory or on dask; clipped and centred block by block
    midpoint: np.ndarray
    half_width: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def count_sum_split(half_width: np.ndarray) -> float:
    """Ratio ``epsilon_sums / epsilon_counts`` within one Lloyd iteration.

    A centre is ``S / N`` (sums over counts, centred at the midpoint). With
    Laplace noise of scales ``2 W1 / e_S`` on each of its ``d`` sums and
    ``2 / e_C`` on its count, its squared error is about
    ``(d (2 W1 / e_S)**2 + ||S / N||**2 (2 / e_C)**2) * 2 / N**2``, and
    ``||S / N|| <= W2``. Minimising ``d W1**2 / e_S**2 + W2**2 / e_C**2`` for
    ``e_S + e_C`` fixed gives ``e_S / e_C = (d W1**2 / W2**2)**(1/3)``
    (``W1``, ``W2``: L1 and L2 norms of the half-widths), the analogue of
    Su et al. (2016), Section 4.1, for these sensitivities.

    Examples
    --------
    >>> from skdp.cluster._kmeans import count_sum_split
    >>> round(count_sum_split(np.full(8, 0.5)), 6)  # d**(2/3) for a cube
    4.0
    """
    unit = half_width / half_width.max()  # the ratio is scale-free
    w1 = float(unit.sum())
    w2 = float(np.sqrt((unit**2).sum()))
    return (half_width.size * w1**2 / w2**2) ** (1.0 / 3.0)


def centre_noise_ratio(sum_noise, half_width, n_clusters, n_samples) -> float:
    """The utility forecast: a centre's noise over the box's half-diagonal.

    The final centres are the last iteration's noisy sums over noisy
    counts. With clusters of ``n / k`` rows (the forecast cannot know the
    sizes, and they average ``n / k``), the discrete Laplace noise of
    variance ``2 b**2`` per sum moves a centre by about ``sqrt(2 d) b k /
    n`` (L2), against the half-diagonal ``||W||`` of the bounds (no centre
    is further than that from the midpoint). Above 1 the noise outruns the
    whole box, so the clipped centres say nothing about the data (ARI 0.00
    on scikit-learn's digits at epsilon 1, where the forecast is 3.6). Public:
    ``n``, ``k``, ``d``, the bounds and the noise plan.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import plan_laplace
    >>> from skdp.cluster._kmeans import centre_noise_ratio
    >>> noise = plan_laplace(16.0, 0.5, 8 * 3, magnitude=1e4)
    >>> round(centre_noise_ratio(noise, np.full(8, 1.0), 3, 1000), 2)
    0.14
    """
    d = half_width.size
    scale = sum_noise.scale * sum_noise.gamma
    centre = math.sqrt(2.0 * d) * scale * n_clusters / n_samples
    return centre / float(np.linalg.norm(half_width))


def _nearest(X: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the nearest centre of each row, and the squared distances.

    ``||x - c||**2`` summed coordinate by coordinate, without BLAS (whose
    rounding can depend on its thread count), so a row's distances and
    nearest centre are the same wherever the row is.
    """
    squared = np.empty((X.shape[0], centers.shape[0]))
    for c, center in enumerate(centers):
        difference = X - center
        np.einsum("ij,ij->i", difference, difference, out=squared[:, c])
    return squared.argmin(axis=1), squared


def _centred(X, lower, upper, midpoint):
    """A block's rows clipped to the box and centred at its midpoint."""
    return np.clip(np.asarray(X, dtype=np.float64), lower, upper) - midpoint


def _centred_sum(X, _, lower, upper, midpoint):
    """Block function: ``sum_i (x_i - m)`` of the clipped rows."""
    return _centred(X, lower, upper, midpoint).sum(axis=0)


def assignment_sums(X, _, lower, upper, midpoint, centers):
    """Block function of one Lloyd iteration: per-cluster counts and sums.

    Each clipped, centred row goes to its nearest centre (``centers`` are
    centred too, and public: released or drawn in the client); returns the
    ``k`` counts (int64, exact) and the ``k x d`` sums of the rows.
    """
    Z = _centred(X, lower, upper, midpoint)
    k = centers.shape[0]
    labels, _ = _nearest(Z, centers)
    counts = np.bincount(labels, minlength=k).astype(np.int64)
    sums = np.stack(
        [np.bincount(labels, weights=Z[:, j], minlength=k) for j in range(Z.shape[1])],
        axis=1,
    )
    return counts, sums


def _nearest_labels(X, _, lower, upper, midpoint, centers):
    """Block function: index of each clipped, centred row's nearest centre."""
    return _nearest(_centred(X, lower, upper, midpoint), centers)[0]


class DPKMeans(
    ClassNamePrefixFeaturesOutMixin,
    PrivateEstimatorMixin,
    ClusterMixin,
    TransformerMixin,
    BaseEstimator,
):
    """K-means clustering with differential privacy (noisy Lloyd iterations).

    The data is clipped to a public box ``bounds``. A noisy mean places the
    initial centres; then ``max_iter`` Lloyd iterations each release noisy
    per-cluster counts and coordinate sums (Laplace mechanism), from which
    the new centres are computed. Everything after the noise is
    post-processing. One fit is one epsilon-DP release, charged to
    ``budget`` before the data is read.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters (public).
    epsilon : float, default=1.0
        Privacy parameter of the whole fit, > 0.
    bounds : tuple or None, default=None
        ``(lower, upper)``, each a number or an array with one value per
        feature: a public box containing the data; rows are clipped to it.
        ``None`` reads the range from the data and emits a
        :class:`~skdp.exceptions.PrivacyLeakWarning` (the range is then not
        protected); dask input needs declared bounds. The noise grows
        with the box's L1 half-width ``sum_j (upper_j - lower_j) / 2``:
        declare a tight box.
    max_iter : int, default=2
        Number of noisy Lloyd iterations, fixed and public (there is no
        convergence test on the private data). Each iteration costs a share
        of epsilon, so more iterations mean noisier centres; two were the
        best number in our measurements on UCI Adult and on small blobs
        (``benchmarks/_models_kmeans.py``). Su et al. (2016) recommend 5-7
        for low-dimensional data with many rows.
    random_state : int, RandomState instance or None, default=None
        ``None`` draws the noise and the initial directions from the
        operating system's CSPRNG: the only choice for a release. A seed
        makes fits reproducible, for tests and examples only: whoever knows
        the seed can remove the noise.
    budget : PrivacyBudget or None, default=None
        Shared budget charged by every fit; ``None`` records the spend only
        on the estimator.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The private centres, inside ``bounds``.
    labels_ : ndarray of shape (n_samples,)
        Index of the nearest centre of each training row, i.e.
        ``predict(X)`` on the training data (a lazy dask array when ``X``
        is a dask collection). **Not covered by the privacy
        guarantee** (see Notes): it is left out when the model is pickled
        (or saved with joblib), so a shared model file does not carry it.
    n_iter_ : int
        ``max_iter`` (public).
    bounds_ : tuple of ndarray
        The per-feature ``(lower, upper)`` used.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` has string feature names.
    privacy_event_ : PrivacyEvent
        What the fit charged: a :class:`~skdp.accounting.ComposedEvent` of
        Laplace releases whose epsilons add up to ``epsilon``.
    epsilon_, delta_ : float
        What ``privacy_event_`` costs (``delta_ == 0``).
    budget_entry_ : LedgerEntry or None
        The fit's entry in ``budget``.

    See Also
    --------
    sklearn.cluster.KMeans : The non-private estimator.

    Notes
    -----
    **Guarantee.** epsilon-DP for ``cluster_centers_`` (and everything
    computed from them alone: :meth:`predict`, :meth:`transform`,
    :meth:`score` on other data) under *replace one row*; ``n_samples``,
    ``n_features``, ``n_clusters``, ``max_iter`` and ``bounds`` are public.

    **Algorithm** (DPLloyd: Blum, Dwork, McSherry & Nissim 2005, Section
    5; Su et al. 2016, Algorithm 1). Rows are clipped to the box and
    centred at its midpoint ``m``: each coordinate of ``x - m`` lies in
    ``[-w_j, w_j]``, ``w`` the half-widths, ``W1 = sum_j w_j``.

    1. *Initial centres.* The sum ``sum_i (x_i - m)`` is released with
       Laplace noise; replacing a row changes it by ``x' - x``, of L1 norm
       at most ``2 W1``. It costs ``MEAN_SHARE = 10 %`` of epsilon. The noisy
       mean ``mu`` (``n`` is public) plus ``k`` tiny offsets along directions
       drawn uniformly at random (public randomness, no data) are the
       initial centres, so the first assignment splits the data by ``k``
       random directions through its mean (rather than placing centres at
       random in the box, where in high dimension one centre takes every
       row).
    2. *Iterations.* Iteration ``t = 1..T`` (``T = max_iter``) spends
       ``0.9 epsilon t / (1 + ... + T)``: later iterations, whose centres are
       released, get more. Each assigns every row to its nearest centre and
       releases the ``k`` counts and the ``k x d`` sums of ``x - m`` per
       cluster. Replacing one row moves at most one row between clusters
       (or changes it within one): the counts change by at most 1 in two
       clusters (L1 sensitivity 2) and the sums by ``-(x - m)`` in one
       cluster and ``+(x' - m)`` in another (or ``x' - x`` in one), L1
       sensitivity ``2 W1``; centring at the midpoint halves it compared
       with raw sums. Within an iteration epsilon is split between sums and
       counts in the ratio ``(d W1**2 / W2**2)**(1/3)`` that minimises the
       centres' squared error (``count_sum_split``; about 95 % to the
       sums for 100 features in a cube).
    3. *Post-processing* (no privacy cost). A centre is ``noisy sum / max(1,
       noisy count)``, shrunk towards the running noisy mean by the
       positive-part James-Stein factor ``1 - (d - 2) v / ||c - mu||**2``
       (``v`` the known noise variance of a coordinate of ``c``; only for
       ``d >= 3``), then clipped to the box. Every iteration's sums also
       estimate the mean, so ``mu`` is their inverse-variance combination
       with step 1. A cluster whose noisy count is below 1 or that shrinks
       entirely onto ``mu`` is re-seeded at ``mu`` plus a random offset.

    The epsilons of all Laplace releases add up to ``epsilon`` (basic
    composition). The noise is the discrete Laplace on a grid
    (:func:`~skdp.mechanisms.plan_laplace`), drawn from the secure source.

    **labels_ and inertia.** ``labels_`` follows scikit-learn's clustering
    API (``fit_predict``): it is the released centres applied to each
    training row, the same as ``predict(X_train)``. That is fine to hand
    back to each row's owner, but as a whole it is a per-row function of the
    private data and is not differentially private. It is therefore left
    out of the pickled state: a model saved with :mod:`pickle` or
    :mod:`joblib` carries only the private centres, and an unpickled model
    has no ``labels_``. Never publish ``labels_`` itself. ``inertia_`` is
    not provided: the training data's inertia is a private statistic
    (releasing it would need more noise and budget). :meth:`score` computes
    the (negative) inertia of data you give it.

    References
    ----------
    .. [1] A. Blum, C. Dwork, F. McSherry, K. Nissim, "Practical Privacy:
       the SuLQ Framework", PODS 2005.
    .. [2] D. Su, J. Cao, N. Li, E. Bertino, H. Jin, "Differentially Private
       k-Means Clustering", CODASPY 2016 (Algorithm 1 and Section 4.1).
    .. [3] W. James, C. Stein, "Estimation with Quadratic Loss", Berkeley
       Symposium 1961.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.cluster import DPKMeans
    >>> from skdp import PrivacyBudget
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.3, size=(2000, 2)) for c in (-2, 0, 2)])
    >>> budget = PrivacyBudget(epsilon=2.0)
    >>> km = DPKMeans(n_clusters=3, epsilon=1.0, bounds=(-4, 4), budget=budget,
    ...               random_state=0).fit(X)
    >>> np.sort(km.cluster_centers_[:, 0]).round(0)
    array([-2., -0.,  2.])
    >>> km.epsilon_, budget.spent()
    (1.0, (1.0, 0.0))
    """

    _data_bound_params = ("bounds",)
    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": [EPSILON_CONSTRAINT],
        "bounds": [tuple, list, None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
    }

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        epsilon: float = 1.0,
        bounds: tuple[ArrayLike, ArrayLike] | None = None,
        max_iter: int = 2,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.max_iter = max_iter
        self.random_state = random_state
        self.budget = budget

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With random_state=None the noise comes from the OS CSPRNG.
        tags.non_deterministic = self.random_state is None
        return tags

    @property
    def _n_features_out(self):
        return self.cluster_centers_.shape[0]

    # ------------------------------------------------------------------ fit
    def _prepare_fit(self, X, y=None):
        """Validated rows and the public facts of the plan (one pass)."""
        name = type(self).__name__
        rows = fit_rows(self, X)
        n_samples = rows.n_samples
        if n_samples < self.n_clusters:
            raise ValueError(
                f"n_samples={n_samples} should be >= n_clusters={self.n_clusters}."
            )
        lower = upper = None
        if self.bounds is not None:
            lower, upper = declared_bounds(self.bounds, rows.n_features)
        elif rows.is_dask:
            refuse_undeclared(name)
        else:
            warn_bounds_read(estimator=name)
        facts = read_facts(rows, FactsRequest(extremes=lower is None))
        check_finite(facts, name)
        if lower is None:
            lower, upper = bounds_from_extremes(facts.low, facts.high)
        midpoint = (lower + upper) / 2.0
        half_width = (upper - lower) / 2.0
        if not (np.all(np.isfinite(midpoint)) and np.all(np.isfinite(half_width))):
            raise ValueError("bounds are too large for float64 arithmetic.")
        return _KMeansInput(rows, midpoint, half_width, lower, upper)

    def _plan_fit(self, prepared) -> FitPlan:
        """Noise of every release, from public quantities only."""
        n_samples, n_features = prepared.rows.n_samples, prepared.rows.n_features
        k, T = int(self.n_clusters), int(self.max_iter)
        epsilon = float(self.epsilon) * _SHARE_SLACK
        w1 = float(prepared.half_width.sum())
        if not (w1 > 0 and math.isfinite(w1)):
            raise ValueError("bounds must have a finite, positive total width.")
        ratio = count_sum_split(prepared.half_width)
        # Public bounds on what the noise grids must carry exactly: counts
        # are at most n, centred sums at most n times the widest half-width
        # (twice that, for the rounding of the sums).
        count_bound = 2.0 * n_samples
        sum_bound = 2.0 * n_samples * float(prepared.half_width.max())
        mean_plan = plan_laplace(
            2.0 * w1,
            MEAN_SHARE * epsilon,
            n_features,
            label="mean",
            magnitude=sum_bound,
        )
        iterations = []
        for t in range(1, T + 1):
            share = (1.0 - MEAN_SHARE) * epsilon * t / (T * (T + 1) / 2.0)
            counts = plan_laplace(
                2.0,
                share / (1.0 + ratio),
                k,
                label=f"counts {t}",
                magnitude=count_bound,
            )
            sums = plan_laplace(
                2.0 * w1,
                share * ratio / (1.0 + ratio),
                k * n_features,
                label=f"sums {t}",
                magnitude=sum_bound,
            )
            iterations.append((counts, sums))
        last_sums = iterations[-1][1]
        warn_if_noise_swamps(
            "DPKMeans",
            ratio=centre_noise_ratio(last_sums, prepared.half_width, k, n_samples),
            limit=1.0,
            what=(
                "the last iteration's noise in a centre (clusters of n_samples / "
                "n_clusters rows) over the half-diagonal of the bounds"
            ),
            n_samples=n_samples,
            epsilon=float(self.epsilon),
        )
        events = [mean_plan.event] + [p.event for pair in iterations for p in pair]
        return FitPlan(
            ComposedEvent(tuple(events)),
            0.0,
            {"mean": mean_plan, "iterations": tuple(iterations)},
        )

    def _run_fit(self, prepared, plan, source) -> None:
        """Everything that touches the data after the charge; cannot raise."""
        rows, w = prepared.rows, prepared.half_width
        box = (prepared.lower, prepared.upper, prepared.midpoint)
        n, d = rows.n_samples, rows.n_features
        k = int(self.n_clusters)
        offset = 1e-3 * float(w.min())

        def variance(noise):  # of the discrete Laplace, in value units
            return 2.0 * (noise.scale * noise.gamma) ** 2

        def directions(m):  # public randomness: uniform on the sphere
            u = source.standard_normal((m, d))
            return u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-300)

        mean_noise = plan.settings["mean"]
        mean = add_noise(mean_noise, rows.block_sum(_centred_sum, *box), source) / n
        mean_var = variance(mean_noise) / n**2
        anchor = np.clip(mean, -w, w)
        centers = np.clip(anchor + offset * directions(k), -w, w)
        for count_noise, sum_noise in plan.settings["iterations"]:
            # One pass per iteration: the workers assign their rows to the
            # centres computed here and return the k counts and k x d sums.
            counts, sums = rows.block_sum(assignment_sums, *box, centers)
            noisy_counts = add_noise(count_noise, counts, source)
            noisy_sums = add_noise(sum_noise, sums, source)
            # Every iteration's sums add up to another estimate of the mean.
            sum_var = variance(sum_noise)
            total_var = k * sum_var / n**2
            mean = (mean / mean_var + noisy_sums.sum(axis=0) / n / total_var) / (
                1.0 / mean_var + 1.0 / total_var
            )
            mean_var = 1.0 / (1.0 / mean_var + 1.0 / total_var)
            anchor = np.clip(mean, -w, w)
            size = np.maximum(noisy_counts, 1.0)
            raw = noisy_sums / size[:, None]
            shrink = np.ones(k)
            if d >= 3:  # positive-part James-Stein towards the noisy mean
                spread = ((raw - anchor) ** 2).sum(axis=1)
                noise_var = sum_var / size**2
                shrink = np.maximum(
                    0.0, 1.0 - (d - 2) * noise_var / np.maximum(spread, 1e-300)
                )
            centers = np.clip(anchor + shrink[:, None] * (raw - anchor), -w, w)
            lost = (noisy_counts < 1.0) | (shrink == 0.0)
            if lost.any():
                centers[lost] = np.clip(
                    anchor + offset * directions(int(lost.sum())), -w, w
                )
        lower, upper = prepared.lower, prepared.upper
        self.cluster_centers_ = np.clip(centers + prepared.midpoint, lower, upper)
        self.bounds_ = (lower, upper)
        self.n_iter_ = int(self.max_iter)
        # Not private: each training row's nearest released centre (Notes);
        # a lazy dask array on dask (computed when the caller asks).
        self.labels_ = rows.map_rows(
            _nearest_labels, *box, self.cluster_centers_ - prepared.midpoint,
            dtype=np.intp,
        )  # fmt: skip

    def __getstate__(self):
        # labels_ is a per-row function of the private rows (Notes): it is
        # for the data holder's own use and never travels with the model.
        # A copy: BaseEstimator returns the instance's own __dict__ here.
        state = dict(super().__getstate__())
        state.pop("labels_", None)
        return state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> Self:
        """Cluster ``X`` privately, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (dense), or a dask array or DataFrame: each
            iteration's counts and sums are then summed over row blocks on
            the workers, for centres computed in the client (``bounds`` must
            be declared).
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : DPKMeans
            Fitted estimator.
        """
        return self._fit_private(X)

    # -------------------------------------------------------- post-processing
    def _distances(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return _nearest(X, self.cluster_centers_)[1]

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Index of the nearest centre of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self._distances(X).argmin(axis=1)

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Euclidean distance of each row to every centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        return np.sqrt(self._distances(X))

    def score(self, X: ArrayLike, y: ArrayLike | None = None) -> float:
        """Opposite of the inertia of ``X``: ``-sum_i min_c ||x_i - c||**2``.

        A function of the released centres and of the ``X`` you pass (no
        privacy cost beyond the fit; scoring private data releases a
        statistic of it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        score : float
        """
        return -float(self._distances(X).min(axis=1).sum())
