"""One rule for the public API: what is exported, delta, argument order.

* Every name a public module exports is in the API reference, and
  :mod:`skdp.accounting` exports what a user needs (events, accountants,
  the budget, calibration, the ledger stores), not the curves and filters
  the accountants are built from.
* ``delta=None`` is every estimator's default, resolved when the fit is
  planned by the one rule of ``skdp/accounting/_delta.py``: 0 for a pure
  mechanism, ``DEFAULT_DELTA`` for one that needs delta > 0.
* ``random_state`` and ``budget`` come last, in that order (only
  ``verbose`` after them), as keyword-only parameters.
"""

import importlib
import inspect
import pkgutil
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import skdp
import skdp.accounting
from skdp.accounting import DEFAULT_DELTA, Accountant, LedgerStore, PrivacyEvent
from skdp.utils.discovery import all_estimators

ROOT = Path(__file__).resolve().parents[1]


def _public_modules():
    names = ["skdp"] + [
        module.name
        for module in pkgutil.walk_packages(skdp.__path__, "skdp.")
        if not any(part.startswith("_") for part in module.name.split("."))
    ]
    return [importlib.import_module(name) for name in names]


def _public_callables():
    """``(qualified name, callable)`` of every class and function exported."""
    found = {}
    for module in _public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(found.items())


def _parameters(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        return inspect.signature(target).parameters
    except (TypeError, ValueError):  # a builtin __init__
        return {}


def test_every_public_name_is_in_the_api_reference():
    text = (ROOT / "doc" / "api.rst").read_text(encoding="utf-8")
    missing = [
        f"{module.__name__}.{name}"
        for module in _public_modules()
        for name in getattr(module, "__all__", [])
        if not name.startswith("__") and not re.search(rf"\b{re.escape(name)}\b", text)
    ]
    assert missing == []


def test_accounting_exports_what_a_user_needs_and_no_helpers():
    # The anchor is dp_accounting's top level: events, accountants,
    # calibration. Here also the budget, its default delta and the ledger
    # stores. The Renyi curves (rdp_*), the privacy loss distributions, the
    # budget's filters and their records are private helpers.
    kinds = {}
    for name in skdp.accounting.__all__:
        obj = getattr(skdp.accounting, name)
        module = getattr(obj, "__module__", "skdp.accounting._delta")
        if inspect.isclass(obj) and issubclass(obj, PrivacyEvent):
            kinds[name] = "event" if module == "skdp.accounting._events" else module
        elif inspect.isclass(obj) and (
            issubclass(obj, Accountant) or obj.__name__ == "Accountant"
        ):
            kinds[name] = "accountant"
        elif module.startswith("skdp.accounting.ledgers.") or (
            inspect.isclass(obj) and isinstance(obj, type) and obj is LedgerStore
        ):
            kinds[name] = "ledger"
        elif module in (
            "skdp.accounting._calibration",
            "skdp.accounting._analytic_gaussian",
        ):
            kinds[name] = "calibration"
        else:
            kinds[name] = module
    allowed = {"event", "accountant", "ledger", "calibration"}
    others = {name: kind for name, kind in kinds.items() if kind not in allowed}
    assert others == {
        "CompositionReport": "skdp.accounting._composition",
        "DEFAULT_DELTA": "skdp.accounting._delta",
        "NeighbouringRelation": "skdp.accounting._composition",
        "PrivacyBudget": "skdp.accounting._budget",
        "event_from_dict": "skdp.accounting._events",
        "event_to_dict": "skdp.accounting._events",
    }
    assert not [name for name in skdp.accounting.__all__ if name.startswith("rdp_")]


def test_random_state_then_budget_come_last_and_keyword_only():
    checked = []
    for qualname, obj in _public_callables():
        params = _parameters(obj)
        # The rule is for the optional budget a fit or a tool charges; a
        # function whose subject is the budget (charge it this event) takes
        # it first, without a default.
        if (
            "budget" not in params
            or params["budget"].default is inspect.Parameter.empty
        ):
            continue
        names = list(params)
        assert "random_state" in params, qualname
        position = names.index("budget")
        assert names[position - 1] == "random_state", (qualname, names)
        assert names[position + 1 :] in ([], ["verbose"]), (qualname, names)
        for name in ("random_state", "budget"):
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, qualname
            assert params[name].default is None, qualname
        checked.append(qualname)
    assert len(checked) >= 25  # every estimator, composite and tool


def _takes_delta():
    return [cls for _, cls in all_estimators() if "delta" in _parameters(cls)]


def test_delta_is_none_by_default_and_documented_by_reference():
    classes = _takes_delta()
    assert len(classes) == 11
    for cls in classes:
        assert _parameters(cls)["delta"].default is None, cls.__name__
        # numpydoc: the entry runs to the next line that is not indented.
        entry = re.search(r"^delta : (.*?)\n(?=\S)", inspect.getdoc(cls), re.M | re.S)
        assert entry is not None, cls.__name__
        assert "float or None, default=None" in entry.group(1), cls.__name__
        assert ":ref:`default_delta`" in entry.group(1), cls.__name__


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 3))
    y = (X[:, 0] > 0.5).astype(int)
    return X, y


