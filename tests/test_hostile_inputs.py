"""Hostile inputs: every public estimator, the budget and the mechanisms.

Each bad input gets a clear error that names the problem (or documented
clipping), and whenever the error comes before noise is drawn the budget is
unchanged and the estimator holds no model. The estimator tests are
generated from :func:`skdp.utils.discovery.all_estimators`, so estimators
are covered as soon as they are exported.
"""

import inspect
import math
import sqlite3
import warnings

import numpy as np
import pytest
from _data import estimator_data
from sklearn.base import clone, is_classifier, is_regressor

from skdp import (
    BudgetExceededError,
    LedgerError,
    PMWSynthesizer,
    PrivacyBudget,
    PrivacyLeakWarning,
)
from skdp.accounting import (
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    PureDPEvent,
)
from skdp.mechanisms import (
    exponential_mechanism,
    gaussian_mechanism,
    l2_vector_mechanism,
    l2_vector_noise,
    laplace_mechanism,
)
from skdp.utils.discovery import all_estimators

pytestmark = pytest.mark.slow  # every estimator against every hostile input

NAN, INF = math.nan, math.inf

# -- the budget -----------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"epsilon": 0.0}, ValueError, "epsilon must be > 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be > 0"),
        ({"epsilon": NAN}, ValueError, "epsilon must not be NaN"),
        ({"epsilon": "1.0"}, TypeError, "epsilon must be a real number"),
        ({"epsilon": None}, TypeError, "epsilon must be a real number"),
        ({"epsilon": 1.0, "delta": -0.1}, ValueError, r"delta must be in \[0, 1\)"),
        ({"epsilon": 1.0, "delta": 1.0}, ValueError, r"delta must be in \[0, 1\)"),
        ({"epsilon": 1.0, "delta": INF}, ValueError, r"delta must be in \[0, 1\)"),
        ({"epsilon": 1.0, "delta": NAN}, ValueError, "delta must not be NaN"),
        ({"epsilon": 1.0, "delta": True}, TypeError, "delta must be a real number"),
    ],
)
def test_budget_rejects_bad_limits(kwargs, error, match):
    with pytest.raises(error, match=match):
        PrivacyBudget(**kwargs)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: LaplaceEvent(0.0), "epsilon must be > 0"),
        (lambda: LaplaceEvent(NAN), "epsilon must be finite"),
        (lambda: PureDPEvent(-1.0), "epsilon must be > 0"),
        (lambda: ExponentialMechanismEvent(INF), "epsilon must be finite"),
        (lambda: GaussianEvent(0.0), "noise_multiplier must be > 0"),
    ],
)
def test_events_reject_bad_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_exhausted_budget_refuses_and_records_nothing():
    budget = PrivacyBudget(1.0, 1e-5)
    budget.spend(LaplaceEvent(1.0), label="everything")
    before = (budget.ledger, budget.spent())
    for event in (LaplaceEvent(1e-6), GaussianEvent(100.0)):
        assert not budget.check(event)
        with pytest.raises(BudgetExceededError, match="would exceed the privacy"):
            budget.spend(event)
    assert (budget.ledger, budget.spent()) == before


def test_spending_something_that_is_not_an_event():
    budget = PrivacyBudget(1.0)
    with pytest.raises(TypeError, match="event must be a PrivacyEvent"):
        budget.spend(0.5)
    assert budget.ledger == []


# -- the mechanisms -------------------------------------------------------

MECHANISM_CALLS = {
    "laplace": lambda **kw: laplace_mechanism(
        kw.get("value", 1.0), kw.get("sensitivity", 1.0), kw.get("epsilon", 1.0)
    ),
    "gaussian": lambda **kw: gaussian_mechanism(
        kw.get("value", 1.0),
        kw.get("sensitivity", 1.0),
        kw.get("epsilon", 1.0),
        kw.get("delta", 1e-5),
    ),
    "exponential": lambda **kw: exponential_mechanism(
        kw.get("value", [1.0, 2.0]), kw.get("sensitivity", 1.0), kw.get("epsilon", 1.0)
    ),
    "vector": lambda **kw: l2_vector_mechanism(
        kw.get("value", [1.0, 2.0]), kw.get("sensitivity", 1.0), kw.get("epsilon", 1.0)
    ),
}


