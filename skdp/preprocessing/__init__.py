"""Private preprocessing: transformers that keep a pipeline private.

* :class:`DPStandardScaler`: noisy mean and variance under public bounds
  (charges the shared budget);
* :class:`DPKBinsDiscretizer`: bin edges at private quantiles (charges it),
  or uniform edges from the bounds (free);
* :class:`BoundedMinMaxScaler`: min-max scaling from declared bounds, which
  reads nothing from the data (no budget needed).
"""

from ._bounds import BoundedMinMaxScaler
from ._data import DPStandardScaler
from ._discretization import DPKBinsDiscretizer

__all__ = [
    "BoundedMinMaxScaler",
    "DPKBinsDiscretizer",
    "DPStandardScaler",
]
