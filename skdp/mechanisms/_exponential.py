"""The exponential mechanism (McSherry & Talwar 2007)."""

from __future__ import annotations

import numpy as np

from ..accounting._events import ExponentialMechanismEvent
from ..utils._random import check_random_source
from ._additive import _check_positive

__all__ = ["exponential_mechanism"]


def exponential_mechanism(
    scores, sensitivity, epsilon, *, monotonic=False, random_state=None, label=""
):
    """Select an index with probability increasing in its score, epsilon-DP.

    Parameters
    ----------
    scores : array-like of shape (k,)
        Utility of each candidate; higher is better. Must be finite.
    sensitivity : float
        The largest change of any single score between neighbouring datasets,
        ``Delta_u``, > 0.
    epsilon : float
        > 0.
    monotonic : bool, default=False
        Set when every score moves in the same direction between neighbours
        (e.g. counts under add/remove); the factor 2 is then dropped.
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
    sampling ``i`` with probability proportional to
    ``exp(epsilon * u_i / (2 Delta_u))`` is epsilon-DP; with monotonic
    scores ``exp(epsilon * u_i / Delta_u)`` is. The sample is drawn with the
    Gumbel-max trick, ``argmax_i(epsilon u_i / (2 Delta_u) + G_i)`` with
    ``G_i = -log(E_i)``, ``E_i`` secure standard exponentials, which never
    forms the (possibly overflowing) normalised probabilities.

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
    factor = 1.0 if monotonic else 2.0
    logits = epsilon * (scores - scores.max()) / (factor * sensitivity)
    index = check_random_source(random_state).gumbel_argmax(logits)
    return index, ExponentialMechanismEvent(epsilon, label=label)
