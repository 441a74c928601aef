"""skdp's BLAS thread policy: a private fit runs its BLAS on one thread.

Every private fit, from the validation of its input to the released
model, and every release of :mod:`skdp.tools` runs inside
:func:`one_blas_thread`: the BLAS libraries of NumPy and SciPy use one
thread, and get their previous setting back when it ends. It is taken

* by the charge paths (:class:`~skdp.base.PrivateEstimatorMixin`'s plan and
  run, and the tools' ``charge_and_run``), so it covers the solvers and
  eigendecompositions that follow the passes over the rows;
* by every pass of a :class:`~skdp.utils._row_source.RowSource`, in the
  client, so a pass made on its own is covered too;
* by every dask task that runs block functions, on its worker, whatever
  that worker's own setting.

Why one thread, and not a parameter: a fit reads its rows in blocks of
about ``max(1024, sqrt(n))`` rows, whose products are too small for
threads to pay, and on a machine whose cores are busy, BLAS threads that
wait for a core cost many times the work (``benchmarks/fit_cost.py``).
One thread also makes every product's rounding the same whatever the
thread settings of the machine, which the row source's promise rests on:
a seeded fit releases bitwise the same model in memory and on dask. A fit
that needs more cores runs its blocks in parallel on dask (a threaded
scheduler or a cluster), each block on one BLAS thread, and releases the
same model. ``predict``, ``transform`` and ``score`` are post-processing
and follow the process's settings, as in scikit-learn
(``threadpoolctl.threadpool_limits`` or ``OPENBLAS_NUM_THREADS``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

# SciPy's BLAS (its linear algebra's own OpenBLAS, say) is loaded when
# scipy.linalg is: load it before the thread pools are scanned, so the
# limit reaches it as well as NumPy's.
import scipy.linalg  # noqa: F401
from threadpoolctl import ThreadpoolController

from ._sklearn_compat import release_blas_control

__all__ = ["blas_single_thread", "one_blas_thread"]

_F = TypeVar("_F", bound=Callable[..., Any])


@functools.lru_cache(maxsize=1)
def _blas_controller() -> ThreadpoolController:
    """The process's thread pools, scanned once."""
    return ThreadpoolController()


# The BLAS thread count is one setting for the whole process, so the
# context is counted for the whole process: the first to enter sets one
# thread, the last to leave restores the setting, and entries in between
# (nested, or from other threads such as a threaded dask scheduler's) only
# count. A thread-local flag instead would let one thread restore the
# setting while another still computes. The thread that restores it may not
# be the one that set it: see release_blas_control.
_lock = threading.Lock()
_holders = 0
_limiter = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the enclosed code with one BLAS thread (process-wide, nestable).

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> from skdp.utils._threads import one_blas_thread
    >>> with one_blas_thread():
    ...     {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}
    {1}
    """
    global _holders, _limiter
    with _lock:
        if _holders == 0:
            release_blas_control()
            _limiter = _blas_controller().limit(limits=1, user_api="blas")
            release_blas_control()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                release_blas_control()
                _limiter.restore_original_limits()
                release_blas_control()
                _limiter = None


def blas_single_thread(func: _F) -> _F:
    """Decorate ``func`` to run under :func:`one_blas_thread`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
