"""Private histograms on public bins: noisy counts projected onto the simplex."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..base import charge_and_run
from ..mechanisms._additive import add_noise, plan_laplace
from ..utils._bounds import refuse_undeclared
from ..utils._constraints import EPSILON_CONSTRAINT
from ..utils._dask import is_dask_collection
from ..utils._feasibility import check_memory
from ..utils._privacy import warn_data_derived
from ..utils._random import check_random_source
from ..utils._sklearn_compat import (
    HasMethods,
    Integral,
    Interval,
    validate_params,
)
from ._validation import tool_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting._budget import PrivacyBudget
    from ..utils._random import RandomStateLike

__all__ = ["histogram", "histogramdd", "project_counts"]

_PARAMS = {
    "a": ["array-like"],
    "bins": [Interval(Integral, 1, None, closed="left"), "array-like"],
    "range": ["array-like", None],
    "epsilon": [EPSILON_CONSTRAINT],
    "density": ["boolean"],
    "random_state": ["random_state"],
    "budget": [HasMethods(["spend"]), None],
}


def project_counts(noisy, total: float) -> np.ndarray:
    """Euclidean projection of ``noisy`` onto ``{h >= 0, sum(h) = total}``.

    The true counts lie in that set, so the projection is never farther
    from them in L2 than ``noisy`` is (projections onto convex sets are
    non-expansive); it is post-processing of a private output. Sort-based
    algorithm of Duchi, Shalev-Shwartz, Singer & Chandra (2008), Figure 1.

    Examples
    --------
    >>> from skdp.tools._histograms import project_counts
    >>> project_counts([5.0, -1.0, 3.0], 6.0).tolist()
    [4.0, 0.0, 2.0]
    """
    v = np.asarray(noisy, dtype=float)
    flat = v.ravel()
    ordered = np.sort(flat)[::-1]
    excess = np.cumsum(ordered) - total
    index = np.arange(1, flat.size + 1)
    positive = ordered - excess / index > 0
    rho = int(index[positive][-1]) if positive.any() else flat.size
    tau = excess[rho - 1] / rho
    return np.maximum(v - tau, 0.0)


def _reads_range(bins, value_range) -> bool:
    """Whether one dimension's edges need its range read from the data."""
    return np.ndim(bins) == 0 and value_range is None


def _edges(bins, value_range, extremes, what, dimension=None) -> np.ndarray:
    """Public bin edges of one dimension; a range read from data warns.

    ``extremes`` is the dimension's ``(min, max)`` read by the validation
    pass when the range is read from the data (else unused).
    """
    where = "" if dimension is None else f" of dimension {dimension}"
    if np.ndim(bins) == 0:
        if isinstance(bins, bool) or not isinstance(bins, Integral | np.integer):
            raise ValueError(f"bins{where} must be an integer or an array of edges.")
        if int(bins) < 1:
            raise ValueError(f"bins{where} must be >= 1, got {bins!r}.")
        if value_range is None:
            warn_data_derived(
                "range",
                f"the smallest and largest value{where}",
                f"pass range=(low, high) or explicit bin edges to {what}",
            )
            low, high = (float(v) for v in extremes)
        else:
            try:
                low, high = (float(v) for v in value_range)
            except (TypeError, ValueError):
                raise ValueError(
                    f"range{where} must be a pair (low, high), got {value_range!r}."
                ) from None
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ValueError(f"range{where} must be finite with low <= high.")
        if low == high:  # numpy's convention
            low, high = low - 0.5, high + 0.5
        return np.linspace(low, high, int(bins) + 1)
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(f"bin edges{where} must be a 1-D array of at least 2 edges.")
    if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f"bin edges{where} must be finite and strictly increasing.")
    return edges


def exact_counts(X, _, edges):
    """Block function: counts of the rows (clipped into the bins) per cell."""
    X = np.asarray(X, dtype=np.float64)
    clipped = np.column_stack(
        [np.clip(X[:, j], e[0], e[-1]) for j, e in enumerate(edges)]
    )
    return np.histogramdd(clipped, bins=edges)[0]


