"""The one shape every connector produces: a wiki page as Markdown plus what we need to cite it.

Connectors know nothing about indexes. Whatever the source (a Markdown folder, a Confluence
export), the rest of Docent sees `SourceDocument`s whose `text` is Markdown with `#` headings.
A page that could not be read is still a `SourceDocument`, with `error` set, so the sync can
record it as FAILED with the reason and go on with the others. A page that was read but holds
nothing to index (an empty file, a Confluence page that is only a children macro) has `skipped`
set instead: SKIPPED is not broken, and a handbook with placeholder pages syncs cleanly.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

PUBLIC = "public"


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
    metadata: dict = field(default_factory=dict)  # tags, author, space, attachments, ...
    error: str | None = None  # could not be read: FAILED, its previous version keeps serving
    skipped: str | None = None  # read fine, but nothing to index (an empty page): SKIPPED, with the reason

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

    def section_url(self, heading: str | None) -> str:
        """The citation URL pointing at one section (GitHub-style anchor), or the page itself."""
        if not heading or not self.url or "#" in self.url:
            return self.url
        return f"{self.url}#{heading_anchor(heading)}"


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower-case, punctuation dropped, spaces to hyphens.

    CJK and other letters are kept, as GitHub does, so Chinese headings get working anchors.
    """
    text = unicodedata.normalize("NFC", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")
