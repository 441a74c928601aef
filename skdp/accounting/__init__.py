"""Privacy accounting: events, accountants, calibration and the budget.

*What happened* is an immutable event (:class:`LaplaceEvent`,
:class:`GaussianEvent`, :class:`PoissonSubsampledGaussianEvent`, ...); *how
it composes* is an accountant's job (:class:`PrivacyAccountant`, the
tightest of :class:`PLDAccountant` and :class:`RDPAccountant`); the
:class:`~skdp.PrivacyBudget` records events in a ledger (in memory, or in a
:class:`SQLiteLedger` file that processes share: the stores are in
:mod:`skdp.accounting.ledgers`) and refuses those that do not fit.
:func:`calibrate_parameter` finds the parameter of a mechanism that spends
a target epsilon under any accountant.

Exported here is what a user needs: the events, the accountants, the
budget, the calibration and the ledger stores. The curves and conversions
the accountants are built from (Rényi DP curves, privacy loss
distributions, the budget's filters) live in private modules.
"""

from ._accountant import PrivacyAccountant, RDPAccountant
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
from ._composition import Accountant, CompositionReport, NeighbouringRelation
from ._delta import DEFAULT_DELTA
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
from ._pld_accountant import PLDAccountant
from .ledgers import (
    LedgerEntry,
    LedgerStore,
    MemoryLedger,
    PostgreSQLLedger,
    SQLiteLedger,
)

__all__ = [
    # events
    "ApproxDPEvent",
    "ComposedEvent",
    "DiscreteGaussianEvent",
    "DiscreteLaplaceEvent",
    "ExponentialMechanismEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "ParallelComposedEvent",
    "PoissonSubsampledDiscreteGaussianEvent",
    "PoissonSubsampledGaussianEvent",
    "PrivacyEvent",
    "PureDPEvent",
    "RepeatedRandomStoppingEvent",
    "SelfComposedEvent",
    "ZCDPEvent",
    "event_from_dict",
    "event_to_dict",
    # accountants
    "Accountant",
    "CompositionReport",
    "NeighbouringRelation",
    "PLDAccountant",
    "PrivacyAccountant",
    "RDPAccountant",
    # the budget, and the delta a fit spends when its delta is None
    "DEFAULT_DELTA",
    "PrivacyBudget",
    # calibration
    "calibrate_gaussian_noise_multiplier",
    "calibrate_parameter",
    "epsilon_poisson_subsampled_gaussian",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise_multiplier",
    # ledger stores
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedger",
    "PostgreSQLLedger",
    "SQLiteLedger",
]