def _rows(a, ndim, what, reads_range):
    """Validated rows of ``a`` (numpy or dask), before any charge.

    ``reads_range``: some dimension's range is read from the data (refused
    on dask; in memory, the validation pass reads the extremes).
    """
    if np.ndim(a) != ndim:
        _refuse_dimensions(what, np.shape(a))
    if reads_range and is_dask_collection(a):
        refuse_undeclared(f"skdp.tools.{what}", "ranges (range=...) or edges")
    rows, _, facts = tool_rows(a, None, what, extremes=reads_range)
    extremes = None
    if reads_range:
        extremes = list(zip(facts.low.tolist(), facts.high.tolist(), strict=True))
    return rows, extremes


def _refuse_dimensions(what, shape):
    if what == "histogram":
        raise ValueError(
            f"histogram takes 1-D data (one value per individual), got an array "
            f"of shape {shape}; use histogramdd for rows of several values."
        )
    raise ValueError(
        f"histogramdd takes an array of shape (n_samples, n_dimensions), got "
        f"shape {shape}."
    )


def _release(rows, edges, epsilon, density, budget, random_state, name):
    """Plan, charge and release a histogram of the rows (n, D)."""
    n_bins = [e.size - 1 for e in edges]
    size = math.prod(n_bins)
    check_memory(24.0 * size, f"A histogram of {size} bins", "use fewer bins")
    n = rows.n_samples
    label = f"skdp.tools.{name}(epsilon={float(epsilon)!r})"
    # Replacing a row moves one count down and one up: L1 sensitivity 2.
    plan = plan_laplace(
        2.0, float(epsilon), size, label=label, integer=True, magnitude=float(n)
    )
    source = check_random_source(random_state)

    def run():
        exact = rows.block_sum(exact_counts, edges)  # one pass of block counts
        noisy = add_noise(plan, exact, source)
        hist = project_counts(noisy, float(n))
        if density:
            widths = np.ones(hist.shape)
            for j, e in enumerate(edges):
                shape = [1] * len(edges)
                shape[j] = -1
                widths = widths * np.diff(e).reshape(shape)
            hist = hist / n / widths
        return hist

    hist = charge_and_run(budget, plan.event, run, f"skdp.tools.{name}")
    return hist


