"""The utility forecast's warning, shared by every mechanism that has one.

A plan knows, before the charge and from public quantities only, how much
noise its mechanism will add and how large the data's signal can be at
most. Where their ratio says the noise will swamp the signal, the plan
warns with :class:`~skdp.exceptions.UtilityWarning`: what the ratio is,
where fits of the kind stop being useful, and how many rows or how much
epsilon would bring the ratio there. Every ratio forecast here falls
about as ``1 / (n epsilon)``: the noise of a sum does not grow with the
rows while the sum does, and the noise's scale is about inverse to
epsilon. The message reads no data, so it is the same for every dataset
of that shape and leaks nothing.
"""

from __future__ import annotations

import math
import warnings

from ..exceptions import UtilityWarning
from ._privacy import user_stacklevel

__all__ = ["warn_if_noise_swamps"]


def warn_if_noise_swamps(
    name: str,
    *,
    ratio: float,
    limit: float,
    what: str,
    n_samples: int,
    epsilon: float,
) -> None:
    """Warn when the forecast noise-to-signal ``ratio`` exceeds ``limit``.

    Parameters
    ----------
    name : str
        The estimator and method, e.g. ``"DPKMeans"``.
    ratio : float
        The forecast, from public quantities only; about proportional to
        ``1 / (n_samples * epsilon)``.
    limit : float
        The ratio beyond which fits of this kind were found to be useless.
    what : str
        What the ratio compares, for the message.
    n_samples : int
    epsilon : float

    Examples
    --------
    >>> import warnings
    >>> from skdp.utils._forecast import warn_if_noise_swamps
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_noise_swamps("Est", ratio=3.0, limit=1.0, what="noise / signal",
    ...                          n_samples=100, epsilon=1.0)
    >>> "about 300 rows" in str(caught[0].message)
    True
    >>> warn_if_noise_swamps("Est", ratio=0.5, limit=1.0, what="noise / signal",
    ...                      n_samples=100, epsilon=1.0)  # no warning
    """
    if not ratio > limit:
        return
    factor = ratio / limit
    rows = math.ceil(n_samples * factor)
    warnings.warn(
        f"{name}: the noise planned for this fit is forecast to swamp much of "
        f"what the data can show: {what} is {ratio:.3g}, above the "
        f"{limit:.3g} beyond which such fits lost most or all of what a "
        "non-private model gains over the trivial one (the majority class or "
        "the mean). The forecast comes from epsilon, delta, the declared "
        "bounds and the numbers of rows and features; the data were not read. "
        f"It falls about as 1 / (n_samples * epsilon): about {rows} rows "
        f"(instead of {n_samples}) or an epsilon of about {epsilon * factor:.3g} "
        f"(instead of {epsilon:.3g}) would bring it to {limit:.3g}.",
        UtilityWarning,
        stacklevel=user_stacklevel(),
    )
