"""Test-suite configuration: the ``slow`` marker of the quick subset.

``python -m pytest`` runs everything (what CI runs); ``python -m pytest -m
"not slow"`` is the quick subset for day-to-day work. The modules below are
slow as a whole (scikit-learn's estimator checks, the side-channel audits,
the examples, the process-level ledger tests, the cross-checks against
dp_accounting); single slow tests elsewhere carry ``@pytest.mark.slow``.

The ``postgres_url`` fixture is a PostgreSQL server for the ledger tests.

``SKDP_TEST_POSTGRES_URL`` names a database the tests may create tables in
(``.ci/run`` starts a throwaway server with ``.ci/postgres.sh`` and sets it).
Without it, the first test that needs PostgreSQL starts such a server itself
with the same script (never installing packages: SKDP_POSTGRES_NO_INSTALL=1)
and stops it at the end of the session. When no server can be had the
PostgreSQL tests are skipped, saying why; ``SKDP_TEST_POSTGRES_URL=skip``
skips them on purpose.
"""

import os
import shutil
import subprocess
import tempfile
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
    "audit/test_audit_tool.py",
}

# Single tests of several seconds each in otherwise quick modules (audits
# over many fits, process-level ledger tests, fine calibration grids).
SLOW_TESTS = {
    "test_audit_finds_no_violation",
    "test_solver_residual_audit",
    "test_fine_bins_fit",
    "test_dataframes_with_missing_values",
    "test_noise_cap_binds_at_small_epsilon_only",
    "test_explicit_values_override_the_defaults",
    "test_forked_child_spends_into_the_parent_or_refuses",
    "test_temporary_ledger_is_removed_when_its_process_exits",
    "test_replace_one_pair_dominates_other_replacements_in_the_plane",
    "test_laplace_dominates_vector_releases_of_the_same_l1_sensitivity",
    "test_calibration_meets_target_and_is_tight",
    "test_calibration_recovers_known_sigma",
    "test_noise_multiplier_meets_the_target_within_the_tolerance",
    "test_the_coarse_search_does_not_decide_the_result",
    "test_unreachable_targets_raise",
    "test_softmax_objective_privacy_loss_is_at_most_epsilon",
    "test_grid_search_over_epsilon_and_alpha_shares_the_budget",
    "test_number_of_trials_follows_the_law",
    "test_many_declared_categories_plan_their_memory",
    "test_memory_of_the_model_and_marginals_is_planned",
}


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        try:
            relative = Path(item.path).resolve().relative_to(_TESTS).as_posix()
        except ValueError:  # doctests of the package: fast
            continue
        name = getattr(item, "originalname", item.name)
        if relative in SLOW_MODULES or name in SLOW_TESTS:
            item.add_marker(slow)


_POSTGRES_SCRIPT = _TESTS.parent / ".ci" / "postgres.sh"


def _skip(why: str):
    pytest.skip(f"PostgreSQL ledger tests SKIPPED, no server: {why}")


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a PostgreSQL database for the tests (skips when there is none)."""
    try:
        import psycopg
    except ImportError:
        _skip('psycopg is not installed (pip install "skdp[postgresql]")')
    url = os.environ.get("SKDP_TEST_POSTGRES_URL", "")
    if url == "skip":
        _skip("SKDP_TEST_POSTGRES_URL=skip")
    if url:
        # A server was promised: failing to reach it is an error, not a skip.
        with psycopg.connect(url, connect_timeout=10):
            pass
        yield url
        return
    if shutil.which("bash") is None or not _POSTGRES_SCRIPT.exists():
        _skip(f"SKDP_TEST_POSTGRES_URL is unset and {_POSTGRES_SCRIPT} cannot run here")
    # Under /tmp, not pytest's tmp_path: as root the server runs as the
    # "postgres" user, who must be able to reach its data directory.
    directory = tempfile.mkdtemp(prefix="skdp-pg-")
    started = subprocess.run(
        ["bash", str(_POSTGRES_SCRIPT), "start", directory],
        capture_output=True,
        text=True,
        env=dict(os.environ, SKDP_POSTGRES_NO_INSTALL="1"),
        timeout=180,
    )
    try:
        if started.returncode != 0:
            _skip(
                "SKDP_TEST_POSTGRES_URL is unset and .ci/postgres.sh could not "
                f"start a server: {started.stderr.strip()[-800:]}"
            )
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(
            ["bash", str(_POSTGRES_SCRIPT), "stop", directory],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(directory, ignore_errors=True)
