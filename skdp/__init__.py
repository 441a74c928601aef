"""skdp: differential privacy that drops into scikit-learn.

The :class:`PrivacyBudget` is shared by every private estimator through its
``budget=`` parameter; each fit charges it before touching the data. Every
private estimator is importable from here as well as from its subpackage.
"""

from ._pipeline_check import (
    PipelinePrivacyReport,
    StepPrivacy,
    check_pipeline,
    step_privacy,
)
from .accounting import PrivacyBudget
from .cluster import DPKMeans
from .decomposition import DPPCA
from .ensemble import (
    DPHistGradientBoostingClassifier,
    DPHistGradientBoostingRegressor,
    DPRandomForestClassifier,
    DPRandomForestRegressor,
)
from .exceptions import (
    BudgetExceededError,
    ChargedFitError,
    LedgerError,
    PrivacyLeakWarning,
    UtilityWarning,
)
from .linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from .model_selection import PrivateSearchCV
from .naive_bayes import DPGaussianNB
from .preprocessing import BoundedMinMaxScaler, DPKBinsDiscretizer, DPStandardScaler
from .synthesis import OnlinePMW, PMWSynthesizer, SyntheticDataClassifier

__version__ = "0.1.0.dev0"

__all__ = [
    "BoundedMinMaxScaler",
    "BudgetExceededError",
    "ChargedFitError",
    "DPGaussianNB",
    "DPHistGradientBoostingClassifier",
    "DPHistGradientBoostingRegressor",
    "DPKBinsDiscretizer",
    "DPKMeans",
    "DPLinearRegression",
    "DPLinearSVC",
    "DPLogisticRegression",
    "DPPCA",
    "DPRandomForestClassifier",
    "DPRandomForestRegressor",
    "DPStandardScaler",
    "LedgerError",
    "OnlinePMW",
    "PMWSynthesizer",
    "PipelinePrivacyReport",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "PrivateSearchCV",
    "StepPrivacy",
    "SyntheticDataClassifier",
    "UtilityWarning",
    "__version__",
    "check_pipeline",
    "step_privacy",
]
