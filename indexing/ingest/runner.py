"""Running syncs of configured sources: one per source at a time, whatever asked for it.

The CLI, the watcher, the scheduler and Slack's `/kb resync` all come through here, so the
rules "never two syncs of one source at once" and "no sync deletes more than its source allows"
live in one place: a Postgres advisory lock per source (which also holds across Docent processes
sharing the database), and the source's deletion limit passed to every sync.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from connectors.connector import IncrementalConnector, open_connector
from connectors.sources import SourceConfig
from indexing.ingest import indexed_sources
from indexing.index import Index
from indexing.storage.locks import advisory_lock
from indexing.ingest.sync import DocumentDone, sync_documents
from indexing.ingest.sync_records import SyncReport

log = logging.getLogger(__name__)


class SyncRunner:
    def __init__(self, index: Index, sources: list[SourceConfig]) -> None:
        self.index = index
        self.sources = {s.name: s for s in sources}

    def source(self, name: str) -> SourceConfig:
        try:
            return self.sources[name]
        except KeyError:
            raise KeyError(f"no source named {name!r} (configured: {', '.join(sorted(self.sources)) or 'none'})") from None

    def sync(self, name: str, trigger: str = "cli", wait: bool = True, progress: DocumentDone | None = None,
             allow_deletes: bool = False) -> SyncReport | None:
        """A full sync of one source; None if `wait` is off and another sync of it is running.
        A report with `refused` set: the deletion guard kept every page (see `indexing.ingest.sync`)."""
        source = self.source(name)
        with advisory_lock(self.index.engine, f"sync:{name}", wait=wait) as got:
            if not got:
                log.info("sync of %s skipped (%s): another sync of it is running", name, trigger)
                return None
            connector = open_connector(source)
            self._remember(source)
            return sync_documents(self.index, connector.documents(), name, trigger=trigger, progress=progress,
                                  limit=source.max_delete, allow_deletes=allow_deletes)

    def sync_paths(self, name: str, paths: Iterable[str], trigger: str = "watcher",
                   folders: Iterable[str] = ()) -> SyncReport | None:
        """Re-read exactly these relative paths of a folder source: changed ones re-indexed, vanished
        ones deleted. `folders` (moved or deleted directories) stand for the pages indexed under
        them and the files now in them. Paths the source would not index (other extensions,
        excluded globs, editor backups) are ignored; if nothing is left, nothing runs and None is
        returned (no sync run is recorded).

        Sources other than Markdown folders are re-synced whole (an export changes as a unit).
        """
        source = self.source(name)
        connector = open_connector(source)
        if not isinstance(connector, IncrementalConnector):
            return self.sync(name, trigger=trigger)
        with advisory_lock(self.index.engine, f"sync:{name}", wait=True):
            wanted = {rel for rel in paths if connector.wants(rel)} | self._under(connector, name, folders)
            if not wanted:
                return None
            docs, gone = [], []
            for rel in sorted(wanted):
                if connector.gone(rel):  # not there: deleted (or renamed). There but unreadable: FAILED
                    gone.append(f"{name}:{rel}")
                else:
                    docs.append(connector.read(rel))
            return sync_documents(self.index, docs, name, prune=False, delete_ids=gone, trigger=trigger,
                                  limit=source.max_delete)

    def _under(self, connector: IncrementalConnector, name: str, folders: Iterable[str]) -> set[str]:
        """The pages indexed under these folders, and the wanted files in them now."""
        from sqlmodel import col, select

        from indexing.storage.index_tables import DocumentRecord

        found: set[str] = set()
        for folder in {f.strip("/") for f in folders}:
            prefix = f"{folder}/" if folder else ""
            with self.index.session() as s:
                found.update(s.exec(select(col(DocumentRecord.path)).where(
                    col(DocumentRecord.source) == name, col(DocumentRecord.path).startswith(prefix, autoescape=True))))
            root = connector.root / folder
            if root.is_dir():
                found.update(rel for rel in connector.listing().paths if rel.startswith(prefix))
        return found

    def _remember(self, source: SourceConfig) -> None:
        try:
            kind = source.resolved_kind
        except (OSError, ValueError):
            kind = source.kind or ""
        with self.index.session() as s, s.begin():
            indexed_sources.remember(s, source, kind, indexed_sources.ADHOC if source.adhoc else indexed_sources.CONFIG)
