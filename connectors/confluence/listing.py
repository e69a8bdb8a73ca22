"""What a Confluence REST listing says of a page (`Listed`), read from the server's JSON without
trusting it: ids must be ids (`connectors.confluence.links.page_id`), and read restrictions that
are not given in full mean restricted (`readers` None, with the reason in `unknown`).

Restrictions fail closed: Docent publishes a restricted page only when it sees *every* principal
a restriction admits. A restriction list whose `results` is shorter than its `size`, that has a
`_links.next` (paginated: the rest was not sent), or whose shape is not the documented one, is
"restricted to someone Docent cannot see" — before, `results: []` with `size: 3` read as "no
restriction" and a salary page was answered in an ordinary channel (issue 45).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone

from connectors.changes import IndexedPage
from connectors.confluence.api import JsonObject
from connectors.confluence.links import page_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listed:
    """One page as the listing shows it."""

    id: str
    title: str
    space: str
    when: datetime | None
    ancestors: tuple[str, ...]  # as the server gave them: `_scope` checks each is an id
    readers: frozenset[str] | None  # its own read restriction ("user:…"/"group:…"); empty: none; None: unknown
    labels: tuple[str, ...] = ()
    unknown: str = ""  # why `readers` is None


def listed(raw: JsonObject) -> Listed | None:
    """A listing entry; None (logged) when its id is not a page id."""
    pid = page_id(raw.get("id"))
    if pid is None:
        log.warning("a listed page's id %r is not a page id (digits): left out", str(raw.get("id"))[:40])
        return None
    ancestors = tuple(str(a.get("id"))[:40] for a in _list(raw.get("ancestors")) if isinstance(a, dict) and a.get("id"))
    readers, unknown = _readers(raw)
    labels = _list(_dict(_dict(raw.get("metadata")).get("labels")).get("results"))
    space = _dict(raw.get("space")).get("key")
    return Listed(id=pid, title=str(raw.get("title") or ""), space=str(space or ""),
                  when=when(_dict(raw.get("version")).get("when")), ancestors=ancestors, readers=readers,
                  labels=tuple(str(lb.get("name")) for lb in labels if isinstance(lb, dict) and lb.get("name")),
                  unknown=unknown)


def _readers(raw: JsonObject) -> tuple[frozenset[str] | None, str]:
    """Who a read restriction admits, as "user:…" (every id the server gives: account id, username,
    user key) and "group:…"; empty: no restriction; None (with why): not known in full."""
    try:
        found = raw["restrictions"]["read"]["restrictions"]
        lists = {"user": found["user"], "group": found["group"]}
    except (KeyError, TypeError):
        return None, "the answer holds no read restrictions"
    entries: dict[str, list[object]] = {}
    for kind, part in lists.items():
        results = part.get("results") if isinstance(part, dict) else None
        size = part.get("size", len(results) if isinstance(results, list) else 0) if isinstance(part, dict) else None
        if not isinstance(results, list) or not isinstance(size, int) or isinstance(size, bool):
            return None, f"its {kind} read restrictions have an unknown shape"
        if size > len(results) or _dict(part.get("_links")).get("next"):
            return None, f"its {kind} read restrictions came back incomplete ({len(results)} of {size} given)"
        entries[kind] = results
    readers = {f"group:{g.get('name')}" for g in entries["group"] if isinstance(g, dict) and g.get("name")}
    for user in entries["user"]:
        if isinstance(user, dict):
            readers |= {f"user:{user[key]}" for key in ("accountId", "username", "userKey") if user.get(key)}
    if (entries["user"] or entries["group"]) and not readers:
        return None, "it is restricted to principals the answer does not name"
    return frozenset(readers), ""


def stale(record: IndexedPage | None, entry: Listed, scope: str) -> bool:
    """Whether a listed page (or attachment) must be read again."""
    if record is None or record.failed or record.access != scope:
        return True
    if entry.when is None or record.updated_at is None:
        return True
    return entry.when > record.updated_at


def when(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _dict(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
