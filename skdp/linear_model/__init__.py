"""Differentially private linear models."""

from ._logistic import DPLogisticRegression

__all__ = ["DPLogisticRegression"]
