"""Integer-valued noise on a grid: exact discrete Laplace and discrete Gaussian.

Textbook Laplace sampling in floating point leaks the input through the set
of floats it can output (Mironov 2012, "On significance of the least
significant bits for differential privacy"). skdp's additive mechanisms
instead work on a grid of spacing ``gamma`` (a power of two): the input is
rounded to the grid, integer noise from the discrete Laplace or discrete
Gaussian distribution (Canonne, Kamath & Steinke 2020, "The Discrete
Gaussian for Differential Privacy") is added in grid units, and the result
is a multiple of ``gamma``. Every input then has the same set of possible
outputs, which removes the porous-support attack. Rounding moves each
coordinate by at most ``gamma / 2``, so the mechanisms calibrate the noise to
the sensitivity plus the rounding slack (``d * gamma`` in L1,
``sqrt(d) * gamma`` in L2).

The noise is sampled exactly, with no truncation: Canonne, Kamath &
Steinke's Algorithms 1-3, built only from uniform random integers
(:class:`~skdp.utils.RandomSource`) and integer arithmetic, vectorised with numpy.
Every integer has positive probability, as the pure and zero-concentrated
DP guarantees require; a sampler built from floating-point uniforms cannot
reach the far tails, which makes the supports of neighbouring outputs
differ with probability about ``1e-17``. Elements whose arithmetic would
leave the int64 range are finished with Python integers.

Like every rejection sampler, these take a time that depends on the values
drawn; timing is a side channel skdp does not close (Jin, McMurtry,
Rubinstein & Ohrimenko 2022, "Are We There Yet? Timing and Floating-Point
Attacks on Differential Privacy Systems").
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..utils._random import RandomSource, _py_below, _shape, geometric_exp_neg_one
from . import _bernoulli
from ._bernoulli import (
    _as_integers,
    _bernoulli_exp_neg_unit,
    _py_bernoulli_exp_neg,
)

__all__ = [
    "GRID_BITS",
    "grid_spacing",
    "round_to_grid",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

#: The grid spacing is the largest power of two at most ``scale * 2**-GRID_BITS``.
GRID_BITS = 32
# Integers of magnitude below 2**53 are exact in float64; inputs are clipped
# to 2**50 grid steps so that input plus noise stays exact.
_MAX_GRID_INDEX = 2.0**50


def _check_scale(name: str, value: float) -> float:
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}.")
    return value


def grid_spacing(noise_scale: float) -> float:
    """Power-of-two grid spacing about ``2**-GRID_BITS`` times the noise scale."""
    noise_scale = _check_scale("noise scale", noise_scale)
    return 2.0 ** math.floor(math.log2(noise_scale) - GRID_BITS)


def round_to_grid(value, gamma: float) -> np.ndarray:
    """Integer grid indices of ``value`` (clipped to +-2**50 steps)."""
    index = np.rint(np.asarray(value, dtype=float) / gamma)
    # np.minimum / np.maximum: np.clip's dispatch costs more than the work
    # on DP-SGD's small sums; a NaN stays NaN either way.
    return np.minimum(np.maximum(index, -_MAX_GRID_INDEX), _MAX_GRID_INDEX)


# -- discrete Laplace ---------------------------------------------------------


def _laplace_ratio(scale: float) -> tuple[int, int]:
    """``scale`` as ``t / s`` in lowest terms, rounded up if ``s`` is too large.

    A float is a dyadic rational, so ``s`` is a power of two. For scales
    below about ``2**-10`` it can reach ``2**62``; it is then replaced by
    the largest power of two below ``_LIMIT`` (``2**61``) and ``t`` rounded
    up: the scale becomes the next multiple of ``2**-61``, a relative
    increase below ``2**-61 / scale``.
    """
    exact = Fraction(scale)
    t, s = exact.numerator, exact.denominator
    if s >= _bernoulli._LIMIT:
        s = 1 << (_bernoulli._LIMIT.bit_length() - 2)
        t = math.ceil(exact * s)
    return t, s


def _discrete_laplace(t: int, s: int, n: int, source: RandomSource) -> np.ndarray:
    """``n`` exact draws with ``P(z)`` proportional to ``exp(-|z| s / t)``.

    Returns an int64 array, or an object array of Python ints if a draw
    leaves the int64 range. Canonne, Kamath & Steinke (2020), Algorithm 2,
    vectorised over a batch of independent trials (the first ``n`` accepted
    trials are returned, which keeps them independent and identically
    distributed):

    1. ``U`` uniform in ``{0, ..., t-1}``, kept with probability
       ``exp(-U/t)`` (Algorithm 1), so ``P(U = u)`` is proportional to
       ``exp(-u/t)``;
    2. ``V`` with ``P(V >= v) = e**-v`` (:func:`geometric_exp_neg_one`), so
       ``X = U + t V`` has ``P(X = x)`` proportional to ``exp(-x/t)``;
    3. ``Y = floor(X / s)``, geometric with ``P(Y = y)`` proportional to
       ``exp(-y s / t)``;
    4. a fair sign bit ``B``, rejecting ``(B = 1, Y = 0)`` so that zero is not
       counted twice; the draw is ``(1 - 2B) Y``.
    """
    limit = _bernoulli._LIMIT
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if t >= limit or s >= limit or n <= _bernoulli._SMALL:
        return _as_integers([_py_discrete_laplace(t, s, source) for _ in range(n)])
    # Accepted fraction of trials: (1 - 1/e) in step 1 (for t >= 1, at least),
    # times 1 - P(Y = 0) / 2 in step 4.
    acceptance = -math.expm1(-1.0) * (1 + math.exp(-s / t)) / 2
    parts = []
    filled = 0
    while filled < n:
        batch = int((n - filled) / acceptance * 1.05) + 16
        u = source._integers_below(t, batch)
        u = u[_bernoulli_exp_neg_unit(batch, [(u, t)], source)]
        v = geometric_exp_neg_one(u.size, source)
        negative = source.bits(u.size)
        big = v > (limit - 1 - u) // t  # u + t v would reach the limit
        y = (u + t * np.where(big, 0, v)) // s
        keep = ~(negative & (y == 0))
        z = np.where(negative, -y, y)
        if big.any():
            z = z.astype(object)
            for i in np.flatnonzero(big):
                yi = (int(u[i]) + t * int(v[i])) // s
                keep[i] = not (negative[i] and yi == 0)
                z[i] = -yi if negative[i] else yi
        z = z[keep][: n - filled]
        parts.append(z)
        filled += z.size
    return _as_integers(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def _py_discrete_laplace(t: int, s: int, source: RandomSource) -> int:
    """Canonne, Kamath & Steinke (2020), Algorithm 2, with Python integers."""
    while True:
        u = _py_below(t, source)
        if not _py_bernoulli_exp_neg(u, t, source):
            continue
        v = 0
        while _py_bernoulli_exp_neg(1, 1, source):
            v += 1
        y = (u + t * v) // s
        negative = _py_below(2, source) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def sample_discrete_laplace(
    scale: float, size: int | tuple[int, ...], source: RandomSource
) -> np.ndarray:
    r"""Exact draws with ``P(z)`` proportional to ``exp(-|z| / scale)`` on the integers.

    Parameters
    ----------
    scale : float
        The scale ``b > 0``, in grid steps.
    size : int or tuple of int
        Output shape.
    source : RandomSource
        Where the random words come from; a seeded source lends the call a
        child stream (:meth:`~skdp.utils.RandomSource.substream`).

    Returns
    -------
    draws : ndarray of float64
        Exact integers (draws beyond :math:`2^{53}` in magnitude, which have
        probability below :math:`\exp(-2^{53} / b)`, are rounded to the
        nearest float).

    Notes
    -----
    Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
    Differential Privacy", Algorithm 2 (with Algorithm 1 for the
    Bernoulli(:math:`e^{-\gamma}`) draws): :math:`P(z) \propto e^{-|z|/b}`
    on the integers, for the rational scale :math:`b = t / s`. The float
    ``scale`` is the dyadic rational it holds, ``fractions.Fraction(scale)``,
    used as is except when its denominator reaches :math:`2^{62}` (scales
    below about :math:`2^{-10}`); then it is rounded up to the next multiple
    of :math:`2^{-61}` (a relative increase below :math:`2^{-61} / b`,
    :math:`2^{-51}` at :math:`2^{-10}`), which can only add noise. The
    sampler uses only uniform random integers and integer arithmetic: every
    integer has exactly its probability, with no truncated tail. Earlier
    versions took the difference of two :math:`\lfloor bE \rfloor` with
    :math:`E` a floating-point exponential, which could not exceed about
    :math:`38 b`. Elements whose arithmetic would overflow int64
    (:math:`U + tV \ge 2^{62}`) are finished with Python integers; scales of
    ``2**62`` or more run entirely with Python integers (slowly), as do
    calls for at most 8 draws (faster than numpy there).

    Examples
    --------
    >>> from skdp.mechanisms import sample_discrete_laplace
    >>> from skdp.utils import check_random_source
    >>> z = sample_discrete_laplace(3.0, 1000, check_random_source(0))
    >>> bool((z == z.round()).all())
    True
    """
    scale = _check_scale("scale", scale)
    shape = _shape(size)
    t, s = _laplace_ratio(scale)
    draws = _discrete_laplace(t, s, math.prod(shape), source.substream())
    return draws.astype(np.float64).reshape(shape)


# -- discrete Gaussian --------------------------------------------------------


def _gaussian_parameters(sigma: float) -> tuple[int, int, int]:
    """``(t, p, q)``: Laplace scale ``t`` and ``sigma'**2 = p t / q >= sigma**2``.

    ``t = floor(sigma) + 1`` as in Canonne, Kamath & Steinke (2020),
    Algorithm 3, ``q`` a power of two with ``t q`` about ``2**48``, and
    ``p = ceil(sigma**2 q / t)``, so that ``sigma**2 / t`` is replaced by the
    rational ``p / q`` rounded up: ``sigma'**2`` exceeds ``sigma**2`` by less
    than ``t / q``: a relative ``2**-45`` at most for ``sigma >= 1`` (about
    ``2**-47`` for large ``sigma``), an absolute ``2**-47`` for
    ``sigma < 1``, and nothing when ``sigma**2 q / t`` is an integer (e.g.
    ``sigma = 1.5``).
    """
    t = math.floor(sigma) + 1
    q = 1 << max(0, 48 - t.bit_length())
    p = math.ceil(Fraction(sigma) ** 2 * q / t)
    return t, p, q


def _bernoulli_exp_neg_square(
    m: np.ndarray, a: int, b: int, source: RandomSource
) -> np.ndarray:
    """Exact Bernoulli(``exp(-m**2 / (a b))``) for int64 ``m``, with no product formed.

    ``m**2 / (a b) = (m / a) (m / b)`` is split into ``w_a w_b`` equal pieces
    with ``w_a = max(1, ceil(m / a))`` and ``w_b = max(1, ceil(m / b))``: each
    piece ``(m / (w_a a)) (m / (w_b b))`` is a product of two ratios at most
    1, so its Bernoulli(``exp(-piece)``) is Algorithm 1's ``gamma <= 1``
    loop with ``Bernoulli(piece / j)`` drawn as independent
    ``Bernoulli(1/j)``, ``Bernoulli(m / (w_a a))`` and
    ``Bernoulli(m / (w_b b))``. The draw is the conjunction of the pieces
    (stopping at the first failure), whose probabilities multiply to
    ``exp(-m**2 / (a b))``. Requires ``m, a, b < _LIMIT`` and
    ``w_a w_b < _LIMIT``.
    """
    den_a, den_b = _piece_denominator(m, a), _piece_denominator(m, b)
    remaining = (den_a // a) * (den_b // b)
    result = np.ones(m.size, dtype=bool)
    active = np.arange(m.size)
    while active.size:
        passed = _bernoulli_exp_neg_unit(
            active.size,
            [(m[active], den_a[active]), (m[active], den_b[active])],
            source,
        )
        result[active[~passed]] = False
        remaining[active] -= 1
        active = active[passed & (remaining[active] > 0)]
    return result


def _piece_denominator(m: np.ndarray, d: int) -> np.ndarray:
    """``max(1, ceil(m / d)) * d``, dividing only where ``m > d``."""
    out = np.full(m.size, d, dtype=np.int64)
    big = np.flatnonzero(m > d)
    out[big] = (m[big] + (d - 1)) // d * d
    return out


def _py_discrete_gaussian(t: int, p: int, q: int, source: RandomSource) -> int:
    """Canonne, Kamath & Steinke (2020), Algorithm 3, with Python integers.

    ``sigma**2 = p t / q``: ``Y`` from the discrete Laplace with scale ``t``
    is accepted with probability ``exp(-(|Y| - sigma**2/t)**2 / (2 sigma**2))
    = exp(-(|Y| q - p)**2 / (2 p t q))``.
    """
    while True:
        y = _py_discrete_laplace(t, 1, source)
        m = abs(abs(y) * q - p)
        if _py_bernoulli_exp_neg(m * m, 2 * p * t * q, source):
            return y


def sample_discrete_gaussian(
    sigma: float, size: int | tuple[int, ...], source: RandomSource
) -> np.ndarray:
    r"""Exact draws with ``P(z)`` proportional to ``exp(-z**2 / (2 sigma**2))``.

    Parameters
    ----------
    sigma : float
        The scale ``sigma > 0``, in grid steps.
    size : int or tuple of int
        Output shape.
    source : RandomSource
        Where the random words come from; a seeded source lends the call a
        child stream (:meth:`~skdp.utils.RandomSource.substream`).

    Returns
    -------
    draws : ndarray of float64
        Exact integers (draws beyond ``2**53`` in magnitude are rounded to
        the nearest float; they have probability below
        ``exp(-2**105 / sigma**2)``).

    Notes
    -----
    Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
    Differential Privacy", Algorithm 3: :math:`Y` from the discrete Laplace
    with scale :math:`t = \lfloor\sigma\rfloor + 1` (Algorithm 2) is
    accepted with probability
    :math:`\exp(-(|Y| - \sigma^2/t)^2 / (2\sigma^2))`, which leaves
    :math:`P(Y = y)` proportional to :math:`\exp(-y^2 / (2\sigma^2))`. The
    acceptance is an exact Bernoulli draw (Algorithm 1), not a
    floating-point comparison: with :math:`\sigma^2 / t = p / q` it is
    Bernoulli(:math:`\exp(-m^2 / (2ptq))`) for the integer
    :math:`m = \big|\,|Y| q - p\,\big|`, drawn without forming
    :math:`m^2` (which overflows int64 at :math:`\sigma` near
    :math:`2^{32}`) by splitting
    the exponent into pieces that are products of two ratios below 1 (see
    ``_bernoulli_exp_neg_square``). Only uniform random integers are
    used; every integer has exactly its probability, with no truncation.

    Conservative rounding: ``sigma**2`` is rounded up to the rational
    ``p t / q`` (``q`` a power of two with ``t q`` near ``2**48``), a relative
    increase below ``2**-45`` for ``sigma >= 1`` (about ``2**-47`` at the
    callers' ``sigma`` near ``2**32``), an absolute one below ``2**-47`` for
    ``sigma < 1``, and none when ``sigma**2 q / t`` is an integer. A larger
    ``sigma`` only adds noise, so the privacy guarantee computed for
    ``sigma`` holds. Draws with ``|Y| q`` beyond ``2**62`` are finished with
    Python integers by the textbook algorithm, and ``sigma`` beyond about
    ``2**61`` runs entirely with Python integers (slowly), as do calls for
    at most 8 draws (faster than numpy there).

    Examples
    --------
    >>> from skdp.mechanisms import sample_discrete_gaussian
    >>> from skdp.utils import check_random_source
    >>> z = sample_discrete_gaussian(2.0**32, 1000, check_random_source(0))
    >>> bool((z == z.round()).all()), bool(abs(z.std() / 2.0**32 - 1) < 0.2)
    (True, True)
    """
    sigma = _check_scale("sigma", sigma)
    shape = _shape(size)
    n = math.prod(shape)
    source = source.substream()
    t, p, q = _gaussian_parameters(sigma)
    a, b = 2 * p, t * q
    limit = _bernoulli._LIMIT
    if max(t, a, b) >= limit or n <= _bernoulli._SMALL:
        draws = [_py_discrete_gaussian(t, p, q, source) for _ in range(n)]
        return np.array(draws, dtype=object).astype(np.float64).reshape(shape)
    parts = []
    filled = 0
    while filled < n:
        # About 76 % of the Laplace draws are accepted for large sigma.
        batch = int((n - filled) * 1.4) + 16
        y = _discrete_laplace(t, 1, batch, source)
        magnitude = np.abs(y)
        fast = magnitude <= (limit - 1 - p) // q
        if y.dtype == object:
            fast = fast.astype(bool)
        m = np.zeros(batch, dtype=np.int64)
        m[fast] = np.abs(magnitude[fast].astype(np.int64) * q - p)
        # Pieces w_a w_b must stay below the limit too.
        fast &= (m // a + 1) <= (limit - 1) // (m // b + 1)
        accept = np.zeros(batch, dtype=bool)
        index = np.flatnonzero(fast)
        accept[index] = _bernoulli_exp_neg_square(m[index], a, b, source)
        for i in np.flatnonzero(~fast):
            mi = abs(abs(int(y[i])) * q - p)
            accept[i] = _py_bernoulli_exp_neg(mi * mi, a * b, source)
        z = y[accept][: n - filled]
        parts.append(z)
        filled += z.size
    draws = np.concatenate(parts) if parts else np.zeros(0)
    return draws.astype(np.float64).reshape(shape)
