"""Privacy accounting: events, composition, calibration and the budget.

*What happened* is an immutable event (:class:`LaplaceEvent`,
:class:`GaussianEvent`, :class:`PoissonSubsampledGaussianEvent`, ...); *how
it composes* is the accountant's job (:class:`RDPAccountant`); the
:class:`PrivacyBudget` records events in a ledger (in memory, or in a
:class:`SQLiteLedger` file that processes share) and refuses those that do
not fit.
"""

from ._accountant import CompositionReport, RDPAccountant, flatten_events
from ._analytic_gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_noise_multiplier,
)
from ._budget import PrivacyBudget
from ._calibration import (
    calibrate_gaussian_noise_multiplier,
    epsilon_poisson_subsampled_gaussian,
)
from ._events import (
    ApproxDPEvent,
    ComposedEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    PureDPEvent,
    ZCDPEvent,
    event_from_dict,
    event_to_dict,
)
from ._ledger import LedgerEntry, LedgerStore, MemoryLedger
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
from ._sqlite_ledger import SQLiteLedger

__all__ = [
    "DEFAULT_ORDERS",
    "ApproxDPEvent",
    "ComposedEvent",
    "CompositionReport",
    "ExponentialMechanismEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedger",
    "PoissonSubsampledGaussianEvent",
    "PrivacyBudget",
    "PrivacyEvent",
    "PureDPEvent",
    "RDPAccountant",
    "SQLiteLedger",
    "ZCDPEvent",
    "calibrate_gaussian_noise_multiplier",
    "epsilon_poisson_subsampled_gaussian",
    "event_from_dict",
    "event_to_dict",
    "flatten_events",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
    "rdp_exponential_mechanism",
    "rdp_gaussian",
    "rdp_poisson_subsampled_gaussian",
    "rdp_poisson_subsampled_gaussian_replace_one",
    "rdp_pure_dp",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "rdp_zcdp",
]
