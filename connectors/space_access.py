"""Access per Confluence space: `{space key: scope, "*": every other space}`, and `SpaceScoped`,
the wrapper that gives an export's pages the scope of their space.

The sources file writes it as `access = { HR = "hr-private", "*" = "public" }` (checked by
`sources.source`). The REST connector (`connectors.confluence.rest`) applies the same mapping
itself, as it reads each page's space and restrictions together.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from connectors.document import RESTRICTED, UNKNOWN_SCOPE, SourceDocument, Unreadable

if TYPE_CHECKING:
    from connectors.connector import Connector

WILDCARD = "*"  # every other space; in the sources file's `[scopes.*]` too: every channel, every member


class SpaceScoped:
    """A Confluence export whose pages take their access scope from their space
    (`doc.metadata["space"]`, matched case-insensitively; "*" for every other space).
    Everything else is the wrapped connector's.

    A page whose space key is unknown (an HTML export without a readable index.html, an XML page
    whose space is missing) is not in "every other space": its scope cannot be decided, so it
    FAILS with the reason and takes `UNKNOWN_SCOPE`, which the sync never writes over the scope of
    the version already indexed. Falling back to "*" would publish a restricted space."""

    def __init__(self, connector: Connector, access: dict[str, str]) -> None:
        self.connector = connector
        self.default = access[WILDCARD]
        self.by_space = {space.casefold(): scope for space, scope in access.items() if space != WILDCARD}

    def scope_of(self, space: str | None) -> str:
        """The scope of a space key; `UNKNOWN_SCOPE` for no key."""
        key = (space or "").strip()
        if not key:
            return UNKNOWN_SCOPE
        return self.by_space.get(key.casefold(), self.default)

    def documents(self) -> Iterator[SourceDocument | Unreadable]:
        for doc in self.connector.documents():
            if isinstance(doc, SourceDocument) and doc.access != RESTRICTED:  # restricted stays unpublished
                doc.access = self.scope_of(doc.metadata.get("space"))
                if doc.access == UNKNOWN_SCOPE:
                    problem = doc.metadata.get("space_problem") or "the page has no space key"
                    doc.error = (f"space unknown: {problem}; this source's access is per space, so the page "
                                 f"is not indexed (a version indexed before keeps its scope)"
                                 + (f"; the page itself: {doc.error}" if doc.error else ""))
                    doc.text = ""
            yield doc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connector, name)
