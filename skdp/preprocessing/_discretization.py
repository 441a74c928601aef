"""Private binning: KBinsDiscretizer with edges from private quantiles."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.preprocessing import OneHotEncoder

from ..accounting._events import ComposedEvent, SelfComposedEvent
from ..base import FitPlan, PrivateEstimatorMixin
from ..mechanisms._quantile import (
    plan_quantiles,
    refuse_dask_quantiles,
    run_quantiles,
)
from ..utils._bounds import (
    bounds_from_extremes,
    declared_bounds,
    refuse_undeclared,
    warn_bounds_read,
)
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._feasibility import check_memory, check_rounds
from ..utils._row_checks import FactsRequest, check_finite, fit_rows, read_facts
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    fit_context,
    validate_data,
)

if TYPE_CHECKING:
    import scipy.sparse as sp
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self
    from ..accounting._budget import PrivacyBudget

__all__ = ["DPKBinsDiscretizer"]


class DPKBinsDiscretizer(PrivateEstimatorMixin, TransformerMixin, BaseEstimator):
    """Bin continuous features into intervals, with private quantile edges.

    Like :class:`~sklearn.preprocessing.KBinsDiscretizer`, but the bin edges
    never reveal more than epsilon about any row: with
    ``strategy="quantile"`` they are the feature's quantiles released by
    the exponential mechanism (recursively, see
    :func:`~skdp.mechanisms.quantile_mechanism`) within public bounds; with
    ``strategy="uniform"`` they split the public bounds evenly and read
    nothing from the data. The fit charges ``budget`` once, before it
    touches the data.

    Parameters
    ----------
    n_bins : int or array-like of shape (n_features,), default=5
        Number of bins per feature, >= 2. The number of bins is public and
        kept, even if two private edges coincide (the bin between them is
        then empty).
    encode : {"onehot", "onehot-dense", "ordinal"}, default="onehot"
        Output: a sparse one-hot matrix, a dense one, or the bin index.
    strategy : {"quantile", "uniform"}, default="quantile"
        ``"quantile"``: edges at the private quantiles ``1/k, ..., (k-1)/k``
        (``k = n_bins``), charging ``epsilon``. ``"uniform"``: edges
        spaced evenly over the bounds, a function of the bounds alone; the
        fit charges a zero-cost event (an empty
        :class:`~skdp.accounting.ComposedEvent`) so that the ledger still
        lists the step.
    epsilon : float, default=1.0
        Privacy parameter of the fit (``"quantile"``), > 0.
    bounds : (lower, upper) or None, default=None
        Public bounds of the features: scalars or one value per feature,
        ``lower < upper``; the outer edges, and data are clipped to them.
        ``None`` reads each feature's minimum and maximum from the data
        with a :class:`~skdp.exceptions.PrivacyLeakWarning`: they are then
        released in ``bin_edges_`` outside the guarantee. Dask input needs
        declared bounds.
    dtype : {np.float64, np.float32} or None, default=None
        dtype of the one-hot output; ``None`` gives float64.
    random_state : None, int or Generator, default=None
        ``None`` draws from the OS CSPRNG (the only choice for a release);
        a seed gives reproducible, predictable noise, for tests and
        examples only.
    budget : PrivacyBudget or None, default=None
        The budget the fit charges; shared, not copied, by ``clone``.

    Attributes
    ----------
    bin_edges_ : ndarray of shape (n_features,), dtype=object
        For each feature, the ``n_bins_[j] + 1`` non-decreasing edges, from
        the lower bound to the upper bound.
    n_bins_ : ndarray of shape (n_features,), dtype=int64
        Number of bins per feature.
    bounds_ : tuple of ndarray
        ``(lower, upper)`` used, per feature.
    privacy_event_ : PrivacyEvent
        The event charged.
    epsilon_, delta_ : float
        What that event costs (``delta_ = 0``: pure DP; ``epsilon_ = 0`` for
        ``"uniform"``).
    budget_entry_ : LedgerEntry or None
        The ledger entry in ``budget``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen in ``fit``, when they are all strings.

    See Also
    --------
    skdp.mechanisms.quantile_mechanism : The private quantiles used here.
    skdp.preprocessing.BoundedMinMaxScaler : Scaling from declared bounds.

    Notes
    -----
    **Guarantee** (``strategy="quantile"``): the fit is epsilon-DP under
    replace-one neighbours (``n_samples`` is public). Every row holds one
    value of each feature, so the ``d`` features compose sequentially:
    each gets ``epsilon / d``. A feature's ``k - 1`` interior edges are
    Smith's (2011) exponential-mechanism quantiles, whose rank utility has
    sensitivity 1 under replace-one: drawn independently at
    ``epsilon / (d (k - 1))`` each and sorted for up to 44 bins (43 edges), and from
    44 interior edges on released together by Kaplan, Schnapp & Stemmer's
    ApproximateQuantiles (ICML 2022, Algorithm 1), which divides the
    feature's ``epsilon / d`` over ``sum_levels min(2, nodes)`` selections
    (13 for 100 bins), as derived in
    :func:`~skdp.mechanisms.quantile_mechanism`. The event charged is the
    composition of the features' events. ``"uniform"`` edges depend on the
    bounds only: 0-DP when they are declared.

    ``transform`` is a fixed function of the edges and the row: value
    ``x`` goes to bin ``j`` when ``edge_j <= x < edge_{j+1}``, values below
    the lower bound to the first bin and above the upper bound to the last.

    References
    ----------
    H. Kaplan, S. Schnapp and U. Stemmer, "Differentially Private
    Approximate Quantiles", ICML 2022, Algorithm 1.
    A. Smith, "Privacy-preserving statistical estimation with optimal
    convergence rates", STOC 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPKBinsDiscretizer
    >>> X = np.random.default_rng(0).uniform(0, 100, size=(1000, 1))
    >>> binner = DPKBinsDiscretizer(n_bins=4, encode="ordinal", epsilon=1.0,
    ...                             bounds=(0, 100), random_state=0).fit(X)
    >>> bool(np.all(np.abs(binner.bin_edges_[0] - [0, 25, 50, 75, 100]) < 5))
    True
    >>> binner.transform([[10.0], [60.0]])
    array([[0.],
           [2.]])
    """

    _data_bound_params = ("bounds",)
    _parameter_constraints: dict = {
        "n_bins": [Interval(Integral, 2, None, closed="left"), "array-like"],
        "encode": [StrOptions({"onehot", "onehot-dense", "ordinal"})],
        "strategy": [StrOptions({"quantile", "uniform"})],
        "epsilon": [EPSILON_CONSTRAINT],
        "bounds": ["array-like", None],
        "dtype": [Options(type, {np.float64, np.float32}), None],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
    }

    def __init__(
        self,
        n_bins: int | ArrayLike = 5,
        *,
        encode: Literal["onehot", "onehot-dense", "ordinal"] = "onehot",
        strategy: Literal["quantile", "uniform"] = "quantile",
        epsilon: float = 1.0,
        bounds: ArrayLike | None = None,
        dtype: type[np.float64] | type[np.float32] | None = None,
        random_state: int | np.random.RandomState | None = None,
        budget: PrivacyBudget | None = None,
    ) -> None:
        self.n_bins = n_bins
        self.encode = encode
        self.strategy = strategy
        self.epsilon = epsilon
        self.bounds = bounds
        self.dtype = dtype
        self.random_state = random_state
        self.budget = budget

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With random_state=None the noise comes from the OS CSPRNG.
        tags.non_deterministic = (
            self.strategy == "quantile" and self.random_state is None
        )
        return tags

    def _privacy_label(self) -> str:
        return (
            f"{type(self).__name__}(strategy={self.strategy!r}, "
            f"epsilon={self.epsilon!r}).fit"
        )

    # -- plan, charge, run -------------------------------------------------
    def _resolve_n_bins(self, n_features: int) -> np.ndarray:
        if isinstance(self.n_bins, Integral):
            return np.full(n_features, int(self.n_bins), dtype=np.int64)
        n_bins = np.asarray(self.n_bins)
        if n_bins.shape != (n_features,) or n_bins.dtype.kind not in "iu":
            raise ValueError(
                f"n_bins must be an integer or {n_features} integers (one per "
                f"feature), got {self.n_bins!r}."
            )
        if np.any(n_bins < 2):
            raise ValueError(f"n_bins must be >= 2 for every feature, got {n_bins}.")
        return n_bins.astype(np.int64)

    def _prepare_fit(self, X, y=None):
        """Validated rows, bins and bounds (one pass over the rows)."""
        name = type(self).__name__
        rows = fit_rows(self, X)
        n_bins = self._resolve_n_bins(rows.n_features)
        total = float(np.sum(n_bins))
        fewer = f"use fewer bins (n_bins={self.n_bins!r})"
        # Edges, their linspace and the encoder's categories: 3 doubles a bin.
        check_memory(24.0 * total, f"{name}'s {total:.3g} bin edges", fewer)
        if self.strategy == "quantile":
            check_rounds(total - n_bins.size, "quantile selections", fewer)
        if rows.is_dask and self.strategy == "quantile":
            refuse_dask_quantiles(
                f"{name}(strategy='quantile')",
                "Fit it on a numpy array, or use strategy='uniform' (edges from "
                "the declared bounds alone, which takes dask input).",
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
        return rows, n_bins, lower, upper

    def _plan_fit(self, prepared) -> FitPlan:
        rows, n_bins, lower, upper = prepared
        n_samples, n_features = rows.n_samples, rows.n_features
        if self.strategy == "uniform":
            return FitPlan(ComposedEvent(()), settings={"plans": None})
        share = float(self.epsilon) / n_features
        plans = tuple(
            plan_quantiles(
                (lower[j], upper[j]),
                np.arange(1, n_bins[j]) / n_bins[j],
                share,
                n_samples,
            )
            for j in range(n_features)
        )
        events = [plan.event for plan in plans]
        if all(event == events[0] for event in events):
            event = SelfComposedEvent(events[0], n_features)
        else:
            event = ComposedEvent(tuple(events))
        return FitPlan(event, settings={"plans": plans})

    def _run_fit(self, prepared, plan, source) -> None:
        rows, n_bins, lower, upper = prepared
        plans = plan.settings["plans"]
        # "uniform" reads nothing here; "quantile" needs each column sorted,
        # so its rows are in memory (dask input was refused before the plan).
        X = rows.rows()[0] if plans is not None else None
        edges = np.empty(rows.n_features, dtype=object)
        for j in range(rows.n_features):
            if plans is None:
                inner = np.linspace(lower[j], upper[j], n_bins[j] + 1)[1:-1]
            else:
                inner = run_quantiles(plans[j], X[:, j], source)
            edges[j] = np.concatenate(([lower[j]], inner, [upper[j]]))
        self.bin_edges_ = edges
        self.n_bins_ = n_bins
        self.bounds_ = (lower, upper)
        if self.encode != "ordinal":
            # Fitted on the public categories only, never on the data.
            self._encoder = OneHotEncoder(
                categories=[np.arange(k) for k in n_bins],
                sparse_output=self.encode == "onehot",
                dtype=self.dtype or np.float64,
            ).fit(np.zeros((1, n_bins.size)))

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> Self:
        """Release the bin edges; charges ``budget`` once, before the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, clipped to ``bounds``. ``strategy="uniform"`` also
            takes a dask array or DataFrame (with declared ``bounds``): one
            validation pass over its row blocks, nothing else is read.
            ``strategy="quantile"`` refuses dask input: the exponential
            mechanism needs each column sorted in one place.
        y : None
            Ignored.

        Returns
        -------
        self : DPKBinsDiscretizer
        """
        return self._fit_private(X)

    # -- transform ---------------------------------------------------------
    def transform(self, X: ArrayLike) -> NDArray[Any] | sp.spmatrix:
        """Bin each feature by the released edges.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        Xt : ndarray or sparse matrix
            Bin indices (``encode="ordinal"``, dtype of ``X`` if float, else
            float64) or their one-hot encoding.
        """
        check_is_fitted(self)
        X = validate_data(
            self, X, reset=False, dtype=[np.float64, np.float32], copy=True
        )
        for j, edges in enumerate(self.bin_edges_):
            X[:, j] = np.searchsorted(edges[1:-1], X[:, j], side="right")
        if self.encode == "ordinal":
            return X
        return self._encoder.transform(X)

    def inverse_transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Map bins back to the centres of their intervals.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or its one-hot
            encoding

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if self.encode != "ordinal":
            X = self._encoder.inverse_transform(X)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        X = X.copy()
        for j, edges in enumerate(self.bin_edges_):
            centres = (edges[1:] + edges[:-1]) / 2
            index = np.clip(X[:, j].astype(np.int64), 0, centres.size - 1)
            X[:, j] = centres[index]
        return X

    def get_feature_names_out(
        self, input_features: ArrayLike | None = None
    ) -> NDArray[np.object_]:
        """Output feature names: the inputs (ordinal) or one per bin (one-hot).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input feature names; ``None`` uses ``feature_names_in_`` or
            ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str
        """
        check_is_fitted(self, "n_features_in_")
        names = OneToOneFeatureMixin.get_feature_names_out(self, input_features)
        if self.encode == "ordinal":
            return names
        return self._encoder.get_feature_names_out(names)
