"""skdp's BLAS thread policy: a private fit runs its BLAS on one thread."""

import threading

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from threadpoolctl import ThreadpoolController, threadpool_info

from skdp.accounting import LaplaceEvent
from skdp.base import PrivateEstimatorMixin, charge_and_run
from skdp.utils._threads import one_blas_thread
from skdp.utils.discovery import all_estimators


def _blas_threads() -> int:
    return max(
        (p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"),
        default=0,
    )


@pytest.fixture
def two_blas_threads():
    """The process's BLAS set to two threads, so that one is visible."""
    with ThreadpoolController().limit(limits=2, user_api="blas"):
        if _blas_threads() != 2:
            pytest.skip("this BLAS cannot be set to two threads")
        yield


def test_the_context_sets_one_thread_and_restores_the_setting(two_blas_threads):
    with one_blas_thread():
        assert _blas_threads() == 1
        with one_blas_thread():
            assert _blas_threads() == 1
        assert _blas_threads() == 1  # the inner exit keeps the limit
    assert _blas_threads() == 2


def test_threads_share_the_limit_until_the_last_one_leaves(two_blas_threads):
    # The BLAS setting is one per process: a thread that leaves while
    # another still computes must not give the other its threads back.
    first_in, second_in, first_out = (threading.Event() for _ in range(3))
    seen = {}

    def first():
        with one_blas_thread():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with one_blas_thread():
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = _blas_threads()

    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(20)
    assert seen == {"after the first left": 1}
    assert _blas_threads() == 2


def _private_estimators():
    return [
        pytest.param(cls, id=name)
        for name, cls in all_estimators()
        if issubclass(cls, PrivateEstimatorMixin)
    ]


@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("cls", _private_estimators())
def test_every_private_fit_plans_and_runs_with_one_blas_thread(
    cls, two_blas_threads, monkeypatch
):
    # Not only the passes over the rows: the solvers and decompositions
    # that follow them too (PCA's eigh of the noisy covariance, say).
    seen = []
    for step in ("_prepare_fit", "_run_fit"):
        original = getattr(cls, step)

        def recorded(self, *args, _original=original, **kwargs):
            seen.append(_blas_threads())
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, step, recorded)
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 3))
    estimator = clone(cls()).set_params(random_state=0)
    if cls.__module__.startswith("skdp.synthesis"):
        X = (X * 3).astype(int)  # the synthesizers count discrete values
    if is_classifier(estimator):
        estimator.fit(X, (X[:, 0] > 0.5).astype(int))
    elif is_regressor(estimator):
        estimator.fit(X, X[:, 0])
    else:
        estimator.fit(X)
    assert seen and set(seen) == {1}
    assert _blas_threads() == 2


def test_a_tool_releases_with_one_blas_thread(two_blas_threads):
    # The tools' charge path runs its release as a fit runs.
    threads = charge_and_run(None, LaplaceEvent(0.5), _blas_threads, "a release")
    assert threads == 1
    assert _blas_threads() == 2


def test_a_thread_that_held_the_limit_leaves_the_setting_to_others(two_blas_threads):
    # threadpoolctl lets one live thread at a time change a process-wide
    # OpenBLAS pool: a fit in another thread must not keep that control.
    done, finish = threading.Event(), threading.Event()

    def fit_in_a_thread():
        with one_blas_thread():
            pass
        done.set()
        finish.wait(10)  # alive while this thread sets its own limit

    worker = threading.Thread(target=fit_in_a_thread)
    worker.start()
    try:
        done.wait(10)
        assert _blas_threads() == 2
        with ThreadpoolController().limit(limits=1, user_api="blas"):
            assert _blas_threads() == 1
    finally:
        finish.set()
        worker.join(10)
