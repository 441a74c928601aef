"""Private tree ensembles: gradient boosting on binned features.

:class:`DPHistGradientBoostingClassifier` and
:class:`DPHistGradientBoostingRegressor` boost one shape function per
feature on privately chosen bins, with Gaussian noise on every round's
per-bin gradient sums; :class:`DPRandomForestClassifier` and
:class:`DPRandomForestRegressor` release the noisy leaf statistics of random
trees drawn independently of the data. One charge per fit, composed
exactly.
"""

from ._boosting import DPHistGradientBoostingClassifier, DPHistGradientBoostingRegressor
from ._forest import DPRandomForestClassifier, DPRandomForestRegressor

__all__ = [
    "DPHistGradientBoostingClassifier",
    "DPHistGradientBoostingRegressor",
    "DPRandomForestClassifier",
    "DPRandomForestRegressor",
]
