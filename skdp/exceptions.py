"""Exceptions and warnings raised by skdp."""

__all__ = [
    "BudgetExceededError",
    "ChargedFitError",
    "LedgerError",
    "PrivacyLeakWarning",
    "UtilityWarning",
]


class BudgetExceededError(RuntimeError):
    """A spend would take the privacy budget past its limits.

    Raised by :meth:`skdp.PrivacyBudget.spend` before anything is recorded:
    a refused spend leaves the ledger exactly as it was, and the caller must
    not release any output computed for it.
    """


class PrivacyLeakWarning(UserWarning):
    """A privacy-relevant bound was read from the data instead of given.

    Norm bounds, clipping thresholds, bin edges and category lists set the
    calibration of the noise. When they come from the private data itself,
    the output can reveal them (for example the largest value of a column),
    so the formal guarantee no longer holds for them. Pass them as public
    parameters to silence this warning.
    """


class UtilityWarning(UserWarning):
    """The noise a fit plans is forecast to swamp the model it releases.

    Emitted before the charge, from public quantities only (epsilon, delta,
    ``C``, the declared bounds, the numbers of rows and features): the data
    are not read, so the warning reveals nothing about them and is the same
    for every data set of that shape. The fit goes on (a user may want it
    anyway); the message says what would bring the noise down.
    """


class LedgerError(RuntimeError):
    """The storage behind a privacy budget cannot be used safely."""


class ChargedFitError(RuntimeError):
    """A fit or a release failed after charging its budget.

    Releases are the :mod:`skdp.tools` statistics and ``OnlinePMW``'s
    answers; every one runs after its charge through
    :func:`skdp.base.run_charged`. Private fits find every input and
    parameter problem before they charge the budget, so in one process this
    is a bug in skdp. A fit on dask collections can also meet it when a
    worker fails or is lost after the charge. Either way the spend stands
    (the ledger is never rolled back), the estimator holds no model, and the
    message is fixed: the original error is withheld because it could
    reveal private values.
    """
