"""Every private estimator against a generated set of hostile inputs (issue 26).

The estimators are every exported class with a ``budget`` parameter
(``skdp.utils.discovery.all_estimators``): a new estimator joins by being
exported. Each meets every input of :func:`_inputs` (dtype families, pandas
nullable and boolean columns, column names scikit-learn refuses, degenerate
shapes, every scipy sparse format, magnitudes near float64's ends), and for
each the fit must end one of two ways:

* a clear refusal before the charge: ``ValueError``, ``TypeError`` or
  ``MemoryError`` (scikit-learn's own classes), the ledger untouched and no
  fitted attribute left but the input metadata; never ``ChargedFitError``,
  never another exception type (``IndexError``, ``OverflowError``: what a
  bug raises);
* a model whose every fitted floating-point value is finite, charged once,
  whose prediction methods on the same input return finite values or
  refuse it in the same clear way.

Then every prediction method of a model fitted on clean data meets bad
inputs (NaN, infinities, complex, dates, text, the wrong number of
features, no rows) with the same two outcomes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _data import estimator_data
from sklearn.base import clone

from skdp import PrivacyBudget
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.utils.discovery import all_estimators

pd = pytest.importorskip("pandas")

ESTIMATORS = [cls() for _, cls in all_estimators() if "budget" in cls().get_params()]
CLEAR = (ValueError, TypeError, MemoryError)
METHODS = (
    "predict",
    "predict_proba",
    "predict_log_proba",
    "decision_function",
    "transform",
    "score_samples",
)
# What scikit-learn's validate_data records before a later check fails.
_INPUT_METADATA = {"n_features_in_", "feature_names_in_"}


def _ids(value):
    return type(value).__name__ if hasattr(value, "get_params") else str(value)


def _frame(X, **columns):
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    for name, values in columns.items():
        frame[name] = values
    return frame


def _inputs(X):
    """The generated hostile inputs, by name, for rows ``X`` (40 x 3)."""
    n = X.shape[0]
    float_na = pd.array(X[:, 0], dtype="Float64")
    float_na[3] = pd.NA
    sparse = sp.random(n, X.shape[1], density=0.5, format="csr", random_state=0)
    inputs = {
        "float16": X.astype(np.float16),
        "longdouble": X.astype(np.longdouble),
        "float32": X.astype(np.float32),
        "complex": X.astype(complex),
        "complex-imaginary": X.astype(complex) + 1j,
        "int8": (X * 100).astype(np.int8),
        "uint64": (np.abs(X) * 100).astype(np.uint64),
        "bool": X > 0,
        "object-numbers": X.astype(object),
        "list": X.tolist(),
        "dataframe": _frame(X),
        "nullable-Int64": _frame(X, c0=pd.array((X[:, 0] * 10).astype(int), "Int64")),
        "nullable-Float64-NA": _frame(X, c0=float_na),
        "nullable-boolean": _frame(X, c0=pd.array(X[:, 0] > 0, dtype="boolean")),
        "duplicated-names": _frame(X).set_axis(["a", "a", "b"], axis=1),
        "mixed-type-names": _frame(X).set_axis([0, "x", 2.5], axis=1),
        "constant-column": np.column_stack([X[:, :-1], np.ones(n)]),
        "duplicated-column": np.column_stack([X, X[:, :1]]),
        "one-column": X[:, :1],
        "no-column": X[:, :0],
        "one-dimensional": X[:, 0],
        "three-dimensional": X[:, :, None],
        "huge": X * 1e200,
        "tiny": X * 1e-200,
        "csr_array": sp.csr_array(sparse),
    }
    for fmt in ("csr", "csc", "coo", "lil", "dok", "bsr", "dia"):
        inputs[f"sparse-{fmt}"] = sparse.asformat(fmt)
    return inputs


INPUT_NAMES = list(_inputs(np.zeros((40, 3))))


def _with_budget(estimator, budget=None):
    budget = PrivacyBudget(np.inf, 0.5) if budget is None else budget
    est = clone(estimator)
    extra = {"random_state": 0} if "random_state" in est.get_params() else {}
    est.set_params(budget=budget, **extra)
    return est, budget


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        return est.fit(X) if y is None else est.fit(X, y)


def _fitted(est):
    return [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]


def _non_finite(est):
    bad = []
    for name in _fitted(est):
        value = getattr(est, name)
        if sp.issparse(value):
            value = value.data
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):  # ragged lists: checked per item
            array = np.concatenate([np.ravel(v) for v in value])
        if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
            bad.append(name)
    return bad


def _assert_finite_output(out, what, allow_inf=False):
    if isinstance(out, tuple):
        for part in out:
            _assert_finite_output(part, what, allow_inf)
        return
    array = out.toarray() if sp.issparse(out) else np.asarray(out)
    if array.dtype.kind in "fc":
        ok = ~np.isnan(array) if allow_inf else np.isfinite(array)
        assert np.all(ok), f"{what} released non-finite values"


def _call_or_refuse(est, method, X, allow_inf=False):
    try:
        out = getattr(est, method)(X)
    except CLEAR:
        return
    _assert_finite_output(out, f"{type(est).__name__}.{method}", allow_inf)


@pytest.mark.parametrize("case", INPUT_NAMES)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_a_hostile_input_is_refused_before_the_charge_or_fits_finite(estimator, case):
    X, y = estimator_data(estimator)
    bad = _inputs(X)[case]
    est, budget = _with_budget(estimator)
    try:
        _fit(est, bad, y)
    except CLEAR:
        assert budget.ledger == [], "a refused fit was charged"
        left = [k for k in _fitted(est) if k not in _INPUT_METADATA]
        assert left == [], f"a refused fit left fitted attributes {left}"
        return
    assert len(budget.ledger) == 1, "a fit is charged exactly once"
    assert _non_finite(est) == [], "a fit released non-finite values"
    for method in METHODS:
        if hasattr(est, method):
            _call_or_refuse(est, method, bad)


def _bad_queries(X):
    n, d = X.shape
    dates = np.arange(n * d).reshape(n, d).astype("datetime64[D]")
    text = X.astype(str).astype(object)
    with_nan = X.copy()
    with_nan[2, 1] = np.nan
    with_inf = X.copy()
    with_inf[2, 1] = np.inf
    return {
        "nan": with_nan,
        "inf": with_inf,
        "complex": X + 1j,
        "dates": dates,
        "text": text,
        "wider": np.column_stack([X, X[:, :1]]),
        "narrower": X[:, :-1],
        "no-rows": X[:0],
        "huge": X * 1e300,
    }


@pytest.mark.parametrize("query", list(_bad_queries(np.zeros((4, 3)))))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_a_fitted_model_refuses_bad_queries_or_answers_finite(estimator, query):
    X, y = estimator_data(estimator)
    est, _ = _with_budget(estimator)
    _fit(est, X, y)
    bad = _bad_queries(X)[query]
    methods = [m for m in METHODS if hasattr(est, m)]
    if query in ("wider", "narrower", "no-rows"):
        for method in methods:
            with pytest.raises(ValueError):
                getattr(est, method)(bad)
        return
    for method in methods:
        # Rows near float64's limit: a distance or a score may overflow to
        # infinity (as scikit-learn's do), never to NaN, and never warn.
        _call_or_refuse(est, method, bad, allow_inf=query == "huge")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_an_exhausted_budget_refuses_every_estimator_and_keeps_no_model(estimator):
    X, y = estimator_data(estimator)
    budget = PrivacyBudget(1e-3, 1e-12)
    est, _ = _with_budget(estimator, budget)
    with pytest.raises(BudgetExceededError):
        _fit(est, X, y)
    assert budget.ledger == []
    left = [k for k in _fitted(est) if k not in _INPUT_METADATA]
    assert left == [], f"a refused fit left fitted attributes {left}"
