"""``plan_fit`` / ``PlannedFit`` and the one charge path every fit and release takes."""

import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import skdp
import skdp.tools
from skdp import BudgetExceededError, PrivacyBudget
from skdp.accounting import LaplaceEvent
from skdp.base import PlannedFit, charge_and_run
from skdp.exceptions import ChargedFitError
from skdp.linear_model import DPLogisticRegression


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (60, 3)) / 2
    return X, (X[:, 0] > 0).astype(int)


def _model(budget=None):
    return DPLogisticRegression(
        epsilon=0.5, data_norm=1.0, classes=[0, 1], budget=budget, random_state=3
    )


def test_planning_spends_nothing_and_running_is_fitting():
    X, y = _data()
    budget = PrivacyBudget(1.0, 1e-4)
    planned = _model(budget).plan_fit(X, y)
    assert isinstance(planned, PlannedFit) and budget.ledger == []
    assert planned.plan.event == _model().privacy_plan(X, y).event
    fitted = planned.run()
    assert len(budget.ledger) == 1
    reference = _model(PrivacyBudget(1.0, 1e-4)).fit(X, y)
    np.testing.assert_array_equal(fitted.coef_, reference.coef_)


def test_a_planned_fit_runs_once():
    X, y = _data()
    planned = _model().plan_fit(X, y)
    planned.run()
    with pytest.raises(RuntimeError, match="already ran"):
        planned.run()


def test_a_refused_run_leaves_no_model_and_no_record():
    X, y = _data()
    budget = PrivacyBudget(0.1)
    planned = _model(budget).plan_fit(X, y)
    with pytest.raises(BudgetExceededError):
        planned.run()
    assert budget.ledger == []
    assert not hasattr(planned.estimator, "coef_")


# -- one charge path (issue 27) --------------------------------------------------

_PRIVATE_STEPS = re.compile(
    r"(\S*?)\._(prepare_fit|plan_fit|run_fit|plan_with_input|charge|run_charged)\("
)


def _sources():
    """Each module of skdp (path relative to the package) and its lines."""
    root = Path(skdp.__file__).parent
    return {
        path.relative_to(root).as_posix(): path.read_text().splitlines()
        for path in sorted(root.rglob("*.py"))
    }


def _code(lines):
    """Numbered lines that are code (not a doctest line of a docstring)."""
    for number, line in enumerate(lines, 1):
        if not line.lstrip().startswith((">>>", "...")):
            yield number, line


def test_no_module_reaches_into_another_estimators_private_steps():
    # PrivateSearchCV drove its trials through _plan_with_input, _charge and
    # _run_charged, and SyntheticDataClassifier its synthesizer through
    # _prepare_fit, _plan_fit and _run_fit (issue 27's "four charge paths"):
    # only base.py may call an estimator's steps; others call their own.
    offenders = [
        f"{name}:{number}: {line.strip()}"
        for name, lines in _sources().items()
        if name != "base.py"
        for number, line in _code(lines)
        for match in _PRIVATE_STEPS.finditer(line)
        if not match.group(1).endswith(("self", "super()"))
    ]
    assert offenders == []


def test_every_spend_goes_through_the_one_charge_primitive():
    # Counted by grep: a budget is spent (spend, declare) in one place, and the
    # guard that runs code after a spend is written once. Before issue 27's
    # one charge path: two spends (base.py, tools/_validation.py) and three
    # guards (base.py, tools/_validation.py, synthesis/_online.py).
    sources = _sources()
    spends = [
        (name, number)
        for name, lines in sources.items()
        for number, line in _code(lines)
        if re.search(r"\.(spend|declare)\(", line)
    ]
    guard = 'catch_warnings(), np.errstate(all="ignore")'
    guards = [
        (name, number)
        for name, lines in sources.items()
        for number, line in _code(lines)
        if guard in line or "raise ChargedFitError" in line
    ]
    base = sources["base.py"]
    charge = next(i for i, line in enumerate(base, 1) if line.startswith("def charge("))
    guarded = next(
        i for i, line in enumerate(base, 1) if line.startswith("def run_charged(")
    )
    assert [name for name, _ in spends] == ["base.py"]
    assert charge < spends[0][1] < guarded
    assert [name for name, _ in guards] == ["base.py", "base.py"]
    assert all(guarded < number for _, number in guards)
    # Callers of the primitive itself: the planned fit and the one-shot path.
    callers = [
        (name, number)
        for name, lines in sources.items()
        for number, line in _code(lines)
        if re.search(r"(?<![\w.])charge\(", line) and "def charge(" not in line
    ]
    assert [name for name, _ in callers] == ["base.py", "base.py"]


def _private_estimators():
    from skdp.base import PrivateEstimatorMixin
    from skdp.utils.discovery import all_estimators

    return [
        name for name, cls in all_estimators() if issubclass(cls, PrivateEstimatorMixin)
    ]


