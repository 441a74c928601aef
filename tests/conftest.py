"""Test-suite configuration: shared fixtures.

``python -m pytest`` runs everything (what CI runs); ``python -m pytest -m
"not slow"`` is the quick subset for day-to-day work. The ``slow`` mark sits
beside the tests: ``pytestmark = pytest.mark.slow`` at the top of a module
that is slow as a whole (scikit-learn's estimator checks, the side-channel
audits, the examples, the process-level ledger tests, the cross-checks
against dp_accounting), ``@pytest.mark.slow`` on a single slow test (about
five seconds or more). Data the modules share is in ``_data.py`` (seeded
rows and tables, dask wrappers) and ``_stat_checks.py`` (statistical
checks): plain functions, importable at collection time.

The ``postgres_url`` fixture is a PostgreSQL server for the ledger tests.

The dask fixtures serve the tests of the one data path (issue 27): a fit on
a dask collection must release, bitwise, the in-memory fit's model
(``assert_same_fit``), refuse what memory refuses with the same message
(``assert_same_refusal``), and never hand one task all the rows
(``largest_task_rows``), under the synchronous scheduler (``dask_sync``) or
on a two-worker ``distributed.LocalCluster`` (``dask_cluster``, for tests
marked slow: one cluster per session, one client per module);
``copies_of_x`` measures how many copies of ``X`` an in-memory fit makes.

``SKDP_TEST_POSTGRES_URL`` names a database the tests may create tables in
(``.ci/run`` starts a throwaway server with ``.ci/postgres.sh`` and sets it).
Without it, the first test that needs PostgreSQL starts such a server itself
with the same script (never installing packages: SKDP_POSTGRES_NO_INSTALL=1)
and stops it at the end of the session. When no server can be had the
PostgreSQL tests are skipped, saying why; ``SKDP_TEST_POSTGRES_URL=skip``
skips them on purpose.
"""

import contextlib
import dataclasses
import os
import shutil
import subprocess
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

_TESTS = Path(__file__).resolve().parent

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
    with _own_postgres_server("SKDP_TEST_POSTGRES_URL is unset and ") as server:
        yield server.url


class _PostgresServer:
    """A throwaway server of ``.ci/postgres.sh`` that a test may stop."""

    def __init__(self, directory: str, url: str):
        self.directory, self.url = directory, url

    def _run(self, command: str) -> None:
        subprocess.run(
            ["bash", str(_POSTGRES_SCRIPT), command, self.directory],
            capture_output=True,
            check=True,
            timeout=120,
        )

    def pause(self) -> None:
        """Stop the server (fast shutdown: every connection is cut)."""
        self._run("pause")

    def resume(self) -> None:
        """Start it again on the same port."""
        self._run("resume")


@contextlib.contextmanager
def _own_postgres_server(why: str):
    if shutil.which("bash") is None or not _POSTGRES_SCRIPT.exists():
        _skip(f"{why}{_POSTGRES_SCRIPT} cannot run here")
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
                f"{why}.ci/postgres.sh could not start a server: "
                f"{started.stderr.strip()[-800:]}"
            )
        yield _PostgresServer(directory, started.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(
            ["bash", str(_POSTGRES_SCRIPT), "stop", directory],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def stoppable_postgres():
    """A PostgreSQL server of the test's own, which it may stop and restart
    (the shared server of ``postgres_url`` must stay up)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _skip('psycopg is not installed (pip install "skdp[postgresql]")')
    if os.environ.get("SKDP_TEST_POSTGRES_URL", "") == "skip":
        _skip("SKDP_TEST_POSTGRES_URL=skip")
    with _own_postgres_server("for a server the test may stop, ") as server:
        yield server


# -- dask: the one data path ------------------------------------------------
@pytest.fixture
def dask_sync():
    """dask's synchronous scheduler for the test (skipped without dask)."""
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.array")
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="session")
def _local_cluster():
    """One LocalCluster of two worker processes for the whole session.

    Its workers start (and import scikit-learn) once, not once per module;
    each module still gets a client of its own (``dask_cluster``).
    """
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def dask_cluster(_local_cluster):
    """A ``distributed.Client`` on a LocalCluster of two worker processes.

    The module's client is dask's default scheduler until the module ends;
    the workers behind it are the session's (``_local_cluster``).
    """
    distributed = pytest.importorskip("distributed")
    with distributed.Client(_local_cluster) as client:
        client.wait_for_workers(2, timeout=60)
        yield client


#: Fitted attributes that legitimately differ between two identical fits.
BOOKKEEPING = {"budget_entry_"}


def _fitted(estimator, everything: bool = False) -> dict:
    """The fitted attributes (``everything``: all state but the parameters)."""
    if everything:
        params = (
            estimator.get_params(deep=False) if hasattr(estimator, "get_params") else {}
        )
        return {
            name: value
            for name, value in vars(estimator).items()
            if name not in params and name not in BOOKKEEPING
        }
    return {
        name: value
        for name, value in vars(estimator).items()
        if name.endswith("_") and not name.startswith("_") and name not in BOOKKEEPING
    }


def _identical(a, b) -> bool:
    """Bitwise equality, through containers and objects without ``==``."""
    if isinstance(a, type) or isinstance(b, type):
        return a is b
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(_identical, a, b))
    if isinstance(a, dict):
        return (
            type(a) is type(b)
            and a.keys() == b.keys()
            and all(_identical(a[k], b[k]) for k in a)
        )
    if hasattr(a, "__array__") or hasattr(b, "__array__"):
        # np.asarray computes a lazy dask attribute (DPKMeans.labels_).
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object:
            return a.shape == b.shape and all(map(_identical, a.ravel(), b.ravel()))
        return a.dtype == b.dtype and np.array_equal(
            a, b, equal_nan=a.dtype.kind in "fc"
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, np.random.Generator):
        return _identical(a.bit_generator.state, b.bit_generator.state)
    if isinstance(a, float) and a != a:
        return b != b  # NaN
    if dataclasses.is_dataclass(a):  # fields may be arrays
        return all(
            _identical(getattr(a, f.name), getattr(b, f.name))
            for f in dataclasses.fields(a)
        )
    if type(a).__eq__ is object.__eq__:
        if hasattr(a, "__dict__"):
            # A model or a nested estimator: all its state, parameters included.
            return _identical(
                {k: v for k, v in vars(a).items() if k not in BOOKKEEPING},
                {k: v for k, v in vars(b).items() if k not in BOOKKEEPING},
            )
        getstate = getattr(type(a), "__getstate__", None)
        default = getattr(object, "__getstate__", None)
        if getstate is not None and getstate is not default:
            # A compiled object that pickles its state (scikit-learn's Tree);
            # Python 3.10's object has no __getstate__ (None has none either).
            return _identical(a.__getstate__(), b.__getstate__())
    return bool(a == b)


