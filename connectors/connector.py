"""Connector: what every source kind implements (a `Protocol`), and opening the one a source names.

Every connector yields its pages as `SourceDocument`s and can list the relative paths it would
read. Some can also re-read single pages — a Markdown folder, which the watcher then syncs one
changed file at a time (`IncrementalConnector`); a server that can say what changed since a time
(Confluence over REST) is a `ChangesConnector`, synced by what changed; exports are re-synced
whole, as an export changes as a unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from sources.access import WILDCARD
from connectors.changes import Changes, IndexedPage
from connectors.document import RESTRICTED, UNKNOWN_SCOPE, SourceDocument, Unreadable
from sources.file import CONFLUENCE_KINDS, SourceConfig, SourcesError

if TYPE_CHECKING:
    from connectors.markdown import Listing


class Connector(Protocol):
    """A source of pages."""

    def documents(self) -> Iterator[SourceDocument | Unreadable]:
        """Every page, converted to Markdown with its metadata; a folder it could not list is
        yielded as an `Unreadable`, so the sync fails the pages indexed under it, never deletes them."""
        ...

    def paths(self) -> Iterable[str]:
        """The relative paths of the files it would read (counted for progress bars)."""
        ...


@runtime_checkable
class IncrementalConnector(Connector, Protocol):
    """A connector that can re-read single pages under its `root` (a Markdown folder)."""

    root: Path

    def wants(self, rel: str) -> bool:
        """Whether the file at this relative path is one of its pages (extension, globs, not a backup)."""
        ...

    def read(self, rel: str) -> SourceDocument:
        ...

    def gone(self, rel: str) -> bool:
        """Whether the file is certainly not there (deleted), as opposed to there but unreadable."""
        ...

    def listing(self) -> Listing:
        """The wanted files, and the paths under the root that could not be listed."""
        ...


@runtime_checkable
class ChangesConnector(Connector, Protocol):
    """A connector that can be synced by what changed (`indexing.ingest.runner` decides when)."""

    def changes(self, since: datetime, indexed: dict[str, IndexedPage]) -> Changes:
        """The changes since `since` (already moved back for clock skew), judged against what is
        `indexed` (by path). Raises, before any document, when the source cannot be read."""
        ...


def open_connector(source: SourceConfig) -> Connector:
    """The connector for a source, by its kind (with per-space access scopes for a Confluence export)."""
    kind = source.resolved_kind
    per_space = source.access if isinstance(source.access, dict) else None
    if per_space is not None and kind not in CONFLUENCE_KINDS:
        raise SourcesError(f"source {source.name}: access per space is only for Confluence exports, "
                           f"and {source.location} is a {kind} source")
    if kind == "confluence":  # decides each page's scope itself: its space's, or its restrictions'
        from connectors.confluence_rest import ConfluenceRest

        if source.remote is None:  # `kb sync PATH --kind confluence`: a server is no path
            raise SourcesError(f"source {source.name}: kind confluence (REST) is configured in the sources file "
                               f"with url, spaces and token_env (docs/confluence.md), not synced from a path")
        spaces = source.access if isinstance(source.access, dict) else {WILDCARD: source.access}
        return ConfluenceRest(source.remote, source=source.name, space_access=spaces)
    access = source.access[WILDCARD] if isinstance(source.access, dict) else source.access
    if kind == "markdown":
        from connectors.markdown import MarkdownFolder

        return MarkdownFolder(source.location, source=source.name, include=source.include, exclude=source.exclude,
                              url_template=source.url_template, access=access, index_drafts=source.index_drafts)
    connector: Connector
    if kind == "confluence-html":
        from connectors.confluence_html import ConfluenceHtmlExport

        connector = ConfluenceHtmlExport(source.location, source=source.name, base_url=source.base_url, access=access,
                                         attachments=source.attachments)
    elif kind == "confluence-xml":
        from connectors.confluence_xml import ConfluenceXmlExport

        connector = ConfluenceXmlExport(source.location, source=source.name, base_url=source.base_url, access=access,
                                        attachments=source.attachments)
    else:
        raise SourcesError(f"source {source.name}: unknown kind {kind!r}")
    return SpaceScoped(connector, per_space) if per_space is not None else connector


class SpaceScoped:
    """A Confluence export whose pages take their access scope from their space
    (`doc.metadata["space"]`, matched case-insensitively; "*" for every other space).
    Everything else is the wrapped connector's.

    A page whose space key is unknown (an HTML export without a readable index.html, an XML page
    whose space is missing) is not in "every other space": its scope cannot be decided, so it
    FAILS with the reason and takes `UNKNOWN_SCOPE`, which the sync never writes over the scope of
    the version already indexed. Falling back to "*" would publish a restricted space."""

    def __init__(self, connector, access: dict[str, str]) -> None:
        self.connector = connector
        self.default = access[WILDCARD]
        self.by_space = {space.casefold(): scope for space, scope in access.items() if space != WILDCARD}

    def scope_of(self, space: str | None) -> str:
        """The scope of a space key; `UNKNOWN_SCOPE` for no key."""
        key = (space or "").strip()
        if not key:
            return UNKNOWN_SCOPE
        return self.by_space.get(key.casefold(), self.default)

    def documents(self):
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

    def __getattr__(self, name: str):
        return getattr(self.connector, name)
