"""skdp: differential privacy that drops into scikit-learn.

The :class:`PrivacyBudget` is shared by every private estimator through its
``budget=`` parameter; each fit charges it before touching the data.
"""

from ._pipeline_check import (
    PipelinePrivacyReport,
    StepPrivacy,
    check_pipeline,
    step_privacy,
)
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
    "PipelinePrivacyReport",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "StepPrivacy",
    "__version__",
    "check_pipeline",
    "step_privacy",
]
