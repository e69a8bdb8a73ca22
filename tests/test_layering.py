"""The floor plan holds: imports point one way (connectors ← indexing ← bot), no product module
imports itself back through others (an import circle, counting imports made inside functions and
those made only for type checking), no product module is over 450 lines, and no test imports the
benchmarks (what tests check lives in the product, in training/ or in tests/support/).

Read from the source with `ast`, without importing anything, so a circle is caught even where
Python would tolerate it at run time."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from tests.support.corpora import REPO

LAYERS = ("connectors", "indexing", "bot")  # each may import only those before it
MAX_LINES = 450
# Over the cap, with the reason and what ends it. Nothing else may join this list.
OVER_THE_CAP: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(path: Path) -> set[str]:
    """Product modules `path` imports, anywhere in it (functions and TYPE_CHECKING blocks too). An
    import of a package's submodule counts as the submodule; a module's own packages are not
    counted (Python imports them first whatever the module says)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{alias.name}" for alias in node.names} & MODULES.keys()
            names.update(subs or {node.module})
    resolved = set()
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            resolved.add(name)
    return resolved


@cache
def _graph() -> dict[str, set[str]]:
    """Module → the product modules it imports (read once per run)."""
    graph = {}
    for module, path in MODULES.items():
        graph[module] = {m for m in _imported(path) if m != module and not module.startswith(m + ".")}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circle_in_product_code():
    assert _circles(_graph()) == []


def test_imports_point_one_way():
    upward = []
    for module, imported in _graph().items():
        layer = LAYERS.index(module.split(".")[0])
        upward += [f"{module} -> {m}" for m in imported if LAYERS.index(m.split(".")[0]) > layer]
    assert upward == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_product_module_is_over_the_line_cap(module):
    path = MODULES[module]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    relative = path.relative_to(REPO).as_posix()
    if relative in OVER_THE_CAP:
        pytest.xfail(f"{relative}: {lines} lines; {OVER_THE_CAP[relative]}")
    assert lines <= MAX_LINES, f"{relative} has {lines} lines (cap {MAX_LINES}): split it by concern"


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_test_imports_the_benchmarks():
    importing = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "benchmarks" or n.startswith("benchmarks.") for n in names):
                importing.append(path.relative_to(REPO).as_posix())
    assert importing == []
