"""Private numpy-like statistics: mean, var, std, sum and count.

Each function validates its input, plans the release from public quantities
(the bounds, the number of rows, epsilon), charges ``budget`` once, and only
then computes the statistic and adds noise; a refused charge raises
:class:`~skdp.exceptions.BudgetExceededError` and releases nothing. The
unit of privacy is a row of the input (one entry of a 1-D array).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..base import charge_and_run
from ..mechanisms._additive import add_noise, plan_laplace
from ..utils._bounds import (
    bounds_from_extremes,
    declared_bounds,
    refuse_undeclared,
    warn_bounds_read,
)
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._dask import is_dask_collection
from ..utils._random import check_random_source
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    validate_params,
)
from ._moments import noisy_moments, plan_moments
from ._validation import tool_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting._budget import PrivacyBudget
    from ..utils._random import RandomStateLike

__all__ = ["count", "mean", "std", "sum", "var"]

_COMMON = {
    "a": ["array-like"],
    "axis": [None, Integral],
    "epsilon": [EPSILON_CONSTRAINT],
    "random_state": ["random_state"],
    "budget": [HasMethods(["spend"]), None],
}
_BOUNDED = {**_COMMON, "bounds": ["array-like", None]}


def _label(name: str, epsilon: float) -> str:
    return f"skdp.tools.{name}(epsilon={float(epsilon)!r})"


def _moment(name, a, axis, epsilon, bounds, budget, random_state, *, var, finish):
    """Plan, charge and release one moment statistic (shared by four tools).

    The same for a NumPy array and a dask collection: metadata and one
    validation pass before the charge (bounds must be declared for dask),
    one pass of clipped row-block sums after it, the noise drawn here.
    """
    what = f"skdp.tools.{name}"
    if bounds is None and is_dask_collection(a):
        refuse_undeclared(what)
    rows, shape, facts = tool_rows(a, axis, name, extremes=bounds is None)
    if bounds is None:
        warn_bounds_read("column", what)
        lower, upper = bounds_from_extremes(facts.low, facts.high)
    else:
        lower, upper = declared_bounds(bounds, rows.n_features, what="column")
    pooled = axis is None
    plan = plan_moments(
        lower,
        upper,
        rows.n_samples,
        float(epsilon),
        mean=not var,
        var=var,
        pooled=pooled,
        label=_label(name, epsilon),
    )
    source = check_random_source(random_state)

    def run():
        mean_, var_ = noisy_moments(rows, plan, source)
        value = finish(var_ if var else mean_, (rows.n_samples, rows.n_features))
        return float(value[0]) if (pooled or not shape) else value.reshape(shape)

    return charge_and_run(budget, plan.event, run, what)


@validate_params(_BOUNDED, prefer_skip_nested_validation=True)
def mean(
    a: ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    bounds: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> float | NDArray[np.float64]:
    """Differentially private arithmetic mean, like :func:`numpy.mean`.

    Parameters
    ----------
    a : array-like
        The data; its rows (first axis) are the individuals protected.
    axis : {None, 0}, default=None
        ``None``: the mean of all entries; ``0``: one mean per column.
    epsilon : float, default=1.0
        Privacy parameter of the release, > 0 (split evenly over the
        columns when ``axis=0``).
    bounds : (lower, upper) or None, default=None
        Public bounds of the values, scalars or one per column; values
        outside are clipped to them. ``None`` reads them from the data and
        emits a :class:`~skdp.exceptions.PrivacyLeakWarning` (the minimum
        and maximum are then not protected).
    random_state : int, RandomState instance or None, default=None
        ``None`` draws noise from the operating system's CSPRNG: the only
        choice for a release. A seed is for tests only.
    budget : PrivacyBudget or None, default=None
        Charged once, before the data is read; ``None`` charges nothing.

    Returns
    -------
    mean : float or ndarray
        A float for ``axis=None`` or 1-D input, else one value per column.

    Notes
    -----
    epsilon-DP under replace-one neighbours (``n``, the number of rows, is
    public). The mean of a column clipped to ``[L, U]`` moves by at most
    ``(U - L) / n`` when one row is replaced; the Laplace mechanism (Dwork,
    McSherry, Nissim & Smith 2006, Theorem 1) adds noise of scale
    ``(U - L) / (n epsilon)``, times the number of columns for ``axis=0``
    (an L1 sensitivity summed over the columns, since a row touches them
    all). With ``axis=None`` and several columns the pooled mean moves by
    ``mean_j (U_j - L_j) / n``. The noise is the discrete Laplace on a fine
    grid (:func:`~skdp.mechanisms.laplace_mechanism`), and the result is
    clipped back to ``[L, U]``, which can only reduce the error.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import mean
    >>> ages = np.array([23, 35, 47, 51, 62] * 200)
    >>> round(mean(ages, epsilon=1.0, bounds=(17, 90), random_state=0), 1)
    43.6
    """
    return _moment(
        "mean", a, axis, epsilon, bounds, budget, random_state,
        var=False, finish=lambda m, shape: m,
    )  # fmt: skip


@validate_params(_BOUNDED, prefer_skip_nested_validation=True)
def sum(  # noqa: A001
    a: ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    bounds: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> float | NDArray[np.float64]:
    """Differentially private sum, like :func:`numpy.sum`.

    Parameters are those of :func:`mean`.

    Returns
    -------
    sum : float or ndarray

    Notes
    -----
    epsilon-DP under replace-one neighbours. Since ``n`` is public the sum
    is ``n`` times the mean; it is released as ``n`` times the private
    :func:`mean` (post-processing), i.e. with Laplace noise of scale
    ``(U - L) / epsilon``: the sum of values in ``[L, U]`` moves by at most
    ``U - L`` when a row is replaced (centring at the midpoint, not the
    ``max(|L|, |U|)`` of add/remove neighbours). The result lies in
    ``[n L, n U]``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import sum as dp_sum
    >>> hours = np.array([40, 38, 45, 50] * 250)
    >>> abs(dp_sum(hours, epsilon=1.0, bounds=(0, 99), random_state=0) - 43250) < 500
    True
    """

    def finish(m, shape):
        return m * (shape[0] if axis is not None else shape[0] * shape[1])

    return _moment(
        "sum", a, axis, epsilon, bounds, budget, random_state,
        var=False, finish=finish,
    )  # fmt: skip


@validate_params(_BOUNDED, prefer_skip_nested_validation=True)
def var(
    a: ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    bounds: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> float | NDArray[np.float64]:
    """Differentially private variance (``ddof=0``), like :func:`numpy.var`.

    Parameters are those of :func:`mean`.

    Returns
    -------
    var : float or ndarray

    Notes
    -----
    epsilon-DP under replace-one neighbours. The population variance of
    ``n`` values in ``[L, U]`` moves by at most ``(n - 1) (U - L)**2 / n**2``
    when one is replaced (derived in ``skdp.tools._moments``; attained
    when all values sit at one bound), and receives Laplace noise of scale
    ``(n - 1) (U - L)**2 / (n**2 epsilon)`` (times the number of columns
    for ``axis=0``). The whole epsilon goes to this one quantity, which
    beats spending part on a noisy mean and part on a second moment. The
    result is clipped to ``[0, (U - L)**2 / 4]``, the variances possible in
    the bounds. For ``axis=None`` over ``p > 1`` columns the variance of
    all ``N = n p`` entries moves by at most ``(n - 1) w**2 / n**2`` too
    (``w`` the widest range, ``max(U) - min(L)``; ``w**2 / 4`` at most for
    one row): a replaced row changes ``p`` entries, and the scatter moves by
    at most ``p (N - p) w**2 / N``, attained when every entry sits at one
    bound and the row moves to the other (derived in
    ``skdp.tools._moments._pooled_var_sensitivity``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import var
    >>> x = np.array([0.0, 1.0] * 500)
    >>> round(var(x, epsilon=1.0, bounds=(0, 1), random_state=0), 2)
    0.25
    """
    return _moment(
        "var", a, axis, epsilon, bounds, budget, random_state,
        var=True, finish=lambda v, shape: v,
    )  # fmt: skip


@validate_params(_BOUNDED, prefer_skip_nested_validation=True)
def std(
    a: ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    bounds: ArrayLike | None = None,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> float | NDArray[np.float64]:
    """Differentially private standard deviation (``ddof=0``).

    Parameters are those of :func:`mean`.

    Returns
    -------
    std : float or ndarray

    Notes
    -----
    The square root of the private :func:`var` (post-processing: same
    guarantee, same cost).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import std
    >>> x = np.array([0.0, 1.0] * 500)
    >>> round(std(x, epsilon=1.0, bounds=(0, 1), random_state=0), 2)
    0.5
    """
    return _moment(
        "std", a, axis, epsilon, bounds, budget, random_state,
        var=True, finish=lambda v, shape: np.sqrt(v),
    )  # fmt: skip


def nonzero_counts(X, _):
    """Block function: the non-zero entries of each column (int64, exact)."""
    return np.count_nonzero(X, axis=0).astype(np.int64)


def _truth_tested(X, _):
    """Block function of the check: every entry can be tested for zero."""
    try:
        np.asarray(X).astype(bool)
    except (TypeError, ValueError) as error:
        raise ValueError(f"count cannot test the entries for zero: {error}") from None
    return np.int64(0)


@validate_params(_COMMON, prefer_skip_nested_validation=True)
def count(
    a: ArrayLike,
    axis: int | None = None,
    *,
    epsilon: float = 1.0,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> int | NDArray[np.int64]:
    """Differentially private number of non-zero entries, like
    :func:`numpy.count_nonzero`.

    Parameters
    ----------
    a : array-like
        The data; rows (first axis) are the individuals protected. Count
        how many satisfy a condition with ``count(x > 50)``.
    axis : {None, 0}, default=None
        ``None``: one count over all entries; ``0``: one per column.
    epsilon : float, default=1.0
        > 0.
    random_state : int, RandomState instance or None, default=None
        ``None`` (the OS CSPRNG) for a release; a seed for tests only.
    budget : PrivacyBudget or None, default=None
        Charged once before the data is read.

    Returns
    -------
    count : int or ndarray of int

    Notes
    -----
    epsilon-DP under replace-one neighbours: replacing a row changes each
    column's count by at most 1, so the L1 sensitivity is the number of
    columns ``p`` (for ``axis=None`` too). The noise is the two-sided
    geometric distribution (the discrete Laplace on the integers) of scale
    ``p / epsilon``, which is the optimal count mechanism for a wide class
    of losses (Ghosh, Roughgarden & Sundararajan 2009, Theorem 1.2); the
    result is clipped to ``[0, n]`` (``[0, n p]`` for ``axis=None``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import count
    >>> over_50 = np.array([True, False, False, True] * 250)
    >>> abs(count(over_50, epsilon=1.0, random_state=0) - 500) < 20
    True
    """
    # Metadata only (NaN counts as non-zero), and for entries that are not
    # numbers one pass that tests them for zero, before the charge.
    rows, shape, _ = tool_rows(a, axis, "count", finite=False)
    if rows.dtype.kind not in "biuf":
        rows.block_sum(_truth_tested)
    n, p = rows.n_samples, rows.n_features
    pooled = axis is None
    label = _label("count", epsilon)
    plan = plan_laplace(
        float(p), float(epsilon), 1 if pooled else p, label=label, integer=True,
        magnitude=float(n * p),
    )  # fmt: skip
    source = check_random_source(random_state)

    def run():
        per_column = rows.block_sum(nonzero_counts)  # one pass
        exact = per_column.sum() if pooled else per_column
        noisy = add_noise(plan, exact, source)
        top = n * p if pooled else n
        clipped = np.clip(noisy, 0, top).astype(np.int64)
        return int(clipped) if (pooled or not shape) else clipped.reshape(shape)

    return charge_and_run(budget, plan.event, run, "skdp.tools.count")
