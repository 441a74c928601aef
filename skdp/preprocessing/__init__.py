"""Private preprocessing: transformers whose fit charges the shared budget."""

from ._bounds import BoundedMinMaxScaler
from ._discretization import DPKBinsDiscretizer

__all__ = [
    "BoundedMinMaxScaler",
    "DPKBinsDiscretizer",
]
