"""Parameter constraints shared by every private estimator and tool."""

from __future__ import annotations

from numbers import Real

from ._sklearn_compat import Interval

__all__ = ["EPSILON_CONSTRAINT", "PositiveReal"]


class PositiveReal(Interval):
    """A real number in ``(0, inf)`` that is not a bool.

    scikit-learn's ``Interval(Real, ...)`` takes ``True`` as 1: a privacy
    parameter written ``epsilon=True`` is more likely a slip than a
    choice, and it is refused like any other value outside the range.

    Examples
    --------
    >>> from skdp.utils._constraints import PositiveReal
    >>> PositiveReal().is_satisfied_by(0.5), PositiveReal().is_satisfied_by(True)
    (True, False)
    """

    def __init__(self):
        super().__init__(Real, 0, None, closed="neither")

    def is_satisfied_by(self, val) -> bool:
        return not isinstance(val, bool) and super().is_satisfied_by(val)


#: The constraint of every ``epsilon`` parameter.
EPSILON_CONSTRAINT = PositiveReal()
