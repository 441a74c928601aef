"""Per-feature public bounds: declared by the user, or read from the data.

One policy for every private tool and estimator that clips its input to a
box (``skdp.tools``, ``skdp.preprocessing``, ``DPGaussianNB``, ``DPKMeans``).
It runs before any charge and may raise; it adds no noise.
"""

from __future__ import annotations

import numpy as np

from ._feasibility import MAX_MAGNITUDE, MIN_WIDTH
from ._privacy import warn_data_derived

__all__ = [
    "bounds_from_extremes",
    "declared_bounds",
    "refuse_undeclared",
    "resolve_bounds",
    "warn_bounds_read",
]


def resolve_bounds(
    bounds,
    X: np.ndarray,
    *,
    what: str = "feature",
    estimator: str = "the estimator",
    param: str = "bounds",
) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature ``(lower, upper)`` of ``X``: declared, or read with a warning.

    The policy, the same wherever skdp clips data to a box:

    * **Declared** ``bounds=(lower, upper)``: each a scalar (for every
      feature) or an array of one value per feature. Both finite, with
      ``lower < upper`` for every feature, and at most
      :data:`~skdp.utils._feasibility.MAX_MAGNITUDE` in magnitude with a
      finite width ``upper - lower``. Anything else raises a
      :class:`ValueError` naming the problem. Nothing is read from ``X``
      but its number of columns.
    * **Omitted** (``bounds=None``): each feature's smallest and largest
      value are read from ``X``, ignoring NaN, with a
      :class:`~skdp.exceptions.PrivacyLeakWarning` (they are not
      protected). A constant feature gets ``(v - 0.5, v + 0.5)`` and a
      feature with no finite value (or ``X`` without rows) ``(0, 1)``, so
      that every box has a positive width. Values beyond ``MAX_MAGNITUDE``
      are refused as for declared bounds.

    Callers run it in their plan, before any charge: everything that can
    raise here depends on public inputs only (or, for ``bounds=None``, on
    the data that the warning already gives away).

    Parameters
    ----------
    bounds : None or (lower, upper)
        The public bounds, or ``None`` to read them from ``X``.
    X : ndarray of shape (n_samples, n_features)
        The data; only its shape is used when ``bounds`` is given.
    what : str, default="feature"
        The name of a column in messages (``"feature"``, ``"column"``).
    estimator : str, default="the estimator"
        The caller, named in the warning's advice.
    param : str, default="bounds"
        The caller's parameter that declares them (``"y_bounds"`` for a
        target), named in the warning.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
        New float arrays with ``lower < upper``.

    Raises
    ------
    ValueError
        For malformed, non-finite, empty, reversed or too large bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.utils._bounds import resolve_bounds
    >>> X = np.array([[1.0, 5.0], [3.0, 5.0]])
    >>> resolve_bounds((0, [4, 10]), X)
    (array([0., 0.]), array([ 4., 10.]))
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     resolve_bounds(None, X)
    (array([1. , 4.5]), array([3. , 5.5]))
    """
    n_features = X.shape[1]
    if bounds is None:
        warn_bounds_read(what, estimator, param)
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(X)
        low = np.min(np.where(finite, X, np.inf), axis=0, initial=np.inf)
        high = np.max(np.where(finite, X, -np.inf), axis=0, initial=-np.inf)
        return bounds_from_extremes(low, high)
    return declared_bounds(bounds, n_features, what=what)


def warn_bounds_read(
    what: str = "feature", estimator: str = "the estimator", param: str = "bounds"
) -> None:
    """The :class:`~skdp.exceptions.PrivacyLeakWarning` of ``bounds=None``."""
    warn_data_derived(
        param,
        f"the smallest and largest value of each {what}",
        f"pass {param}=(lower, upper) to {estimator}: public limits of each "
        f"{what} (scalars, or one value per {what})",
    )


def bounds_from_extremes(low, high) -> tuple[np.ndarray, np.ndarray]:
    """Bounds read from the data: each column's smallest and largest finite value.

    ``low``/``high`` are ``+inf``/``-inf`` for a column without a finite
    value (it gets ``(0, 1)``); a constant column gets ``(v - 0.5, v + 0.5)``.
    Values beyond ``MAX_MAGNITUDE`` are refused. The caller has warned.
    """
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    seen = low <= high
    lower, upper = np.zeros(low.shape), np.ones(low.shape)
    lower[seen] = low[seen]
    upper[seen] = high[seen]
    flat = lower >= upper
    lower[flat] -= 0.5
    upper[flat] += 0.5
    _check_magnitude(lower, upper, "the range read from the data")
    return lower, upper


def declared_bounds(
    bounds, n_features: int, *, what: str = "feature"
) -> tuple[np.ndarray, np.ndarray]:
    """Declared ``bounds`` checked and broadcast to ``n_features`` (public only).

    Raises the errors of :func:`resolve_bounds` for declared bounds.
    """
    if isinstance(bounds, str) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ValueError(
            f"bounds must be a pair (lower, upper) of scalars or per-{what} "
            f"arrays, got {bounds!r}."
        )
    try:
        lower = np.broadcast_to(np.asarray(bounds[0], dtype=float), (n_features,))
        upper = np.broadcast_to(np.asarray(bounds[1], dtype=float), (n_features,))
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must be scalars or hold one lower and one upper value for "
            f"each of the {n_features} {what}s, got {bounds!r}."
        ) from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"bounds must be finite, got {bounds!r}.")
    if not np.all(lower < upper):
        raise ValueError(
            f"bounds must have lower < upper for every {what}, got {bounds!r}."
        )
    _check_magnitude(lower, upper, "bounds")
    return lower.astype(float, copy=True), upper.astype(float, copy=True)


def refuse_undeclared(what: str, name: str = "bounds") -> None:
    """Dask input never has its bounds (or ranges, or norm) read from the data."""
    raise ValueError(
        f"{what} on a dask collection needs declared {name}: skdp reads no "
        "bound from dask data (that would leak the extremes, with a "
        "PrivacyLeakWarning, and cost a pass over the data). Nothing was charged."
    )


def _check_magnitude(lower, upper, name):
    largest = max(np.abs(lower).max(initial=0.0), np.abs(upper).max(initial=0.0))
    with np.errstate(over="ignore"):
        widths = upper - lower
    if not (largest <= MAX_MAGNITUDE and np.all(np.isfinite(widths))):
        raise ValueError(
            f"{name} beyond {MAX_MAGNITUDE:.0e} in magnitude are refused: float64 "
            "arithmetic on them could overflow. Rescale the data or use smaller "
            "bounds."
        )
    if np.any(widths < MIN_WIDTH):
        raise ValueError(
            f"{name}: a width upper - lower below {MIN_WIDTH:.0e} is refused, "
            "its square underflows float64 (a variance or a scale would be 0 or "
            "infinite). Rescale the data or use wider bounds."
        )
