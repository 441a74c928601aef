"""Differentially private linear models on one private-ERM core."""

from ._linear import DPLinearRegression
from ._logistic import DPLogisticRegression
from ._svm import DPLinearSVC

__all__ = ["DPLinearRegression", "DPLinearSVC", "DPLogisticRegression"]
