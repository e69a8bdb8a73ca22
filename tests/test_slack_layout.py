"""How `bot/slack` is put together, read from its source: imports point one way (no module
imports `bot.slack.app`, and no two modules import each other, even for type checking only), SQL
lives in `bot.slack.store` alone, and no listener reaches into the index — what they read of the
wiki comes through `KnowledgeBase`, the records through `bot.records.question_log` (issue 25)."""

from __future__ import annotations

import ast
from pathlib import Path

SLACK = Path(__file__).resolve().parents[1] / "bot" / "slack"
DATABASE_LIBRARIES = ("sqlalchemy", "sqlmodel", "psycopg", "psycopg2")


def _modules() -> dict[str, ast.Module]:
    return {f"bot.slack.{path.stem}": ast.parse(path.read_text(), str(path))
            for path in sorted(SLACK.glob("*.py")) if path.stem != "__init__"}


def _imports(tree: ast.Module) -> set[str]:
    """Every module imported anywhere in the file (inside functions and TYPE_CHECKING blocks too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if node.module == "bot.slack":
                found |= {f"bot.slack.{alias.name}" for alias in node.names}
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
