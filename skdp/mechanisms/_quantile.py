"""Private quantiles: the exponential mechanism over data intervals, recursively.

One quantile is Smith's (2011) exponential mechanism over the intervals
between the sorted, clipped data points, sampled exactly; several quantiles
are found by the recursive ApproximateQuantiles algorithm of Kaplan, Schnapp
& Stemmer (2022), which splits the data at the middle quantile and recurses
on each side. Like the additive mechanisms, the mechanism comes as a plan
(:func:`plan_quantiles`, public inputs only, may raise) and its run
(:func:`run_quantiles`, after the charge, never raises), plus a one-call
:func:`quantile_mechanism`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..accounting._events import (
    ExponentialMechanismEvent,
    PrivacyEvent,
    SelfComposedEvent,
)
from ..utils._random import RandomSource, check_random_source
from ._additive import _check_positive
from ._bernoulli import sample_exp_weights

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..utils._random import RandomStateLike

__all__ = [
    "QuantilePlan",
    "plan_quantiles",
    "quantile_mechanism",
    "refuse_dask_quantiles",
    "run_quantiles",
]

#: The rank utility ``-|rank - target|`` is quantised to at least this many
#: steps per rank (more for epsilon above 1, see :func:`_steps`).
UTILITY_BITS = 20

#: A bound, in nats, on the floating-point error of a computed log-length
#: ``log(width) - log(length)``: both logarithms are below 745 in
#: magnitude, where one ulp is ``2**-43``, so two correctly rounded or
#: faithful logarithms and their difference err by at most ``3 * 2**-43``,
#: and the rounding of a length (relative ``2**-53``) adds ``2**-53``.
#: Paid for in the calibration.
LOG_LENGTH_ERROR = 2.0**-40


@dataclass(frozen=True)
class QuantilePlan:
    """Everything the quantile mechanism will do, decided before the charge.

    Attributes
    ----------
    bounds : tuple of float
        The public ``(lower, upper)`` range; data are clipped to it.
    quantiles : tuple of float
        The quantiles to release, sorted and without repeats; the run
        returns one value per entry, in this (increasing) order.
    epsilon : float
        Total privacy parameter, spent as ``event``.
    n_samples : int
        The public number of values the run receives.
    independent : bool
        True when the quantiles are drawn independently from all the data
        (one selection each) and sorted, rather than by the recursion: by
        default the recursion is used only when it needs at most a quarter
        as many selections (see :func:`quantile_mechanism`). A function of
        ``len(quantiles)`` and ``method`` only.
    levels : tuple of tuple of tuple of int
        The recursion tree, a function of ``len(quantiles)`` only: for each
        level, the ``(start, split, stop)`` index ranges of its nodes; a node
        releases quantile ``split`` from the data between the values
        released for ``start - 1`` and ``stop``. Empty when ``independent``.
    selections : int
        Exponential-mechanism selections charged: ``len(quantiles)`` when
        ``independent``, else the sum over levels of ``min(2, nodes in the
        level)`` (see :func:`quantile_mechanism`).
    epsilon_per_selection : float
        ``epsilon / selections``, what each selection is charged.
    utility_steps : int
        ``S``: the rank utility is quantised to ``1 / S``.
    steps_per_nat : int
        The integer ``D`` of the exact sampler: an interval is drawn with
        probability proportional to ``exp(-N / D)`` for integer ``N``.
    event : PrivacyEvent
        What the run spends: one :class:`~skdp.accounting.ExponentialMechanismEvent`, or
        ``selections`` of them as a :class:`~skdp.accounting.SelfComposedEvent`.
    """

    bounds: tuple[float, float]
    quantiles: tuple[float, ...]
    epsilon: float
    n_samples: int
    independent: bool
    levels: tuple[tuple[tuple[int, int, int], ...], ...]
    selections: int
    epsilon_per_selection: float
    utility_steps: int
    steps_per_nat: int
    event: PrivacyEvent


def refuse_dask_quantiles(what: str, alternative: str) -> None:
    """Refuse dask input to a release of these quantiles, saying why.

    The mechanism draws among the intervals between the sorted values,
    ranked by how many values lie below each: it needs every value in one
    place, sorted, which no sum over row blocks gives, and gathering the
    rows would move the data to the client. A quantile read from a private
    histogram on a public grid (a sum over row blocks) is another mechanism,
    with another event and accuracy (the bin width), so it is not
    substituted silently.
    """
    raise TypeError(
        f"{what} does not take dask collections: the exponential mechanism it "
        "uses chooses among the gaps between the sorted values, which a sum "
        "over row blocks does not give (and gathering the rows would move the "
        f"data to the client). {alternative} Nothing was charged."
    )


def _tree(m: int):
    """Levels of the ApproximateQuantiles recursion over ``m`` sorted quantiles.

    Each node ``(start, split, stop)`` covers quantiles ``start .. stop - 1``
    and releases the middle one, ``split = (start + stop - 1) // 2``; its
    children cover ``start .. split - 1`` and ``split + 1 .. stop - 1``.
    """
    levels = []
    nodes = [(0, m)] if m else []
    while nodes:
        level, children = [], []
        for start, stop in nodes:
            split = (start + stop - 1) // 2
            level.append((start, split, stop))
            children += [
                (a, b) for a, b in ((start, split), (split + 1, stop)) if b > a
            ]
        levels.append(tuple(level))
        nodes = children
    return tuple(levels)


def _steps(epsilon: float) -> tuple[int, int]:
    """``(S, D)`` of the exact sampler for one ``epsilon`` selection.

    A rank of utility is ``S = 2**max(20, 20 + e)`` integer steps
    (``2**(e - 1) <= epsilon < 2**e``), each worth ``1 / D`` nats, so the
    selection runs the exponential mechanism at ``epsilon' = 2 S / D``, and
    the length weights are rounded to ``1 / D`` nats, ``D`` about
    ``2**21 / min(epsilon, 1)``. ``D`` is chosen so that ``epsilon'`` plus
    the slack of the length weights (``2 / D`` for their rounding and
    ``4 LOG_LENGTH_ERROR`` for floating point, see
    :func:`quantile_mechanism`) is at most ``epsilon``.
    """
    target = epsilon * (1 - 2.0**-18) - 2.0**-37
    if not target > 0:
        raise ValueError(
            f"epsilon per selection must exceed about 1e-11, got {epsilon!r}."
        )
    utility_steps = 1 << max(UTILITY_BITS, UTILITY_BITS + math.frexp(epsilon)[1])
    steps = math.ceil(Fraction(2 * utility_steps) / Fraction(target))
    spent = 2 * utility_steps / steps + 2 / steps + 4 * LOG_LENGTH_ERROR
    if spent > epsilon:  # pragma: no cover - guaranteed by the choice above
        raise ArithmeticError("quantile calibration exceeds its epsilon.")
    return utility_steps, steps


def _check_bounds(bounds) -> tuple[float, float]:
    try:
        lower, upper = (float(b) for b in np.asarray(bounds, dtype=float).ravel())
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must be a pair (lower, upper) of numbers, got {bounds!r}."
        ) from None
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"bounds must be finite with lower < upper, got {bounds!r}.")
    if not math.isfinite(upper - lower):
        raise ValueError(f"bounds are too far apart for float64: {bounds!r}.")
    return lower, upper


def _check_quantiles(quantiles) -> tuple[float, ...]:
    try:
        q = np.asarray(quantiles, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"quantiles must be numbers, got {quantiles!r}.") from None
    if q.size == 0:
        raise ValueError("quantiles must hold at least one value.")
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError(f"quantiles must lie in [0, 1], got {quantiles!r}.")
    return tuple(float(v) for v in np.unique(q))


def plan_quantiles(
    bounds: tuple[float, float],
    quantiles: float | ArrayLike,
    epsilon: float,
    n_samples: int,
    *,
    label: str = "",
    method: Literal["auto", "recursive", "independent"] = "auto",
) -> QuantilePlan:
    """Plan the private release of ``quantiles`` of a column, before the charge.

    Parameters
    ----------
    bounds : (float, float)
        Public range ``(lower, upper)``, ``lower < upper``, finite.
    quantiles : float or array-like of float
        Quantiles in ``[0, 1]``; they are sorted and repeats dropped.
    epsilon : float
        Total privacy parameter, > 0.
    n_samples : int
        Number of values (public under replace-one), >= 0.
    label : str, default=""
        Label of the event.
    method : {"auto", "recursive", "independent"}, default="auto"
        ``"auto"`` recurses only when that needs at most a quarter of the
        selections of independent draws (44 quantiles or more), see
        :func:`quantile_mechanism`; the others force one way.

    Returns
    -------
    plan : QuantilePlan

    Raises
    ------
    ValueError, TypeError
        On invalid public inputs; nothing is drawn or charged.

    Examples
    --------
    >>> from skdp.mechanisms import plan_quantiles
    >>> plan = plan_quantiles((0, 100), [0.25, 0.5, 0.75], 1.0, 1000)
    >>> plan.quantiles, plan.selections
    ((0.25, 0.5, 0.75), 3)
    """
    lower, upper = _check_bounds(bounds)
    q = _check_quantiles(quantiles)
    epsilon = _check_positive("epsilon", epsilon)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer):
        raise TypeError(f"n_samples must be an integer, got {n_samples!r}.")
    if n_samples < 0:
        raise ValueError(f"n_samples must be >= 0, got {n_samples!r}.")
    levels = _tree(len(q))
    selections = sum(min(2, len(level)) for level in levels)
    if method not in ("auto", "recursive", "independent"):
        raise ValueError(
            f"method must be 'auto', 'recursive' or 'independent', got {method!r}."
        )
    independent = method == "independent" or (
        method == "auto" and 4 * selections > len(q)
    )
    if independent:
        levels, selections = (), len(q)
    per_selection = epsilon / selections
    utility_steps, steps = _steps(per_selection)
    one = ExponentialMechanismEvent(per_selection, label=label)
    event = one if selections == 1 else SelfComposedEvent(one, selections, label=label)
    return QuantilePlan(
        bounds=(lower, upper),
        quantiles=q,
        epsilon=epsilon,
        n_samples=int(n_samples),
        independent=independent,
        levels=levels,
        selections=selections,
        epsilon_per_selection=per_selection,
        utility_steps=utility_steps,
        steps_per_nat=steps,
        event=event,
    )


def _interval_exponents(points, lower, upper, target, utility_steps, steps_per_nat):
    """Integer exponents of the intervals between sorted ``points`` in [lower, upper].

    Returns ``(starts, lengths, exponents)`` for the intervals of positive
    length: interval ``i`` (with ``i`` points below it) has weight
    ``exp(-exponents[i] / steps_per_nat)``, proportional within rounding to
    ``length_i * exp(-epsilon' |i - target| / 2)``.
    """
    edges = np.concatenate(([lower], points, [upper]))
    lengths = np.diff(edges)
    ranks = np.flatnonzero(lengths > 0)
    lengths = lengths[ranks]
    # Utility steps: ceil(S |i - target|), exactly, for the rational target
    # (minus the floor of the utility -S |i - target|).
    scaled = Fraction(target) * utility_steps
    below, above = math.floor(scaled), math.ceil(scaled)
    small = ranks.size == 0 or int(ranks[-1]) * utility_steps < 1 << 61
    steps = (ranks if small else ranks.astype(object)) * utility_steps
    # i >= target exactly when i S >= ceil(target S), i S being an integer.
    utility = np.where(steps >= above, steps - below, above - steps)
    # Length steps: floor(D (log(width) - log(length))) >= 0.
    log_gap = np.maximum(math.log(upper - lower) - np.log(lengths), 0.0)
    length = np.floor(steps_per_nat * log_gap)
    if small and length.max() < 2.0**61 and max(below, above) < 1 << 61:
        total = utility.astype(np.int64) + length.astype(np.int64)
    else:
        total = np.array(
            [int(u) + int(v) for u, v in zip(utility, length)], dtype=object
        )
    return edges[ranks], lengths, total - total.min()


def _select(points, lower, upper, target, plan, source):
    """One exponential-mechanism quantile of sorted ``points`` in [lower, upper]."""
    if not upper > lower:
        return lower
    starts, lengths, exponents = _interval_exponents(
        points, lower, upper, target, plan.utility_steps, plan.steps_per_nat
    )
    index = sample_exp_weights(exponents, plan.steps_per_nat, source)
    value = starts[index] + source.uniform(1)[0] * lengths[index]
    return float(min(max(value, starts[index]), starts[index] + lengths[index]))


def run_quantiles(
    plan: QuantilePlan, values: ArrayLike, source: RandomSource
) -> np.ndarray:
    """Release ``plan.quantiles`` of ``values``, after ``plan.event`` is charged.

    Parameters
    ----------
    plan : QuantilePlan
    values : array-like of shape (plan.n_samples,)
        The column; validated by the caller (finite numbers). Values are
        clipped to ``plan.bounds`` (NaN is treated as the lower bound).
    source : RandomSource
        The noise source.

    Returns
    -------
    quantiles : ndarray of shape (len(plan.quantiles),)
        Non-decreasing, in ``plan.bounds``.
    """
    lower, upper = plan.bounds
    data = np.asarray(values, dtype=float).ravel()
    data = np.sort(np.clip(np.nan_to_num(data, nan=lower), lower, upper))
    source = source.substream()
    n = plan.n_samples
    quantiles = [Fraction(q) for q in plan.quantiles]
    m = len(quantiles)
    if plan.independent:
        # Each quantile from all the data; sorting is post-processing.
        found = [_select(data, lower, upper, q * n, plan, source) for q in quantiles]
        return np.sort(np.array(found, dtype=float))
    out = np.empty(m)
    for level in plan.levels:
        for start, split, stop in level:
            low = out[start - 1] if start > 0 else lower
            high = out[stop] if stop < m else upper
            left = np.searchsorted(data, low, side="left") if start > 0 else 0
            right = np.searchsorted(data, high, side="left") if stop < m else data.size
            target = _target(quantiles, start, split, stop, n, int(right - left))
            out[split] = _select(data[left:right], low, high, target, plan, source)
    return out


def _target(quantiles, start, split, stop, n, size):
    """Target rank, within its slice of ``size`` values, of node ``split``.

    With ``q_p`` and ``q_r`` the quantiles released at the node's ends
    (``0`` and ``1`` at the bounds) and ``q = quantiles[split]``:

    * a node at the lower bound (``start == 0``) counts from the bound,
      below which there is no value: ``q n``, exact whatever was released
      above it;
    * a node at the upper bound (``stop == m``) counts down from it, its
      slice holding every value at or above its lower end:
      ``size - (1 - q) n``;
    * an interior node uses Kaplan, Schnapp & Stemmer's relative target
      ``(q - q_p) / (q_r - q_p) * size``.

    Each is ``a + b * size`` with public ``a`` and ``b`` in ``[0, 1]``; see
    :func:`quantile_mechanism` for why that keeps the sensitivity at 1.
    The result is an exact rational.
    """
    m = len(quantiles)
    q = quantiles[split]
    if start == 0:
        return q * n
    if stop == m:
        return size - (1 - q) * n
    low, high = quantiles[start - 1], quantiles[stop]
    return (q - low) / (high - low) * size


def quantile_mechanism(
    values: ArrayLike,
    quantiles: float | ArrayLike,
    bounds: tuple[float, float],
    epsilon: float,
    *,
    random_state: RandomStateLike = None,
    label: str = "",
) -> NDArray[np.float64]:
    """Private quantiles of a column, epsilon-DP under replace-one.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Finite numbers; clipped to ``bounds``.
    quantiles : float or array-like of float
        In ``[0, 1]``; the result follows their sorted order, repeats dropped.
    bounds : (float, float)
        Public ``(lower, upper)``, finite, ``lower < upper``; never read
        from the data.
    epsilon : float
        > 0.
    random_state : None, int or Generator, default=None
        ``None`` draws from the OS CSPRNG (the only choice for a release); a
        seed gives reproducible, predictable draws for tests.
    label : str, default=""
        Label of the event.

    Returns
    -------
    quantiles : ndarray of shape (n_quantiles,)
        Non-decreasing values in ``bounds``.
    event : PrivacyEvent
        What was spent; the caller charges it before releasing the values.

    Notes
    -----
    **One quantile** (Smith 2011, Section 3; the "exponential mechanism"
    quantile of Gillenwater, Joseph & Kulesza 2021, Section 2). Clip the
    ``n`` values to ``[a, b]`` and sort them, ``a = x_0 <= x_1 <= ... <=
    x_n <= x_{n+1} = b``. Every ``y`` in the open interval ``(x_i,
    x_{i+1})`` has ``i`` values below it; the utility of ``y`` for quantile
    ``q`` is ``u(y) = -|i - q n|``. Replacing one row changes the number of
    values below any fixed ``y`` by at most 1 (the removed value and the
    added one can each move it by one, in opposite directions), and ``n``
    is public, so ``u`` has sensitivity 1 under replace-one. The output has
    density proportional to ``exp(epsilon u(y) / 2)`` on ``[a, b]``
    (McSherry & Talwar 2007, Theorem 6, with Lebesgue base measure), which
    is epsilon-DP: drawing interval ``i`` with probability proportional to
    ``(x_{i+1} - x_i) exp(epsilon u_i / 2)`` and then a uniform point in it
    is that density.

    **Exact sampling.** An interval is drawn with probability exactly
    proportional to ``exp(-N_i / D)`` for integers ``N_i``, ``D``
    (``sample_exp_weights``: uniform proposals
    accepted with exact Bernoulli(``exp(-gamma)``) draws). With
    ``S = 2**max(20, 20 + e)`` (``2**(e - 1) <= epsilon < 2**e``) and
    ``D = ceil(2 S / epsilon_r)``,
    ``N_i = ceil(S |i - q n|) + floor(D log(W / len_i))`` (up to a common
    shift), ``W = b - a``. The first term is the utility on a grid of
    ``1 / S`` rank, computed exactly, with sensitivity ``S`` steps, i.e. the
    exponential mechanism at ``epsilon' = 2 S / D <= epsilon_r``. The
    second is the log-length in units of ``1 / D`` nat: rounding and
    floating point make each interval's weight differ from the exact one by
    a factor ``exp(xi)`` with ``xi`` in an interval of width at most
    ``1 / D + 2 e_f`` (``e_f = 2**-40`` bounds the float error), which adds
    at most ``2 / D + 4 e_f`` to the privacy loss (once in the density,
    once in its normaliser). ``epsilon_r = epsilon (1 - 2**-18) - 2**-37``
    leaves room for it (``D`` is about ``2**21 / min(epsilon, 1)``, so
    ``2 / D <= epsilon 2**-20``): each selection is at most epsilon-DP, the value
    charged. Intervals of length 0 (ties) have weight 0 and are skipped.
    The point within the interval is a floating-point uniform draw.

    **Several quantiles** (Kaplan, Schnapp & Stemmer 2022, Algorithm 1,
    ApproximateQuantiles). Sort the ``m`` requested quantiles; release the
    middle one, ``v``, from all the data; then recurse on the values below
    ``v`` (domain ``[a, v]``) for the lower quantiles and on those at or
    above ``v`` (domain ``[v, b]``) for the upper ones, down a tree of
    ``ceil(log2(m + 1))`` levels. Outputs are non-decreasing by
    construction. A node sees the ``s`` values of its slice and aims at a
    target rank ``t(s)`` within it (``_target``): ``q n`` for a node
    at the lower bound (no value lies below its slice), ``s - (1 - q) n``
    for a node at the upper bound (every value above its lower end is in
    its slice), and KSS's relative target
    ``(q - q_p) / (q_r - q_p) * s`` between the released quantiles ``q_p``
    and ``q_r`` otherwise. The first two are exact whatever the parents
    released; targets fixed in advance are not on tied data (a parent
    released just above a large atom, e.g. a column that is 90% zeros,
    leaves a child a target its slice cannot reach, and it drifts to the
    bound).

    *Sensitivity.* Every target is ``t(s) = alpha + beta s`` with public
    ``alpha`` and ``beta`` in ``[0, 1]`` (``0``, ``1`` and
    ``(q - q_p) / (q_r - q_p)`` above). The node's utility at ``y`` is
    ``-|i(y) - t(s)|``, ``i(y)`` the number of slice values below ``y``.
    Adding one value to the slice raises ``i(y)`` by ``delta`` in
    ``{0, 1}`` and ``t`` by exactly ``beta``, so the utility moves by at
    most ``|delta - beta| <= max(beta, 1 - beta) <= 1``; removing one is
    the same backwards; replacing a value by another within the slice
    leaves ``s`` and ``t`` alone and moves ``i(y)`` by at most 1. So a
    node's utility has sensitivity 1 for one value entering, leaving or
    changing within its slice, and no epsilon scaling is needed. The
    targets are exact rationals, and the quantised utility
    ``ceil(S |i - t|)`` then moves by at most ``S`` steps, as for one
    quantile.

    *Composition.* The nodes of one level see disjoint slices. Replacing
    one row removes a value from one slice and adds one to another (or
    changes one slice), so a level with one node costs one selection's
    epsilon and a level with two or more nodes at most two (parallel
    composition, Dwork & Roth 2014, Section 2.3, applied to the removal and
    to the addition); levels compose adaptively. KSS state the add/remove
    bound of one selection per level; under skdp's replace-one relation
    the factor 2 is the price of the swap. The recursion therefore costs
    ``sum_levels min(2, nodes)`` selections: 7 for the deciles, 9 for 19
    quantiles, 13 for the percentiles.

    *Policy.* Independent draws from all the data at ``epsilon / m`` each,
    sorted (post-processing; sorting never increases their error,
    Chernozhukov, Fernandez-Val & Galichon 2009, Proposition 1), cost
    ``m`` selections and carry no error from one quantile to the next.
    The recursion's interior targets still assume the parents' outputs sit
    near their target ranks; on tied data a parent released at the far end
    of a large atom shifts its interior descendants by up to the atom's
    share of the data beyond it, whatever epsilon (a column with 45% of its
    values at 40: 19 recursive quantiles err by up to 5% of the rows at
    large epsilon, sorted independent draws by none). So by default the
    plan recurses only when that needs at most a quarter of the selections
    (``4 * selections <= m``: from 44 quantiles on, e.g. the percentiles,
    13 selections against 99), where independent draws would each get too
    little epsilon, and draws independently otherwise (1 to 43 quantiles:
    quartiles, deciles, 19 quantiles). The choice depends on ``m`` alone
    (``method`` of :func:`plan_quantiles` forces one way). On Adult's
    numeric columns (``benchmarks/quantiles.py``) the two are within noise
    of each other for the deciles, where the recursion saves only 2 of 9
    selections; for 19 quantiles the recursion has the smaller mean rank
    error at epsilon 0.1 (0.0044 against 0.0068) and the larger at
    epsilon 1 (0.0018 against 0.0005), where the tie shifts dominate.

    Every selection is charged ``epsilon / selections``; the event is
    that many exponential mechanism selections composed (a
    :class:`~skdp.accounting.SelfComposedEvent`), which an accountant may also bound by
    their bounded-range property.

    The running time and the number of random words used depend on the
    data (the sampler's rejections); timing is a side channel this
    implementation does not close.

    References
    ----------
    A. Smith, "Privacy-preserving statistical estimation with optimal
    convergence rates", STOC 2011.
    H. Kaplan, S. Schnapp and U. Stemmer, "Differentially Private
    Approximate Quantiles", ICML 2022, Algorithm 1.
    F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy",
    FOCS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import quantile_mechanism
    >>> values = np.arange(1000) / 10
    >>> q, event = quantile_mechanism(values, [0.25, 0.5, 0.75], (0, 100), 1.0,
    ...                               random_state=0)
    >>> bool(np.all(np.abs(q - [25, 50, 75]) < 5))
    True
    >>> event.count
    3
    """
    data = np.asarray(values, dtype=float)
    if data.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {data.shape}.")
    if not np.all(np.isfinite(data)):
        raise ValueError("values must be finite (no NaN or infinity).")
    plan = plan_quantiles(bounds, quantiles, epsilon, data.size, label=label)
    source = check_random_source(random_state)
    return run_quantiles(plan, data, source), plan.event
