"""Private tree ensembles: gradient boosting on binned features.

:class:`DPHistGradientBoostingClassifier` and
:class:`DPHistGradientBoostingRegressor` boost one shape function per
feature on privately chosen bins, with Gaussian noise on every round's
per-bin gradient sums; one charge per fit, composed exactly.
"""

from ._boosting import DPHistGradientBoostingClassifier, DPHistGradientBoostingRegressor

__all__ = ["DPHistGradientBoostingClassifier", "DPHistGradientBoostingRegressor"]
