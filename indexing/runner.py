"""Running syncs of configured sources: one per source at a time, whatever asked for it.

The CLI, the watcher, the scheduler and Slack's `/kb resync` all come through here, so the
rule "never two syncs of one source at once" lives in one place: a Postgres advisory lock per
source, which also holds across Docent processes sharing the database.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from connectors.sources import SourceConfig, open_connector
from indexing.index import Index
from indexing.locks import advisory_lock
from indexing.sync import Progress, SyncReport, sync_documents

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

    def sync(self, name: str, trigger: str = "cli", wait: bool = True, progress: Progress | None = None) -> SyncReport | None:
        """A full sync of one source; None if `wait` is off and another sync of it is running."""
        source = self.source(name)
        with advisory_lock(self.index.engine, f"sync:{name}", wait=wait) as got:
            if not got:
                log.info("sync of %s skipped (%s): another sync of it is running", name, trigger)
                return None
            connector = open_connector(source)
            return sync_documents(self.index, connector.documents(), name, trigger=trigger, progress=progress)

    def sync_paths(self, name: str, paths: Iterable[str], trigger: str = "watcher") -> SyncReport:
        """Re-read exactly these relative paths of a folder source: changed ones re-indexed, vanished ones deleted.

        Sources other than Markdown folders are re-synced whole (an export changes as a unit).
        """
        source = self.source(name)
        connector = open_connector(source)
        if not hasattr(connector, "wants"):
            return self.sync(name, trigger=trigger)
        with advisory_lock(self.index.engine, f"sync:{name}", wait=True):
            docs, gone = [], []
            for rel in sorted(set(paths)):
                if connector.wants(rel) and (connector.root / rel).is_file():
                    docs.append(connector.read(rel))
                else:
                    gone.append(f"{name}:{rel}")
            return sync_documents(self.index, docs, name, prune=False, delete_ids=gone, trigger=trigger)
