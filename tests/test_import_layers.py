"""skdp's modules import one another in one direction, with no cycle.

The graph is read from the source with :mod:`ast`, so it counts every
import: at module level, inside functions (where a cycle hides from the
interpreter) and under ``TYPE_CHECKING``. Importing ``skdp.a.b.c`` from
outside ``skdp.a`` also runs ``skdp/a/__init__.py``, so that is an edge too
(a package's ``__init__`` reaching back up is a cycle like any other).

The layers, lowest first, are written once in ``LAYERS``; an import may go
to its own layer or a lower one, never up. Run this module as a script to
print the graph's cycles and upward imports (``python
tests/test_import_layers.py``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "skdp"

#: Each top-level part of skdp and its layer: a module may import from its
#: own layer or a lower one. Within a layer the packages must not form a
#: cycle either (``test_packages_import_one_another_without_a_cycle``).
LAYERS = {
    # errors and type aliases: import nothing of skdp's
    "exceptions": 0,
    "_typing": 0,
    # randomness, validation, the bundled data
    "utils": 1,
    "datasets": 1,
    # events, accountants, calibration, the budget and its ledger stores
    "accounting": 2,
    # noise: small functions returning (output, event)
    "mechanisms": 3,
    # the plan-charge-run contract every private fit follows
    "base": 4,
    # private statistics, used by estimators (the discretizer's quantiles)
    "tools": 5,
    # the estimators
    "linear_model": 6,
    "naive_bayes": 6,
    "cluster": 6,
    "decomposition": 6,
    "ensemble": 6,
    "preprocessing": 6,
    "synthesis": 6,
    # what works on estimators: search, pipeline checks, audits
    "model_selection": 7,
    "_pipeline_check": 7,
    "audit": 7,
    # the user's entry points
    "cli": 8,
    "__main__": 8,
    "__init__": 8,
}


def _module_names(root: Path) -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (path, is_package)}`` of every module under ``root``."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)
    return modules


def _imported(name: str, is_package: bool, node, modules) -> list[str]:
    """The package's modules an ``import`` or ``from ... import`` node names."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module
        # ``from package import module`` imports the module.
        targets = [
            f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
            for alias in node.names
        ]
    found = []
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target:
            found.append(target)
    return found


def _packages_run(importer: str, target: str) -> list[str]:
    """``target`` and the packages importing it runs that ``importer`` is not in."""
    parts = target.split(".")
    run = [target]
    for depth in range(2, len(parts)):
        package = ".".join(parts[:depth])
        if not (importer == package or importer.startswith(package + ".")):
            run.append(package)
    return run


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules it imports}`` for the package at ``root``, every import."""
    modules = _module_names(root)
    graph = {}
    for name, (path, is_package) in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(name, is_package, node, modules):
                    edges.update(_packages_run(name, target))
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = iter(range(len(graph) + 1))

    def visit(node):
        index[node] = low[node] = next(counter)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def part(module: str) -> str:
    """The top-level part of skdp a module belongs to (``__init__`` for skdp)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer to a higher one, as ``a -> b``.

    (A part without a layer is skipped here and refused by
    ``test_every_part_of_skdp_has_a_layer``.)
    """
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if LAYERS.get(part(target), -1) > LAYERS.get(part(module), len(LAYERS))
    )


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between skdp's top-level parts."""
    packages = {part(module): set() for module in graph}
    for module, targets in graph.items():
        packages[part(module)].update(part(t) for t in targets)
    for name, targets in packages.items():
        targets.discard(name)
    return packages


def test_the_graph_counts_imports_in_functions_and_package_inits(tmp_path):
    # The two shapes of hidden cycle skdp had: a function-level import back
    # (accounting/_ledger.py <-> _sqlite_ledger.py) and a package __init__
    # reaching up to a module that imports from the package (the utils shim
    # for base.PrivateEstimatorMixin).
    files = {
        "pkg/__init__.py": "",
        "pkg/store.py": "def backup():\n    from .sqlite import write\n",
        "pkg/sqlite.py": "from .store import backup\n",
        "pkg/base.py": "from .utils._random import source\n",
        "pkg/utils/__init__.py": (
            "def __getattr__(name):\n    from ..base import Mixin\n    return Mixin\n"
        ),
        "pkg/utils/_random.py": "import numpy\n",
        "pkg/fine.py": "from . import store\nfrom .utils import _random\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path / "pkg")
    assert graph["pkg.fine"] == {"pkg.store", "pkg.utils", "pkg.utils._random"}
    assert sorted(cycles(graph)) == [
        ["pkg.base", "pkg.utils"],
        ["pkg.sqlite", "pkg.store"],
    ]


def test_every_part_of_skdp_has_a_layer():
    assert {part(module) for module in import_graph()} <= set(LAYERS)


def test_no_import_cycle_counting_imports_inside_functions():
    assert cycles(import_graph()) == []


def test_layers_import_downwards_only():
    assert upward_imports(import_graph()) == []


def test_packages_import_one_another_without_a_cycle():
    assert cycles(package_graph(import_graph())) == []


if __name__ == "__main__":  # pragma: no cover
    # ``python tests/test_import_layers.py [path/to/skdp]``: the counts.
    graph = import_graph(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE)
    found = cycles(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports")
    print(f"{len(found)} import cycles")
    for component in found:
        print("  cycle:", ", ".join(component))
    upward = upward_imports(graph)
    print(f"{len(upward)} upward imports")
    for line in upward:
        print("  up:", line)
    unplaced = sorted({part(module) for module in graph} - set(LAYERS))
    print(f"parts without a layer: {', '.join(unplaced) or 'none'}")
    package_cycles = cycles(package_graph(graph))
    print(f"{len(package_cycles)} cycles between packages")
    for component in package_cycles:
        print("  package cycle:", ", ".join(component))
