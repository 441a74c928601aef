"""Differentially private synthetic data.

:class:`~skdp.PMWSynthesizer` learns a private model of a table with private
multiplicative weights (MWEM) and draws synthetic rows from it;
:class:`SyntheticDataClassifier` trains any classifier on synthetic rows of
the features and the label; :func:`marginal_errors` compares a synthetic
table with the real one (reading the real data: for evaluation only).
"""

from ._evaluation import marginal_errors
from ._online import OnlinePMW
from ._pmw import PMWSynthesizer
from ._supervised import SyntheticDataClassifier
from ._views import CoarseMarginal

__all__ = [
    "CoarseMarginal",
    "OnlinePMW",
    "PMWSynthesizer",
    "SyntheticDataClassifier",
    "marginal_errors",
]