def _mechanism_cases():
    for name in MECHANISM_CALLS:
        for param in ("epsilon", "sensitivity"):
            for bad in (0.0, -1.0, NAN, INF):
                yield name, {param: bad}, ValueError, f"{param} must be a finite"
            yield name, {param: "1"}, TypeError, f"{param} must be a real number"
        for bad in ([NAN, 1.0], [INF, 1.0]):
            yield name, {"value": bad}, ValueError, "must be finite"
        if name != "exponential":
            yield name, {"value": ["a", "b"]}, ValueError, "value must be numeric"
    for bad in (0.0, 1.0, -0.1, NAN):
        yield "gaussian", {"delta": bad}, ValueError, r"delta must be in \(0, 1\)"
    yield "exponential", {"value": []}, ValueError, "at least one candidate"


@pytest.mark.parametrize(
    "name, kwargs, error, match",
    list(_mechanism_cases()),
    ids=lambda v: str(v) if not isinstance(v, type) else v.__name__,
)
def test_mechanisms_reject_bad_inputs(name, kwargs, error, match):
    with pytest.raises(error, match=match):
        MECHANISM_CALLS[name](**kwargs)


@pytest.mark.parametrize("bad", [0, -1, 2.5, NAN, INF, "3", True])
def test_vector_noise_dimension(bad):
    with pytest.raises(ValueError, match="dimension must be an integer >= 1"):
        l2_vector_noise(bad, 1.0, 1.0)


def test_gaussian_mechanism_needs_exactly_one_calibration():
    with pytest.raises(ValueError, match="Give epsilon and delta"):
        gaussian_mechanism(1.0, 1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="not both"):
        gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, noise_multiplier=2.0)


# -- every public estimator -----------------------------------------------

# Every estimator that charges a budget (BoundedMinMaxScaler reads nothing
# private and has none: scikit-learn's checks cover its input handling).
ESTIMATORS = [cls() for _, cls in all_estimators() if "budget" in cls().get_params()]


def _ids(value):
    if hasattr(value, "get_params"):
        return type(value).__name__
    return repr(value)


def _with_budget(estimator, budget=None, **params):
    budget = PrivacyBudget(INF, 0.5) if budget is None else budget
    est = clone(estimator)
    if "budget" not in est.get_params():
        pytest.fail(f"{type(est).__name__} has no budget parameter")
    extra = {"random_state": 0} if "random_state" in est.get_params() else {}
    est.set_params(budget=budget, **extra, **params)
    return est, budget


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return est.fit(X) if y is None else est.fit(X, y)


# What scikit-learn's validate_data records about the input before a later
# check fails; scikit-learn's own estimators leave them too. They are not a
# model, and nothing private: a budget refusal removes them as well.
_INPUT_METADATA = {"n_features_in_", "feature_names_in_"}


def _assert_no_model(est, allowed=_INPUT_METADATA):
    fitted = [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
    left = [k for k in fitted if k not in allowed]
    assert left == [], f"a failed fit left fitted attributes {left}"


def _accepts_strings(estimator):
    tags = estimator.__sklearn_tags__().input_tags
    return tags.string or tags.categorical


def _fails_cleanly(est, budget, X, y, error, match):
    with pytest.raises(error, match=match):
        _fit(est, X, y)
    assert budget.ledger == [], "the budget was charged for a fit that failed"
    _assert_no_model(est)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_non_finite_input(estimator, bad):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    X[3, 1] = bad
    if math.isnan(bad) and estimator.__sklearn_tags__().input_tags.allow_nan:
        # A documented missing value (the tree ensembles' missing bin): the
        # fit succeeds and charges once.
        _fit(est, X, y)
        assert len(budget.ledger) == 1
        return
    if _accepts_strings(estimator):
        # Values are categories (OnlinePMW): NaN is a missing value, refused
        # (none is declared); infinity is a value like any other.
        if math.isnan(bad):
            _fails_cleanly(est, budget, X, y, ValueError, "missing values")
        else:
            _fit(est, X, y)
            assert len(budget.ledger) == 1
        return
    _fails_cleanly(est, budget, X, y, ValueError, "NaN|[Ii]nfinity|inf")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_empty_input(estimator):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    _fails_cleanly(
        est,
        budget,
        X[:0],
        None if y is None else y[:0],
        ValueError,
        "0 sample|empty|at least 1",
    )


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_single_row(estimator):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    if is_classifier(estimator):
        # One row is one class: a classifier must refuse before spending.
        _fails_cleanly(est, budget, X[:1], y[:1], ValueError, "class")
        return
    # A regressor or an unsupervised estimator may fit one row (the
    # guarantee does not depend on n), or refuse it cleanly.
    try:
        _fit(est, X[:1], None if y is None else y[:1])
    except ValueError as error:
        assert str(error)
        assert budget.ledger == []
        _assert_no_model(est)
    else:
        assert len(budget.ledger) == 1


@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if is_classifier(e)], ids=_ids
)
def test_single_class(estimator):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    _fails_cleanly(est, budget, X, np.ones_like(y), ValueError, "class")


