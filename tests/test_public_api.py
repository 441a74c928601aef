"""One rule for the public API: what is exported, delta, argument order.

* Every name a public module exports is in the API reference, and
  :mod:`skdp.accounting` exports what a user needs (events, accountants,
  the budget, calibration, the ledger stores), not the curves and filters
  the accountants are built from.
"""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import skdp
import skdp.accounting
from skdp.accounting import Accountant, LedgerStore, PrivacyEvent

ROOT = Path(__file__).resolve().parents[1]


def _public_modules():
    names = ["skdp"] + [
        module.name
        for module in pkgutil.walk_packages(skdp.__path__, "skdp.")
        if not any(part.startswith("_") for part in module.name.split("."))
    ]
    return [importlib.import_module(name) for name in names]


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
    # calibration. Here also the budget and the ledger stores. The Renyi
    # curves (rdp_*), the privacy loss distributions, the budget's filters
    # and their records are private helpers.
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
        "NeighbouringRelation": "skdp.accounting._composition",
        "PrivacyBudget": "skdp.accounting._budget",
        "event_from_dict": "skdp.accounting._events",
        "event_to_dict": "skdp.accounting._events",
    }
    assert not [name for name in skdp.accounting.__all__ if name.startswith("rdp_")]
