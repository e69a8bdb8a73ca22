"""The one shape every connector produces: a wiki page as Markdown plus what we need to cite it.

Connectors know nothing about indexes. Whatever the source (a Markdown folder, a Confluence
export), the rest of Docent sees `SourceDocument`s whose `text` is Markdown with `#` headings.
A page that could not be read is still a `SourceDocument`, with `error` set, so the sync can
record it as FAILED with the reason and go on with the others; a folder that could not be listed
is an `Unreadable`, so the pages indexed under it FAIL too instead of looking deleted. A page that was read but holds
nothing to index (an empty file, a Confluence page that is only a children macro) has `skipped`
set instead: SKIPPED is not broken, and a handbook with placeholder pages syncs cleanly.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from connectors.commonmark import github_slug

if TYPE_CHECKING:
    from connectors.commonmark import Heading

PUBLIC = "public"
# The scope of a page whose scope could not be determined (a Confluence page whose space key is
# unknown under a per-space `access`). No scope name can be empty, so no audience ever sees it;
# such a page is FAILED, and the version indexed before keeps the scope it had (`indexing.ingest.sync`).
UNKNOWN_SCOPE = ""
# The scope of a Confluence page not indexed for its read restrictions (SKIPPED, with the reason):
# not a valid scope name, so no audience ever has it, and its previous version is withdrawn.
RESTRICTED = "!restricted"
# A lone UTF-16 surrogate: what Python makes of undecodable bytes (surrogateescape), and what no
# database text column, JSON encoder or Slack message accepts.
SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class SourceDocument:
    """One wiki page, ready to index (or, with `error` set, the reason it could not be read)."""

    source: str  # the configured source's name, e.g. "handbook"
    path: str  # relative to the source root, with forward slashes
    title: str = ""
    text: str = ""  # Markdown body, front matter removed
    url: str = ""  # the page's citation URL, without a section anchor
    updated_at: datetime | None = None
    access: str = PUBLIC  # access scope; "public" is visible everywhere
    metadata: dict[str, Any] = field(default_factory=dict)  # tags, author, space, attachments, ...
    error: str | None = None  # could not be read: FAILED, its previous version keeps serving
    skipped: str | None = None  # read fine, but nothing to index (an empty page): SKIPPED, with the reason
    # The page's own heading ids, (heading text, id) in page order, where its source has them
    # (a Confluence HTML export); an empty list where sections have no id the source would resolve
    # (a Confluence storage export); None for Markdown, linked by GitHub's anchors.
    heading_ids: list[tuple[str, str]] | None = None

    @property
    def doc_id(self) -> str:
        """Stable id: source name + path relative to the source root."""
        return f"{self.source}:{self.path}"

    @property
    def content_hash(self) -> str:
        """Hash of everything that ends up in the index, so any visible change triggers re-indexing."""
        payload = json.dumps(
            [self.title, self.text, self.url, self.access, self.metadata.get("tags", []), self.metadata.get("ancestors", [])],
            ensure_ascii=False,
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def section_url(self, anchor: str | None) -> str:
        """The citation URL pointing at one section, or the page itself (no anchor, no URL, or a
        URL that already has a fragment, such as `entities.xml#page-12`)."""
        if not anchor or not self.url or "#" in self.url:
            return self.url
        return f"{self.url}#{anchor}"

    def section_anchors(self, headings: list[Heading]) -> list[str | None]:
        """Each heading's anchor: GitHub's for Markdown; for a page whose source gives heading ids,
        the id of the same heading text, taken in page order (None for a heading it has no id for:
        its sections link to the page)."""
        if self.heading_ids is None:
            return [h.anchor or None for h in headings]
        places: dict[str, list[int]] = {}  # heading text -> its positions in heading_ids
        for n, (text, _) in enumerate(self.heading_ids):
            places.setdefault(_same_text(text), []).append(n)
        anchors: list[str | None] = []
        at = 0  # ids are matched in page order: never one before the last id used
        for heading in headings:
            candidates = places.get(_same_text(heading.text), [])
            found = bisect_left(candidates, at)
            if found < len(candidates):
                anchors.append(self.heading_ids[candidates[found]][1])
                at = candidates[found] + 1
            else:
                anchors.append(None)
        return anchors


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for one heading's text, before it is numbered to be unique on its page
    (`connectors.commonmark.parse` numbers them: `#example`, `#example-1`)."""
    return github_slug(heading)


def _same_text(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Unreadable:
    """A path under a source's root that could not be listed or examined (a folder denied to
    Docent, a stale network handle, an I/O error). Whatever is indexed under it is neither seen
    nor gone: a connector yields this beside its documents, and the sync fails each page indexed
    under it with `reason` (their versions keep serving) instead of deleting them."""

    source: str
    path: str  # relative to the source root, forward slashes
    reason: str

    def holds(self, rel: str) -> bool:
        """Whether a page's relative path is this path or lies under it."""
        return rel == self.path or rel.startswith(f"{self.path}/")
