"""Private quantiles and median: wrappers of :mod:`skdp.mechanisms._quantile`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..accounting._events import ComposedEvent
from ..base import charge_and_run
from ..mechanisms._quantile import (
    plan_quantiles,
    refuse_dask_quantiles,
    run_quantiles,
)
from ..utils._bounds import bounds_from_extremes, declared_bounds, warn_bounds_read
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._dask import is_dask_collection
from ..utils._random import check_random_source
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    Real,
    validate_params,
)
from ._validation import tool_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting._budget import PrivacyBudget
    from ..utils._random import RandomStateLike

__all__ = ["median", "quantile"]

_PARAMS = {
    "a": ["array-like"],
    "q": [Interval(Real, 0, 1, closed="both"), "array-like"],
    "axis": [None, Integral],
    "epsilon": [EPSILON_CONSTRAINT],
    "bounds": ["array-like", None],
    "random_state": ["random_state"],
    "budget": [HasMethods(["spend"]), None],
}


def _quantile(name, a, q, axis, epsilon, bounds, budget, random_state):
    if is_dask_collection(a):
        refuse_dask_quantiles(
            f"skdp.tools.{name}",
            "Compute it on a numpy array, or release skdp.tools.histogram(x, "
            "bins=..., range=...) on public bins (a sum over dask row blocks) "
            "and read quantiles from its cumulative sum (post-processing: no "
            "further cost, accuracy the bin width).",
        )
    rows, _, facts = tool_rows(a, axis, name, extremes=bounds is None)
    X = np.asarray(rows.rows()[0], dtype=float)  # in memory: sorted per column
    n, p = X.shape
    if axis is None and p > 1:
        raise ValueError(
            f"{name} with axis=None needs one value per row (a 1-D array or one "
            f"column); got {p} columns. Use axis=0 for one {name} per column."
        )
    if bounds is None:
        warn_bounds_read("column", f"skdp.tools.{name}")
        lower, upper = bounds_from_extremes(facts.low, facts.high)
    else:
        lower, upper = declared_bounds(bounds, p, what="column")
    try:
        levels = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"q must be a number or numbers in [0, 1], got {q!r}."
        ) from None
    if levels.ndim > 1 or levels.size == 0:
        raise ValueError(f"q must be a number or a 1-D array of numbers, got {q!r}.")
    label = f"skdp.tools.{name}(epsilon={float(epsilon)!r})"
    share = float(epsilon) / p
    wanted = np.unique(levels.ravel())
    # One plan per column: the mechanism chooses between its recursion and
    # independent sorted draws from the number of quantiles alone.
    plans = [
        plan_quantiles((float(lower[j]), float(upper[j])), wanted, share, n)
        for j in range(p)
    ]
    leaves = tuple(plan.event for plan in plans)
    event = (
        leaves[0].with_label(label)
        if len(leaves) == 1
        else ComposedEvent(leaves, label=label)
    )
    source = check_random_source(random_state)
    # Each q maps to its position among the sorted distinct quantiles.
    positions = np.searchsorted(wanted, levels.ravel())
    shape = np.shape(a)[1:]

    def run():
        columns = np.empty((levels.size, p))
        for j in range(p):
            columns[:, j] = run_quantiles(plans[j], X[:, j], source)[positions]
        if axis is None or not shape:
            out = columns[:, 0]
        else:
            out = columns.reshape((levels.size,) + shape)
        if levels.ndim == 0:
            out = out[0]
            return float(out) if np.ndim(out) == 0 else out
        return out

    return charge_and_run(budget, event, run, f"skdp.tools.{name}")


@validate_params(_PARAMS, prefer_skip_nested_validation=True)
def quantile(
    a: ArrayLike,
    q: float | ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    bounds: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> float | NDArray[np.float64]:
    """Differentially private quantiles, like :func:`numpy.quantile`.

    Parameters
    ----------
    a : array-like
        The data: a 1-D array (one value per individual), or rows of
        columns with ``axis=0``.
    q : float or array-like of float
        Quantiles in ``[0, 1]``.
    axis : {None, 0}, default=None
        ``None``: quantiles of a 1-D array; ``0``: of each column, with
        epsilon split evenly over the columns.
    epsilon : float, default=1.0
        Total privacy parameter for all the quantiles, > 0.
    bounds : (lower, upper) or None, default=None
        Public range of the values (scalars, or one per column); the output
        always lies in it. ``None`` reads the minimum and maximum from the
        data with a :class:`~skdp.exceptions.PrivacyLeakWarning`.
    random_state : int, RandomState instance or None, default=None
        ``None`` (the OS CSPRNG) for a release; a seed for tests only.
    budget : PrivacyBudget or None, default=None
        Charged once, before the data is read.

    Returns
    -------
    quantile : float or ndarray
        numpy's shapes: a float for one ``q`` and ``axis=None``, an array of
        ``len(q)`` for several, with the columns' shape appended for
        ``axis=0``. Non-decreasing in ``q``.

    Notes
    -----
    epsilon-DP under replace-one neighbours. One quantile is the
    exponential mechanism over the intervals between the sorted, clipped
    values, each weighted by its length times
    ``exp(-epsilon |rank - q n| / 2)`` (Smith 2011, "Privacy-preserving
    statistical estimation with optimal convergence rates", Section 3;
    McSherry & Talwar 2007), sampled exactly; the rank utility moves by at
    most 1 when a row is replaced. Several quantiles are found by the
    recursive ApproximateQuantiles algorithm of Kaplan, Schnapp & Stemmer
    (2022, "Differentially private approximate quantiles", Algorithm 1),
    which charges ``epsilon`` split over the exponential mechanisms of its
    recursion levels instead of splitting it over every quantile, when that
    needs at most a quarter of the selections (44 quantiles or more); fewer
    quantiles are drawn independently at ``epsilon / m`` each and sorted
    (see :func:`skdp.mechanisms.quantile_mechanism`).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import quantile
    >>> ages = np.arange(20, 70).repeat(20)
    >>> q = quantile(ages, [0.25, 0.5, 0.75], epsilon=1.0, bounds=(17, 90),
    ...              random_state=0)
    >>> bool(np.all(np.abs(q - [32, 44.5, 57]) < 2))
    True
    """
    return _quantile("quantile", a, q, axis, epsilon, bounds, budget, random_state)


@validate_params(
    {k: v for k, v in _PARAMS.items() if k != "q"},
    prefer_skip_nested_validation=True,
)
def median(
    a: ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    bounds: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> float | NDArray[np.float64]:
    """Differentially private median: :func:`quantile` at ``q = 0.5``.

    Parameters are those of :func:`quantile` (without ``q``).

    Returns
    -------
    median : float or ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import median
    >>> ages = np.arange(20, 70).repeat(20)
    >>> bool(abs(median(ages, bounds=(17, 90), random_state=0) - 44.5) < 2)
    True
    """
    return _quantile("median", a, 0.5, axis, epsilon, bounds, budget, random_state)
