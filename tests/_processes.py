"""Child processes for the tests of ledgers shared between processes.

``warm_context(__name__)`` is a :mod:`multiprocessing` context whose
children fork from a server that has already imported ``skdp.accounting``
(and so scikit-learn and SciPy) and the calling test module: eight racing
children start in milliseconds instead of importing scikit-learn eight
times, as spawned ones would. Like spawned children (and joblib or Dask
workers), they share no memory with the test process: each receives its
arguments pickled, a budget as a handle to its ledger.

The server is started once per test session, by the first caller; children
of a later module import that module on demand (``tests/`` and its
subfolders are on the server's path).
"""

import multiprocessing


def warm_context(module_name):
    """A ``forkserver`` context that preloads skdp and ``module_name``."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["skdp.accounting", module_name])
    return ctx
