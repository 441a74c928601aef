"""Find every estimator skdp exports (used by the common tests)."""

from __future__ import annotations

import importlib
import inspect

from sklearn.base import BaseEstimator

__all__ = ["all_estimators"]

_PUBLIC_MODULES = (
    "skdp",
    "skdp.linear_model",
    "skdp.synthesis",
    "skdp.model_selection",
    "skdp.preprocessing",
    "skdp.naive_bayes",
    "skdp.decomposition",
    "skdp.cluster",
    "skdp.ensemble",
)


def all_estimators() -> list[tuple[str, type]]:
    """``(name, class)`` of every public scikit-learn estimator in skdp, sorted.

    Examples
    --------
    >>> from skdp.utils.discovery import all_estimators
    >>> all(isinstance(name, str) for name, _ in all_estimators())
    True
    """
    found: dict[str, type] = {}
    for module_name in _PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseEstimator)
                and not inspect.isabstract(obj)
                and not name.startswith("_")
            ):
                found[name] = obj
    return sorted(found.items())
