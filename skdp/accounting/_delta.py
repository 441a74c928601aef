"""The one rule for the ``delta`` a fit spends when none is given.

Every estimator and composite of skdp (and ``python -m skdp synthesize``)
takes ``delta=None`` by default. When the fit is planned, ``None`` becomes
0 if the mechanism that the other parameters choose is pure epsilon-DP, and
:data:`DEFAULT_DELTA` if it needs ``delta > 0`` (Gaussian noise, DP-SGD, a
bound in Rényi DP). A number is spent as given. The user guide explains the
choice (``doc/user_guide/choosing_epsilon.rst``, "The default delta").
"""

from __future__ import annotations

__all__ = ["DEFAULT_DELTA", "resolve_delta"]

#: The delta a fit spends when its ``delta`` is ``None`` and its mechanism
#: needs ``delta > 0``. Well below ``1 / n_samples`` up to about 100,000 rows
#: (``n_samples * delta <= 0.1``); pass a smaller delta for more rows.
DEFAULT_DELTA = 1e-6


def resolve_delta(delta: float | None, *, needs_delta: bool) -> float:
    """The delta a fit spends: ``delta``, or the default rule for ``None``.

    Parameters
    ----------
    delta : float or None
        The estimator's ``delta`` parameter.
    needs_delta : bool
        Whether the mechanism the estimator's other parameters choose needs
        ``delta > 0``.

    Returns
    -------
    delta : float
        ``delta`` if given; for ``None``, :data:`DEFAULT_DELTA` if
        ``needs_delta`` and 0 otherwise.

    Examples
    --------
    >>> from skdp.accounting._delta import resolve_delta
    >>> resolve_delta(None, needs_delta=True), resolve_delta(None, needs_delta=False)
    (1e-06, 0.0)
    >>> resolve_delta(1e-8, needs_delta=True)
    1e-08
    """
    if delta is None:
        return DEFAULT_DELTA if needs_delta else 0.0
    return float(delta)
