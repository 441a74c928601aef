"""Noisy means and variances under public bounds: a plan and its application.

The private :func:`~skdp.tools.mean`, :func:`~skdp.tools.var`,
:func:`~skdp.tools.std` and :func:`~skdp.tools.sum` and the private standard
scaler (:class:`~skdp.preprocessing.DPStandardScaler`) all run through the
two halves here, so the sensitivities are derived in one place:

* :func:`plan_moments` (before the charge) turns public quantities -- the
  bounds, ``n_samples``, epsilon -- into the event and the noise settings;
* :func:`noisy_moments` (after it) computes the exact statistics of the
  data clipped to the bounds in one pass of row-block sums
  (:func:`exact_moments`, the same for a NumPy array and a dask
  collection) and adds exactly the planned noise. It does not raise.

Sensitivities, under replace-one neighbours (``n`` public), for a column
bounded in ``[L, U]`` of width ``w = U - L``:

* mean: ``w / n``;
* variance (population, ``ddof=0``): ``(n - 1) w**2 / n**2``, also for
  the variance pooled over all the entries of ``p`` columns of width up
  to ``w`` (``_pooled_var_sensitivity``). Write
  ``S = sum_i (x_i - mean)**2``. Splitting off row ``n``,
  ``S = S' + (n - 1) / n (x_n - m')**2`` with ``S'`` and ``m'`` the scatter
  and mean of the other ``n - 1`` rows, which a replacement of row ``n``
  leaves unchanged; the last term lies in ``[0, (n - 1) w**2 / n]``, so
  ``S`` moves by at most ``(n - 1) w**2 / n`` and the variance by that over
  ``n``. The bound is attained (all rows at ``L``, one moved to ``U``).

This direct bound beats estimating the variance from a noisy mean and a
noisy second moment: the second moment about the midpoint has sensitivity
``w**2 / (4 n)``, but the noisy mean's error enters through
``2 |mean - midpoint|``, and in the worst case the split costs a factor
``(1/2 + 1)**2 = 2.25`` against the direct bound's 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accounting._events import ComposedEvent, PrivacyEvent
from ..mechanisms._additive import NoisePlan, add_noise, plan_laplace
from ..utils._feasibility import check_magnitudes
from ..utils._random import RandomSource
from ..utils._row_source import RowSource, row_source

__all__ = [
    "MomentsPlan",
    "VectorLaplacePlan",
    "apply_vector_laplace",
    "exact_moments",
    "moment_sums",
    "noisy_moments",
    "plan_moments",
    "plan_vector_laplace",
    "release_moments",
]


@dataclass(frozen=True)
class VectorLaplacePlan:
    """Laplace noise on a vector whose coordinates have their own sensitivities.

    Coordinate ``j`` moves by at most ``sensitivities[j]`` between
    neighbouring datasets (all coordinates may move at once). The vector is
    divided by its sensitivities, so that each coordinate moves by at most 1
    and the whole by at most ``m`` in L1 (``m`` the number of coordinates
    with a positive sensitivity), and the Laplace mechanism of L1
    sensitivity ``m`` is applied: each such coordinate gets noise of scale
    ``m sensitivities[j] / epsilon``, epsilon-DP in all. A coordinate of
    sensitivity 0 is a public constant and is released exactly.

    Attributes
    ----------
    sensitivities : ndarray of shape (d,)
    noise : NoisePlan or None
        The plan of the normalised vector; None when no coordinate has a
        positive sensitivity.
    event : PrivacyEvent
        The noise's :class:`~skdp.accounting.DiscreteLaplaceEvent` (an
        empty composition when nothing is noised).
    """

    sensitivities: np.ndarray
    noise: NoisePlan | None
    event: PrivacyEvent

    def noise_std(self) -> np.ndarray:
        """Standard deviation of each coordinate's noise (public).

        ``sqrt(2)`` times the Laplace scale ``m sensitivities[j] / epsilon``
        (with the grid's rounding slack); 0 for an exact coordinate.
        """
        if self.noise is None:
            return np.zeros_like(self.sensitivities)
        step = self.noise.scale * self.noise.gamma  # Laplace scale, unit coords
        return np.sqrt(2.0) * step * self.sensitivities


def plan_vector_laplace(
    sensitivities, epsilon: float, *, magnitude: float, label: str = ""
) -> VectorLaplacePlan:
    """Plan :class:`VectorLaplacePlan` noise; may raise, charges nothing.

    ``magnitude`` bounds ``|value_j - centre_j| / sensitivities[j]`` (the
    normalised distance from the public centre that
    :func:`apply_vector_laplace` receives), so the grid carries it exactly.
    """
    sensitivities = np.asarray(sensitivities, dtype=float).ravel()
    active = int(np.count_nonzero(sensitivities > 0))
    noise = None
    if active:
        noise = plan_laplace(
            float(active), epsilon, active, magnitude=magnitude, label=label
        )
    # Nothing that depends on the data is released without noise: with no
    # active coordinate the release is the public centre and costs nothing.
    event = noise.event if noise is not None else ComposedEvent((), label=label)
    return VectorLaplacePlan(sensitivities, noise, event)


def apply_vector_laplace(
    plan: VectorLaplacePlan, values, centres, source: RandomSource
) -> np.ndarray:
    """``values`` plus the planned noise; ``centres`` are public. Does not raise."""
    values = np.asarray(values, dtype=float).ravel()
    out = values.copy()
    active = plan.sensitivities > 0
    if plan.noise is not None:
        scale = plan.sensitivities[active]
        centre = np.asarray(centres, dtype=float).ravel()[active]
        normalised = (values[active] - centre) / scale
        out[active] = add_noise(plan.noise, normalised, source) * scale + centre
    return out


@dataclass(frozen=True)
class MomentsPlan:
    """Everything :func:`noisy_moments` will do, decided from public facts.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_columns,)
        The public bounds the data is clipped to.
    n_samples : int
        Number of rows (public under replace-one).
    pooled : bool
        One mean/variance over all entries instead of one per column.
    mean, var : VectorLaplacePlan or None
        The noise of the means and of the variances (None: not released).
    epsilon_mean, epsilon_var : float
        The shares of epsilon (0 for a statistic not released).
    event : PrivacyEvent
        What a release spends: a :class:`~skdp.accounting.DiscreteLaplaceEvent` for
        one statistic, a :class:`~skdp.accounting.ComposedEvent` of the two
        for both.
    """

    lower: np.ndarray
    upper: np.ndarray
    n_samples: int
    pooled: bool
    mean: VectorLaplacePlan | None
    var: VectorLaplacePlan | None
    epsilon_mean: float
    epsilon_var: float
    event: PrivacyEvent


def _pooled_var_sensitivity(n_samples: int, n_columns: int, width: float) -> float:
    """Replace-one sensitivity of the variance (``ddof=0``) of all ``n p`` entries.

    ``(n - 1) w**2 / n**2`` for ``n >= 2``, whatever ``p``: the same as one
    column's; ``floor(p/2) ceil(p/2) w**2 / p**2`` for ``n = 1``. Tight:
    attained by all entries at one bound and one row moved to the other.

    Notes
    -----
    A replacement changes ``k = p`` of the ``N = n p`` entries: ``A`` those,
    ``B`` the others, ``c`` the mean of ``B``. With ``y = a - c`` the changed
    entries about it, the scatter splits as ``S = S_B + f(y)``,
    ``f(y) = sum y**2 - (sum y)**2 / N = y' (I - 1 1' / N) y``; ``S_B`` and
    ``c`` do not move. ``f`` is convex (eigenvalues 1 and ``1 - k / N``) and
    at least 0, with ``f = 0`` at ``y = 0`` (every changed entry at ``c``, in
    the bounds), so ``S`` moves by at most the largest ``f``, found at a
    vertex: ``j`` entries at ``U`` and ``k - j`` at ``L``, ``t = c - L``,
    ``f = j w**2 (1 - j/N) - 2 j w t (1 - k/N) + k t**2 (1 - k/N)``,
    convex in ``t`` with the values ``j (N - j) w**2 / N`` at ``t = 0`` and
    ``(k - j) (N - k + j) w**2 / N`` at ``t = w``. So
    ``Delta S = max_{j <= k} j (N - j) w**2 / N``: ``j = k`` when
    ``k <= N / 2`` (``n >= 2``), ``j = floor(N / 2)`` when ``n = 1``. The
    variance moves by ``Delta S / N``; with ``k = p``, ``N = n p``,
    ``p (N - p) w**2 / N**2 = (n - 1) w**2 / n**2``. Per-column bounds sit
    inside the pooled range, of width ``w = max(upper) - min(lower)``.
    """
    total = n_samples * n_columns
    moved = min(n_columns, total // 2)
    return moved * (total - moved) * width**2 / total**2


def plan_moments(
    lower,
    upper,
    n_samples: int,
    epsilon: float,
    *,
    mean: bool = True,
    var: bool = True,
    pooled: bool = False,
    label: str = "",
) -> MomentsPlan:
    """Plan noisy column means and/or variances; may raise, charges nothing.

    Parameters
    ----------
    lower, upper : array-like of shape (n_columns,)
        Public bounds of each column.
    n_samples : int
        Public number of rows.
    epsilon : float
        Total epsilon; split in halves when both statistics are released,
        and within a statistic evenly over the columns (each column's noise
        is proportional to its width; see :class:`VectorLaplacePlan`).
    mean, var : bool
        Which statistics to release (at least one).
    pooled : bool, default=False
        One statistic over all ``n_samples * n_columns`` entries.
    label : str, default=""
        Label of the event.

    Returns
    -------
    plan : MomentsPlan

    Examples
    --------
    >>> from skdp.tools._moments import plan_moments
    >>> plan = plan_moments([0.0], [10.0], n_samples=100, epsilon=1.0, var=False)
    >>> plan.mean.sensitivities, type(plan.event).__name__
    (array([0.1]), 'DiscreteLaplaceEvent')
    >>> bool(plan.event.epsilon <= 1.0)
    True
    """
    if not (mean or var):
        raise ValueError("plan_moments needs mean=True or var=True.")
    lower = np.asarray(lower, dtype=float).ravel()
    upper = np.asarray(upper, dtype=float).ravel()
    n = int(n_samples)
    width = upper - lower
    check_magnitudes(
        "The private moments",
        largest_bound=float(max(np.abs(lower).max(), np.abs(upper).max())),
        squared_width=float(width.max()) ** 2,
    )
    share = epsilon / 2 if (mean and var) else epsilon
    magnitude = n / 2 + 1
    mean_plan = var_plan = None
    if mean:
        sensitivity = np.array([width.mean() / n]) if pooled else width / n
        mean_plan = plan_vector_laplace(
            sensitivity, share, magnitude=magnitude, label="mean" if var else label
        )
    if var:
        if pooled:
            pooled_width = float(upper.max() - lower.min())
            sensitivity = np.array(
                [_pooled_var_sensitivity(n, lower.size, pooled_width)]
            )
            magnitude = max(magnitude, lower.size * n)
        else:
            sensitivity = (n - 1) * width**2 / n**2
        var_plan = plan_vector_laplace(
            sensitivity, share, magnitude=magnitude, label="var" if mean else label
        )
    if mean and var:
        event = ComposedEvent((mean_plan.event, var_plan.event), label=label)
    else:
        event = (mean_plan or var_plan).event
    return MomentsPlan(
        lower=lower,
        upper=upper,
        n_samples=n,
        pooled=pooled,
        mean=mean_plan,
        var=var_plan,
        epsilon_mean=share if mean else 0.0,
        epsilon_var=share if var else 0.0,
        event=event,
    )


def moment_sums(X, _, lower, upper, centre):
    """Block function: sums of ``x - c`` and ``(x - c)**2``, ``x`` clipped.

    ``X`` is a block of rows (numbers of any dtype, read as float64),
    clipped to ``[lower, upper]`` column by column; ``c`` is the public
    centre of the bounds.
    """
    d = np.clip(np.asarray(X, dtype=np.float64), lower, upper) - centre
    return d.sum(axis=0), (d * d).sum(axis=0)


def exact_moments(rows: RowSource, lower, upper, pooled: bool):
    """Exact means and variances (``ddof=0``) of the rows clipped to the bounds.

    One pass of row-block sums of ``x - c`` and ``(x - c)**2`` about the
    public centre ``c`` of the bounds (the midpoint, or the pooled range's
    midpoint), which keeps the subtraction in the variance well
    conditioned: every term is at most ``(upper - lower) / 2`` in
    magnitude, so the rounding of ``E(x - c)**2 - (E(x - c))**2`` is a few
    ulps of ``(w / 2)**2`` per level of the sums, far below the variance's
    noise of scale ``w**2 / (n epsilon)`` for any ``n`` below ``1e12 /
    epsilon``. One value per column, or one for ``pooled``.
    """
    n = rows.n_samples
    if pooled:
        centre = np.full(lower.shape, (lower.min() + upper.max()) / 2)
    else:
        centre = (lower + upper) / 2
    first, second = rows.block_sum(moment_sums, lower, upper, centre)
    if pooled:
        count = n * lower.size
        mean = first.sum() / count
        return np.array([centre[0] + mean]), np.array(
            [max(second.sum() / count - mean**2, 0.0)]
        )
    mean = first / n
    return centre + mean, np.maximum(second / n - mean**2, 0.0)


def noisy_moments(X, plan: MomentsPlan, source: RandomSource):
    """Noisy ``(mean, var)`` of the rows' columns (None for one not planned).

    ``X`` is a :class:`~skdp.utils._row_source.RowSource` (in memory or on
    dask) or an array of shape ``(n_samples, n_columns)``; its rows are
    clipped to the plan's bounds in the blocks (:func:`exact_moments`).
    Each noisy statistic is then projected onto the set of values it can
    take, which can only bring it closer to the truth (post-processing,
    free of privacy cost): the mean onto ``[L, U]``, the variance onto
    ``[0, (w / 2)**2]``. Does not raise.
    """
    rows = X if isinstance(X, RowSource) else row_source(np.asarray(X, dtype=float))
    exact_mean, exact_var = exact_moments(rows, plan.lower, plan.upper, plan.pooled)
    return release_moments(
        exact_mean if plan.mean is not None else None,
        exact_var if plan.var is not None else None,
        plan,
        source,
    )


def release_moments(exact_mean, exact_var, plan: MomentsPlan, source: RandomSource):
    """The planned noise on exact means and variances of the clipped data.

    The second half of :func:`noisy_moments`. Does not raise.
    """
    if plan.pooled:
        lower = np.array([plan.lower.mean()]) if plan.mean else None
        upper = np.array([plan.upper.mean()]) if plan.mean else None
        top_var = (plan.upper.max() - plan.lower.min()) ** 2 / 4
    else:
        lower, upper = plan.lower, plan.upper
        top_var = (plan.upper - plan.lower) ** 2 / 4
    mean = var = None
    if plan.mean is not None:
        # The mean of a pooled matrix is the mean of its row means, whose
        # bounds are the mean bounds; the sensitivity in the plan is theirs.
        noisy = apply_vector_laplace(plan.mean, exact_mean, (lower + upper) / 2, source)
        mean = np.clip(noisy, lower, upper)
    if plan.var is not None:
        noisy = apply_vector_laplace(
            plan.var, exact_var, np.asarray(top_var) / 2, source
        )
        var = np.clip(noisy, 0.0, top_var)
    return mean, var
