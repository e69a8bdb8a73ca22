"""`[scopes.NAME]` tables and `shared_channels`: where each access scope of the sources file is
visible, read into an `AccessConfig` (whose rule, `visible_scopes`, is `sources.access`'s).

    shared_channels = "public"        # Slack Connect channels: "public" (default) or "none" (no answers)

    [scopes.hr-private]
    channels = ["C0HRTEAM1"]          # everyone in these channels ("*": every channel)
    users = ["U0ALICE01"]             # direct messages with Docent: these users ("*": every member)
    usergroups = ["S0HRSTAFF"]        # ... and the members of these user groups

Ids are Slack's (C…, U…, S…), never #names or @handles: a name would match nothing and hide the
scope everywhere without a word, so it stops Docent at start instead.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from connectors.document import PUBLIC
from connectors.space_access import WILDCARD
from sources.access import SHARED_CHOICES, SHARED_PUBLIC, AccessConfig, ScopeRule
from sources.errors import SourcesError, checked_table

_SCOPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
# Slack ids: channels C… (public), G… (private, older), D… (direct message); users U…/W…; groups S…
_SLACK_IDS = {
    "channels": (re.compile(r"^[CGD][A-Z0-9]+$"), "a Slack channel id such as C0123ABCD (not a #name)"),
    "users": (re.compile(r"^[UW][A-Z0-9]+$"), "a Slack user id such as U0123ABCD (not a @name)"),
    "usergroups": (re.compile(r"^S[A-Z0-9]+$"), "a Slack user-group id such as S0123ABCD (not a @handle)"),
}


class _ScopeTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    channels: list[str] = Field(default_factory=list)
    users: list[str] = Field(default_factory=list)
    usergroups: list[str] = Field(default_factory=list)


def parse_access(data: dict[str, Any], where: str) -> AccessConfig:
    """The `scopes` tables and `shared_channels` of a parsed sources file, validated."""
    shared = data.get("shared_channels", SHARED_PUBLIC)
    if shared not in SHARED_CHOICES:
        raise SourcesError(f"{where}: shared_channels must be \"public\" (Slack Connect channels see public "
                           f"scopes only) or \"none\" (no answers there), not {shared!r}")
    tables = data.get("scopes") or {}
    if not isinstance(tables, dict):
        raise SourcesError(f"{where}: scopes must be tables [scopes.NAME] with channels, users and usergroups")
    scopes = {}
    for name, table in tables.items():
        here = f"{where}: [scopes.{name}]"
        check_scope_name(name, here)
        if name == PUBLIC:
            raise SourcesError(f"{here}: the public scope is visible everywhere and takes no settings "
                               f"(use another scope name to restrict pages)")
        parsed = checked_table(_ScopeTable, table, here, "a table with channels, users and/or usergroups", _must_be)
        scopes[name] = ScopeRule(**{key: frozenset(_slack_ids(getattr(parsed, key), key, here)) for key in _SLACK_IDS})
    return AccessConfig(scopes=scopes, shared_channels=shared)


def _must_be(key: str, _value: object) -> str:
    return f"a list of ids, e.g. {key} = [\"{_example(key)}\"]"


def _slack_ids(value: list[str], key: str, where: str) -> list[str]:
    pattern, what = _SLACK_IDS[key]
    for item in value:
        if item == WILDCARD and key in ("channels", "users"):
            continue
        if not pattern.match(item):
            raise SourcesError(f"{where}: {key}: {item!r} is not {what}")
    return value


def _example(key: str) -> str:
    return {"channels": "C0123ABCD", "users": "U0123ABCD", "usergroups": "S0123ABCD"}.get(key, "…")


def check_scope_name(name: object, where: str) -> None:
    """Scope names: letters, digits, '.', '_', ':', '-' (a source's `access`, a `[scopes.NAME]` table)."""
    if not isinstance(name, str) or not _SCOPE.match(name):
        raise SourcesError(f"{where}: access scope {name!r} must be letters, digits, '.', '_', ':' or '-'")
