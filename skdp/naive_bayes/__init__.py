"""Differentially private naive Bayes classifiers."""

from ._gaussian import DPGaussianNB

__all__ = ["DPGaussianNB"]