@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("name", _private_estimators())
def test_every_estimator_records_exactly_its_plan(name):
    # What the one path charges is the plan, labelled: on the estimator, in
    # the ledger and in the certificate (a path that charged something else,
    # or twice, or under another delta, fails here).
    from sklearn.base import clone, is_regressor

    from skdp.utils.discovery import all_estimators

    rng = np.random.default_rng(0)
    estimator = dict(all_estimators())[name](random_state=0)
    if name in ("OnlinePMW", "PMWSynthesizer"):
        X, y = rng.integers(0, 3, (120, 3)), None
    else:
        X = rng.uniform(0, 1, (120, 3))
        y = X @ [1.0, -1.0, 0.5] if is_regressor(estimator) else (X[:, 0] > 0.5) * 1
    if name == "OnlinePMW":
        estimator.set_params(domain=[[0, 1, 2]] * 3)
    plan = clone(estimator).privacy_plan(X, y)
    budget = PrivacyBudget(1e3, 0.5)
    estimator.set_params(budget=budget).fit(X, y)
    (entry,) = budget.ledger
    assert entry == estimator.budget_entry_
    event = estimator.privacy_event_
    assert entry.event == event == plan.event.with_label(event.label)
    assert entry.label == event.label and event.label.startswith(name)
    assert entry.certificate == (estimator.epsilon_, estimator.delta_)
    assert estimator.delta_ in (0.0, plan.delta)  # pure events cost no delta


@pytest.mark.parametrize("name", _private_estimators())
def test_plan_fit_validates_the_parameters_as_fit_does(name):
    # fit validates its parameters (scikit-learn's _fit_context) before
    # planning; plan_fit and privacy_plan, public too, refuse the same
    # parameter with the same error instead of failing somewhere inside.
    from sklearn.utils._param_validation import InvalidParameterError

    from skdp.utils.discovery import all_estimators

    estimator = dict(all_estimators())[name](random_state=0)
    if "epsilon" not in estimator.get_params():  # pragma: no cover - all have it
        pytest.skip(f"{name} takes no epsilon")
    estimator.set_params(epsilon="one")
    X = np.random.default_rng(0).integers(0, 3, (40, 3)).astype(float)
    y = np.arange(40) % 2
    with pytest.raises(InvalidParameterError, match="epsilon") as from_fit:
        estimator.fit(X, y)
    with pytest.raises(InvalidParameterError, match="epsilon") as from_plan:
        estimator.plan_fit(X, y)
    assert str(from_plan.value) == str(from_fit.value)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        estimator.privacy_plan(X, y)


# -- the tools on the one path -------------------------------------------------


def _call_tool(name, budget, random_state=0, epsilon=0.5):
    X = np.random.default_rng(0).uniform(0, 1, (120, 3))
    tool = getattr(skdp.tools, name)
    kw = dict(epsilon=epsilon, budget=budget, random_state=random_state)
    if name == "histogram":
        return tool(X[:, 0], bins=5, range=(0, 1), **kw)
    if name == "histogramdd":
        return tool(X, bins=3, range=[(0, 1)] * 3, **kw)
    if name == "count":
        return tool(X, **kw)
    if name == "quantile":
        return tool(X[:, 0], [0.25, 0.5], bounds=(0, 1), **kw)
    return tool(X[:, 0], bounds=(0, 1), **kw)


class _BrokenSource:
    """A noise source whose every use fails with a private-looking message."""

    def __getattr__(self, name):
        raise ValueError("private value 0.4711 in row 7")


@pytest.mark.parametrize("name", skdp.tools.__all__)
def test_a_tool_records_its_plan_once(name):
    budget = PrivacyBudget(1.0)
    _call_tool(name, budget)
    (entry,) = budget.ledger
    label = f"skdp.tools.{name}(epsilon=0.5)"
    assert entry.label == label and entry.event.label == label
    assert entry.certificate == (0.5, 0.0)


@pytest.mark.parametrize("name", skdp.tools.__all__)
def test_a_tool_refused_runs_nothing_and_a_failed_run_withholds_its_error(
    name, monkeypatch
):
    module = sys.modules[getattr(skdp.tools, name).__module__]
    monkeypatch.setattr(module, "check_random_source", lambda _: _BrokenSource())
    budget = PrivacyBudget(0.4)
    with pytest.raises(BudgetExceededError):  # the broken run never starts
        _call_tool(name, budget)
    assert budget.ledger == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ChargedFitError, match="the spend stands") as info:
            _call_tool(name, budget, epsilon=0.3)
    assert f"skdp.tools.{name} failed" in str(info.value)
    assert "0.4711" not in str(info.value) and info.value.__context__ is None
    assert len(budget.ledger) == 1 and budget.spent() == (0.3, 0.0)


def test_charge_and_run_charges_first_and_hands_back_the_result():
    budget = PrivacyBudget(1.0)
    seen = []
    event = LaplaceEvent(0.25, label="a release")
    result = charge_and_run(budget, event, lambda: seen.append(budget.spent()), "r")
    assert result is None and seen == [(0.25, 0.0)]  # recorded before the run
    assert [entry.label for entry in budget.ledger] == ["a release"]
