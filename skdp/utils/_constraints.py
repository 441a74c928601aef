"""Parameter constraints shared by every private estimator and tool."""

from __future__ import annotations

from numbers import Real

from ._sklearn_compat import Interval

__all__ = ["EPSILON_CONSTRAINT", "MAX_EPSILON", "PositiveReal"]

#: Largest ``epsilon`` an estimator or tool takes. Far beyond any meaningful
#: privacy (an epsilon of 20 already lets the odds of any fact change by
#: 5e8), yet every mechanism's noise is still representable: above it the
#: calibrations leave float64 (noise scales below 1e-250, losses whose
#: exponentials overflow) and failed with arithmetic errors instead of a
#: message. A budget's own limit may still be ``inf``.
MAX_EPSILON = 1e6


class PositiveReal(Interval):
    """A real number in ``(0, upper]`` (``(0, inf)`` by default) that is
    not a bool.

    scikit-learn's ``Interval(Real, ...)`` takes ``True`` as 1: a privacy
    parameter written ``epsilon=True`` is more likely a slip than a
    choice, and it is refused like any other value outside the range.

    Examples
    --------
    >>> from skdp.utils._constraints import PositiveReal
    >>> PositiveReal().is_satisfied_by(0.5), PositiveReal().is_satisfied_by(True)
    (True, False)
    """

    def __init__(self, upper: float | None = None):
        closed = "neither" if upper is None else "right"
        super().__init__(Real, 0, upper, closed=closed)

    def is_satisfied_by(self, val) -> bool:
        return not isinstance(val, bool) and super().is_satisfied_by(val)


#: The constraint of every ``epsilon`` parameter: ``(0, MAX_EPSILON]``.
EPSILON_CONSTRAINT = PositiveReal(MAX_EPSILON)
