"""Connector: what every source kind implements (a `Protocol`).

Every connector yields its pages as `SourceDocument`s and can list the relative paths it would
read. Some can also re-read single pages — a Markdown folder, which the watcher then syncs one
changed file at a time (`IncrementalConnector`); a server that can say what changed since a time
(Confluence over REST) is a `ChangesConnector`, synced by what changed; exports are re-synced
whole, as an export changes as a unit.

Which connector a source of the sources file gets is said by its kind, in `connectors.registry`
(opened by `sources.opening.open_connector`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from connectors.changes import Changes, IndexedPage
from connectors.document import SourceDocument, Unreadable

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
