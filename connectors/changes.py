"""What a connector that syncs by changes says it found (`Changes`), and what it is told the index
holds of each page (`IndexedPage`). Their own module: the protocol that speaks of them
(`connectors.connector.ChangesConnector`) and the connector that makes them (`connectors.confluence.rest`)
both import it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from connectors.document import SourceDocument, Unreadable

__all__ = ["Changes", "IndexedPage"]


@dataclass(frozen=True)
class IndexedPage:
    """What the index holds of one page: enough for a connector to tell whether it changed."""

    path: str
    access: str
    updated_at: datetime | None
    failed: bool = False  # its last read FAILED: read it again


@dataclass
class Changes:
    """What changed at a source since a time: the pages to (re)read, and the paths certainly gone
    (deleted, archived, moved out of what the source selects). Pages in neither are unchanged."""

    documents: Iterable[SourceDocument | Unreadable]
    gone: list[str] = field(default_factory=list)
    listed: int | None = None  # pages (and files) the source holds now, for the deletion guard