# OnlinePMW takes no rows after its fit: answer takes queries over its cells
# (their shape is checked in tests/synthesis/test_online.py).
_READS_ROWS_AFTER_FIT = [
    e
    for e in ESTIMATORS
    if any(hasattr(e, m) for m in ("predict", "predict_proba", "decision_function"))
    or hasattr(e, "transform")
]


@pytest.mark.parametrize("estimator", _READS_ROWS_AFTER_FIT, ids=_ids)
def test_wrong_feature_count_after_fit(estimator):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    _fit(est, X, y)
    ledger = budget.ledger
    methods = [
        m
        for m in ("predict", "predict_proba", "decision_function", "transform")
        if hasattr(est, m)
    ]
    assert methods
    for method in methods:
        with pytest.raises(ValueError, match="features"):
            getattr(est, method)(np.hstack([X, X]))
    assert budget.ledger == ledger


@pytest.mark.parametrize("missing", [NAN, None], ids=["nan", "none"])
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if "classes" in e.get_params()], ids=_ids
)
def test_a_missing_value_is_not_a_class(estimator, missing):
    # A NaN class compares unequal to itself: the model would predict NaN.
    X, y = estimator_data(estimator)
    est, budget = _with_budget(estimator, classes=[0, 1, missing])
    _fails_cleanly(est, budget, X, y, ValueError, "missing value")


def _times_and_bytes(X):
    """Inputs numpy would silently read as numbers (issue 26)."""
    n, d = X.shape
    days = np.arange(n * d).reshape(n, d)
    date_cell = X.astype(object)
    date_cell[3, 1] = np.datetime64("2024-01-02")
    bytes_cell = X.astype(object)
    bytes_cell[3, 1] = b"3"
    return {
        "datetime64": (days.astype("datetime64[D]"), "dates or durations"),
        "timedelta64": (days.astype("timedelta64[s]"), "dates or durations"),
        "bytes-dtype": (np.char.encode(X.astype(str)), "bytes"),
        "datetime64-cell": (date_cell, "dates or durations"),
        "bytes-cell": (bytes_cell, "bytes"),
    }


@pytest.mark.parametrize(
    "case",
    ["datetime64", "timedelta64", "bytes-dtype", "datetime64-cell", "bytes-cell"],
)
@pytest.mark.parametrize(
    # An estimator whose values are categories (OnlinePMW) takes dates and
    # bytes as values of a column's domain, as it takes text.
    "estimator",
    [e for e in ESTIMATORS if not _accepts_strings(e)],
    ids=_ids,
)
def test_dates_and_bytes_are_not_read_as_numbers(estimator, case):
    # numpy reads datetime64 as counts of its unit, b"3" as 3.0 and an object
    # cell holding a np.datetime64 as days: a model of an encoding.
    X, y = estimator_data(estimator)
    bad, match = _times_and_bytes(X)[case]
    if isinstance(estimator, PMWSynthesizer):  # its schema's own message
        match = "holds values that are not numbers|dates or durations"
    est, budget = _with_budget(estimator)
    _fails_cleanly(est, budget, bad, y, ValueError, match)


REGRESSORS = [e for e in ESTIMATORS if is_regressor(e)]


@pytest.mark.parametrize(
    "case", ["none", "nan-object", "datetime64", "bytes"], ids=lambda c: c
)
@pytest.mark.parametrize("estimator", REGRESSORS, ids=_ids)
def test_a_regression_target_that_is_not_numbers_is_refused(estimator, case):
    # scikit-learn checks an object y for NaN before converting it to float,
    # so a None became NaN after the check; declared y bounds then clipped it
    # to a bound (DPLinearRegression fitted and charged).
    X, y = estimator_data(estimator)
    bad = y.astype(object)
    if case == "none":
        bad[5] = None
    elif case == "nan-object":
        bad[5] = float("nan")
    elif case == "datetime64":
        bad = np.arange(y.size).astype("datetime64[D]")
    else:
        bad = np.char.encode(y.astype(str))
    params = {"y_bounds": (-3.0, 3.0)} if "y_bounds" in estimator.get_params() else {}
    est, budget = _with_budget(estimator, **params)
    _fails_cleanly(
        est, budget, X, bad, ValueError, "NaN|missing|dates or durations|bytes"
    )


