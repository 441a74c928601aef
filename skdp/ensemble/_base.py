"""What the private tree ensembles share: parameters, tags and bin codes.

:class:`BaseDPTreeEnsemble` holds the parameters every ensemble takes
(privacy, the public schema: ``bounds``, ``categorical_features``,
``categories``), the tags, and the encoding of rows into the fitted bins'
codes that every prediction starts from. The boosting and forest bases add
their own parameters, plan and run.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator

from ..accounting._delta import resolve_delta
from ..base import PrivateEstimatorMixin
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._dask import is_dask_collection
from ..utils._row_source import row_source
from ..utils._sklearn_compat import HasMethods, Interval, check_is_fitted
from ._binning import encode_block, schema_params_read, table

__all__ = ["BaseDPTreeEnsemble"]


class BaseDPTreeEnsemble(PrivateEstimatorMixin, BaseEstimator):
    """Parameters, tags and bin codes of the private tree ensembles."""

    _parameter_constraints: dict = {
        "epsilon": [EPSILON_CONSTRAINT],
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "bounds": ["array-like", tuple, None],
        "categorical_features": ["array-like", None],
        "categories": [list, tuple, None],
        "random_state": ["random_state"],
        "budget": [HasMethods(["spend"]), None],
    }
    _data_bound_params = ("bounds", "categories")
    _kind = "classification"
    #: Whether scikit-learn's score checks on 200 to 300 rows may fail by
    #: the noise's luck at the default epsilon (see :meth:`_poor_score_tags`).
    _poor_score_on_tiny_data = True

    def _data_derived_params(self) -> tuple[str, ...]:
        """What a fit would read from the data (:func:`schema_params_read`)."""
        return schema_params_read(self)

    def _delta(self) -> float:
        """The delta a fit spends (its Gaussian noise needs delta > 0)."""
        return resolve_delta(self.delta, needs_delta=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        tags.input_tags.allow_nan = True
        return tags

    def _poor_score_tags(self, tags):
        # At the default epsilon=1 on scikit-learn's 200- to 300-row check
        # sets, the noise of a few hundred rows' per-bin sums leaves the
        # score below the checks' fixed thresholds for some seeds (a DP
        # model's accuracy on tiny data is the noise's, not a bug). The
        # classifier and regressor classes call this after their mixin has
        # made the tags it sets.
        if tags.classifier_tags is not None:
            tags.classifier_tags.poor_score = self._poor_score_on_tiny_data
        if tags.regressor_tags is not None:
            tags.regressor_tags.poor_score = self._poor_score_on_tiny_data
        return tags

    def _codes(self, X) -> np.ndarray:
        """``X``'s bin codes under the fitted bins, in memory (int64)."""
        check_is_fitted(self)
        X = table(self, X, reset=False)
        codes = row_source(X).map_rows(
            encode_block,
            self.schema_,
            self.bin_thresholds_,
            dtype=np.int16,
            width=self.n_features_in_,
        )
        if is_dask_collection(codes):
            codes = codes.compute()
        return codes.astype(np.int64)
