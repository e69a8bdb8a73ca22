"""Running syncs of configured sources: one per source at a time, whatever asked for it.

The CLI, the watcher, the scheduler and Slack's `/kb resync` all come through here, so the
rules "never two syncs of one source at once" and "no sync deletes more than its source allows"
live in one place: a Postgres advisory lock per source (which also holds across Docent processes
sharing the database), and the source's deletion limit passed to every sync.

A source that can say what changed (`ChangesConnector`: Confluence over REST) is synced by its
changes once it has had one complete read: since the start of its last sync that read everything
it asked for (OK, or REFUSED — which read all and only kept its deletions back), moved back by
`CLOCK_SKEW` so a page saved while that sync ran, or stamped by a server clock behind ours, is
not missed. What is gone is the connector's to say from its listing, never inferred from
absence, so an incremental sync deletes only what the server says is no longer there — through
the same deletion guard. `full=True` (`kb sync --full`) reads everything and prunes as any sync.
A source that cannot be read at all (unreachable, 401/403) aborts the run: recorded, nothing deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from connectors.changes import Changes, IndexedPage
from connectors.connector import ChangesConnector, IncrementalConnector
from sources import SourceConfig, open_connector
from connectors.document import SourceDocument
from indexing.ingest import indexed_sources
from indexing.index import Index
from indexing.storage.locks import advisory_lock
from indexing.ingest.sync import DocumentDone, sync_documents
from indexing.ingest.sync_records import SyncReport

log = logging.getLogger(__name__)

CLOCK_SKEW = timedelta(minutes=15)  # how far back an incremental sync asks, before the last one's start


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
             allow_deletes: bool = False, full: bool = False) -> SyncReport | None:
        """A sync of one source (by its changes where it can, unless `full`); None if `wait` is off
        and another sync of it is running. A report with `refused` set: the deletion guard kept
        every page (see `indexing.ingest.sync`)."""
        source = self.source(name)
        with advisory_lock(self.index.engine, f"sync:{name}", wait=wait) as got:
            if not got:
                log.info("sync of %s skipped (%s): another sync of it is running", name, trigger)
                return None
            connector = open_connector(source)
            self._remember(source)
            since = None if full or not isinstance(connector, ChangesConnector) else self._last_read(name)
            if since is not None:
                assert isinstance(connector, ChangesConnector)
                return self._sync_changes(connector, source, since - CLOCK_SKEW, trigger, progress, allow_deletes)
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

    def _sync_changes(self, connector: ChangesConnector, source: SourceConfig, since: datetime, trigger: str,
                      progress: DocumentDone | None, allow_deletes: bool) -> SyncReport:
        name = source.name
        try:
            changes = connector.changes(since, self._indexed(name))
        except Exception as exc:  # the listing failed: the run is recorded as aborted, nothing deleted
            changes = Changes(documents=_raise(exc))
        return sync_documents(self.index, changes.documents, name, prune=False, trigger=trigger, progress=progress,
                              delete_ids=[f"{name}:{path}" for path in changes.gone], limit=source.max_delete,
                              allow_deletes=allow_deletes, listed=changes.listed)

    def _last_read(self, name: str) -> datetime | None:
        """When the last sync of this source that read everything started (None: never)."""
        from sqlmodel import col, select

        from indexing.storage.index_tables import RunResult, SyncRun

        with self.index.session() as s:
            return s.exec(select(SyncRun.started_at).where(
                SyncRun.source == name, col(SyncRun.result).in_([RunResult.OK.value, RunResult.REFUSED.value]))
                .order_by(col(SyncRun.started_at).desc()).limit(1)).first()

    def _indexed(self, name: str) -> dict[str, IndexedPage]:
        from sqlmodel import select

        from indexing.storage.index_tables import DocumentRecord, Status

        with self.index.session() as s:
            return {r.path: IndexedPage(path=r.path, access=r.access, updated_at=r.updated_at, failed=r.status == Status.FAILED)
                    for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == name))}

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


def _raise(exc: Exception) -> Iterator[SourceDocument]:
    """Documents that are the listing's failure: `sync_documents` records the run as aborted."""
    raise exc
    yield  # a generator: raises when the sync starts reading