def _has_param(param):
    return [e for e in ESTIMATORS if param in e.get_params()]


@pytest.mark.parametrize("estimator", _has_param("epsilon"), ids=_ids)
def test_an_epsilon_beyond_the_working_range_names_it(estimator):
    # At epsilon=1e300 the calibrations failed with an OverflowError, a
    # TypeError from log_ndtr or "target=1e-05 is not reachable".
    X, y = estimator_data(estimator)
    est, budget = _with_budget(estimator, epsilon=1e300)
    _fails_cleanly(est, budget, X, y, ValueError, r"'epsilon'.*1000000\.0\]")


def test_the_epsilon_range_ends_at_a_million():
    from skdp.utils._constraints import EPSILON_CONSTRAINT, MAX_EPSILON

    assert MAX_EPSILON == 1e6
    assert EPSILON_CONSTRAINT.is_satisfied_by(1e6)
    assert not EPSILON_CONSTRAINT.is_satisfied_by(1.000001e6)


@pytest.mark.parametrize("estimator", _has_param("data_norm"), ids=_ids)
def test_a_data_norm_beyond_float64_names_it(estimator):
    # DPPCA squared it in Python: OverflowError (34, 'Numerical result ...').
    X, y = estimator_data(estimator)
    est, budget = _with_budget(estimator, data_norm=1e300)
    _fails_cleanly(est, budget, X, y, ValueError, "data_norm")


@pytest.mark.parametrize(
    "make, match, error",
    [
        (
            lambda: _dpsgd(epochs=10**7),
            "(DP-SGD|full-batch gradient) steps, more than the 1000000",
            ValueError,
        ),
        (
            lambda: _binner(strategy="quantile", n_bins=10**7),
            "quantile selections, more than the 1000000",
            ValueError,
        ),
        (lambda: _binner(strategy="uniform", n_bins=10**10), "bin edges", MemoryError),
        (lambda: _search(mean_trials=1e9), "'mean_trials'.*1000", ValueError),
    ],
    ids=["dpsgd-epochs", "quantile-bins", "uniform-bins", "search-trials"],
)
def test_a_plan_that_cannot_finish_is_refused_before_the_charge(make, match, error):
    # Each ran for hours after the charge (issue 26).
    est, budget = make()
    X, y = estimator_data(est)
    _fails_cleanly(est, budget, X, y, error, match)


def _dpsgd(**params):
    from skdp.linear_model import DPLogisticRegression

    return _with_budget(
        DPLogisticRegression(method="gradient", data_norm=1.0), **params
    )


def _binner(**params):
    from skdp.preprocessing import DPKBinsDiscretizer

    return _with_budget(DPKBinsDiscretizer(bounds=(-1, 1)), **params)


def _search(**params):
    from skdp.linear_model import DPLogisticRegression
    from skdp.model_selection import PrivateSearchCV

    return _with_budget(PrivateSearchCV(DPLogisticRegression(data_norm=1.0)), **params)


def test_a_datetime_column_of_a_dataframe_is_refused_and_named():
    pd = pytest.importorskip("pandas")
    from skdp.linear_model import DPLogisticRegression

    X, y = estimator_data(DPLogisticRegression())
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["b"] = pd.to_datetime(frame["b"] * 1e9, unit="ns")
    est, budget = _with_budget(DPLogisticRegression(), data_norm=1.0)
    _fails_cleanly(est, budget, frame, y, ValueError, "column 'b' holds dates")


def test_dates_are_refused_by_the_tools_before_the_charge():
    from skdp import tools

    budget = PrivacyBudget(INF, 0.5)
    dates = np.arange(10).astype("datetime64[D]")
    with pytest.raises(ValueError, match="numeric input, got dtype datetime64"):
        tools.mean(dates, epsilon=1.0, bounds=(0, 10), budget=budget)
    assert budget.ledger == []


@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if not _accepts_strings(e)], ids=_ids
)
def test_strings_where_numbers_are_expected(estimator):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    X = X.astype(object)
    X[5, 0] = "forty-two"
    _fails_cleanly(est, budget, X, y, ValueError, "could not convert|string|numeric")


