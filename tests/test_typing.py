"""The public API carries type hints, and the package says so (``py.typed``).

Walks the ``__all__`` of skdp and of every public subpackage, plus the
estimators :func:`skdp.utils.discovery.all_estimators` finds, and checks
that every public function and every public method of a public class that
is *defined in skdp* annotates all of its parameters (``self``/``cls`` and
``*args``/``**kwargs`` exempt) and its return value.  Properties must
annotate what they return.  Only the presence of annotations is checked
here; whether they are right is mypy's job.
"""

from __future__ import annotations

import importlib
import inspect
from importlib import resources

from skdp.utils.discovery import all_estimators

PUBLIC_MODULES = (
    "skdp",
    "skdp.accounting",
    "skdp.audit",
    "skdp.cluster",
    "skdp.datasets",
    "skdp.decomposition",
    "skdp.linear_model",
    "skdp.mechanisms",
    "skdp.model_selection",
    "skdp.naive_bayes",
    "skdp.preprocessing",
    "skdp.synthesis",
    "skdp.tools",
    "skdp.utils",
    "skdp.utils.discovery",
)

# Modules whose callables are not checked (empty: the whole public API is).
PENDING: set[str] = set()

# Dunder methods that are part of a class's public interface.
PUBLIC_DUNDERS = {"__init__", "__call__"}


def _is_pending(module_name: str) -> bool:
    return any(
        module_name == pending or module_name.startswith(pending + ".")
        for pending in PENDING
    )


def _defined_in_skdp(obj: object) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "skdp" or module.startswith("skdp.")


def _public_objects() -> list[object]:
    found: dict[int, object] = {}
    for module_name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a subpackage not merged yet
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and _defined_in_skdp(
                obj
            ):
                found[id(obj)] = obj
    for _, estimator in all_estimators():
        found[id(estimator)] = estimator
    return list(found.values())


def _methods(cls: type):
    """``(qualified name, function, kind)`` of the public methods of ``cls``.

    Inherited methods count where they are defined (once), if that is skdp.
    """
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not _defined_in_skdp(klass):
            continue
        for name, member in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            if name.startswith("_") and name not in PUBLIC_DUNDERS:
                continue
            if isinstance(member, property):
                if member.fget is not None:
                    yield member.fget, "property"
                continue
            if isinstance(member, (staticmethod, classmethod)):
                yield member.__func__, type(member).__name__
            elif inspect.isfunction(member):
                yield member, "method"
            elif inspect.isfunction(getattr(member, "fn", None)):
                yield member.fn, "method"  # sklearn's available_if descriptor


def _missing(function, kind: str) -> list[str]:
    signature = inspect.signature(function)
    problems = []
    parameters = list(signature.parameters.values())
    if kind in ("method", "classmethod", "property") and parameters:
        parameters = parameters[1:]  # self / cls
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.annotation is inspect.Parameter.empty:
            problems.append(f"parameter {parameter.name!r}")
    if signature.return_annotation is inspect.Signature.empty:
        problems.append("return")
    return problems


def _callables():
    """Every public function/method defined in skdp, keyed by qualified name."""
    result = {}
    for obj in _public_objects():
        if inspect.isfunction(obj):
            candidates = [(obj, "function")]
        else:
            candidates = list(_methods(obj))
        for function, kind in candidates:
            if not _defined_in_skdp(function):
                continue  # inherited from scikit-learn, or generated
            key = f"{function.__module__}.{function.__qualname__}"
            result[key] = (function, kind)
    return result


def test_py_typed_marker_ships():
    assert resources.files("skdp").joinpath("py.typed").is_file()


def test_public_api_is_annotated():
    callables = _callables()
    checked = {
        key: value
        for key, value in callables.items()
        if not _is_pending(value[0].__module__)
    }
    # The walk finds the API (a broken walk must not pass vacuously).
    assert len(checked) > 100, sorted(checked)
    missing = {
        key: problems
        for key, (function, kind) in sorted(checked.items())
        if (problems := _missing(function, kind))
    }
    report = "\n".join(f"  {key}: {', '.join(p)}" for key, p in missing.items())
    assert not missing, (
        f"{len(missing)} of {len(checked)} public callables lack type hints:\n" + report
    )


def test_every_private_estimator_is_importable_from_skdp():
    # The linear models were, naive Bayes, PCA, k-means and the scalers were
    # not (issue 27): one rule for the top-level namespace.
    import skdp
    from skdp.utils.discovery import all_estimators

    for name, cls in all_estimators():
        assert name in skdp.__all__ and getattr(skdp, name) is cls, name
