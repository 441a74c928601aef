"""The min-max scaler that reads only declared bounds."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from ..utils._bounds import declared_bounds, refuse_undeclared, resolve_bounds
from ..utils._dask import is_dask_collection
from ..utils._row_checks import check_finite, fit_rows, read_facts
from ..utils._sklearn_compat import (
    check_is_fitted,
    fit_context,
    validate_data,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .._typing import Self

__all__ = ["BoundedMinMaxScaler"]


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

    _data_bound_params = ("bounds",)
    _parameter_constraints: dict = {
        "bounds": ["array-like", None],
        "feature_range": [tuple],
        "clip": ["boolean"],
    }

    def __init__(
        self,
        *,
        bounds: ArrayLike | None = None,
        feature_range: tuple[float, float] = (0, 1),
        clip: bool = True,
    ) -> None:
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
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> Self:
        """Set the per-feature bounds (declared, or read with a warning).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Only its number of features is used when ``bounds`` is given.
            A dask array or DataFrame needs declared ``bounds``; one pass
            over its row blocks refuses infinite values, as in memory, and
            no row reaches the client.
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
        if is_dask_collection(X):
            lower, upper = self._dask_bounds(X)
        else:
            X = validate_data(
                self, X, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan"
            )
            lower, upper = resolve_bounds(self.bounds, X, estimator=type(self).__name__)
        with np.errstate(over="ignore", invalid="ignore"):
            scale = (high - low) / (upper - lower)
            shift = low - lower * scale
        if not (np.all(np.isfinite(scale)) and np.all(np.isfinite(shift))):
            raise ValueError(
                f"feature_range={self.feature_range!r} over these bounds needs a "
                "scale beyond float64; use a smaller feature_range or wider bounds."
            )
        self.lower_, self.upper_ = lower, upper
        self.scale_, self.min_ = scale, shift
        self.bounds_from_data_ = self.bounds is None
        return self

    def _dask_bounds(self, X):
        """The declared bounds of a dask ``X``, checked as in memory.

        The shape, dtype and feature names come from metadata; one pass over
        the row blocks refuses infinite values (NaN passes, as in memory).
        The rows stay on the workers; bounds are never read from them.
        """
        rows = fit_rows(self, X)
        if self.bounds is None:
            refuse_undeclared(type(self).__name__)
        facts = read_facts(rows)
        check_finite(dataclasses.replace(facts, x_nan=0), type(self).__name__)
        return declared_bounds(self.bounds, rows.n_features)

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
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

    def inverse_transform(self, X: ArrayLike) -> NDArray[np.float64]:
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
