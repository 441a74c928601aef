"""Differentially private clustering."""

from ._kmeans import DPKMeans

__all__ = ["DPKMeans"]
