"""Private preprocessing: transformers whose fit charges the shared budget."""

from ._data import DPStandardScaler

__all__ = [
    "DPStandardScaler",
]
