"""Privacy loss distributions (PLD): tight (epsilon, delta) under composition.

A mechanism ``M`` and a pair of neighbouring datasets give two output
distributions ``P = M(D)`` and ``Q = M(D')``. Their *privacy loss* at an
output ``o`` is ``log(P(o) / Q(o))``; its distribution when ``o ~ P`` is the
PLD. Everything about ``(epsilon, delta)`` is in it: the smallest ``delta``
at which ``M`` is ``(epsilon, delta)``-DP for that pair is the hockey-stick
divergence

``delta(epsilon) = P(L = inf) + E_P[(1 - exp(epsilon - L))_+]``,

and running mechanisms in sequence adds independent losses, so the PLD of a
composition is the convolution of the PLDs (for adaptive composition too,
[ZDW22]_ Theorem 10). One pair ``(P, Q)`` that *dominates* every
neighbouring pair of a mechanism (a larger hockey-stick divergence at every
``epsilon``) gives a valid bound, and dominating pairs compose.

This module represents a PLD by probability masses on the grid
``k * interval`` (``interval`` is the value discretisation, 1e-4 by default)
plus a mass at ``+inf``. Every step rounds *pessimistically*: the stored PLD
always dominates the exact one, so every epsilon read from it is an upper
bound.

* A mechanism's PLD is discretised by *connect the dots* ([DGKKM22]_,
  Algorithm 1): the mass of the losses between two grid points is split
  between them so that both its ``P`` and its ``Q`` mass are kept, which
  makes ``delta`` exact at every grid point and, between them, the chord of
  a convex function (an upper bound). Losses below the grid are rounded up
  to its first point ([MM18]_); losses above it (noise beyond ``e**-50`` of
  the tails) go to ``+inf``.
* Composition is a convolution computed by FFT ([KJH20]_); self-composition
  raises the Fourier transform to a power. Tails beyond a mass of 1e-15 are
  cut: the lower tail is rounded up onto the first kept point, the upper
  tail and the bound on what a self-composition leaves outside its window
  (a Chernoff bound) are added to ``+inf``.
* A composed PLD whose grid grows past ``max_points`` is moved to a grid
  twice as coarse, again by connect the dots, which keeps it dominating at
  a second-order cost in tightness.

References
----------
.. [MM18] S. Meiser, E. Mohammadi, "Tight on Budget? Tight Bounds for r-Fold
   Approximate Differential Privacy", CCS 2018.
.. [KJH20] A. Koskela, J. Jälkö, A. Honkela, "Computing Tight Differential
   Privacy Guarantees Using FFT", AISTATS 2020. arXiv:1906.03049.
.. [DGKKM22] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi,
   "Connect the Dots: Tighter Discrete Approximations of Privacy Loss
   Distributions", PETS 2022. arXiv:2207.04380.
.. [ZDW22] Y. Zhu, J. Dong, Y.-X. Wang, "Optimal Accounting of Differential
   Privacy via Characteristic Function", AISTATS 2022. arXiv:2106.08567.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for
   Differential Privacy", ICML 2015. arXiv:1311.0776.
.. [BW18] B. Balle, Y.-X. Wang, "Improving the Gaussian Mechanism for
   Differential Privacy: Analytical Calibration and Optimal Denoising",
   ICML 2018. arXiv:1805.06530.
.. [GDPLD] Google Differential Privacy Team, "Privacy Loss Distributions"
   (supplementary material of the ``dp_accounting`` library), 2020.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import fft, signal, special, stats

__all__ = [
    "PrivacyLossDistribution",
    "pld_approximate_dp",
    "pld_discrete_laplace",
    "pld_gaussian",
    "pld_laplace",
    "pld_poisson_subsampled_gaussian",
    "pld_pure_dp",
]

#: Default value discretisation interval (the grid step of the losses).
DEFAULT_INTERVAL = 1e-4
#: Mass of each Gaussian noise tail cut when a continuous mechanism is
#: discretised (the upper one goes to ``+inf``): 1e-17, so that even 1e4
#: self-compositions put only 1e-13 at ``+inf``.
_NOISE_TAIL = 1e-17
#: Floating-point slack on delta: the divergence read off a PLD carries
#: round-off from the FFTs (about 1e-16 per grid point, absolutely), so
#: epsilon is read at ``delta - min(1e-12, 1e-6 delta)``, towards less
#: privacy.
_DELTA_SLACK_ABSOLUTE = 1e-12
_DELTA_SLACK_RELATIVE = 1e-6
#: Grid points of one mechanism's PLD at most (the grid is made coarser).
_MAX_MECHANISM_POINTS = 1 << 21
#: Arrays longer than this are binned before the Chernoff bound is computed.
_CHERNOFF_POINTS = 8192
#: Bisection steps of the Chernoff bound's best t, on log t over 24 doublings.
_CHERNOFF_STEPS = 12
#: Probability mass cut from the tails at each composition (to ``+inf``).
DEFAULT_TAIL_MASS = 1e-15
#: A composed PLD is coarsened once its grid has more points than this.
DEFAULT_MAX_POINTS = 1 << 21

_LogMasses = Callable[
    [np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
]


@dataclass(frozen=True, eq=False)
class _PMF:
    """Masses ``probs[k]`` at losses ``(offset + k) * interval``, and ``+inf``."""

    interval: float
    offset: int
    probs: np.ndarray
    infinity: float

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.probs.size)) * self.interval


def _shift(pmf: _PMF, by: int, infinity: float) -> _PMF:
    return _PMF(pmf.interval, pmf.offset + by, pmf.probs, infinity)


def _compose_infinity(a: float, b: float) -> float:
    # 1 - (1 - a)(1 - b), with no cancellation for small masses.
    return a + b - a * b


def _truncate(offset: int, probs: np.ndarray, infinity: float, tail: float) -> _PMF:
    """Cut prefix and suffix of mass <= tail / 2 each, pessimistically.

    The prefix is rounded up onto the first kept point; the suffix goes to
    ``+inf``. ``probs`` must be a fresh array (it is modified).
    """
    np.maximum(probs, 0.0, out=probs)  # FFT round-off can dip below zero
    if tail > 0 and probs.size > 1:
        half = tail / 2.0
        left = int(np.searchsorted(np.cumsum(probs), half, side="right"))
        right = probs.size - int(
            np.searchsorted(np.cumsum(probs[::-1]), half, side="right")
        )
        # Keep at least one point, inside the array: when the finite mass
        # is below ``half`` both cuts pass the end and all of it goes to
        # the last point (rounded up, pessimistic) or beyond.
        left = min(left, probs.size - 1)
        right = min(max(right, left + 1), probs.size)
        low_mass = float(np.sum(probs[:left]))
        high_mass = float(np.sum(probs[right:]))
        probs = probs[left:right].copy()
        probs[0] += low_mass
        offset += left
        infinity = infinity + high_mass
    return offset, probs, min(infinity, 1.0)


def _make(interval: float, offset: int, probs: np.ndarray, infinity: float) -> _PMF:
    probs.setflags(write=False)
    return _PMF(interval, int(offset), probs, float(infinity))


def _all_infinite(interval: float) -> _PMF:
    """All mass at +infinity: the pessimistic answer when arithmetic fails."""
    return _make(interval, 0, np.zeros(1), 1.0)


def _finite(pmf: _PMF) -> bool:
    return bool(np.all(np.isfinite(pmf.probs)))


def _convolve(a: _PMF, b: _PMF, tail: float) -> _PMF:
    if not (_finite(a) and _finite(b)):
        # Extreme parameters overflowed a loss's probabilities: give up on
        # this bound (epsilon infinite); the other accountants still apply.
        return _all_infinite(a.interval)
    infinity = _compose_infinity(a.infinity, b.infinity)
    if a.probs.size == 1 or b.probs.size == 1:
        single, other = (a, b) if a.probs.size == 1 else (b, a)
        probs = other.probs * single.probs[0]
        offset = a.offset + b.offset
    else:
        probs = signal.convolve(a.probs, b.probs, method="auto")
        offset = a.offset + b.offset
    if not np.all(np.isfinite(probs)):
        return _all_infinite(a.interval)
    offset, probs, infinity = _truncate(offset, probs, infinity, tail)
    return _make(a.interval, offset, probs, infinity)


def _chernoff_reach(
    centred: np.ndarray,
    log_weights: np.ndarray,
    count: int,
    log_bound: float,
    typical: float,
) -> float:
    """Smallest ``(count log E e^{tK} + log_bound) / t`` over ``t > 0``.

    ``K`` takes the values ``centred`` (its mean removed) with log
    probabilities ``log_weights``. With ``M(t) = log E e^{tK}``, the
    derivative of the bound has the sign of ``count (t M'(t) - M(t)) -
    log_bound``, which grows with ``t`` (its derivative is ``count t
    M''(t) >= 0``): the bound falls, then rises. Its turning point is found
    by bisection on ``log t`` between ``typical / 2**16`` and ``typical *
    2**8`` (heavy upper tails, such as a subsampled mechanism's rare large
    losses, put it far below the Gaussian guess ``typical``). Any ``t``
    gives a valid bound; this one is close to the best.
    """

    def moments(t: float) -> tuple[float, float]:
        values = t * centred + log_weights
        peak = float(values.max())
        scaled = np.exp(values - peak)
        total = float(np.sum(scaled))
        # np.sum of the product, not np.dot: BLAS threads (from ~1e4
        # entries) cost far more than they save on a busy machine.
        return peak + math.log(total), float(np.sum(centred * scaled)) / total

    def reach(t: float) -> float:
        return (count * moments(t)[0] + log_bound) / t

    low = math.log(typical) - 16 * math.log(2.0)
    high = math.log(typical) + 8 * math.log(2.0)
    for _ in range(_CHERNOFF_STEPS):
        middle = 0.5 * (low + high)
        t = math.exp(middle)
        log_mgf, slope = moments(t)
        if count * (t * slope - log_mgf) < log_bound:
            low = middle  # the bound still falls at t
        else:
            high = middle
    return min(reach(math.exp(low)), reach(math.exp(high)))


def _chernoff_window(probs: np.ndarray, count: int, tail: float) -> tuple[int, int]:
    """Indices ``[low, high]`` holding all but ``tail`` of a ``count``-fold sum.

    For ``S`` the sum of ``count`` independent draws of the index ``K`` with
    masses ``probs`` (normalised), ``P(S >= u) <= exp(count log E e^{tK} -
    t u)`` for every ``t > 0`` and symmetrically below, so each side is cut
    where the best bound over ``t`` (:func:`_chernoff_reach`) reaches
    ``tail / 2``.
    """
    n = probs.size
    full = (0, count * (n - 1))
    total = float(np.sum(probs))
    if tail <= 0 or total <= 0:
        return full
    weights = probs / total
    k = np.arange(n, dtype=float)
    mean = float(np.sum(k * weights))
    sd = math.sqrt(max(float(np.sum((k - mean) ** 2 * weights)), 1e-12))
    log_bound = math.log(2.0 / tail)
    # The bound for a sum close to Gaussian is best near this t.
    typical = math.sqrt(2.0 * log_bound / count) / sd
    # The bound for K binned upwards (downwards) to multiples of `width` is
    # also a bound for K above (below), and much cheaper on a long array.
    width = max(1, n // _CHERNOFF_POINTS)
    reaches = []
    for sign, index in (
        (1.0, -(-np.arange(n) // width)),
        (-1.0, np.arange(n) // width),
    ):
        masses = np.bincount(index, weights=weights)
        support = masses > 0
        centred = sign * (np.flatnonzero(support) * float(width) - mean)
        reaches.append(
            _chernoff_reach(centred, np.log(masses[support]), count, log_bound, typical)
        )
    high = min(full[1], math.ceil(count * mean + reaches[0]))
    low = max(full[0], math.floor(count * mean - reaches[1]))
    return low, high


def _self_convolve(
    pmf: _PMF, count: int, tail: float, max_points: int = DEFAULT_MAX_POINTS
) -> _PMF:
    if count == 1:
        return pmf
    if not _finite(pmf):
        return _all_infinite(pmf.interval)
    infinity = -math.expm1(count * math.log1p(-pmf.infinity))
    # The count-fold sum must fit in max_points grid points: a long
    # composition of a fine PLD (DP-SGD's tens of thousands of steps) would
    # otherwise need an FFT of hundreds of millions of points. A coarser grid
    # by connect the dots still dominates (pessimistic, see _coarsen).
    while True:
        if pmf.probs.size == 1:
            probs = np.array([pmf.probs[0] ** count])
            return _make(pmf.interval, pmf.offset * count, probs, infinity)
        low, high = _chernoff_window(pmf.probs, count, tail)
        length = high - low + 1
        if length <= max_points:
            break
        pmf = _coarsen(pmf, max(2, -(-length // max_points)))
    size = fft.next_fast_len(max(length, pmf.probs.size), real=True)
    transform = fft.rfft(pmf.probs, size) ** count
    # Circular convolution: the mass outside [low, high] (at most `tail`)
    # folds back into the window, which only adds mass (pessimistic), and the
    # same bound is also added to +inf below.
    values = np.roll(fft.irfft(transform, size), -(low % size))[:length]
    if not np.all(np.isfinite(values)):
        return _all_infinite(pmf.interval)
    offset, probs, infinity = _truncate(
        pmf.offset * count + low, np.array(values), infinity + tail, tail
    )
    return _make(pmf.interval, offset, probs, infinity)


def _coarsen(pmf: _PMF, factor: int) -> _PMF:
    """The PLD on a grid ``factor`` times coarser, by connect the dots.

    The mass at each fine point is split between the two coarse points
    around it so that its ``P`` and ``Q`` masses are kept (as in
    :func:`_split_atoms`), which dominates the fine PLD and, unlike rounding
    every loss up, loses only a second-order amount of tightness.
    """
    interval = pmf.interval * factor
    index = pmf.offset + np.arange(pmf.probs.size)
    below = index // factor
    residue = np.arange(factor) * pmf.interval  # loss above the coarse point
    with np.errstate(invalid="ignore"):
        shares = np.exp(-residue) * np.expm1(-(interval - residue))
        shares /= np.expm1(-interval)
    shares[0] = 1.0
    share = shares[index - below * factor]
    first = int(below[0])
    size = int(below[-1]) - first + 2
    low = np.bincount(below - first, weights=pmf.probs * share, minlength=size)
    high = np.bincount(
        below - first + 1, weights=pmf.probs * (1 - share), minlength=size
    )
    probs = low + high
    if probs[-1] == 0:
        probs = probs[:-1]
    return _make(interval, first, probs, pmf.infinity)


def _delta_for_epsilon(pmf: _PMF, epsilon: float) -> float:
    losses = pmf.losses
    above = losses > epsilon
    tail = -np.expm1(epsilon - losses[above])
    return min(pmf.infinity + float(np.dot(pmf.probs[above], tail)), 1.0)


def _epsilon_for_delta(pmf: _PMF, delta: float) -> float:
    """Smallest ``epsilon >= 0`` whose hockey-stick divergence is <= delta."""
    delta -= min(_DELTA_SLACK_ABSOLUTE, _DELTA_SLACK_RELATIVE * delta)
    if pmf.infinity > delta:
        return math.inf
    losses = pmf.losses
    start = int(np.searchsorted(losses, 0.0, side="right"))
    probs, losses = pmf.probs[start:], losses[start:]
    if probs.size == 0:
        return 0.0
    # Suffix sums over losses >= losses[k]: A = P(L >= l_k) (with +inf) and
    # B = Q(L >= l_k) = sum p e^{-l}; for epsilon in [l_{k-1}, l_k),
    # delta(epsilon) = A_k - e^epsilon B_k.
    upper = pmf.infinity + np.cumsum(probs[::-1])[::-1]
    lower = np.cumsum((probs * np.exp(-losses))[::-1])[::-1]
    upper_next = np.append(upper[1:], pmf.infinity)
    lower_next = np.append(lower[1:], 0.0)
    with np.errstate(divide="ignore", over="ignore"):
        at_points = upper_next - np.exp(losses + np.log(lower_next))  # delta(l_k)
    if upper[0] - lower[0] <= delta:  # delta(0)
        return 0.0
    k = int(np.argmax(at_points <= delta))  # first grid loss that is enough
    left = losses[k - 1] if k > 0 else 0.0
    if lower[k] <= 0:
        return float(left)
    epsilon = math.log(max(upper[k] - delta, 0.0) / lower[k])
    return float(min(max(epsilon, left), losses[k]))


def _fitting_interval(lowest: float, highest: float, interval: float) -> float:
    """``interval`` doubled until ``[lowest, highest]`` fits the point cap.

    Only extreme mechanisms (an epsilon in the thousands) need it; a coarser
    grid is pessimistic all the same, and composition brings grids to the
    coarser of the two.
    """
    while (highest - lowest) / interval > _MAX_MECHANISM_POINTS:
        interval *= 2.0
    return interval


def _split_atoms(
    losses: np.ndarray, probs: np.ndarray, infinity: float, interval: float
) -> _PMF:
    """Connect-the-dots discretisation of a PLD given by atoms.

    An atom of ``P``-mass ``p`` at loss ``l`` between grid points ``a < l <
    b`` becomes masses at ``a`` and ``b`` with the same ``P``-mass and the
    same ``Q``-mass ``p e^{-l}`` ([DGKKM22]_); its hockey-stick divergence is
    then the chord of the (convex) original between ``e^a`` and ``e^b``.
    """
    losses = np.asarray(losses, dtype=float)
    probs = np.asarray(probs, dtype=float)
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    interval = _fitting_interval(float(losses.min()), float(losses.max()), interval)
    scaled = losses / interval
    # Losses within float round-off of a grid point (0.1 * 3 / 1e-4 is
    # 3000.0000000000005) are put on it.
    nearest = np.round(scaled)
    scaled = np.where(np.abs(scaled - nearest) < 1e-9, nearest, scaled)
    below = np.floor(scaled)
    frac = np.clip((scaled - below) * interval, 0.0, interval)  # l - a
    # Share of a: (e^{-l} - e^{-b}) / (e^{-a} - e^{-b}).
    with np.errstate(invalid="ignore"):
        share = np.exp(-frac) * np.expm1(-(interval - frac)) / np.expm1(-interval)
    share = np.where(frac <= 0, 1.0, np.clip(share, 0.0, 1.0))
    index = below.astype(np.int64)
    first = int(index.min())
    size = int(index.max()) - first + 2
    masses = np.bincount(index - first, weights=probs * share, minlength=size)
    masses += np.bincount(
        index - first + 1, weights=probs * (1 - share), minlength=size
    )
    while masses.size > 1 and masses[-1] == 0:
        masses = masses[:-1]
    return _make(interval, first, masses, infinity)


def _connect_the_dots(
    log_masses: _LogMasses, lowest: float, highest: float, interval: float
) -> _PMF:
    """Connect-the-dots discretisation of a PLD given by its tails.

    ``log_masses(e)`` returns, for an array of losses ``e``, the logs of
    ``P(L > e)``, ``Q(L > e)``, ``P(L <= e)`` and ``Q(L <= e)``. The grid
    runs over ``[lowest, highest]``: loss mass below is rounded up to the
    first point, and ``delta(highest)`` goes to ``+inf``, keeping
    ``P(L > highest)`` split so that its ``Q``-mass is kept.
    """
    interval = _fitting_interval(lowest, highest, interval)
    first = math.floor(lowest / interval)
    last = max(math.ceil(highest / interval), first + 1)
    grid = np.arange(first, last + 1) * interval
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_tail_p, tail_q, log_head_p, head_q = log_masses(grid)
        tail_p, head_p = np.exp(log_tail_p), np.exp(log_head_p)
        # Q-masses are carried as e^{grid} Q(...), which stays bounded.
        scaled_tail_q = np.exp(grid + tail_q)
        scaled_head_q = np.exp(grid + head_q)
    # Mass of each interval (e_j, e_{j+1}], from the smaller of head and tail
    # (np.where evaluates both; the unused one may overflow harmlessly).
    use_head = head_p[1:] < 0.5
    step = math.exp(-interval)
    with np.errstate(over="ignore", invalid="ignore"):
        mass_p = np.where(use_head, head_p[1:] - head_p[:-1], tail_p[:-1] - tail_p[1:])
        scaled_mass_q = np.where(
            use_head,
            step * scaled_head_q[1:] - scaled_head_q[:-1],
            scaled_tail_q[:-1] - step * scaled_tail_q[1:],
        )  # e^{e_j} Q(interval j)
    mass_p = np.maximum(mass_p, 0.0)
    lower_share = (scaled_mass_q - step * mass_p) / (-math.expm1(-interval))
    lower_share = np.clip(lower_share, 0.0, mass_p)
    probs = np.zeros(grid.size)
    probs[:-1] += lower_share
    probs[1:] += mass_p - lower_share
    probs[0] += head_p[0]
    top = min(scaled_tail_q[-1], tail_p[-1])
    probs[-1] += top
    infinity = max(tail_p[-1] - top, 0.0)
    return _make(interval, first, probs, infinity)


class PrivacyLossDistribution:
    """Discretised privacy loss distribution of a mechanism (or of several).

    Built by the ``pld_*`` functions of this module (or by a
    :class:`~skdp.accounting.PLDAccountant` from events), composed with
    :meth:`compose` and :meth:`self_compose`, read with
    :meth:`epsilon_for_delta` and :meth:`delta_for_epsilon`.

    Parameters
    ----------
    remove : _PMF
        PLD of the pair ``(M(D), M(D'))``.
    add : _PMF, default=None
        PLD of the reverse pair ``(M(D'), M(D))`` when it differs (a
        Poisson-subsampled mechanism under add/remove-one); ``None`` for a
        symmetric pair. Both are composed, and the larger delta is reported.

    Notes
    -----
    Every stored PLD dominates the exact one (see the module docstring), so
    :meth:`epsilon_for_delta` returns an upper bound on the exact epsilon of
    the pairs it was built from.
    """

    __slots__ = ("_add", "_remove", "_shift")

    def __init__(
        self, remove: _PMF, add: _PMF | None = None, shift: float = 0.0
    ) -> None:
        self._remove = remove
        self._add = add
        # Every loss is raised by this much on top of its grid point (see
        # shifted); kept exactly instead of being rounded to the grid.
        self._shift = float(shift)

    @property
    def interval(self) -> float:
        """Grid step of the losses."""
        return self._remove.interval

    @property
    def symmetric(self) -> bool:
        return self._add is None

    @property
    def size(self) -> int:
        """Number of grid points stored (both directions)."""
        extra = 0 if self._add is None else self._add.probs.size
        return self._remove.probs.size + extra

    @property
    def nbytes(self) -> int:
        return 8 * self.size

    def _pmfs(self) -> tuple[_PMF, ...]:
        return (self._remove,) if self._add is None else (self._remove, self._add)

    def _other(self, pmf_add: _PMF | None) -> _PMF:
        return self._remove if pmf_add is None else pmf_add

    def compose(
        self,
        other: PrivacyLossDistribution,
        *,
        tail_mass: float = DEFAULT_TAIL_MASS,
        max_points: int = DEFAULT_MAX_POINTS,
    ) -> PrivacyLossDistribution:
        """PLD of running this mechanism and then ``other`` on the same data.

        Parameters
        ----------
        other : PrivacyLossDistribution
        tail_mass : float, default=1e-15
            Mass cut from the tails (pessimistically, see the module notes).
        max_points : int, default=2**21
            When the result would have more grid points, both operands are
            first coarsened (losses rounded up) to a common coarser grid.
        """
        a, b = self, other
        while True:
            if math.isclose(a.interval, b.interval, rel_tol=1e-9):
                if a.size + b.size <= 2 * max_points:
                    break
                a, b = a._coarsened(2), b._coarsened(2)
                continue
            finer, coarser = (a, b) if a.interval < b.interval else (b, a)
            factor = round(coarser.interval / finer.interval)
            if not math.isclose(
                factor * finer.interval, coarser.interval, rel_tol=1e-9
            ):
                raise ValueError(
                    "Cannot compose PLDs whose grid steps are not multiples: "
                    f"{a.interval!r} and {b.interval!r}."
                )
            if finer is a:
                a = a._coarsened(factor)
            else:
                b = b._coarsened(factor)
        remove = _convolve(a._remove, b._remove, tail_mass)
        shift = a._shift + b._shift
        if a._add is None and b._add is None:
            return PrivacyLossDistribution(remove, shift=shift)
        add = _convolve(a._other(a._add), b._other(b._add), tail_mass)
        return PrivacyLossDistribution(remove, add, shift)

    def self_compose(
        self, count: int, *, tail_mass: float = DEFAULT_TAIL_MASS
    ) -> PrivacyLossDistribution:
        """PLD of ``count`` independent runs of this mechanism."""
        count = int(count)
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count!r}.")
        remove = _self_convolve(self._remove, count, tail_mass)
        shift = count * self._shift
        if self._add is None:
            return PrivacyLossDistribution(remove, shift=shift)
        return PrivacyLossDistribution(
            remove, _self_convolve(self._add, count, tail_mass), shift
        )

    def _coarsened(self, factor: int) -> PrivacyLossDistribution:
        if factor <= 1:
            return self
        remove = _coarsen(self._remove, factor)
        add = None if self._add is None else _coarsen(self._add, factor)
        return PrivacyLossDistribution(remove, add, self._shift)

    def epsilon_for_delta(self, delta: float) -> float:
        """Smallest ``epsilon >= 0`` with hockey-stick divergence <= ``delta``.

        ``inf`` when the mass at ``+inf`` exceeds ``delta``.
        """
        on_grid = max(_epsilon_for_delta(pmf, float(delta)) for pmf in self._pmfs())
        return on_grid + self._shift

    def delta_for_epsilon(self, epsilon: float) -> float:
        """Hockey-stick divergence at ``epsilon`` (the smallest valid delta)."""
        epsilon = float(epsilon) - self._shift
        return max(_delta_for_epsilon(pmf, epsilon) for pmf in self._pmfs())

    def shifted(self, shift: float) -> PrivacyLossDistribution:
        """The PLD of the losses raised by ``shift >= 0``.

        The pair ``(P, Q_shift)`` whose ``Q_shift`` is ``e**-shift Q`` plus
        an atom of mass ``1 - e**-shift`` that ``P`` never produces: a valid
        pair whose loss under ``P`` is the old loss plus ``shift``. It
        dominates every pair whose loss is at most the old one plus
        ``shift`` pointwise (the hockey-stick divergence
        ``E_P[(1 - exp(epsilon - L))_+]`` increases with ``L``). The shift is
        kept exactly (not rounded to the grid) and adds up under
        composition: ``epsilon_for_delta`` grows by exactly ``shift``.
        """
        shift = float(shift)
        if not (math.isfinite(shift) and shift >= 0):
            raise ValueError(f"shift must be finite and >= 0, got {shift!r}.")
        if shift == 0:
            return self
        return PrivacyLossDistribution(self._remove, self._add, self._shift + shift)

    def __repr__(self):
        kind = "symmetric" if self._add is None else "asymmetric"
        return (
            f"PrivacyLossDistribution({kind}, interval={self.interval:g}, "
            f"points={self.size}, infinity_mass={self._remove.infinity:.3g})"
        )


def identity_pld(interval: float = DEFAULT_INTERVAL) -> PrivacyLossDistribution:
    """The PLD of a mechanism that reveals nothing (loss 0 with mass 1)."""
    return PrivacyLossDistribution(_make(interval, 0, np.ones(1), 0.0))


# --- mechanisms -----------------------------------------------------------


def _check_interval(interval: float) -> float:
    interval = float(interval)
    if not (math.isfinite(interval) and interval > 0):
        raise ValueError(f"interval must be finite and > 0, got {interval!r}.")
    return interval


def _binomial_atoms(epsilon: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Losses and P-masses of ``count`` randomised responses with parameter ε."""
    j = np.arange(count + 1)
    p = special.expit(epsilon)  # e^eps / (1 + e^eps)
    masses = stats.binom.pmf(j, count, p)
    return (2 * j - count) * epsilon, masses


def pld_pure_dp(
    epsilon: float, count: int = 1, interval: float = DEFAULT_INTERVAL
) -> PrivacyLossDistribution:
    """PLD dominating ``count`` runs of any ``epsilon``-DP mechanism.

    Parameters
    ----------
    epsilon : float
        Pure-DP parameter, > 0.
    count : int, default=1
        Number of runs composed.
    interval : float, default=1e-4
        Grid step of the losses.

    Returns
    -------
    pld : PrivacyLossDistribution

    Notes
    -----
    Every ``epsilon``-DP pair is a post-processing of binary randomised
    response, ``P = (e^eps, 1) / (1 + e^eps)`` against ``Q = (1, e^eps) /
    (1 + e^eps)`` ([KOV15]_, Theorem 2.1): its loss is ``+eps`` with
    probability ``e^eps / (1 + e^eps)`` and ``-eps`` otherwise. ``count``
    runs give the binomial law of ``(2 J - count) eps``, computed exactly and
    then discretised by connect the dots. Valid under any neighbouring
    relation for which the mechanism is ``epsilon``-DP.

    Examples
    --------
    >>> from skdp.accounting._pld import pld_pure_dp
    >>> round(pld_pure_dp(1.0).epsilon_for_delta(0.0), 6)
    1.0
    """
    return pld_approximate_dp(epsilon, 0.0, count, interval)


def pld_approximate_dp(
    epsilon: float, delta: float, count: int = 1, interval: float = DEFAULT_INTERVAL
) -> PrivacyLossDistribution:
    """PLD dominating ``count`` runs of any ``(epsilon, delta)``-DP mechanism.

    Notes
    -----
    The pair that dominates every ``(epsilon, delta)``-DP mechanism puts
    mass ``delta`` on an outcome ``Q`` never produces (loss ``+inf``) and is
    randomised response with parameter ``epsilon`` otherwise ([KOV15]_;
    [GDPLD]_ Section 3.5): loss ``+eps`` with probability ``(1 - delta) /
    (1 + e^-eps)`` and ``-eps`` with probability ``(1 - delta) / (1 +
    e^eps)``.
    """
    interval = _check_interval(interval)
    losses, masses = _binomial_atoms(float(epsilon), int(count))
    finite = (1.0 - float(delta)) ** int(count)
    infinity = -math.expm1(int(count) * math.log1p(-float(delta)))
    pmf = _split_atoms(losses, masses * finite, infinity, interval)
    return PrivacyLossDistribution(pmf)


def _log_ndtr(x):
    return special.log_ndtr(x)


def pld_gaussian(
    noise_multiplier: float, interval: float = DEFAULT_INTERVAL
) -> PrivacyLossDistribution:
    """PLD of the Gaussian mechanism with L2 sensitivity 1.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation over the L2 sensitivity, ``s > 0``.
    interval : float, default=1e-4

    Returns
    -------
    pld : PrivacyLossDistribution

    Notes
    -----
    The pair ``N(0, s^2)`` against ``N(1, s^2)`` dominates every pair of a
    Gaussian mechanism whose L2 sensitivity (under the chosen neighbouring
    relation) is at most 1: the loss of a vector release depends on the
    output only through its projection on the difference of the means. Its
    loss is ``N(1 / (2 s^2), 1 / s^2)`` and
    ``P(L > e) = Phi(1/(2s) - e s)``, ``Q(L > e) = Phi(-1/(2s) - e s)``
    ([BW18]_, Theorem 8). ``k`` compositions are one Gaussian mechanism with
    multiplier ``s / sqrt(k)``.

    Examples
    --------
    >>> from skdp.accounting import gaussian_epsilon
    >>> from skdp.accounting._pld import pld_gaussian
    >>> pld_epsilon = pld_gaussian(2.0).epsilon_for_delta(1e-5)
    >>> exact = gaussian_epsilon(2.0, 1e-5)
    >>> bool(exact <= pld_epsilon <= exact + 1e-3)
    True
    """
    interval = _check_interval(interval)
    s = float(noise_multiplier)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {s!r}.")
    half = 1.0 / (2.0 * s)
    z = -special.ndtri(_NOISE_TAIL)
    mean, sd = 1.0 / (2.0 * s * s), 1.0 / s

    def log_masses(e):
        return (
            _log_ndtr(half - e * s),
            _log_ndtr(-half - e * s),
            _log_ndtr(e * s - half),
            _log_ndtr(e * s + half),
        )

    pmf = _connect_the_dots(log_masses, mean - z * sd, mean + z * sd, interval)
    return PrivacyLossDistribution(pmf)


def pld_laplace(
    epsilon: float, interval: float = DEFAULT_INTERVAL
) -> PrivacyLossDistribution:
    """PLD of the Laplace mechanism with scale ``sensitivity / epsilon``.

    Parameters
    ----------
    epsilon : float
        L1 sensitivity over the noise scale, > 0.
    interval : float, default=1e-4

    Returns
    -------
    pld : PrivacyLossDistribution

    Notes
    -----
    In units of the scale, ``P = Lap(0, 1)`` and ``Q = Lap(eps, 1)``; the
    loss is ``|x - eps| - |x|``: ``+eps`` for ``x <= 0``, ``-eps`` for
    ``x >= eps`` and ``eps - 2x`` between, so ``delta(e) = 1 - exp((e - eps)
    / 2)`` on ``[-eps, eps]``.

    The pair also dominates a vector release ``f(D) + Lap(0, b)^d`` whose
    shift ``v`` has ``||v||_1 <= eps b``. In two dimensions (and then in any,
    by induction, since domination is preserved by composition) the
    likelihood ratio is ``exp(2 S - eps)`` with ``S`` the sum of the
    coordinates clipped to ``[0, v_i]``, against ``exp(2 T - eps)`` with
    ``T`` the clipped scalar. Under ``P`` the distribution functions of
    ``S`` and ``T`` cross once (``S`` has the smaller atoms at both ends of
    ``[0, eps]``), so ``e^{2S}`` is smaller than ``e^{2T}`` in convex order
    (the means are equal: both are likelihood ratios); by Strassen's
    theorem the vector pair is then a post-processing of the scalar pair,
    hence has the smaller hockey-stick divergence at every ``epsilon``. The
    tests check this numerically.
    """
    interval = _check_interval(interval)
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"epsilon must be finite and > 0, got {eps!r}.")

    def inside(e):
        return np.clip(e, -eps, eps)

    def log_tail_p(e):
        # P(L > e) = F_P((eps - e) / 2) = 1 - exp(-(eps - e) / 2) / 2 inside.
        value = np.log1p(-0.5 * np.exp(-(eps - inside(e)) / 2.0))
        return np.where(e >= eps, -np.inf, np.where(e < -eps, 0.0, value))

    def log_tail_q(e):
        value = math.log(0.5) - (eps + inside(e)) / 2.0
        return np.where(e >= eps, -np.inf, np.where(e < -eps, 0.0, value))

    def log_head_p(e):
        value = math.log(0.5) - (eps - inside(e)) / 2.0
        return np.where(e >= eps, 0.0, np.where(e < -eps, -np.inf, value))

    def log_head_q(e):
        value = np.log1p(-0.5 * np.exp(-(eps + inside(e)) / 2.0))
        return np.where(e >= eps, 0.0, np.where(e < -eps, -np.inf, value))

    def log_masses(e):
        return log_tail_p(e), log_tail_q(e), log_head_p(e), log_head_q(e)

    pmf = _connect_the_dots(log_masses, -eps, eps, interval)
    return PrivacyLossDistribution(pmf)


def pld_discrete_laplace(
    noise_scale: float, sensitivity: int, interval: float = DEFAULT_INTERVAL
) -> PrivacyLossDistribution:
    """PLD of the discrete Laplace mechanism with an integer shift.

    Parameters
    ----------
    noise_scale : float
        ``t > 0``: the noise ``Z`` has ``P(Z = z)`` proportional to
        ``exp(-|z| / t)`` on the integers.
    sensitivity : int
        ``k >= 1``: the pair is ``P = Z`` against ``Q = Z + k``.
    interval : float, default=1e-4

    Returns
    -------
    pld : PrivacyLossDistribution

    Notes
    -----
    With ``r = exp(-1/t)``, ``P(Z <= m) = r**-m / (1 + r)`` for ``m <= 0``
    and ``1 - r**(m + 1) / (1 + r)`` for ``m >= 0``. The loss
    ``(|x - k| - |x|) / t`` decreases in ``x``, from ``eps = k / t`` (for
    ``x <= 0``) to ``-eps`` (for ``x >= k``) in steps of ``2 / t``, so
    ``P(L > e) = P(Z <= m(e))`` and ``Q(L > e) = P(Z <= m(e) - k)`` with
    ``m(e) = ceil((k - e t) / 2) - 1``: exact tails, discretised by connect
    the dots like every other mechanism here. For ``k = 1`` this is
    randomised response with parameter ``eps``. The pair is symmetric
    (reflect ``x`` to ``k - x``).

    Examples
    --------
    >>> from skdp.accounting._pld import pld_discrete_laplace, pld_pure_dp
    >>> count = pld_discrete_laplace(1.0, 1)  # a count at epsilon = 1
    >>> rr = pld_pure_dp(1.0)
    >>> abs(count.delta_for_epsilon(0.5) - rr.delta_for_epsilon(0.5)) < 1e-9
    True
    """
    interval = _check_interval(interval)
    t = float(noise_scale)
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"noise_scale must be finite and > 0, got {t!r}.")
    k = int(sensitivity)
    if k < 1 or k != sensitivity:
        raise ValueError(f"sensitivity must be an integer >= 1, got {sensitivity!r}.")
    eps = k / t
    log_r = -1.0 / t
    log_norm = np.logaddexp(0.0, log_r)  # log(1 + r)

    def log_cdf(m):
        """log P(Z <= m) for integer arrays m."""
        m = np.asarray(m, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            low = -np.abs(m) / t - log_norm
            high = np.log1p(-np.exp((m + 1.0) * log_r - log_norm))
        return np.where(m <= 0, low, high)

    def log_sf(m):
        """log P(Z > m) = log P(Z <= -m - 1) by symmetry."""
        return log_cdf(-np.asarray(m, dtype=float) - 1.0)

    def threshold(e):
        # Largest integer x with (k - 2x) / t > e; the loss is constant
        # outside [0, k], so clip to [-1, k] (x <= -1: L = eps > e
        # whenever e < eps; x = k: L = -eps).
        e = np.asarray(e, dtype=float)
        m = np.ceil((k - e * t) / 2.0) - 1.0
        m = np.where(e >= eps, -np.inf, np.where(e < -eps, np.inf, m))
        return m

    def log_masses(e):
        m = threshold(e)
        finite = np.isfinite(m)
        safe = np.where(finite, m, 0.0)
        tail_p = np.where(finite, log_cdf(safe), np.where(m > 0, 0.0, -np.inf))
        tail_q = np.where(finite, log_cdf(safe - k), np.where(m > 0, 0.0, -np.inf))
        head_p = np.where(finite, log_sf(safe), np.where(m > 0, -np.inf, 0.0))
        head_q = np.where(finite, log_sf(safe - k), np.where(m > 0, -np.inf, 0.0))
        return tail_p, tail_q, head_p, head_q

    pmf = _connect_the_dots(log_masses, -eps, eps, interval)
    return PrivacyLossDistribution(pmf)


def _log_asinh_exp(log_value: np.ndarray) -> np.ndarray:
    """``asinh(exp(v))`` without overflow."""
    value = np.asarray(log_value, dtype=float)
    small = value < 20.0
    out = np.empty_like(value)
    out[small] = np.arcsinh(np.exp(value[small]))
    big = value[~small]
    out[~small] = big + math.log(2.0) + np.log1p(np.exp(-2.0 * big) / 4.0)
    return out


def _log_sinh_abs(a: np.ndarray) -> np.ndarray:
    """``log(sinh(|a|))`` for ``a != 0``."""
    a = np.abs(a)
    return a + np.log1p(-np.exp(-2.0 * a)) - math.log(2.0)


def pld_poisson_subsampled_gaussian(
    sampling_rate: float,
    noise_multiplier: float,
    neighbouring_relation: str = "replace_one",
    interval: float = DEFAULT_INTERVAL,
) -> PrivacyLossDistribution:
    """PLD of one step of the Poisson-subsampled Gaussian mechanism.

    Parameters
    ----------
    sampling_rate : float
        Probability ``q`` in ``(0, 1]`` that a row joins the batch.
    noise_multiplier : float
        Noise standard deviation over the L2 bound ``C`` of one row's
        contribution, ``s > 0``.
    neighbouring_relation : {"replace_one", "add_remove"}, default="replace_one"
        Replace one row (skdp's relation) or add/remove one row.
    interval : float, default=1e-4

    Returns
    -------
    pld : PrivacyLossDistribution
        Symmetric for ``"replace_one"``; both directions for
        ``"add_remove"``.

    Notes
    -----
    In units of ``C``, with ``phi_m`` the density of ``N(m, s^2)``:

    * replace one row: the replaced row's contribution moves from ``+C`` to
      ``-C`` (the worst pair: ``2C`` apart), so ``P = (1 - q) phi_0 + q
      phi_1`` against ``Q = (1 - q) phi_0 + q phi_{-1}``; this is the pair
      of dp_accounting's ``NeighboringRelation.REPLACE_ONE`` ([GDPLD]_;
      [ZDW22]_ Section 5 for the dominating pairs of subsampling). With
      ``alpha = (1 - q) / q * exp(1 / (2 s^2))``, the loss exceeds ``e``
      exactly when ``x > s^2 (e / 2 + asinh(alpha sinh(e / 2)))``.
    * add/remove one row: ``P = (1 - q) phi_0 + q phi_1`` against
      ``Q = phi_0`` (removal) and the reverse pair (addition) ([MTZ19]_,
      [ZDW22]_); the loss is ``log(1 - q + q exp((2x - 1) / (2 s^2)))``.

    For replace-one, that moving the contribution to ``-C`` (rather than to
    another point of the ball of radius ``C``) is the worst replacement is
    dp_accounting's premise, and the issue's; the tests check it by
    integrating other replacements in the plane.
    ``sampling_rate=1`` is the unsampled Gaussian mechanism with sensitivity
    ``2C`` (replace) or ``C`` (add/remove).

    Examples
    --------
    >>> from skdp.accounting._pld import pld_poisson_subsampled_gaussian
    >>> step = pld_poisson_subsampled_gaussian(0.01, 1.0)
    >>> round(step.self_compose(1000).epsilon_for_delta(1e-5), 2)
    2.84
    """
    interval = _check_interval(interval)
    q = float(sampling_rate)
    s = float(noise_multiplier)
    if not 0 < q <= 1:
        raise ValueError(f"sampling_rate must be in (0, 1], got {q!r}.")
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {s!r}.")
    relation = str(getattr(neighbouring_relation, "value", neighbouring_relation))
    log_q = math.log(q)
    with np.errstate(divide="ignore"):
        log_rest = math.log1p(-q) if q < 1 else -math.inf
    z = -special.ndtri(_NOISE_TAIL)

    def log_mixture_tail(x, shift, upper):
        """log of (1 - q) Phi(-+x / s) + q Phi(-+(x - shift) / s)."""
        sign = -1.0 if upper else 1.0
        return np.logaddexp(
            log_rest + _log_ndtr(sign * x / s),
            log_q + _log_ndtr(sign * (x - shift) / s),
        )

    def normal_tail(x, shift, upper):
        sign = -1.0 if upper else 1.0
        return _log_ndtr(sign * (x - shift) / s)

    if relation == "replace_one":
        log_alpha = log_rest - log_q + 1.0 / (2.0 * s * s)

        def threshold(e):  # L > e  <=>  X > threshold(e)
            e = np.asarray(e, dtype=float)
            out = np.zeros_like(e)
            nonzero = e != 0
            inner = _log_asinh_exp(log_alpha + _log_sinh_abs(e[nonzero] / 2.0))
            out[nonzero] = s * s * (e[nonzero] / 2.0 + np.sign(e[nonzero]) * inner)
            return out

        def loss(x):
            return np.logaddexp(
                log_rest, log_q + (2 * x - 1) / (2 * s * s)
            ) - np.logaddexp(log_rest, log_q + (-2 * x - 1) / (2 * s * s))

        def log_masses(e):
            x = threshold(e)
            return (
                log_mixture_tail(x, 1.0, True),
                log_mixture_tail(x, -1.0, True),
                log_mixture_tail(x, 1.0, False),
                log_mixture_tail(x, -1.0, False),
            )

        high = float(loss(1.0 + z * s))
        pmf = _connect_the_dots(log_masses, -high, high, interval)
        return PrivacyLossDistribution(pmf)
    if relation != "add_remove":
        raise ValueError(
            "neighbouring_relation must be 'replace_one' or 'add_remove', got "
            f"{neighbouring_relation!r}."
        )

    def log_excess(e):
        """log((e^e - (1 - q)) / q), for e > log(1 - q)."""
        e = np.asarray(e, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            large = e + np.log1p(-np.exp(log_rest - e))
            small = np.log(np.expm1(e) + q)
        return np.where(e > 1.0, large, small) - log_q

    def loss_remove(x):
        return np.logaddexp(log_rest, log_q + (2 * x - 1) / (2 * s * s))

    # Removal: P = mixture with phi_1, Q = phi_0; the loss increases in x.
    floor = log_rest  # the loss never goes below log(1 - q)

    def x_remove(e):
        e = np.asarray(e, dtype=float)
        with np.errstate(invalid="ignore"):
            return np.where(e > floor, 0.5 + s * s * log_excess(e), -np.inf)

    def log_masses_remove(e):
        x = x_remove(e)
        return (
            log_mixture_tail(x, 1.0, True),
            normal_tail(x, 0.0, True),
            log_mixture_tail(x, 1.0, False),
            normal_tail(x, 0.0, False),
        )

    remove = _connect_the_dots(
        log_masses_remove,
        float(loss_remove(-z * s)),
        float(loss_remove(1.0 + z * s)),
        interval,
    )
    # Addition: P = phi_0, Q = mixture with phi_1; the loss decreases in x
    # and never exceeds -log(1 - q).
    ceiling = -log_rest

    def x_add(e):  # L > e  <=>  X < x_add(e)
        e = np.asarray(e, dtype=float)
        with np.errstate(invalid="ignore"):
            return np.where(e < ceiling, 0.5 + s * s * log_excess(-e), -np.inf)

    def log_masses_add(e):
        x = x_add(e)
        return (
            normal_tail(x, 0.0, False),
            log_mixture_tail(x, 1.0, False),
            normal_tail(x, 0.0, True),
            log_mixture_tail(x, 1.0, True),
        )

    add = _connect_the_dots(
        log_masses_add,
        -float(loss_remove(1.0 + z * s)),
        -float(loss_remove(-z * s)),
        interval,
    )
    return PrivacyLossDistribution(remove, add)
