"""Randomness for privacy noise: the OS CSPRNG, or a seed for tests.

Differential privacy assumes the noise is unpredictable to the adversary.
numpy's generators are not cryptographically secure: their state can be
recovered from outputs, and seeding numpy's global generator makes them
predictable. With ``random_state=None`` skdp therefore draws noise from the
operating system's CSPRNG (:func:`os.urandom`). An explicit seed gives
reproducible noise through a numpy generator; that is for tests and
examples, never for a release.

Everything is built from uniform 64-bit words, vectorised with numpy. The
integer draws here (:meth:`RandomSource.integers_below`,
:func:`geometric_exp_neg_one`) are exact: they use only integer arithmetic
on the words, draw more words whenever a decision needs them, and have no
tail truncation (an exact inversion for the geometric integer part of an
exponential). The samplers that only the mechanisms use, built on these
(Bernoulli(exp(-x)), exponential weights, the discrete Laplace and
Gaussian), are in :mod:`skdp.mechanisms`. The continuous draws
(:meth:`RandomSource.uniform`, the fractional part of
:meth:`RandomSource.exponential`, :meth:`RandomSource.standard_normal`) are
floating-point approximations of continuous laws, with no truncation of
their tails beyond what the float range imposes.

References
----------
C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020, arXiv:2004.00010.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from numbers import Integral
from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "RandomSource",
    "check_random_source",
    "geometric_exp_neg_one",
]

_TWO_POW_M53 = 2.0**-53
_ONE_MINUS_INV_E = -math.expm1(-1.0)
_TWO_POW_64 = 1 << 64

#: numpy bit generators whose raw output is one uniform 64-bit word.
_RAW_64_BIT = frozenset({"PCG64", "PCG64DXSM", "Philox", "SFC64"})


def _shape(size) -> tuple[int, ...]:
    return (int(size),) if isinstance(size, Integral) else tuple(int(s) for s in size)


class RandomSource:
    """Uniform random words from the OS CSPRNG or from a numpy generator.

    Parameters
    ----------
    generator : numpy.random.Generator or None, default=None
        ``None`` draws from :func:`os.urandom` (secure, not reproducible);
        a generator gives reproducible draws (testing only).

    Examples
    --------
    >>> from skdp.utils import RandomSource
    >>> RandomSource().is_secure
    True
    >>> u = RandomSource().uniform(1000)
    >>> bool(((u > 0) & (u < 1)).all())
    True
    """

    def __init__(self, generator: np.random.Generator | None = None) -> None:
        self._generator = generator

    @property
    def is_secure(self) -> bool:
        """True when the words come from the operating system's CSPRNG."""
        return self._generator is None

    def __repr__(self):
        return "RandomSource(os.urandom)" if self.is_secure else "RandomSource(seeded)"

    def words(self, size: int) -> np.ndarray:
        """``size`` independent uniform 64-bit unsigned integers."""
        size = int(size)
        if self._generator is None:
            return np.frombuffer(os.urandom(8 * size), dtype=np.uint64).copy()
        if type(self._generator.bit_generator).__name__ in _RAW_64_BIT:
            # Raw outputs of these bit generators are uniform 64-bit words,
            # and much cheaper to get than through Generator.integers.
            return self._generator.bit_generator.random_raw(size)
        return self._generator.integers(
            0, 2**64, size=size, dtype=np.uint64, endpoint=False
        )

    def bits(self, size: int) -> np.ndarray:
        """``size`` independent fair bits as a boolean array (64 per word).

        The bits of each word are taken from its least significant byte up,
        most significant bit first within a byte, on every platform.
        """
        size = int(size)
        packed = self.words(-(-size // 64)).astype("<u8").view(np.uint8)
        return np.unpackbits(packed, count=size).astype(bool)

    def integers_below(self, bound: ArrayLike, size: int | None = None) -> np.ndarray:
        """Exactly uniform integers in ``{0, ..., bound - 1}``, as int64.

        Parameters
        ----------
        bound : int or array-like of int
            ``1 <= bound <= 2**63 - 1``; an array gives one draw per entry.
        size : int, optional
            Number of draws for a scalar ``bound`` (ignored for an array).

        Notes
        -----
        Rejection from 64-bit words: a word ``w`` is accepted when it lies
        in one of the ``floor(2**64 / bound)`` whole blocks of ``bound``
        consecutive values starting at 0, so ``w mod bound`` is exactly
        uniform. Rejected words (probability below ``bound / 2**64``) are
        redrawn.
        """
        if np.ndim(bound) == 0:
            scalar = int(bound)  # type: ignore[arg-type]  # a scalar: ndim 0
            if not 1 <= scalar < 1 << 63:
                raise ValueError(f"bound must be in [1, 2**63), got {bound!r}.")
            return self._integers_below(scalar, int(size))  # type: ignore[arg-type]
        bound = np.asarray(bound)
        if bound.size and not (bound.min() >= 1 and bound.max() < 1 << 63):
            raise ValueError("bounds must be in [1, 2**63).")
        return self._integers_below(bound, None)

    def _integers_below(self, bound, size=None) -> np.ndarray:
        """:meth:`integers_below` without the argument checks (internal)."""
        if size is not None:  # one scalar bound
            words = self.words(size)
            accepted = _TWO_POW_64 - _TWO_POW_64 % bound  # whole blocks of `bound`
            if accepted < _TWO_POW_64:
                accepted = np.uint64(accepted)
                bad = np.flatnonzero(words >= accepted)
                while bad.size:
                    words[bad] = self.words(bad.size)
                    bad = bad[words[bad] >= accepted]
            return (words % np.uint64(bound)).view(np.int64)
        b = bound.astype(np.uint64).ravel()
        words = self.words(b.size)
        remainder = words % b
        # Accept w when the block of `b` values containing it fits below
        # 2**64: w - (w mod b) <= 2**64 - b, computed in wrapping uint64.
        bad = np.flatnonzero(words - remainder > np.uint64(0) - b)
        while bad.size:
            words = self.words(bad.size)
            remainder[bad] = words % b[bad]
            bad = bad[words - remainder[bad] > np.uint64(0) - b[bad]]
        return remainder.view(np.int64)

    def uniform(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniform floats on the grid ``(k + 1/2) 2**-53``, strictly in (0, 1)."""
        shape = _shape(size)
        n = math.prod(shape)
        k = (self.words(n) >> np.uint64(11)).astype(np.float64)
        return ((k + 0.5) * _TWO_POW_M53).reshape(shape)

    def exponential(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Standard exponential variates with unbounded support.

        ``E = K + F``: the integer part ``K`` with ``P(K >= k) = e**-k``,
        drawn exactly by ``geometric_exp_neg_one`` (no cap), and the
        fractional part ``F`` with density proportional to ``e**-f`` on
        ``[0, 1)``, by inversion of a uniform from :meth:`uniform`. ``K`` and
        ``F`` are independent, as the integer and fractional parts of an
        exponential variable are.

        Notes
        -----
        ``K`` is exact. ``F = -log1p(-U (1 - 1/e))`` is a floating-point
        approximation of its continuous law: ``U`` lies on a grid of spacing
        ``2**-53`` and the logarithm is rounded, so ``F`` takes finitely many
        values, spaced about ``2**-53`` apart. Earlier versions also drew
        ``K`` from a float uniform, which capped ``E`` near 36.7.
        """
        shape = _shape(size)
        n = math.prod(shape)
        k = geometric_exp_neg_one(n, self).astype(np.float64)
        f = -np.log1p(-self.uniform(n) * _ONE_MINUS_INV_E)
        return (k + f).reshape(shape)

    def standard_normal(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Standard normal variates (Box-Muller on secure draws).

        The radius is ``sqrt(2 E)`` with ``E`` from :meth:`exponential`, so
        it is unbounded; radius and angle are floating-point approximations
        of their continuous laws (see :meth:`exponential`).
        """
        shape = _shape(size)
        n = math.prod(shape)
        m = (n + 1) // 2
        radius = np.sqrt(2.0 * self.exponential(m))
        angle = 2.0 * np.pi * self.uniform(m)
        z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:n]
        return z.reshape(shape)

    def bernoulli(self, p: ArrayLike, size: int | tuple[int, ...]) -> np.ndarray:
        """Boolean array, each True with probability ``p`` (to within ``2**-53``)."""
        return self.uniform(size) < p

    def poisson_subsample(self, n: int, rate: float) -> np.ndarray:
        """Indices of a Poisson subsample: each of ``range(n)`` kept w.p. ``rate``.

        Draws the gaps between kept indices, ``floor(E / -log(1 - rate)) + 1``
        with ``E`` from :meth:`exponential` (geometric, with no cap), so the
        cost is proportional to the sample size, not to ``n``. The gap law is
        exact up to the rounding of ``E`` and of the logarithm.
        """
        return self.poisson_subsamples(n, rate, 1)[0]

    def poisson_subsamples(self, n: int, rate: float, count: int) -> list[np.ndarray]:
        """``count`` independent Poisson subsamples of ``range(n)``, in one draw.

        One Bernoulli process over ``count * n`` positions (the gaps of
        :meth:`poisson_subsample`), cut into ``count`` runs of ``n``: position
        ``p`` keeps row ``p mod n`` in subsample ``p // n``. Every position
        is kept independently with probability ``rate``, so the subsamples
        are independent, each with the law of :meth:`poisson_subsample`
        (which is this with ``count=1``, the same draws), for the cost of
        one call. A loop of many small subsamples (DP-SGD's steps) draws a
        block of them at once.

        Examples
        --------
        >>> from skdp.utils import check_random_source
        >>> batches = check_random_source(0).poisson_subsamples(10, 0.5, 3)
        >>> len(batches), all(b.min(initial=0) >= 0 and b.max(initial=0) < 10
        ...                   for b in batches)
        (3, True)
        """
        if rate >= 1:
            return [np.arange(n) for _ in range(count)]
        if rate <= 0 or n == 0:
            return [np.empty(0, dtype=np.intp) for _ in range(count)]
        total = n * count
        expected = total * rate
        chunk = int(expected + 6 * math.sqrt(expected) + 16)
        log_q = math.log1p(-rate)
        out = []
        position = -1
        while True:
            # A gap beyond the last position ends the draw whatever its value;
            # bounding it there keeps the int64 conversion exact.
            gaps = np.minimum(np.floor(self.exponential(chunk) / -log_q), total) + 1
            idx = position + np.cumsum(gaps.astype(np.int64))
            keep = idx[idx < total]
            out.append(keep)
            if keep.size < idx.size:
                break
            position = int(idx[-1])
        positions = np.concatenate(out)
        cuts = np.searchsorted(positions, np.arange(1, count, dtype=np.int64) * n)
        return [
            (run - step * n).astype(np.intp)
            for step, run in enumerate(np.split(positions, cuts))
        ]

    def numpy_generator(self) -> np.random.Generator:
        """A numpy generator seeded from this source (for post-processing only)."""
        seed = [int(w) for w in self.words(4)]
        return np.random.default_rng(seed)

    def substream(self) -> RandomSource:
        """A source for one sampler call: this one if secure, else a child.

        The exact samplers use as many words as their rejections need, which
        depends on the values drawn and on the parameters. A seeded source
        therefore hands each call a child generator seeded with four of its
        words, so that a call always takes four words from the caller's
        stream and what the caller draws next does not shift with it.
        """
        if self._generator is None:
            return self
        return RandomSource(self.numpy_generator())


#: What a ``random_state`` parameter accepts (``None``: the OS CSPRNG).
RandomStateLike: TypeAlias = (
    int | np.random.RandomState | np.random.Generator | RandomSource | None
)


def check_random_source(random_state: RandomStateLike) -> RandomSource:
    """Turn a scikit-learn style ``random_state`` into a :class:`RandomSource`.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState, numpy.random.Generator
        or RandomSource
        ``None`` gives the secure OS source: the only choice for a release.
        Anything else gives reproducible, predictable noise for tests.

    Returns
    -------
    source : RandomSource

    Examples
    --------
    >>> from skdp.utils import check_random_source
    >>> a = check_random_source(0).uniform(3)
    >>> b = check_random_source(0).uniform(3)
    >>> bool((a == b).all())
    True
    >>> check_random_source(None).is_secure
    True
    """
    if random_state is None:
        return RandomSource()
    if isinstance(random_state, RandomSource):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return RandomSource(random_state)
    if isinstance(random_state, np.random.RandomState):
        seed = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
        return RandomSource(np.random.default_rng([int(s) for s in seed]))
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        return RandomSource(np.random.default_rng(int(random_state)))
    raise ValueError(
        f"random_state must be None, an int, a numpy RandomState or Generator, "
        f"got {random_state!r}."
    )


# -- the exact geometric draw of the exponential's integer part ---------------


def geometric_exp_neg_one(size: int, source: RandomSource) -> np.ndarray:
    """Exact draws of ``K >= 0`` with ``P(K >= k) = e**-k``, as int64.

    Parameters
    ----------
    size : int
        Number of draws.
    source : RandomSource

    Returns
    -------
    k : ndarray of shape (size,)

    Notes
    -----
    ``K`` is the number of successes of independent Bernoulli(``e**-1``)
    trials before the first failure, drawn by inversion with exact
    arithmetic: ``K = #{k >= 1 : U < e**-k}`` for a uniform real ``U`` in
    (0, 1), so ``P(K >= k) = P(U < e**-k) = e**-k`` for every ``k``, with no
    upper limit. ``U`` is revealed 64 bits at a time and compared with the
    binary expansion of ``e**-k``, computed exactly with integers
    (:func:`_exp_neg_floor`); a comparison is decided only once the bits
    seen settle it. The first word settles all of them unless it equals one
    of the 40 tabulated thresholds ``floor(2**64 e**-k)``, or lies below
    ``floor(2**64 e**-40)`` (together, probability below ``2**-57``); those
    draws continue with Python integers (:func:`_py_geometric_exp_neg_one`).
    This replaces the Bernoulli(``e**-1``) loop of Canonne, Kamath & Steinke
    (2020), Algorithm 2, by an equivalent exact draw with one word instead
    of a loop.

    Examples
    --------
    >>> from skdp.utils import check_random_source
    >>> from skdp.utils._random import geometric_exp_neg_one
    >>> k = geometric_exp_neg_one(100_000, check_random_source(0))
    >>> bool(abs((k >= 1).mean() - 0.3679) < 0.01)
    True
    """
    thresholds = _geometric_thresholds()
    words = source.words(int(size))
    position = np.searchsorted(thresholds, words, side="right")
    count = thresholds.size - position.astype(np.int64)
    # Undecided: below the smallest threshold, or equal to one.
    undecided = (position == 0) | (thresholds[position - 1] == words)
    for i in np.flatnonzero(undecided):
        count[i] = _py_geometric_exp_neg_one(source, first_word=int(words[i]))
    return count


#: floor(2**64 e**-k) for k = 40, 39, ..., 1 (ascending), computed on first use.
_GEOMETRIC_TABLE: list[np.ndarray] = []


def _geometric_thresholds() -> np.ndarray:
    if not _GEOMETRIC_TABLE:
        table = [_exp_neg_floor(k, 64) for k in range(40, 0, -1)]
        _GEOMETRIC_TABLE.append(np.array(table, dtype=np.uint64))
    return _GEOMETRIC_TABLE[0]


def _exp_neg_floor(k: int, bits: int) -> int:
    """``floor(2**bits * e**-k)`` exactly, for integers ``k >= 1``, ``bits >= 0``.

    ``e**k`` lies between the Taylor sum ``S_n = sum_{j <= n} k**j / j!`` and
    ``S_n + k**(n+1) / (n+1)! * (n+2) / (n+2-k)`` (a geometric bound on the
    remainder, valid for ``n + 2 > k``); the floor is returned once both
    ends of the resulting interval for ``2**bits e**-k`` have the same
    integer part, adding terms until they do (``e**-k`` is irrational, so
    they eventually do).
    """
    n = 2 * k + bits // 4 + 16
    while True:
        factorial = math.factorial(n)
        partial = sum(k**j * (factorial // math.factorial(j)) for j in range(n + 1))
        upper = ((1 << bits) * factorial) // partial
        tail = Fraction(k ** (n + 1), math.factorial(n + 1)) * Fraction(
            n + 2, n + 2 - k
        )
        lower = math.floor((1 << bits) / (Fraction(partial, factorial) + tail))
        if lower == upper:
            return upper
        n *= 2


def _py_geometric_exp_neg_one(source: RandomSource, first_word=None) -> int:
    """:func:`geometric_exp_neg_one` for one draw, with Python integers.

    ``U``'s bits so far are ``prefix`` (``bits`` of them), so ``U`` lies in
    ``[prefix, prefix + 1) / 2**bits``. With ``t = floor(2**bits e**-k)``,
    ``prefix < t`` proves ``U < e**-k``, ``prefix > t`` proves ``U > e**-k``,
    and a tie draws 64 more bits.
    """
    prefix = int(source.words(1)[0]) if first_word is None else first_word
    bits = 64
    count = 0
    while True:
        threshold = _exp_neg_floor(count + 1, bits)
        if prefix < threshold:
            count += 1
        elif prefix > threshold:
            return count
        else:
            prefix = (prefix << 64) | int(source.words(1)[0])
            bits += 64


# -- Python-integer version: for bounds beyond int64 ---------------------------


def _py_below(bound: int, source: RandomSource) -> int:
    """Exactly uniform integer in ``{0, ..., bound - 1}`` for any ``bound >= 1``."""
    nbits = (bound - 1).bit_length()
    if nbits == 0:
        return 0
    nwords = -(-nbits // 64)
    while True:
        value = 0
        for word in source.words(nwords):
            value = (value << 64) | int(word)
        value >>= 64 * nwords - nbits
        if value < bound:
            return value
