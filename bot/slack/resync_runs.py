"""Resyncs started from Slack (`/kb resync`, `bot.slack.listeners.resync_command`; the App Home's buttons,
`bot.slack.listeners.home_tab`): a real sync of a configured source, run in the background.

The sync goes through `indexing.ingest.runner.SyncRunner` — the same path as `kb sync`, the watcher
and the scheduler — so "one sync per source at a time" holds across all of them and across
processes (a Postgres advisory lock); it is recorded as a sync run with trigger "admin". It runs
on a thread of its own: a big wiki takes minutes, far beyond Slack's 3-second ack and longer than
a listener should hold a worker. Progress is reported sparingly (a response URL can be used
only five times).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from bot.knowledge import KnowledgeBase, sync_counts
from bot.slack.errors import quietly
from sources import open_connector
from indexing.ingest import SyncReport

log = logging.getLogger(__name__)

PROGRESS_SECONDS = 10.0  # at most one progress message this often…
PROGRESS_MESSAGES = 3  # …and this many in all, leaving response-URL uses for the summary

ReportProgress = Callable[[int, int], None]  # (documents done, documents in all; 0 if unknown)
# (report, error): report None and error None means another sync of the source was running
Finished = Callable[[SyncReport | None, BaseException | None], None]


class Resyncs:
    """Starts background syncs of the knowledge base's configured sources."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._running: set[str] = set()
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return [source.name for source in self.kb.configured]

    def start(self, name: str, progress: ReportProgress, finished: Finished, allow_deletes: bool = False) -> bool:
        """Start syncing source `name`; False if this process is already syncing it. The sync obeys
        the source's deletion guard unless `allow_deletes` (`/kb resync NAME --allow-deletes`)."""
        self.kb.runner.source(name)  # KeyError for an unknown source, before any thread starts
        with self._lock:
            if name in self._running:
                return False
            self._running.add(name)
        threading.Thread(target=self._run, args=(name, progress, finished, allow_deletes),
                         name=f"docent-resync-{name}", daemon=True).start()
        return True

    def _run(self, name: str, progress: ReportProgress, finished: Finished, allow_deletes: bool = False) -> None:
        report, error = None, None
        try:
            source = self.kb.runner.source(name)
            if not source.exists():
                raise FileNotFoundError(f"{source.location} does not exist")
            total = sum(1 for _ in open_connector(source).paths())
            report = self.kb.sync(name, trigger="admin", wait=False, progress=_throttled(progress, total),
                                  allow_deletes=allow_deletes)
        except BaseException as exc:  # reported to the admin, not lost on a background thread
            log.exception("resync of %s failed", name)
            error = exc
        finally:
            with self._lock:
                self._running.discard(name)
        quietly(finished, report, error)


def _throttled(progress: ReportProgress, total: int) -> Callable[[object], None]:
    """A per-document callback that passes on at most PROGRESS_MESSAGES updates, PROGRESS_SECONDS apart."""
    done, sent, last = 0, 0, time.monotonic()

    def advance(_doc: object) -> None:
        nonlocal done, sent, last
        done += 1
        now = time.monotonic()
        if sent < PROGRESS_MESSAGES and now - last >= PROGRESS_SECONDS and done < total:
            sent += 1
            last = now
            quietly(progress, done, total)

    return advance


def summary(report: SyncReport) -> str:
    """One line per sync, as `kb sync` prints it, plus the first failures."""
    line = (f"`{report.source}`: {sync_counts(report, zero_skipped=False)} — {report.chunks} chunks written, "
            f"{report.seconds:.1f} s")
    failures = "".join(f"\n• failed: {error}" for error in report.errors[:5])
    more = f"\n…and {len(report.errors) - 5} more (see `kb status`)" if len(report.errors) > 5 else ""
    return line + failures + more
