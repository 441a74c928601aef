"""Differentially private matrix decompositions."""

from ._pca import DPPCA

__all__ = ["DPPCA"]
