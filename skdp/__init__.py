"""skdp: differential privacy that drops into scikit-learn.

The :class:`PrivacyBudget` is shared by every private estimator through its
``budget=`` parameter; each fit charges it before touching the data.
"""

from .accounting import PrivacyBudget
from .exceptions import (
    BudgetExceededError,
    ChargedFitError,
    LedgerError,
    PrivacyLeakWarning,
)
from .linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from .synthesis import PMWSynthesizer

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExceededError",
    "ChargedFitError",
    "DPLinearRegression",
    "DPLinearSVC",
    "DPLogisticRegression",
    "LedgerError",
    "PMWSynthesizer",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "__version__",
]
