"""Differentially private synthetic data.

:class:`PMWSynthesizer` learns a private model of a table with private
multiplicative weights (MWEM) and draws synthetic rows from it.
"""

from ._evaluation import marginal_errors
from ._pmw import PMWSynthesizer

__all__ = ["PMWSynthesizer", "marginal_errors"]
