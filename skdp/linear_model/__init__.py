"""Differentially private linear models on one private-ERM core."""

from ._logistic import DPLogisticRegression
from ._svm import DPLinearSVC

__all__ = ["DPLinearSVC", "DPLogisticRegression"]
