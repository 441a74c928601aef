"""Test-suite configuration: the ``slow`` marker of the quick subset.

``python -m pytest`` runs everything (what CI runs); ``python -m pytest -m
"not slow"`` is the quick subset for day-to-day work. The modules below are
slow as a whole (scikit-learn's estimator checks, the side-channel audits,
the examples, the process-level ledger tests, the cross-checks against
dp_accounting); single slow tests elsewhere carry ``@pytest.mark.slow``.
"""

from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent

SLOW_MODULES = {
    "test_common.py",
    "test_release_contract.py",
    "test_hostile_inputs.py",
    "test_examples.py",
    "test_command_line.py",
    "audit/test_audit_estimators.py",
    "audit/test_audit_mechanisms.py",
    "parallel/test_concurrent_spend.py",
    "parallel/test_crash_durability.py",
    "parallel/test_parallel_grid.py",
    "accounting/test_pld_crosscheck.py",
    "accounting/test_dpsgd_claims.py",
}


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        try:
            relative = Path(item.path).resolve().relative_to(_TESTS).as_posix()
        except ValueError:  # doctests of the package: fast
            continue
        if relative in SLOW_MODULES:
            item.add_marker(slow)
