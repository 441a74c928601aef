"""The one module of skdp allowed to import private scikit-learn APIs.

Everything skdp needs from scikit-learn's private modules is re-exported from
here, so a scikit-learn release that moves them breaks one file, not the
package.
"""

from numbers import Integral, Real

from sklearn.base import _fit_context
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    RealNotInt,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

# Not scikit-learn's, but a requirement of every scikit-learn release skdp
# supports, so always installed with it.
from threadpoolctl import threadpool_limits

__all__ = [
    "BaseSearchCV",
    "HasMethods",
    "Integral",
    "Interval",
    "Options",
    "Real",
    "RealNotInt",
    "StrOptions",
    "check_is_fitted",
    "fit_context",
    "num_samples",
    "safe_indexing",
    "threadpool_limits",
    "validate_data",
    "validate_params",
]

fit_context = _fit_context
num_samples = _num_samples
safe_indexing = _safe_indexing
