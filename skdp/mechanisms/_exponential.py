"""The exponential mechanism (McSherry & Talwar 2007), sampled exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from ..accounting._events import ExponentialMechanismEvent
from ..utils._random import RandomStateLike, check_random_source
from ._additive import _check_positive
from ._bernoulli import _as_integers, sample_exp_weights

__all__ = ["exponential_mechanism"]

#: Scores are quantised to a grid of ``sensitivity * 2**-k`` with ``k`` at
#: least this many bits finer than the noise (see ``_grid_bits``).
SCORE_GRID_BITS = 20


def _grid_bits(epsilon: float) -> int:
    """``k >= 0`` with ``2**k`` at least ``2**SCORE_GRID_BITS * epsilon``.

    The score grid ``sensitivity * 2**-k`` is then at most ``2**-20`` of the
    mechanism's noise scale ``sensitivity / epsilon``, and the rate per grid
    step, ``epsilon / (factor 2**k)``, is at most ``2**-20``, so rounding its
    reciprocal to an integer changes it by a relative ``2**-20`` at most.
    """
    return max(0, SCORE_GRID_BITS + math.frexp(epsilon)[1])


def _floor_scaled(scores: np.ndarray, bits: int, sensitivity: float) -> np.ndarray:
    """``floor(scores * 2**bits / sensitivity)`` exactly, as int64 or Python ints.

    Returns an int64 array when the arithmetic fits int64 (the score times
    ``2**bits`` below ``2**61`` in units of the sensitivity's binary
    denominator), otherwise an object array of Python ints.

    A float score is ``m 2**e`` with an integer ``|m| < 2**53``, and
    ``sensitivity = n / 2**j`` in lowest terms, so the quotient is
    ``m 2**(e + bits + j) / n``: a left shift then a floor division when
    the exponent is non-negative, otherwise a floor division by a power of two
    (an arithmetic right shift) then by ``n``, which is the same floor.
    """
    ratio = Fraction(sensitivity)
    divisor, log_denominator = ratio.numerator, ratio.denominator.bit_length() - 1
    mantissa, exponent = np.frexp(scores)
    m = (mantissa * 2.0**53).astype(np.int64)
    shift = exponent.astype(np.int64) - 53 + bits + log_denominator
    if divisor < 1 << 53 and shift.max() <= 8:  # |m| << 8 < 2**61
        left = m << np.maximum(shift, 0)
        right = left >> np.minimum(np.maximum(-shift, 0), 63)
        return right // divisor
    values = [
        (int(a) << int(s)) // divisor if s >= 0 else int(a) // (divisor << int(-s))
        for a, s in zip(m, shift)
    ]
    return np.array(values, dtype=object)


def exponential_mechanism(
    scores: ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    monotonic: bool = False,
    random_state: RandomStateLike = None,
    label: str = "",
) -> tuple[int, ExponentialMechanismEvent]:
    r"""Select an index with probability increasing in its score, epsilon-DP.

    Parameters
    ----------
    scores : array-like of shape (k,)
        Utility of each candidate; higher is better. Must be finite.
    sensitivity : float
        The largest change of any single score between neighbouring datasets,
        :math:`\Delta_u`, > 0.
    epsilon : float
        > 0.
    monotonic : bool, default=False
        Set only when, between any two neighbouring datasets, every score
        moves in the same direction (all up or all down), as counts do under
        add/remove-one neighbours; the factor 2 is then dropped. Counts are
        *not* monotonic under skdp's replace-one relation: replacing a row
        lowers one count and raises another.
    random_state : None, int or Generator, default=None
        ``None`` uses the OS CSPRNG (the only choice for a release).
    label : str, default=""
        Label of the returned event.

    Returns
    -------
    index : int
        The selected candidate.
    event : ExponentialMechanismEvent

    Notes
    -----
    McSherry & Talwar (2007), Theorem 6 (Dwork & Roth 2014, Theorem 3.10):
    sampling :math:`i` with probability proportional to
    :math:`\exp(\varepsilon u_i / (2 \Delta_u))` is :math:`\varepsilon`-DP;
    with monotonic scores :math:`\exp(\varepsilon u_i / \Delta_u)` is.

    The sample is drawn exactly, with no floating-point weights. The scores
    are quantised to the public grid :math:`g = \Delta_u 2^{-k}` (:math:`k`
    from epsilon, with :math:`g` at most :math:`2^{-20}` of the noise scale
    :math:`\Delta_u / \varepsilon`): :math:`v_i = \lfloor u_i / g \rfloor`,
    computed exactly from the floats' binary representation. Since
    :math:`u_i` moves by at most :math:`\Delta_u = 2^k g` between
    neighbours and :math:`2^k` is an integer, :math:`v_i` moves by at most
    :math:`2^k` steps: the quantised scores have the same sensitivity, in
    grid steps (and, the floor being monotone, move in the same direction
    when the scores do). With :math:`c` the factor (2, or 1 for monotonic
    scores), the rate per step, :math:`\varepsilon / (c\,2^k)`, is rounded
    down to :math:`1 / L` with the integer
    :math:`L = \lceil c\,2^k / \varepsilon \rceil` (a relative change of
    :math:`2^{-20}` at most), so the mechanism is
    :math:`(c\,2^k / L)`-DP, at most :math:`\varepsilon`, the value
    charged. Index :math:`i` is then drawn with probability proportional to
    :math:`\exp(-(\max_j v_j - v_i) / L)` by rejection (uniform proposals
    accepted with exact Bernoulli(:math:`e^{-\gamma}`) draws for rational
    :math:`\gamma`, Canonne, Kamath & Steinke 2020, Algorithm 1; see
    ``skdp.mechanisms._bernoulli.sample_exp_weights``). Every candidate keeps a
    positive probability, however low its score, which the pure guarantee
    needs; the Gumbel-max draw used before had bounded float noise and could
    not select a candidate about 38 below the best in exponent.

    The expected number of proposals is at most the number of candidates
    (reached when one candidate dominates), and the running time depends on
    the scores: timing is a side channel this implementation does not
    close.

    Examples
    --------
    >>> from skdp.mechanisms import exponential_mechanism
    >>> index, event = exponential_mechanism([0.0, 0.0, 100.0], sensitivity=1.0,
    ...                                      epsilon=1.0, random_state=0)
    >>> index
    2
    """
    sensitivity = _check_positive("sensitivity", sensitivity)
    epsilon = _check_positive("epsilon", epsilon)
    scores = np.asarray(scores, dtype=float).ravel()
    if scores.size == 0:
        raise ValueError("scores must hold at least one candidate.")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite (no NaN or infinity).")
    gaps, steps_per_unit = _exponents(scores, sensitivity, epsilon, monotonic)
    source = check_random_source(random_state).substream()
    index = sample_exp_weights(gaps, steps_per_unit, source)
    return index, ExponentialMechanismEvent(epsilon, label=label)


def _exponents(scores, sensitivity, epsilon, monotonic):
    """``(gaps, L)``: candidate ``i`` has weight ``exp(-gaps[i] / L)``, exactly.

    ``gaps[i] = max_j v_j - v_i`` for the quantised scores
    ``v = floor(scores 2**k / sensitivity)``, and
    ``L = ceil(factor 2**k / epsilon)``; see :func:`exponential_mechanism`.
    """
    factor = 1 if monotonic else 2
    bits = _grid_bits(epsilon)
    steps = _floor_scaled(scores, bits, sensitivity)
    gaps = _as_integers(steps.max() - steps)
    return gaps, math.ceil(Fraction(factor << bits) / Fraction(epsilon))
