"""Randomness for privacy noise: the OS CSPRNG, or a seed for tests.

Differential privacy assumes the noise is unpredictable to the adversary.
numpy's generators are not cryptographically secure: their state can be
recovered from outputs, and seeding numpy's global generator makes them
predictable. With ``random_state=None`` skdp therefore draws noise from the
operating system's CSPRNG (:func:`os.urandom`). An explicit seed gives
reproducible noise through a numpy generator; that is for tests and
examples, never for a release.

All samplers are built from uniform 64-bit words, vectorised with numpy.
"""

from __future__ import annotations

import math
import os
from numbers import Integral

import numpy as np

__all__ = ["RandomSource", "check_random_source"]

_TWO_POW_M53 = 2.0**-53
_ONE_MINUS_INV_E = -math.expm1(-1.0)


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

    def __init__(self, generator: np.random.Generator | None = None):
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
        return self._generator.integers(
            0, 2**64, size=size, dtype=np.uint64, endpoint=False
        )

    def uniform(self, size) -> np.ndarray:
        """Uniform floats on the grid ``(k + 1/2) 2**-53``, strictly in (0, 1)."""
        shape = (size,) if isinstance(size, Integral) else tuple(size)
        n = int(np.prod(shape, dtype=np.int64))
        k = (self.words(n) >> np.uint64(11)).astype(np.float64)
        return ((k + 0.5) * _TWO_POW_M53).reshape(shape)

    def exponential(self, size) -> np.ndarray:
        """Standard exponential variates with uniform resolution in the tails.

        ``E = K + F`` with ``K = floor(E)`` geometric and ``F`` the fractional
        part, drawn from separate uniforms. Unlike ``-log(U)``, the spacing
        between attainable values stays near ``2**-52`` over the whole range
        up to about 36, so no region of the support is porous. The tail
        beyond 36 (probability ``e**-36 < 3e-16``) is truncated.
        """
        u1 = self.uniform(size)
        u2 = self.uniform(size)
        k = np.floor(-np.log(u1))
        f = -np.log1p(-u2 * _ONE_MINUS_INV_E)
        return k + f

    def standard_normal(self, size) -> np.ndarray:
        """Standard normal variates (Box-Muller on secure uniforms)."""
        shape = (size,) if isinstance(size, Integral) else tuple(size)
        n = int(np.prod(shape, dtype=np.int64))
        m = (n + 1) // 2
        radius = np.sqrt(2.0 * self.exponential(m))
        angle = 2.0 * np.pi * self.uniform(m)
        z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:n]
        return z.reshape(shape)

    def bernoulli(self, p, size) -> np.ndarray:
        """Boolean array, each True with probability ``p``."""
        return self.uniform(size) < p

    def poisson_subsample(self, n: int, rate: float) -> np.ndarray:
        """Indices of a Poisson subsample: each of ``range(n)`` kept w.p. ``rate``.

        Draws the gaps between kept indices (geometric), so the cost is
        proportional to the sample size, not to ``n``.
        """
        if rate >= 1:
            return np.arange(n)
        if rate <= 0 or n == 0:
            return np.empty(0, dtype=np.intp)
        expected = n * rate
        chunk = int(expected + 6 * math.sqrt(expected) + 16)
        log_q = math.log1p(-rate)
        out = []
        position = -1
        while True:
            gaps = np.floor(self.exponential(chunk) / -log_q).astype(np.int64) + 1
            idx = position + np.cumsum(gaps)
            keep = idx[idx < n]
            out.append(keep)
            if keep.size < idx.size:
                break
            position = int(idx[-1])
        return np.concatenate(out).astype(np.intp)

    def gumbel_argmax(self, logits) -> int:
        """Index ``i`` drawn with probability proportional to ``exp(logits[i])``.

        The Gumbel-max trick: ``argmax(logits - log(E))`` with ``E``
        standard exponential.
        """
        logits = np.asarray(logits, dtype=float).ravel()
        return int(np.argmax(logits - np.log(self.exponential(logits.size))))

    def numpy_generator(self) -> np.random.Generator:
        """A numpy generator seeded from this source (for post-processing only)."""
        seed = [int(w) for w in self.words(4)]
        return np.random.default_rng(seed)


def check_random_source(random_state) -> RandomSource:
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
