"""Confluence Cloud's v2 REST API, for what v2 does better than v1: reading page bodies in bulk.

Cloud is moving its v1 content endpoints to v2, and v2 lists a space's pages with their storage
bodies on opaque cursors (`GET /wiki/api/v2/spaces/{id}/pages?body-format=storage`, the next
page's URL in `_links.next` and the `Link` header), so a full read goes through it. What v2 has
no equivalent for stays on v1 (`connectors.confluence.rest`): CQL (`lastmodified` for incremental
syncs, a source's own `cql` filter), read restrictions and ancestors in a listing, labels. Data
Center has no v2 at all. A v2 page is answered here in the v1 shape the connector already reads
(space, version.when/by, history.createdBy, ancestors, labels, body.storage), its missing parts
filled from the v1 listing made at the start of the same sync, so a page reads the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from connectors.confluence.api import ConfluenceApi, ConfluenceUnavailable, JsonObject
from connectors.confluence.links import page_id

SPACES = "api/v2/spaces"
PAGE_LIMIT = 250  # v2's maximum page size for page lists


class ListedPage(Protocol):
    """What the v1 listing knows of a page that a v2 page object lacks."""

    @property
    def ancestors(self) -> tuple[str, ...]: ...

    @property
    def labels(self) -> tuple[str, ...]: ...


def space_ids(api: ConfluenceApi, keys: tuple[str, ...]) -> dict[str, JsonObject]:
    """Space key → v2 space object; a selected key the server does not know is simply absent
    (as v1 CQL ignores it), so a renamed or deleted space reads as empty, not as an error."""
    found: dict[str, JsonObject] = {}
    for space in api.pages(SPACES, {"keys": ",".join(keys), "limit": PAGE_LIMIT}):
        if space.get("key") and page_id(space.get("id")):  # its id goes into a URL path
            found[str(space["key"])] = space
    return found


def pages_with_bodies(api: ConfluenceApi, keys: tuple[str, ...], listed: Mapping[str, ListedPage],
                      title_of: Callable[[str], str], name_of: Callable[[str], str]) -> Iterator[JsonObject]:
    """Every current page of the spaces, with its storage body, in the v1 shape (see the module
    docstring). `title_of(id)` names an ancestor, `name_of(account id)` a user. A cursor the
    server rejects or a failure mid-listing raises `ConfluenceUnavailable` (the sync refuses)."""
    spaces = space_ids(api, keys)
    for key in keys:
        space = spaces.get(key)
        if space is None:
            continue
        path = f"{SPACES}/{space['id']}/pages"
        for item in api.pages(path, {"status": "current", "body-format": "storage", "limit": PAGE_LIMIT}):
            if str(item.get("spaceId") or space["id"]) != str(space["id"]):
                raise ConfluenceUnavailable(f"{path} answered with a page of another space")
            yield _v1_shape(item, space, listed.get(str(item.get("id"))), title_of, name_of)


def _v1_shape(item: JsonObject, space: JsonObject, entry: ListedPage | None, title_of: Callable[[str], str],
              name_of: Callable[[str], str]) -> JsonObject:
    version = item.get("version") or {}
    ancestors = entry.ancestors if entry is not None else ()
    return {
        "id": item.get("id"), "title": item.get("title"), "body": item.get("body") or {},
        "_links": item.get("_links") or {},
        "space": {"key": space.get("key"), "name": space.get("name")},
        "version": {"number": version.get("number"), "when": version.get("createdAt"),
                    "by": {"displayName": name_of(str(version.get("authorId") or ""))}},
        "history": {"createdBy": {"displayName": name_of(str(item.get("authorId") or ""))}},
        "ancestors": [{"id": a, "title": title_of(a)} for a in ancestors],
        "metadata": {"labels": {"results": [{"name": n} for n in (entry.labels if entry is not None else ())]}},
    }
