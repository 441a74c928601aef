"""The one module of skdp allowed to import private scikit-learn APIs.

Everything skdp needs from scikit-learn's private modules is re-exported from
here, so a scikit-learn release that moves them breaks one file, not the
package.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    RealNotInt,
    StrOptions,
)
from sklearn.utils.validation import _num_samples, check_is_fitted
from sklearn.utils.validation import validate_data as _sklearn_validate_data

# Not scikit-learn's, but a requirement of every scikit-learn release skdp
# supports, so always installed with it; OpenBLASController is not in its
# public names.
try:
    from threadpoolctl import OpenBLASController as _OpenBLASController
except ImportError:  # pragma: no cover - a threadpoolctl without it
    _OpenBLASController = None

from ._numbers import refuse_non_numbers

__all__ = [
    "BaseSearchCV",
    "HasMethods",
    "Integral",
    "Interval",
    "Options",
    "Real",
    "RealNotInt",
    "StrOptions",
    "available_if",
    "check_is_fitted",
    "fit_context",
    "fitting_as_step_with_target",
    "num_samples",
    "release_blas_control",
    "safe_indexing",
    "validate_data",
    "validate_params",
]

_F = TypeVar("_F", bound=Callable[..., Any])

if TYPE_CHECKING:
    # scikit-learn ships no type information, so to a type checker its
    # decorators would turn every method they decorate into ``Any`` (and the
    # annotations of ``fit``, ``predict``, ... would be lost to users). Each
    # returns the function it wraps, with checks around it: say so.
    def fit_context(*, prefer_skip_nested_validation: bool) -> Callable[[_F], _F]: ...

    def validate_params(
        parameter_constraints: dict[str, Any], *, prefer_skip_nested_validation: bool
    ) -> Callable[[_F], _F]: ...

    def available_if(check: Callable[[Any], Any]) -> Callable[[_F], _F]: ...

else:
    from sklearn.base import _fit_context as fit_context
    from sklearn.utils._param_validation import validate_params
    from sklearn.utils.metaestimators import available_if

num_samples = _num_samples
safe_indexing = _safe_indexing


def _asks_for_numbers(dtype) -> bool:
    if isinstance(dtype, str):
        return dtype == "numeric"
    if isinstance(dtype, list | tuple):
        return bool(dtype) and all(_asks_for_numbers(d) for d in dtype)
    return dtype is not None and np.dtype(dtype).kind in "biufc"


def validate_data(_estimator, /, X="no_validation", y="no_validation", **kwargs):
    """scikit-learn's ``validate_data``, refusing dates and bytes as numbers.

    Where numbers are asked for (``dtype`` ``"numeric"``, the default, or
    numeric dtypes) and ``X`` is checked, dates, durations and bytes are
    refused first (:func:`skdp.utils._numbers.refuse_non_numbers`): numpy
    would convert them to numbers silently, and scikit-learn lets it.
    """
    checks_x = not (isinstance(X, str) and X == "no_validation")
    if (
        checks_x
        and not kwargs.get("skip_check_array", False)
        and _asks_for_numbers(kwargs.get("dtype", "numeric"))
    ):
        refuse_non_numbers(X)
    numeric_y = kwargs.get("y_numeric", False) and not (
        y is None or (isinstance(y, str) and y == "no_validation")
    )
    if numeric_y:
        refuse_non_numbers(y, "y")
    out = _sklearn_validate_data(_estimator, X, y, **kwargs)
    if numeric_y:
        # scikit-learn looks for NaN in an object y before converting it to
        # float, so a None passes and becomes NaN.
        target = out[1] if checks_x else out
        if target.dtype.kind == "f" and not np.all(np.isfinite(target)):
            raise ValueError(
                "Input y holds missing values (None or NaN): a regression "
                "target must be a finite number on every row."
            )
    return out


def fitting_as_step_with_target(estimator) -> bool:
    """Whether ``estimator`` is being fitted, with a target ``y``, as an
    intermediate step of a scikit-learn ``Pipeline``, ``FeatureUnion`` or
    ``ColumnTransformer``, whose output the composite then pairs with ``y``.

    scikit-learn gives no public way to tell: every composite fits such a
    step through the private ``sklearn.pipeline._fit_transform_one(
    transformer, X, y, ...)``, so this looks for that frame, fitting this
    very object with a ``y``, on the call stack. A direct
    ``estimator.fit(X, y)`` (as scikit-learn's estimator checks make) is not
    such a call. Kept here because it depends on a private scikit-learn name.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if (
            frame.f_code.co_name == "_fit_transform_one"
            and frame.f_globals.get("__name__") == "sklearn.pipeline"
        ):
            scope = frame.f_locals
            if scope.get("transformer") is estimator and scope.get("y") is not None:
                return True
        frame = frame.f_back
    return False


def release_blas_control() -> None:
    """Let any thread set OpenBLAS's thread count next.

    OpenBLAS built with pthreads has one thread pool for the whole process.
    threadpoolctl (3.7 and later) therefore lets only one thread change its
    size -- the first to try, until that thread's ``with`` block ends -- and
    silently ignores the others. skdp's thread policy
    (:func:`skdp.utils._threads.one_blas_thread`) is held for the whole
    process, may be left by another thread than the one that took it, and
    is not a ``with`` block of threadpoolctl's, so it releases that control
    around each change it makes.
    """
    clear = getattr(_OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)