def _approximate_and_pure():
    """Each estimator taking ``delta``, by the kind of its default mechanism."""
    from skdp import (
        DPPCA,
        DPHistGradientBoostingClassifier,
        DPHistGradientBoostingRegressor,
        DPLinearRegression,
        DPLinearSVC,
        DPLogisticRegression,
        DPRandomForestClassifier,
        DPRandomForestRegressor,
        PMWSynthesizer,
        PrivateSearchCV,
        SyntheticDataClassifier,
    )

    logistic = {"data_norm": 2.0, "classes": [0, 1]}
    linear = {"data_norm": 2.0, "y_bounds": (0, 1)}
    return [
        (DPLogisticRegression(**logistic), DEFAULT_DELTA),
        (DPLogisticRegression(method="objective", **logistic), 0.0),
        (DPLogisticRegression(method="output", **logistic), 0.0),
        (DPLinearSVC(**logistic), DEFAULT_DELTA),
        (DPLinearSVC(method="objective", **logistic), 0.0),
        (DPLinearRegression(**linear), DEFAULT_DELTA),
        (
            DPLinearRegression(method="adassp", data_norm=2.0, y_bounds=(0, 1)),
            DEFAULT_DELTA,
        ),
        (DPLinearRegression(method="output", data_norm=2.0, y_bounds=(0, 1)), 0.0),
        (DPPCA(data_norm=2.0), DEFAULT_DELTA),
        (DPRandomForestClassifier(n_estimators=2), DEFAULT_DELTA),
        (DPRandomForestRegressor(n_estimators=2), DEFAULT_DELTA),
        (DPHistGradientBoostingClassifier(max_iter=1), DEFAULT_DELTA),
        (DPHistGradientBoostingRegressor(max_iter=1), DEFAULT_DELTA),
        (PMWSynthesizer(n_rounds=2), DEFAULT_DELTA),
        (PMWSynthesizer(n_rounds=2, noise="laplace"), 0.0),
        (SyntheticDataClassifier(n_rounds=2), DEFAULT_DELTA),
        (SyntheticDataClassifier(n_rounds=2, noise="laplace"), 0.0),
        (
            PrivateSearchCV(
                DPLogisticRegression(method="objective", **logistic),
                {"C": [0.1, 1.0]},
                mean_trials=2,
            ),
            DEFAULT_DELTA,
        ),
    ]


def _case_id(value):
    if isinstance(value, float):
        return "pure" if value == 0.0 else "approximate"
    params = value.get_params(deep=False)
    kind = {k: params[k] for k in ("method", "noise") if k in params}
    return type(value).__name__ + "".join(f"-{v}" for v in kind.values())


@pytest.mark.parametrize("estimator, expected", _approximate_and_pure(), ids=_case_id)
def test_delta_none_is_resolved_by_the_one_rule(estimator, expected):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bounds read from the data
        assert estimator.privacy_plan(X, y).delta == expected
        given = 0.0 if expected == 0.0 else 1e-8
        estimator.set_params(delta=given)
        assert estimator.privacy_plan(X, y).delta == given
    assert DEFAULT_DELTA == 1e-6  # the value the user guide documents