@pytest.fixture
def assert_same_fit():
    """``check(memory, other)``: every fitted attribute bitwise equal.

    Every attribute ending in ``_`` but the ledger entry (``BOOKKEEPING``),
    compared with ``np.array_equal`` and the same dtype (not ``allclose``);
    models and nested estimators are compared by all their state.
    ``check(memory, other, everything=True)`` compares all of the
    estimators' state but their parameters (private attributes too).
    """

    def check(memory, other, *, everything=False):
        expected, got = _fitted(memory, everything), _fitted(other, everything)
        assert sorted(got) == sorted(expected)
        different = [k for k in expected if not _identical(expected[k], got[k])]
        assert different == [], f"attributes differ: {different}"

    return check


@pytest.fixture
def assert_same_refusal():
    """``check(fit, memory_input, dask_input)``: the same error, nothing charged.

    ``fit(data, budget)`` runs on each input with a fresh budget; both must
    raise the same exception type with the same message and leave the
    budget's ledger empty.
    """
    from skdp import PrivacyBudget

    def check(fit, memory_input, dask_input):
        errors = []
        for data in (memory_input, dask_input):
            budget = PrivacyBudget(100.0, 0.5)
            with pytest.raises(Exception) as caught:  # noqa: PT011 - compared below
                fit(data, budget)
            assert budget.ledger == []
            errors.append((caught.type, str(caught.value)))
        assert errors[0] == errors[1]
        return errors[0]

    return check


@pytest.fixture
def largest_task_rows():
    """A context manager recording the most rows any dask task returned.

    ``with largest_task_rows() as seen: ...`` then ``seen.rows``: the
    largest first dimension of an array (or DataFrame) any task computed in
    the block (synchronous or threaded scheduler). A fit that gathers the
    data into one task (``np.asarray`` on a dask array) shows ``n_samples``.
    """
    pytest.importorskip("dask")
    from dask.callbacks import Callback

    class Largest(Callback):
        rows = 0

        def _posttask(self, key, result, dsk, state, worker_id):
            shape = getattr(result, "shape", ())
            if len(shape):
                self.rows = max(self.rows, int(shape[0]))

    @contextlib.contextmanager
    def record():
        seen = Largest()
        with seen:
            yield seen

    return record


@pytest.fixture
def copies_of_x():
    """``copies(fit, X)``: the fit's peak new memory in units of ``X.nbytes``.

    Measured with :mod:`tracemalloc` (NumPy reports its buffers to it) after
    one warm-up fit on a few rows; 1.0 is one working copy of ``X``.
    """

    def copies(fit, X) -> float:
        fit(X[:2000])
        tracemalloc.start()
        try:
            fit(X)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak / X.nbytes

    return copies


@pytest.fixture
def scripted_source():
    """``scripted_source(words, seed=0)``: a RandomSource with chosen first words.

    It returns the scripted 64-bit words first, then words from a seeded
    generator, so a test can steer an exact sampler down a chosen branch.
    """
    from skdp.utils import RandomSource

    class ScriptedSource(RandomSource):
        def __init__(self, script, seed=0):
            super().__init__(np.random.default_rng(seed))
            self.script = [int(w) for w in script]

        def words(self, size):
            head, self.script = self.script[:size], self.script[size:]
            tail = super().words(size - len(head))
            return np.concatenate([np.array(head, dtype=np.uint64), tail])

    return ScriptedSource
