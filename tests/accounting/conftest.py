"""A PostgreSQL server for the ledger tests.

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

_SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "postgres.sh"


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
    if shutil.which("bash") is None or not _SCRIPT.exists():
        _skip(f"SKDP_TEST_POSTGRES_URL is unset and {_SCRIPT} cannot run here")
    # Under /tmp, not pytest's tmp_path: as root the server runs as the
    # "postgres" user, who must be able to reach its data directory.
    directory = tempfile.mkdtemp(prefix="skdp-pg-")
    started = subprocess.run(
        ["bash", str(_SCRIPT), "start", directory],
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
            ["bash", str(_SCRIPT), "stop", directory],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(directory, ignore_errors=True)
