"""The floor plan holds: imports point one way (connectors ← sources ← indexing ← bot), and inside
indexing down its floors (`INDEXING_FLOORS`: values ← storage ← vectors ← … ← ingest), no product
module imports itself back through others (an import circle, counting imports made inside functions
and those made only for type checking), bot enters a room only through its public face (the names in
the room's `__all__`), indexing and bot read the sources file's model only through the face of
`sources`, each owner queries its own tables (bot imports none of indexing's table classes: it reads
them through `indexing.storage`'s query modules), no product module is over 450 lines, and no test
imports the benchmarks (what tests check lives in the product, in training/ or in tests/support/).

Read from the source with `ast`, without importing anything, so a circle is caught even where
Python would tolerate it at run time — but for the faces, which are also loaded once: each name is
the one its module defines, and importing every face loads none of the modules behind them."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from indexing.faces import homes

from tests.support.corpora import REPO

LAYERS = ("connectors", "sources", "indexing", "bot")  # each may import only those before it
# indexing's floors, bottom first, at the grain of its sub-packages (a top-level module is a floor of its
# own): each imports only its own floor and those below it (docs/architecture.md, "indexing"). `faces` loads
# the rooms' public faces and `values` holds what every room passes along: neither imports any other.
INDEXING_FLOORS = ("faces", "values", "storage", "vectors", "keyword", "config", "search", "index", "ingest")
MAX_LINES = 450
# Over the cap, with the reason and what ends it. Nothing else may join this list.
OVER_THE_CAP: dict[str, str] = {}
# The rooms with a public face: bot imports their names only from the package (`from indexing.search
# import Hit`), never from the module behind it; a room of bot's is entered the same way from outside it.
FACES = ("indexing.storage", "indexing.vectors", "indexing.keyword", "indexing.ingest", "indexing.search",
         "bot.answering", "bot.records", "bot.quality", "bot.verified")
# The sources file's model has a face too, its names imported with the package (nothing behind it is
# heavy, and `kb --help` imports none of it): indexing and bot import them from `sources` only.
SOURCES_FACE = "sources"
# Modules of bot still reaching behind a face, with the reason and what ends it. Nothing else may join.
BEHIND_A_FACE: dict[str, str] = {}
# Each owner queries its own tables: indexing's are defined in TABLES_MODULE, and bot reads them only through the
# functions of `indexing.storage` (`document_queries`, `sync_run_queries`, `indexing.index.index_status`, …), never
# with a query of its own; bot's tables (bot/records, bot/slack/store, bot/verified) are out of indexing's reach,
# which `test_imports_point_one_way` holds. So bot imports nothing TABLES_MODULE defines, but these, with why:
TABLES_MODULE = "indexing.storage.index_tables"
SHARED_WITH_BOT = {
    "utcnow": "the one clock every stored timestamp uses, bot's tables' too",
    "timestamptz": "the column type of every stored time, bot's tables' too",
}
# ... and these table classes for type checking only (an `if TYPE_CHECKING:` import: at run time the name does not
# exist, so no query can be built with it), with why.
TYPED_ONLY = {
    "SyncRun": "indexing hands sync runs over as its rows (IndexStatus.last_runs, sync_run_queries.last_runs); "
               "bot names their type where it shows them",
}


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


def _floor(module: str) -> str | None:
    """The floor of indexing a module is on (`indexing.search.gate` → search); None outside indexing."""
    parts = module.split(".")
    return parts[1] if parts[0] == "indexing" and len(parts) > 1 else None


def _up_the_floors(graph: dict[str, set[str]]) -> list[str]:
    """The imports in `graph` from a floor of indexing to one above it."""
    upward = []
    for module, imported in graph.items():
        floor = _floor(module)
        if floor is None:
            continue
        upward += [f"{module} -> {m}" for m in imported
                   if (to := _floor(m)) is not None and INDEXING_FLOORS.index(to) > INDEXING_FLOORS.index(floor)]
    return sorted(upward)


def test_every_layer_is_read():
    assert [layer for layer in LAYERS if not any(m.split(".")[0] == layer for m in MODULES)] == []


def test_no_import_circle_in_product_code():
    assert _circles(_graph()) == []


def test_imports_point_one_way():
    upward = []
    for module, imported in _graph().items():
        layer = LAYERS.index(module.split(".")[0])
        upward += [f"{module} -> {m}" for m in imported if LAYERS.index(m.split(".")[0]) > layer]
    assert upward == []


def test_every_part_of_indexing_has_a_floor():
    assert sorted({floor for m in MODULES if (floor := _floor(m))} - set(INDEXING_FLOORS)) == []


def test_indexing_imports_only_down_its_floors():
    assert _up_the_floors(_graph()) == []


def test_an_import_up_the_floors_is_caught(tmp_path):
    module = tmp_path / "example.py"
    module.write_text("from typing import TYPE_CHECKING\n\nfrom indexing.values.hits import Hit\n"
                      "from indexing.storage.database import affected\n\n"
                      "if TYPE_CHECKING:\n    from indexing.search.gate import Outcome\n\n\n"
                      "def later():\n    from indexing.index import Index\n", encoding="utf-8")
    assert _up_the_floors({"indexing.storage.example": _imported(module)}) == [
        "indexing.storage.example -> indexing.index", "indexing.storage.example -> indexing.search.gate"]


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


def _face(module: str) -> str | None:
    """The face a module sits behind (its room's package, or `sources`), if any."""
    return next((face for face in (*FACES, SOURCES_FACE) if module == face or module.startswith(face + ".")), None)


@cache
def _public(face: str) -> frozenset[str]:
    """The names in a face's `__all__`, read from its `__init__`."""
    tree = ast.parse(MODULES[face].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def _behind_faces(module: str, source: str, faces: tuple[str, ...] = (*FACES, SOURCES_FACE)) -> list[str]:
    """The imports of `module` (anywhere in `source`) that reach behind another room's face (one of
    `faces`): a module inside the room, or a name the face does not offer."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for target, name in targets:
            face = _face(target)
            if face is None or face not in faces or face == _face(module):
                continue
            if target != face or (name is not None and name not in _public(face)):
                found.append(f"{module}: {target}" + (f" import {name}" if name else ""))
    return found


def test_every_room_has_a_public_face():
    assert [face for face in (*FACES, SOURCES_FACE) if not _public(face)] == []


def test_bot_enters_a_room_only_through_its_face():
    reaching = []
    for module, path in MODULES.items():
        relative = path.relative_to(REPO).as_posix()
        if module.startswith("bot.") and relative not in BEHIND_A_FACE:
            reaching += _behind_faces(module, path.read_text(encoding="utf-8"))
    assert reaching == []


def test_indexing_enters_sources_only_through_its_face():
    reaching = []
    for module, path in MODULES.items():
        if module.startswith("indexing."):
            reaching += _behind_faces(module, path.read_text(encoding="utf-8"), faces=(SOURCES_FACE,))
    assert reaching == []


def test_the_sources_face_offers_every_name_it_lists():
    package = importlib.import_module(SOURCES_FACE)
    assert [name for name in package.__all__ if not hasattr(package, name)] == []


def test_a_module_excused_from_the_faces_still_needs_it():
    for relative in BEHIND_A_FACE:
        module = ".".join(Path(relative).with_suffix("").parts)
        assert _behind_faces(module, (REPO / relative).read_text(encoding="utf-8")), f"{relative} is through: drop it"


def test_reaching_behind_a_face_is_caught():
    source = ("from indexing.search import Hit\nfrom indexing.search.gate import Outcome\n"
              "from indexing.storage import create_engine\nimport indexing.keyword.bm25\n"
              "from bot.answering.lead import render_lead\nfrom indexing.index import Index\n")
    assert _behind_faces("bot.slack.example", source) == [
        "bot.slack.example: indexing.search.gate import Outcome",
        "bot.slack.example: indexing.storage import create_engine",
        "bot.slack.example: indexing.keyword.bm25",
        "bot.slack.example: bot.answering.lead import render_lead",
    ]
    assert _behind_faces("bot.answering.answer", "from bot.answering.lead import render_lead\n") == []
    source = "from sources import SourceConfig\nfrom sources.file import read_sources_file\nfrom sources import Hidden\n"
    assert _behind_faces("indexing.ingest.runner", source, faces=(SOURCES_FACE,)) == [
        "indexing.ingest.runner: sources.file import read_sources_file",
        "indexing.ingest.runner: sources import Hidden",
    ]


def _defined(module: str) -> set[str]:
    """The names a module defines at its top level (classes, functions, assignments)."""
    names: set[str] = set()
    for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the import statements in an `if TYPE_CHECKING:` block."""
    return {id(statement) for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for statement in node.body if isinstance(statement, ast.Import | ast.ImportFrom)}


def _table_imports(module: str, source: str) -> list[str]:
    """The imports in `source` of indexing's table module or of a name it defines (from it or through the
    `indexing.storage` face), but for SHARED_WITH_BOT and the TYPED_ONLY classes in a TYPE_CHECKING block."""
    storage, _, name_of_module = TABLES_MODULE.rpartition(".")
    defined = _defined(TABLES_MODULE)
    tree = ast.parse(source)
    typed = _type_checking_only(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{module}: {a.name}" for a in node.names if a.name == TABLES_MODULE]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in (TABLES_MODULE, storage):
            for alias in node.names:
                if node.module == storage and alias.name == name_of_module:
                    found.append(f"{module}: {TABLES_MODULE}")
                elif (node.module == TABLES_MODULE or alias.name in defined) and alias.name not in SHARED_WITH_BOT \
                        and not (alias.name in TYPED_ONLY and id(node) in typed):
                    found.append(f"{module}: {node.module} import {alias.name}")
    return found


def test_bot_queries_none_of_indexings_tables():
    importing = []
    for module, path in MODULES.items():
        if module.startswith("bot."):
            importing += _table_imports(module, path.read_text(encoding="utf-8"))
    assert importing == []


def test_an_import_of_indexings_tables_is_caught():
    source = ("from typing import TYPE_CHECKING\n\nfrom indexing.storage import DocumentRow, utcnow\n"
              "from indexing.storage import DocumentRecord\nfrom indexing.storage.index_tables import timestamptz\n"
              "import indexing.storage.index_tables\nfrom indexing.storage import index_tables\n\n"
              "if TYPE_CHECKING:\n    from indexing.storage import ParentSection, SyncRun\n\n\n"
              "def later():\n    from indexing.storage import Status, SyncRun\n")
    assert _table_imports("bot.example", source) == [
        "bot.example: indexing.storage import DocumentRecord",
        "bot.example: indexing.storage.index_tables",
        "bot.example: indexing.storage.index_tables",
        "bot.example: indexing.storage import ParentSection",
        "bot.example: indexing.storage import Status",
        "bot.example: indexing.storage import SyncRun",
    ]


@pytest.mark.parametrize("face", FACES)
def test_every_public_name_is_the_one_its_module_defines(face):
    package = importlib.import_module(face)
    assert set(homes(face)) == set(package.__all__)
    for name, (module, attribute) in homes(face).items():
        behind = importlib.import_module(module)
        assert getattr(package, name) is (behind if attribute is None else getattr(behind, attribute))
    with pytest.raises(AttributeError):
        package.not_on_the_face  # noqa: B018


@pytest.mark.slow
def test_importing_the_faces_loads_nothing_behind_them():
    code = (f"import sys; import {', '.join(FACES)}; "
            "print(sorted(m for m in sys.modules if m.startswith(('sqlalchemy', 'numpy', 'indexing.', 'bot.'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert ast.literal_eval(run.stdout) == sorted({*FACES, "indexing.faces"})
