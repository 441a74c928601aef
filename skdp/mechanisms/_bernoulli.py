"""Exact Bernoulli(exp(-x)) draws and exponential-weights selection.

The integer samplers the mechanisms are built from: :func:`bernoulli_exp_neg`
draws Bernoulli(``exp(-n/d)``) for a rational exponent, and
:func:`sample_exp_weights` picks an index with probability exactly
proportional to ``exp(-n_i/d)`` (the exponential mechanism and the private
quantiles). Both use only uniform random integers from a
:class:`~skdp.utils.RandomSource` and integer arithmetic, vectorised with
numpy, with no tail truncation (Canonne, Kamath & Steinke 2020, Algorithm
1). Where int64 arithmetic would overflow, the affected elements are
finished with Python integers, so the results never depend on the size of
a machine word. The discrete Laplace and Gaussian samplers built on them are
in :mod:`skdp.mechanisms._samplers`.

References
----------
C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020, arXiv:2004.00010.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..utils._random import RandomSource, _py_below, geometric_exp_neg_one

__all__ = ["bernoulli_exp_neg", "sample_exp_weights"]

#: Integers handled by the vectorised int64 code are kept below this bound,
#: which leaves headroom for the sums the samplers form (``a + b`` with
#: ``a, b < _LIMIT`` stays below ``2**63``). Anything larger is finished with
#: Python integers. Tests lower it to force that path.
_LIMIT = 1 << 62

#: Up to this many draws (or candidates), the Python-integer versions of the
#: samplers are faster than the vectorised ones, whose cost per call is a few
#: hundred microseconds of numpy overhead.
_SMALL = 8


def _bernoulli_ratios(
    candidates: np.ndarray, factors, source: RandomSource
) -> np.ndarray:
    """The subset of ``candidates`` for which every ``Bernoulli(num/den)`` holds."""
    for numerator, denominator in factors:
        if candidates.size == 0:
            break
        if np.ndim(denominator) == 0:
            u = source._integers_below(denominator, candidates.size)
        else:
            u = source._integers_below(denominator[candidates])
        candidates = candidates[u < numerator[candidates]]
    return candidates


def _bernoulli_exp_neg_unit(n: int, factors, source: RandomSource) -> np.ndarray:
    """Bernoulli(exp(-gamma)) for ``gamma = prod num/den`` in ``[0, 1]``.

    ``factors`` is a list of ``(num, den)`` with int64 ``num`` arrays of
    length ``n``, and ``den`` an int64 array or a scalar, ``0 <= num <= den
    < _LIMIT``. Canonne, Kamath & Steinke (2020), Algorithm 1: ``A_j ~
    Bernoulli(gamma / j)`` for ``j = 1, 2, ...`` until the first ``A_j = 0``,
    and the result is whether that ``j`` is odd. ``Bernoulli(gamma / j)`` is
    drawn as the conjunction of independent ``Bernoulli(1/j)`` and
    ``Bernoulli(num/den)`` for each factor, whose probabilities multiply to
    ``gamma / j``; no product of integers is formed, so nothing overflows.
    """
    result = np.empty(n, dtype=bool)
    active = np.arange(n)
    j = 1
    while active.size:
        result[active] = j % 2 == 1
        if j == 2:  # Bernoulli(1/2): one bit, not a word
            active = active[source.bits(active.size)]
        elif j > 2:
            active = active[source._integers_below(j, active.size) == 0]
        active = _bernoulli_ratios(active, factors, source)
        j += 1
    return result


def _as_integers(values) -> np.ndarray:
    """An int64 array, or an object array of Python ints if some entry is too big."""
    array = np.asarray(values)
    if array.dtype.kind == "i":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "u":
        if array.size and array.max() >= np.uint64(1 << 63):
            return array.astype(object)
        return array.astype(np.int64)
    if array.dtype.kind == "O" and all(
        isinstance(v, Integral) and not isinstance(v, bool) for v in array.flat
    ):
        array = np.vectorize(int, otypes=[object])(array) if array.size else array
        if all(-(1 << 63) <= v < (1 << 63) for v in array.flat):
            return array.astype(np.int64)
        return array
    raise TypeError(f"expected integers, got an array of dtype {array.dtype}.")


def bernoulli_exp_neg(numerator, denominator, source: RandomSource) -> np.ndarray:
    """Exact Bernoulli(``exp(-numerator / denominator)``) draws.

    Parameters
    ----------
    numerator : int or array-like of int
        ``>= 0``; Python integers of any size are accepted.
    denominator : int or array-like of int
        ``>= 1``, broadcast against ``numerator``.
    source : RandomSource

    Returns
    -------
    draws : ndarray of bool
        The broadcast shape of the inputs (0-d for scalars).

    Notes
    -----
    Canonne, Kamath & Steinke (2020), Algorithm 1, for the rational
    ``gamma = numerator / denominator``: ``floor(gamma)`` independent
    ``Bernoulli(e**-1)`` trials, stopping at the first failure, then one
    ``Bernoulli(exp(-(gamma - floor(gamma))))`` draw by the alternating
    series construction (see ``geometric_exp_neg_one`` in
    ``skdp.utils._random``). The trials are run as one draw of
    ``geometric_exp_neg_one``, ``K``: they all succeed
    exactly when ``K >= floor(gamma)``. Only uniform integers are used, so
    the probability is exactly ``exp(-gamma)`` for every ``gamma``, however
    large: there is no floating-point comparison and no truncation.
    Entries of ``2**62`` or more (where int64 arithmetic could overflow)
    are drawn with Python integers by the same algorithm.

    Examples
    --------
    >>> from skdp.utils import check_random_source
    >>> from skdp.mechanisms._bernoulli import bernoulli_exp_neg
    >>> draws = bernoulli_exp_neg(3, [10] * 100_000, check_random_source(0))
    >>> bool(abs(draws.mean() - 0.7408) < 0.01)
    True
    """
    num, den = np.broadcast_arrays(_as_integers(numerator), _as_integers(denominator))
    shape = num.shape
    num, den = num.ravel(), den.ravel()
    if (num < 0).any() or (den < 1).any():
        raise ValueError("need numerator >= 0 and denominator >= 1.")
    fast = ((num < _LIMIT) & (den < _LIMIT)).astype(bool)
    result = np.empty(num.size, dtype=bool)
    index = np.flatnonzero(fast)
    if index.size:
        den_fast = den[index].astype(np.int64)
        whole, fraction = np.divmod(num[index].astype(np.int64), den_fast)
        result[index] = _bernoulli_exp_neg_fast(whole, fraction, den_fast, source)
    for i in np.flatnonzero(~fast):
        result[i] = _py_bernoulli_exp_neg(int(num[i]), int(den[i]), source)
    return result.reshape(shape)


def _bernoulli_exp_neg_fast(
    whole: np.ndarray, fraction: np.ndarray, den, source: RandomSource
) -> np.ndarray:
    """:func:`bernoulli_exp_neg` for ``gamma = whole + fraction / den``.

    int64 arrays below ``_LIMIT``, ``0 <= fraction < den``; ``den`` may be a
    scalar.
    """
    result = np.ones(whole.size, dtype=bool)
    trials = np.flatnonzero(whole > 0)
    if trials.size:
        result[trials] = geometric_exp_neg_one(trials.size, source) >= whole[trials]
    rest = np.flatnonzero(result & (fraction > 0))
    if rest.size:
        den_rest = den if np.ndim(den) == 0 else den[rest]
        result[rest] = _bernoulli_exp_neg_unit(
            rest.size, [(fraction[rest], den_rest)], source
        )
    return result


def sample_exp_weights(numerators, denominator, source: RandomSource, size=None):
    """Index ``i`` with probability exactly proportional to ``exp(-n_i / d)``.

    Parameters
    ----------
    numerators : array-like of int, shape (k,)
        ``n_i >= 0``; Python integers of any size are accepted.
    denominator : int
        ``d >= 1``.
    source : RandomSource
    size : int, optional
        Number of independent draws; ``None`` returns one ``int``.

    Returns
    -------
    index : int or ndarray of int64

    Notes
    -----
    Rejection sampling: propose ``i`` uniformly (exactly, with
    :meth:`~skdp.utils.RandomSource.integers_below`) and accept it with probability
    ``exp(-n_i / d)`` by :func:`bernoulli_exp_neg`. An accepted proposal
    has the target law exactly, because every proposal is accepted with a
    probability proportional to its target weight (all at most 1). With the
    smallest ``n_i`` equal to 0 the expected number of proposals is at most
    ``k``, whatever the other weights, so one dominant candidate costs
    ``O(k)`` like a Gumbel-max draw. Proposals are drawn in vectorised
    batches sized from a floating-point estimate of the acceptance rate
    (which affects the speed, never the law), or one at a time with Python
    integers for a single draw expected to need few proposals (as with at
    most 8 candidates).
    The running time depends on the weights, so it is not a constant-time
    sampler.

    Examples
    --------
    >>> from skdp.utils import check_random_source
    >>> from skdp.mechanisms._bernoulli import sample_exp_weights
    >>> draws = sample_exp_weights([0, 1000], 1, check_random_source(0), size=100)
    >>> bool((draws == 0).all())
    True
    """
    num = _as_integers(numerators).ravel()
    k = num.size
    if k == 0:
        raise ValueError("need at least one weight.")
    denominator = int(denominator)
    if (num < 0).any() or denominator < 1:
        raise ValueError("need numerators >= 0 and denominator >= 1.")
    fast = num.dtype != object and denominator < _LIMIT and num.max() < _LIMIT
    if fast:
        whole, fraction = np.divmod(num, denominator)
    else:
        whole = num.astype(object) // denominator
    # An upper bound on the acceptance rate (at least 1/k when some n_i = 0),
    # to size the batches; it affects the speed only.
    rate = float(np.exp(-np.minimum(whole, 745).astype(np.float64)).sum()) / k
    if size is None and rate * _SMALL >= 1:
        # A few proposals expected: one at a time with Python integers is
        # faster than a vectorised batch.
        while True:
            i = _py_below(k, source)
            if _py_bernoulli_exp_neg(int(num[i]), denominator, source):
                return i
    wanted = 1 if size is None else int(size)
    out = np.empty(wanted, dtype=np.int64)
    filled = 0
    while filled < wanted:
        batch = int(min(max(1.5 * (wanted - filled) / rate, 16), 1 << 16))
        proposals = source._integers_below(k, batch)
        if fast:
            accept = _bernoulli_exp_neg_fast(
                whole[proposals], fraction[proposals], denominator, source
            )
        else:
            accept = bernoulli_exp_neg(num[proposals], denominator, source)
        accepted = proposals[accept]
        take = min(accepted.size, wanted - filled)
        out[filled : filled + take] = accepted[:take]
        filled += take
    return int(out[0]) if size is None else out


# -- Python-integer versions: for entries beyond int64, and as references ----


def _py_bernoulli_exp_neg_unit(numerator: int, denominator: int, source) -> bool:
    """Bernoulli(exp(-gamma)), ``gamma = numerator / denominator`` in [0, 1]."""
    j = 1
    while _py_below(denominator * j, source) < numerator:  # Bernoulli(gamma / j)
        j += 1
    return j % 2 == 1


def _py_bernoulli_exp_neg(numerator: int, denominator: int, source) -> bool:
    """CKS 2020 Algorithm 1 with Python integers (any size)."""
    whole, fraction = divmod(numerator, denominator)
    for _ in range(whole):  # stops at the first failure
        if not _py_bernoulli_exp_neg_unit(1, 1, source):
            return False
    return _py_bernoulli_exp_neg_unit(fraction, denominator, source)
