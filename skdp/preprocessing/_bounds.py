"""Per-feature public bounds, and the min-max scaler that reads only them."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from ..utils._feasibility import MAX_MAGNITUDE
from ..utils._privacy import warn_data_derived
from ..utils._sklearn_compat import (
    check_is_fitted,
    fit_context,
    validate_data,
)

__all__ = ["BoundedMinMaxScaler"]


def resolve_feature_bounds(bounds, X: np.ndarray, what: str):
    """Per-feature ``(lower, upper, from_data)`` of ``X``.

    Parameters
    ----------
    bounds : None or (lower, upper)
        Scalars, or arrays with one value per feature; ``lower < upper``
        for every feature. ``None`` reads each feature's smallest and
        largest value from ``X`` (ignoring NaN) and emits a
        :class:`~skdp.exceptions.PrivacyLeakWarning`; a constant feature
        then gets ``(v - 0.5, v + 0.5)`` and an all-NaN one ``(0, 1)``.
    X : ndarray of shape (n_samples, n_features)
    what : str
        The caller, for messages.

    Raises
    ------
    ValueError
        For malformed, non-finite, empty or too large declared bounds.
    """
    n_features = X.shape[1]
    if bounds is None:
        warn_data_derived(
            "bounds",
            "the smallest and largest value of each feature",
            f"pass bounds=(lower, upper) to {what}: public limits of each "
            "feature (scalars, or one value per feature)",
        )
        finite = np.where(np.isfinite(X), X, np.nan)
        seen = ~np.all(np.isnan(finite), axis=0)
        lower = np.zeros(n_features)
        upper = np.ones(n_features)
        if X.shape[0]:
            lower[seen] = np.nanmin(finite[:, seen], axis=0)
            upper[seen] = np.nanmax(finite[:, seen], axis=0)
        flat = lower >= upper
        lower[flat] -= 0.5
        upper[flat] += 0.5
        return lower, upper, True
    if isinstance(bounds, str) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ValueError(
            "bounds must be a pair (lower, upper) of scalars or per-feature "
            f"arrays, got {bounds!r}."
        )
    try:
        lower = np.broadcast_to(np.asarray(bounds[0], dtype=float), (n_features,))
        upper = np.broadcast_to(np.asarray(bounds[1], dtype=float), (n_features,))
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must hold one lower and one upper value for each of the "
            f"{n_features} features (or a scalar for all), got {bounds!r}."
        ) from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError("bounds must be finite.")
    if np.any(lower >= upper):
        raise ValueError("bounds must have lower < upper for every feature.")
    if max(np.abs(lower).max(initial=0), np.abs(upper).max(initial=0)) > MAX_MAGNITUDE:
        raise ValueError(f"bounds beyond {MAX_MAGNITUDE:.0e} in magnitude are refused.")
    return lower.copy(), upper.copy(), False


class BoundedMinMaxScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale each feature from declared bounds to a range, clipping outliers.

    A :class:`~sklearn.preprocessing.MinMaxScaler` whose minimum and
    maximum are public bounds you declare instead of the data's: with
    ``bounds`` given, ``fit`` reads nothing from the data except the
    number of features, so the scaler needs no privacy budget and no
    epsilon, and releases nothing about the rows. Values outside the
    bounds are clipped to them, so every output lies in ``feature_range``
    — the public bound that a private model after it (e.g.
    ``data_norm`` of :class:`~skdp.linear_model.DPLogisticRegression`)
    can rely on.

    Parameters
    ----------
    bounds : (lower, upper) or None, default=None
        Public bounds of the features: scalars, or arrays with one value per
        feature, ``lower < upper``. ``None`` behaves like scikit-learn's
        ``MinMaxScaler``: each feature's minimum and maximum are read from
        the training data, with a :class:`~skdp.exceptions.PrivacyLeakWarning`
        because the fitted scaler (and everything it transforms) then
        reveals them. That default keeps the scaler a drop-in replacement;
        pass bounds for privacy.
    feature_range : tuple (min, max), default=(0, 1)
        Range of the transformed data, ``min < max``.
    clip : bool, default=True
        Clip values to ``bounds`` before scaling (so outputs lie in
        ``feature_range``). With ``clip=False`` values outside the bounds
        map outside the range, as in ``MinMaxScaler``.

    Attributes
    ----------
    lower_, upper_ : ndarray of shape (`n_features_in_`,)
        The bounds used for each feature (declared, or read from the data).
    scale_ : ndarray of shape (`n_features_in_`,)
        ``(max - min) / (upper_ - lower_)``.
    min_ : ndarray of shape (`n_features_in_`,)
        ``min - lower_ * scale_``: ``X * scale_ + min_`` is the scaled data.
    bounds_from_data_ : bool
        True when ``bounds=None`` (the fit read the data).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen in ``fit``, when they are all strings.

    See Also
    --------
    skdp.preprocessing.DPKBinsDiscretizer : Private quantile binning.

    Notes
    -----
    With declared bounds the transformation is a fixed function of public
    quantities and the row being transformed: fitting it is 0-DP (nothing
    is learnt from the other rows), so it does not charge a budget and
    has no ``epsilon``. NaN values pass through unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import BoundedMinMaxScaler
    >>> X = np.array([[20.0, 0.0], [45.0, 40.0], [130.0, 99.0]])
    >>> scaler = BoundedMinMaxScaler(bounds=([17, 0], [90, 99])).fit(X)
    >>> scaler.transform(X).round(3)
    array([[0.041, 0.   ],
           [0.384, 0.404],
           [1.   , 1.   ]])
    """

    _parameter_constraints: dict = {
        "bounds": ["array-like", None],
        "feature_range": [tuple],
        "clip": ["boolean"],
    }

    def __init__(self, *, bounds=None, feature_range=(0, 1), clip=True):
        self.bounds = bounds
        self.feature_range = feature_range
        self.clip = clip

    def _range(self):
        low, high = (float(v) for v in self.feature_range)
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(
                "feature_range must be a finite (min, max) with min < max, got "
                f"{self.feature_range!r}."
            )
        return low, high

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Set the per-feature bounds (declared, or read with a warning).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Only its number of features is used when ``bounds`` is given.
        y : None
            Ignored.

        Returns
        -------
        self : BoundedMinMaxScaler
        """
        if len(self.feature_range) != 2:
            raise ValueError(
                f"feature_range must be a pair (min, max), got {self.feature_range!r}."
            )
        low, high = self._range()
        X = validate_data(
            self, X, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan"
        )
        lower, upper, from_data = resolve_feature_bounds(
            self.bounds, X, type(self).__name__
        )
        width = upper - lower
        if not np.all(np.isfinite(width)):
            raise ValueError("bounds are too far apart for float64.")
        self.lower_, self.upper_ = lower, upper
        self.scale_ = (high - low) / width
        self.min_ = low - lower * self.scale_
        self.bounds_from_data_ = from_data
        return self

    def transform(self, X):
        """Clip to the bounds (if ``clip``) and scale to ``feature_range``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_data(
            self,
            X,
            reset=False,
            dtype=[np.float64, np.float32],
            copy=True,
            ensure_all_finite="allow-nan",
        )
        if self.clip:
            np.clip(X, self.lower_, self.upper_, out=X)
        X *= self.scale_
        X += self.min_
        if self.clip:  # rounding can step just outside the range
            np.clip(X, *self._range(), out=X)
        return X

    def inverse_transform(self, X):
        """Map scaled data back to the original units.

        Values that were clipped come back at the bound, not where they were.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_data(
            self,
            X,
            reset=False,
            dtype=[np.float64, np.float32],
            copy=True,
            ensure_all_finite="allow-nan",
        )
        X -= self.min_
        X /= self.scale_
        return X

    @property
    def _learns_from_data(self) -> bool:
        """Whether a fit reads values of the data: only without declared
        bounds (read by :func:`skdp.check_pipeline`)."""
        return self.bounds is None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