@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "transform")], ids=_ids
)
def test_unseen_categories_at_transform(estimator):
    pd = pytest.importorskip("pandas")
    est, budget = _with_budget(estimator)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "colour": pd.Categorical(
                rng.choice(["red", "green"], 50), categories=["red", "green"]
            ),
            "size": pd.Categorical(
                rng.choice(["S", "M", "L"], 50), categories=["S", "M", "L"]
            ),
        }
    )
    try:
        _fit(est, frame, None)
    except (TypeError, ValueError):
        assert budget.ledger == []
        pytest.skip(f"{type(est).__name__} does not take categorical columns")
    ledger = budget.ledger
    unseen = frame.head(5).astype(object)
    unseen.loc[0, "colour"] = "ultraviolet"
    # Either the values are not used at all (a synthesizer's transform reads
    # only the row count), or the unseen category is named in a clear error.
    try:
        out = est.transform(unseen)
    except ValueError as error:
        assert "ultraviolet" in str(error) or "categor" in str(error)
    else:
        assert len(out) == len(unseen)
    assert budget.ledger == ledger


def _has(param):
    return [e for e in ESTIMATORS if param in e.get_params()]


@pytest.mark.parametrize("estimator", _has("data_norm"), ids=_ids)
def test_rows_far_beyond_data_norm_are_clipped(estimator):
    # Rows above data_norm are scaled onto the ball (documented clipping), so
    # a fit on rows a million times too long equals, seed for seed, the fit
    # on the same rows scaled to norm data_norm, and spends the same.
    X, y = estimator_data(estimator)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    big, budget_big = _with_budget(estimator, data_norm=1.0)
    ref, budget_ref = _with_budget(estimator, data_norm=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        _fit(big, X * 1e6, y)
        _fit(ref, X, y)
    for name in ("coef_", "intercept_"):
        if hasattr(ref, name):
            assert np.all(np.isfinite(getattr(big, name)))
            np.testing.assert_allclose(
                getattr(big, name), getattr(ref, name), rtol=1e-6, atol=1e-9
            )
    assert [e.event for e in budget_big.ledger] == [e.event for e in budget_ref.ledger]


@pytest.mark.parametrize("read", [False, True], ids=["declared", "read"])
@pytest.mark.parametrize(
    "estimator",
    # The synthesizers' bounds only place bins (no square of a width).
    [e for e in _has("bounds") if "workload" not in e.get_params()],
    ids=_ids,
)
def test_bounds_too_narrow_to_square_are_refused(estimator, read):
    # A width of 1e-300 squares to 0: DPGaussianNB released var_ == 0 and
    # NaN probabilities (issue 26), declared or read from such data.
    X, y = estimator_data(estimator)
    if read:
        est, budget = _with_budget(estimator)
        X = X * 1e-300
    else:
        est, budget = _with_budget(estimator, bounds=(0.0, 1e-300))
    _fails_cleanly(est, budget, X, y, ValueError, "width upper - lower below")


@pytest.mark.parametrize(
    "params",
    [{"bounds": (0.0, 1e-300)}, {"bounds": (0.0, 1e-100), "feature_range": (0, 1e300)}],
)
def test_a_scaler_whose_scale_overflows_is_refused(params):
    from skdp.preprocessing import BoundedMinMaxScaler

    with pytest.raises(ValueError, match="width upper - lower below|beyond float64"):
        BoundedMinMaxScaler(**params).fit(np.zeros((3, 2)))


@pytest.mark.parametrize("estimator", _has("bounds"), ids=_ids)
def test_values_far_beyond_bounds_are_clipped(estimator):
    # Values outside public bounds are clipped to them (documented): seed for
    # seed, the fit equals the fit on the clipped data.
    X, y = estimator_data(estimator)
    X = (X + 1) / 2  # in [0, 1]
    wild = X.copy()
    wild[::3] *= 1e9
    wild[1::3] -= 1e9
    outputs = []
    declared = {"classes": [0, 1]} if is_classifier(estimator) else {}
    if is_regressor(estimator) and "y_bounds" in estimator.get_params():
        declared["y_bounds"] = (-2.0, 2.0)
    for data in (wild, np.clip(wild, 0.0, 1.0)):
        est, budget = _with_budget(estimator, bounds=(0.0, 1.0), **declared)
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            est.fit(data) if y is None else est.fit(data, y)
        assert len(budget.ledger) == 1
        method = next(
            m for m in ("predict_proba", "transform", "predict") if hasattr(est, m)
        )
        out = getattr(est, method)(X[:20])
        out = out.toarray() if hasattr(out, "toarray") else out
        outputs.append(np.asarray(out, dtype=float))
    if isinstance(estimator, PMWSynthesizer):  # synthetic rows: in the bounds
        assert np.all((outputs[0] >= 0) & (outputs[0] <= 1))
    np.testing.assert_array_equal(outputs[0], outputs[1])


@pytest.mark.parametrize("estimator", _has("categories"), ids=_ids)
def test_values_outside_declared_categories_are_mapped_not_fatal(estimator):
    # Once public categories are declared, a value outside them must not
    # raise (the fit may already be paid for); it is mapped as documented.
    X = np.array([["red"], ["green"], ["ultraviolet"]] * 10, dtype=object)
    est, budget = _with_budget(estimator, categories=[["red", "green"]])
    if "categorical_features" in est.get_params():  # a tree ensemble
        est.set_params(categorical_features=[0])
        y = np.arange(len(X)) % 2
        if is_classifier(est):
            est.set_params(classes=[0, 1])
        else:
            est.set_params(y_bounds=(0, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            est.fit(X, y)
        assert len(budget.ledger) == 1
        # The undeclared value shares the missing values' bin.
        codes = est.predict(X[:3])
        assert codes[2] == est.predict(np.array([[None]], dtype=object))[0]
        return
    supervised = is_classifier(estimator)
    y = np.arange(len(X)) % 2 if supervised else None
    if supervised:
        # A downstream model that reads categories (the default
        # LogisticRegression is refused, before the charge, on strings).
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder

        est.set_params(
            classes=[0, 1],
            estimator=make_pipeline(
                OneHotEncoder(handle_unknown="ignore"), LogisticRegression()
            ),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est.fit(X) if y is None else est.fit(X, y)
    assert len(budget.ledger) == 1
    if supervised:
        assert set(est.predict(X[:10])) <= {0, 1}
    else:
        assert set(np.asarray(est.transform(X[:10])).ravel()) <= {"red", "green"}


def _method_options(estimator):
    """Every value of the estimator's ``method`` parameter, or [None]."""
    for constraint in getattr(estimator, "_parameter_constraints", {}).get(
        "method", []
    ):
        options = getattr(constraint, "options", None)
        if options:
            return sorted(options)
    return [None]


@pytest.mark.parametrize(
    "estimator, method",
    [(e, m) for e in _has("C") for m in _method_options(e)],
    ids=_ids,
)
@pytest.mark.parametrize("C", [0.01, 0.1])
def test_tiny_data_with_strong_regularisation_gives_a_bounded_model(
    estimator, method, C
):
    # Ten rows, a strong regulariser and almost no noise (a huge epsilon):
    # the regularised minimiser has norm at most C * n * R, so a model far
    # beyond that means the solver diverged, not that the noise is large.
    X = np.zeros((10, 1))
    X[0, 0] = 1.0
    y = np.arange(10) % 2
    extra = {} if method is None else {"method": method}
    est, _ = _with_budget(estimator, epsilon=1e4, C=C, data_norm=1.0, **extra)
    _fit(est, X, y)
    radius = C * 10 * np.sqrt(2.0)  # R includes the intercept column
    coef = np.concatenate([np.ravel(est.coef_), np.ravel(est.intercept_)])
    assert np.all(np.isfinite(coef))
    assert np.linalg.norm(coef) <= 10 * radius + 1.0, coef


def _bad_parameter_cases():
    bad_values = {
        "epsilon": [0.0, -1.0, NAN, "1.0", True],
        "delta": [-0.1, 1.0, 1.5, NAN],
        "C": [0.0, -1.0, NAN],
        "data_norm": [0.0, -1.0, NAN],
        "budget": ["my budget", 1.0],
    }
    for estimator in ESTIMATORS:
        params = estimator.get_params()
        for param, values in bad_values.items():
            if param in params:
                for value in values:
                    yield estimator, param, value


@pytest.mark.parametrize(
    "estimator, param, value", list(_bad_parameter_cases()), ids=_ids
)
def test_bad_parameters_are_refused_before_spending(estimator, param, value):
    budget = PrivacyBudget(INF, 0.5)
    est = clone(estimator).set_params(**{param: value})
    if param != "budget":
        est.set_params(budget=budget)
    X, y = estimator_data(estimator)
    with pytest.raises((ValueError, TypeError), match=f"'{param}' parameter"):
        _fit(est, X, y)
    assert budget.ledger == []
    _assert_no_model(est)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_exhausted_budget_leaves_no_model_and_no_record(estimator):
    budget = PrivacyBudget(1.0, 1e-3)
    budget.spend(LaplaceEvent(1.0), label="spent elsewhere")
    est, _ = _with_budget(estimator, budget)
    X, y = estimator_data(estimator)
    ledger = budget.ledger
    with pytest.raises(BudgetExceededError):
        _fit(est, X, y)
    assert budget.ledger == ledger
    _assert_no_model(est, allowed=())


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_refused_refit_removes_the_previous_model(estimator):
    est, budget = _with_budget(estimator)
    X, y = estimator_data(estimator)
    _fit(est, X, y)
    small = PrivacyBudget(1e-6, 1e-12)
    est.set_params(budget=small)
    with pytest.raises(BudgetExceededError):
        _fit(est, X, y)
    assert small.ledger == []
    _assert_no_model(est, allowed=())


# -- ledger files (the SQLite ledger) --------------------------------------

_HAS_LEDGER_FILES = "ledger" in inspect.signature(PrivacyBudget).parameters
needs_ledger_files = pytest.mark.skipif(
    not _HAS_LEDGER_FILES, reason="PrivacyBudget(ledger=path) not merged yet"
)


def _unusable_ledger_paths(tmp_path):
    """Paths no ledger can be opened at, and the files they must leave intact."""
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database, but someone's file " * 100)
    foreign = tmp_path / "foreign.db"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE patients (name TEXT)")
    connection.execute("INSERT INTO patients VALUES ('Ada')")
    connection.commit()
    connection.close()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    return {
        "garbage bytes": (garbage, "not a database"),
        "another SQLite database": (foreign, "not an skdp privacy ledger"),
        "parent is a file": (a_file / "ledger.db", "Cannot open the privacy ledger"),
        "missing directory": (
            tmp_path / "no" / "such" / "ledger.db",
            "Cannot open the privacy ledger",
        ),
        "a directory": (tmp_path, "Cannot open the privacy ledger"),
    }


_LEDGER_CASES = [
    "garbage bytes",
    "another SQLite database",
    "parent is a file",
    "missing directory",
    "a directory",
]


@needs_ledger_files
@pytest.mark.parametrize("case", _LEDGER_CASES)
def test_unusable_ledger_path_is_a_clear_error_and_touches_nothing(tmp_path, case):
    path, match = _unusable_ledger_paths(tmp_path)[case]
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(LedgerError, match=match) as error:
        PrivacyBudget(1.0, ledger=str(path))
    assert str(path) in str(error.value)  # the message says which file
    if before is not None:
        # Never "repaired" by resetting: the file is exactly as it was.
        assert path.read_bytes() == before


@needs_ledger_files
@pytest.mark.parametrize("bad", [3, 1.5, ["ledger.db"]])
def test_ledger_of_the_wrong_type(bad):
    with pytest.raises(TypeError, match="ledger must be"):
        PrivacyBudget(1.0, ledger=bad)


@needs_ledger_files
def test_reopening_a_ledger_with_other_limits_is_refused(tmp_path):
    path = str(tmp_path / "ledger.db")
    budget = PrivacyBudget(1.0, 1e-6, ledger=path)
    budget.spend(LaplaceEvent(0.25), label="first")
    for epsilon, delta in ((2.0, 1e-6), (1.0, 1e-5)):
        with pytest.raises(LedgerError, match="created with limits"):
            PrivacyBudget(epsilon, delta, ledger=path)
    assert PrivacyBudget(1.0, 1e-6, ledger=path).spent() == (0.25, 0.0)


@needs_ledger_files
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_fit_with_an_exhausted_file_ledger(tmp_path, estimator):
    path = str(tmp_path / "ledger.db")
    PrivacyBudget(1.0, 1e-3, ledger=path).spend(LaplaceEvent(1.0), label="before")
    budget = PrivacyBudget(1.0, 1e-3, ledger=path)  # reopened, e.g. next day
    est, _ = _with_budget(estimator, budget)
    X, y = estimator_data(estimator)
    with pytest.raises(BudgetExceededError):
        _fit(est, X, y)
    _assert_no_model(est, allowed=())
    assert [e.label for e in PrivacyBudget(1.0, 1e-3, ledger=path).ledger] == ["before"]


@needs_ledger_files
def test_ledger_file_deleted_while_in_use_is_not_silently_forgotten(tmp_path):
    # Someone removes the ledger (and its WAL) while a budget has it open. A
    # spend recorded only in the unlinked file is not durable: the next
    # process to open the path sees an empty ledger and may overspend. The
    # spend must fail loudly instead.
    path = tmp_path / "ledger.db"
    budget = PrivacyBudget(1.0, ledger=str(path))
    budget.spend(LaplaceEvent(0.5), label="first")
    for leftover in tmp_path.glob("ledger.db*"):
        leftover.unlink()
    with pytest.raises(LedgerError, match=str(path)):
        budget.spend(LaplaceEvent(0.4), label="second")


@pytest.mark.parametrize(
    "method",
    [
        "objective",
        pytest.param("output", marks=pytest.mark.slow),
        pytest.param("gradient", marks=pytest.mark.slow),
    ],
)
def test_a_hundred_thousand_classes_do_not_need_their_square(method):
    # The softmax noise went through scipy's K x K Helmert matrix after the
    # charge: 75 GiB at 1e5 classes (issue 26). It is applied in O(K d) now.
    # Output perturbation then ran for more than 10 minutes (Newton's line
    # search could not see its decrease under the value's rounding); it
    # certifies in 7 Newton steps now.
    from skdp.linear_model import DPLogisticRegression

    X, y = estimator_data(DPLogisticRegression())
    est, budget = _with_budget(
        DPLogisticRegression(method=method, data_norm=1.0), classes=range(100_000)
    )
    est.fit(X, y)
    assert est.coef_.shape == (100_000, 3) and np.all(np.isfinite(est.coef_))
    assert len(budget.ledger) == 1


@pytest.mark.parametrize("batch_size", [256, "full"], ids=["dpsgd", "full-batch"])
def test_many_classes_beyond_memory_are_refused_before_the_gradient_charge(
    monkeypatch, batch_size
):
    # DP-SGD with classes=range(10**7) on 40 rows was charged, then held
    # more than 13 GB (per-call margins of rows x classes) until the
    # machine killed it (issue 26). The plan now counts a step's memory.
    # Here a 32 MiB limit stands for the machine and 10**5 classes for 10**7.
    from skdp.linear_model import DPLogisticRegression
    from skdp.utils import _feasibility

    monkeypatch.setattr(_feasibility, "available_memory", lambda: 2**25)
    X, y = estimator_data(DPLogisticRegression())
    est, budget = _with_budget(
        DPLogisticRegression(method="gradient", data_norm=1.0, batch_size=batch_size),
        classes=range(100_000),
    )
    _fails_cleanly(est, budget, X, y, MemoryError, "gradient step.*nothing was charged")


def test_constant_huge_data_is_refused_by_naive_bayes_before_the_charge():
    # Bounds read from constant data near 1e300 gave DPGaussianNB var_ == 0
    # and NaN probabilities (issue 26); the range read is refused now.
    from skdp.naive_bayes import DPGaussianNB

    est, budget = _with_budget(DPGaussianNB())
    X, y = estimator_data(est)
    X = np.full_like(X, 1e300)
    _fails_cleanly(est, budget, X, y, ValueError, r"beyond 1e\+150")


def test_a_huge_huber_width_gives_a_finite_model():
    # huber_h=1e300 raised OverflowError (34, 'Numerical result out of
    # range') on an older main (issue 26): a finite model or a refusal
    # naming huber_h, never an overflow.
    from skdp.linear_model import DPLinearSVC

    est, budget = _with_budget(
        DPLinearSVC(data_norm=1.0, classes=[0, 1]), huber_h=1e300
    )
    X, y = estimator_data(est)
    try:
        est.fit(X, y)
    except ValueError as error:
        assert "huber_h" in str(error)
        assert budget.ledger == []
    else:
        assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
        assert len(budget.ledger) == 1


def test_the_round_limit_can_be_raised_by_the_environment(monkeypatch):
    # The refusal says how to raise it; the variable is read at plan time.
    from skdp.utils._feasibility import check_rounds, max_rounds

    with pytest.raises(ValueError, match="SKDP_MAX_ROUNDS"):
        check_rounds(2_000_000, "DP-SGD steps", "use fewer epochs")
    monkeypatch.setenv("SKDP_MAX_ROUNDS", "3e6")
    assert max_rounds() == 3_000_000
    check_rounds(2_000_000, "DP-SGD steps", "use fewer epochs")
    monkeypatch.setenv("SKDP_MAX_ROUNDS", "-1")
    with pytest.raises(ValueError, match="positive whole number"):
        max_rounds()
