"""How `bot/slack` is put together, read from its source: imports point one way (no module
imports `bot.slack.app`, no two modules import each other, even for type checking only, and no
support module imports a listener of `bot.slack.listeners`), SQL lives in `bot.slack.store` alone,
and no listener reaches into the index — what they read of the wiki comes through `KnowledgeBase`,
the records through `bot.records.question_log` (issue 25)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SLACK = REPO / "bot" / "slack"
LISTENERS = "bot.slack.listeners"
DATABASE_LIBRARIES = ("sqlalchemy", "sqlmodel", "psycopg", "psycopg2")


def _modules() -> dict[str, ast.Module]:
    """bot/slack's modules and its listeners' (`bot.slack.listeners.questions`), by dotted name."""
    return {".".join(path.relative_to(REPO).with_suffix("").parts): ast.parse(path.read_text(), str(path))
            for path in sorted(SLACK.rglob("*.py")) if path.stem != "__init__"}


def _imports(tree: ast.Module) -> set[str]:
    """Every module imported anywhere in the file (inside functions and TYPE_CHECKING blocks too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if node.module in ("bot.slack", LISTENERS):  # `from bot.slack import blocks`
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_no_slack_module_imports_the_app_and_none_import_each_other_in_a_circle():
    modules = _modules()
    graph = {name: {m for m in _imports(tree) if m in modules} for name, tree in modules.items()}
    assert not [name for name, deps in graph.items() if "bot.slack.app" in deps]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for dep in graph[start] - seen:
            seen.add(dep)
            if dep == goal or reaches(dep, goal, seen):
                return True
        return False

    assert not [name for name in graph if reaches(name, name, set())]


def test_the_listeners_stand_apart_from_what_they_use():
    """Listeners import support modules, never the other way round (the app alone imports them all);
    and a module in `bot.slack.listeners` is a listener: its `register(app, services)` is in `LISTENERS`,
    or it is a `/kb` sub-command `commands` routes to."""
    from bot.slack import app

    modules = _modules()
    listeners = {name for name in modules if name.startswith(LISTENERS + ".")}
    reaching = [f"{name} -> {m}" for name, tree in modules.items() if name not in listeners and name != "bot.slack.app"
                for m in sorted(_imports(tree)) if m == LISTENERS or m.startswith(LISTENERS + ".")]
    assert reaching == []
    registered = {module.__name__ for module in app.LISTENERS}
    assert registered <= listeners
    assert listeners - registered == {f"{LISTENERS}.resync_command", f"{LISTENERS}.channel_command"}


def test_only_the_store_runs_sql_and_no_listener_reaches_into_the_index():
    for name, tree in _modules().items():
        imports = _imports(tree)
        if name != "bot.slack.store":
            assert not [m for m in imports if m.split(".")[0] in DATABASE_LIBRARIES], name
        if name != "bot.slack.app":  # the app builds the KnowledgeBase over the index it is given
            assert "indexing.index" not in imports, name
        reached = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "index"
                   and isinstance(node.value, ast.Attribute) and node.value.attr == "kb"]
        assert not reached, f"{name} reaches kb.index"