@validate_params(_PARAMS, prefer_skip_nested_validation=True)
def histogram(
    a: ArrayLike,
    bins: int | ArrayLike = 10,
    range: ArrayLike | None = None,  # noqa: A002 - numpy's name
    *,
    epsilon: float = 1.0,
    density: bool = False,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Differentially private histogram of 1-D data, like :func:`numpy.histogram`.

    Parameters
    ----------
    a : array-like of shape (n_samples,)
        The data; each entry is one individual.
    bins : int or array-like, default=10
        Number of equal-width bins on ``range``, or the increasing bin
        edges. Both are public: they must not be chosen by looking at the
        data (numpy's ``'auto'`` and the like are refused for that reason).
    range : (low, high) or None, default=None
        Public range of the equal-width bins. ``None`` with an integer
        ``bins`` reads the minimum and maximum from the data and emits a
        :class:`~skdp.exceptions.PrivacyLeakWarning`: bin edges taken from
        the data reveal its extremes. Ignored when ``bins`` holds edges.
    epsilon : float, default=1.0
        > 0.
    density : bool, default=False
        Return the density (counts divided by ``n`` and the bin widths).
    random_state : int, RandomState instance or None, default=None
        ``None`` (the OS CSPRNG) for a release; a seed for tests only.
    budget : PrivacyBudget or None, default=None
        Charged once, before the data is read.

    Returns
    -------
    hist : ndarray of float, shape (n_bins,)
        Noisy counts, nonnegative and summing to ``n`` (or a density).
    bin_edges : ndarray of shape (n_bins + 1,)

    Notes
    -----
    epsilon-DP under replace-one neighbours. Values outside the bins are
    clipped into the first or last bin (unlike numpy, which drops them), so
    every row lands in exactly one bin and the counts sum to the public
    ``n``. Replacing a row moves one unit between two bins: the L1
    sensitivity is 2, and each count receives two-sided geometric noise of
    scale ``2 / epsilon`` (the discrete Laplace on the integers; Ghosh,
    Roughgarden & Sundararajan 2009). The noisy counts are projected onto
    ``{h >= 0, sum(h) = n}`` (Duchi et al. 2008), which never increases the
    L2 error.

    diffprivlib's :func:`diffprivlib.tools.histogram` uses sensitivity 1,
    which is epsilon-DP for add/remove-one neighbours but only
    ``2 epsilon``-DP for replace-one; at the same replace-one guarantee the
    two add the same noise.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import histogram
    >>> ages = np.array([23, 35, 47, 51, 62] * 200)
    >>> hist, edges = histogram(ages, bins=4, range=(17, 97), epsilon=1.0,
    ...                         random_state=0)
    >>> edges.tolist()
    [17.0, 37.0, 57.0, 77.0, 97.0]
    >>> bool(abs(hist.sum() - 1000) < 1e-6)
    True
    """
    rows, extremes = _rows(a, 1, "histogram", _reads_range(bins, range))
    edges = _edges(bins, range, extremes and extremes[0], "histogram")
    hist = _release(rows, [edges], epsilon, density, budget, random_state, "histogram")
    return hist, edges


@validate_params(
    {**{k: v for k, v in _PARAMS.items() if k != "a"}, "sample": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def histogramdd(
    sample: ArrayLike,
    bins: int | ArrayLike = 10,
    range: ArrayLike | None = None,  # noqa: A002 - numpy's name
    *,
    epsilon: float = 1.0,
    density: bool = False,
    random_state: RandomStateLike = None,
    budget: PrivacyBudget | None = None,
) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
    """Differentially private multidimensional histogram, like
    :func:`numpy.histogramdd`.

    Parameters
    ----------
    sample : array-like of shape (n_samples, n_dimensions)
        One row per individual.
    bins : int, array-like of edges, or a sequence of those per dimension, default=10
        Public bins (see :func:`histogram`).
    range : sequence of (low, high) or None, default=None
        Public range of each dimension whose bins are a number. Omitting it
        reads the range from the data with a
        :class:`~skdp.exceptions.PrivacyLeakWarning`.
    epsilon : float, default=1.0
        > 0.
    density : bool, default=False
        Return the density instead of counts.
    random_state : int, RandomState instance or None, default=None
        ``None`` (the OS CSPRNG) for a release; a seed for tests only.
    budget : PrivacyBudget or None, default=None
        Charged once, before the data is read.

    Returns
    -------
    hist : ndarray of float
        Noisy counts, nonnegative and summing to ``n``.
    edges : list of ndarray
        The bin edges of each dimension.

    Notes
    -----
    As :func:`histogram`: each row lies in exactly one cell (values are
    clipped to the bins), so the L1 sensitivity is 2 under replace-one
    neighbours whatever the dimension; geometric noise of scale
    ``2 / epsilon`` per cell, then the projection onto
    ``{h >= 0, sum(h) = n}``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.tools import histogramdd
    >>> rows = np.array([[25, 40], [45, 50], [65, 20]] * 100)
    >>> hist, edges = histogramdd(rows, bins=(2, 2), range=[(0, 100), (0, 100)],
    ...                           epsilon=1.0, random_state=0)
    >>> hist.shape
    (2, 2)
    """
    if np.ndim(sample) != 2:
        _refuse_dimensions("histogramdd", np.shape(sample))
    d = int(np.shape(sample)[1])
    if isinstance(bins, Integral | np.integer):
        per_dim_bins = [bins] * d
    else:
        per_dim_bins = list(bins)
        if len(per_dim_bins) != d or not (
            all(np.ndim(b) == 0 for b in per_dim_bins)
            or all(np.ndim(b) <= 1 for b in per_dim_bins)
        ):
            raise ValueError(
                f"bins must be an integer or give one entry (a number of bins or "
                f"an array of edges) per dimension ({d})."
            )
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"range must give one (low, high) per dimension ({d}).")
    reads = [_reads_range(b, r) for b, r in zip(per_dim_bins, ranges, strict=True)]
    rows, extremes = _rows(sample, 2, "histogramdd", any(reads))
    edges = [
        _edges(
            per_dim_bins[j], ranges[j], extremes and extremes[j], "histogramdd",
            dimension=j,
        )
        for j in np.arange(d)
    ]  # fmt: skip
    hist = _release(rows, edges, epsilon, density, budget, random_state, "histogramdd")
    return hist, edges
