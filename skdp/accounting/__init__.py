"""Privacy accounting: events, composition, calibration and the budget.

*What happened* is an immutable event (:class:`LaplaceEvent`,
:class:`GaussianEvent`, :class:`PoissonSubsampledGaussianEvent`, ...); *how
it composes* is an accountant's job (:class:`PrivacyAccountant`, the
tightest of :class:`PLDAccountant` and :class:`RDPAccountant`); the
:class:`~skdp.PrivacyBudget` records events in a ledger (in memory, or in a
:class:`SQLiteLedger` file that processes share) and refuses those that do
not fit. :func:`calibrate_parameter` finds the parameter of a mechanism
that spends a target epsilon under any accountant.
"""

from ._accountant import (
    CompositionReport,
    PrivacyAccountant,
    RDPAccountant,
    flatten_events,
)
from ._analytic_gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_noise_multiplier,
)
from ._budget import PrivacyBudget
from ._calibration import (
    calibrate_gaussian_noise_multiplier,
    calibrate_parameter,
    epsilon_poisson_subsampled_gaussian,
)
from ._composition import Accountant, NeighbouringRelation, expand_events
from ._events import (
    ApproxDPEvent,
    ComposedEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSubsampledDiscreteGaussianEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    PureDPEvent,
    RepeatedRandomStoppingEvent,
    SelfComposedEvent,
    ZCDPEvent,
    event_from_dict,
    event_to_dict,
)
from ._filters import (
    BasicFilter,
    CertifiedEvent,
    DeclaredPlanEvent,
    PlannedEvent,
    RenyiFilter,
)
from ._pld import PrivacyLossDistribution
from ._pld_accountant import PLDAccountant
from ._rdp import (
    DEFAULT_ORDERS,
    rdp_exponential_mechanism,
    rdp_gaussian,
    rdp_poisson_subsampled_gaussian,
    rdp_poisson_subsampled_gaussian_replace_one,
    rdp_pure_dp,
    rdp_to_delta,
    rdp_to_epsilon,
    rdp_zcdp,
)
from ._repetition import (
    epsilon_repeated_truncated_negative_binomial,
    rdp_repeated_poisson,
    rdp_repeated_truncated_negative_binomial,
    truncated_negative_binomial_mean,
    truncated_negative_binomial_stopping_probability,
)
from .ledgers import (
    LedgerEntry,
    LedgerStore,
    MemoryLedger,
    PostgreSQLLedger,
    SQLiteLedger,
)

__all__ = [
    "RenyiFilter",
    "PlannedEvent",
    "DeclaredPlanEvent",
    "CertifiedEvent",
    "BasicFilter",
    "DEFAULT_ORDERS",
    "Accountant",
    "ApproxDPEvent",
    "ComposedEvent",
    "CompositionReport",
    "DiscreteGaussianEvent",
    "DiscreteLaplaceEvent",
    "ExponentialMechanismEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedger",
    "NeighbouringRelation",
    "PLDAccountant",
    "ParallelComposedEvent",
    "PoissonSubsampledDiscreteGaussianEvent",
    "PoissonSubsampledGaussianEvent",
    "PostgreSQLLedger",
    "PrivacyAccountant",
    "PrivacyBudget",
    "PrivacyEvent",
    "PrivacyLossDistribution",
    "PureDPEvent",
    "RDPAccountant",
    "RepeatedRandomStoppingEvent",
    "SQLiteLedger",
    "SelfComposedEvent",
    "ZCDPEvent",
    "calibrate_gaussian_noise_multiplier",
    "calibrate_parameter",
    "epsilon_repeated_truncated_negative_binomial",
    "epsilon_poisson_subsampled_gaussian",
    "event_from_dict",
    "event_to_dict",
    "expand_events",
    "flatten_events",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
    "rdp_exponential_mechanism",
    "rdp_gaussian",
    "rdp_poisson_subsampled_gaussian",
    "rdp_poisson_subsampled_gaussian_replace_one",
    "rdp_pure_dp",
    "rdp_repeated_poisson",
    "rdp_repeated_truncated_negative_binomial",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "rdp_zcdp",
    "truncated_negative_binomial_mean",
    "truncated_negative_binomial_stopping_probability",
]
