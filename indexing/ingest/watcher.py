"""Watching folder sources (watchdog): a saved page is searchable again within seconds.

Events are collected per source and flushed after a quiet period (`debounce`, default 0.3 s) or
at the latest `max_delay` after the first one, so an editor's save burst or a `git pull` of 200
files becomes one incremental sync of exactly the changed paths. Creates, edits, deletes and
renames (both sides of a move) all count; a directory moved or deleted stands for the pages
indexed under it and the files now in it.

Saves the source would not index start nothing: other extensions, excluded paths, editor swap
and backup files (`foo.md~`, `.#foo.md`, `.foo.md.swp`, vim's `4913` probe), build output such
as MkDocs' `site/` — no sync, no keyword-index rebuild, no `sync_runs` row. Every sync the
watcher starts obeys the source's deletion guard, like any other.

watchdog is imported when a watcher starts, not with this module: `kb --help` and commands that
watch nothing do not load it. `wait_idle` tells a caller (tests, tools) when the saves the
watcher has been told of are dealt with.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path, PurePosixPath

from typing import TYPE_CHECKING, cast

from sources import SourceConfig
from indexing.ingest.runner import SyncRunner

if TYPE_CHECKING:  # for the annotation only: watchdog itself is imported in start()
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers.api import BaseObserver

log = logging.getLogger(__name__)


class _QuietPeriod:
    """Changes of one source waiting for the quiet period to end."""

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.folders: set[str] = set()  # moved or deleted directories
        self.full = False  # something only a full sync can answer (a non-folder connector)
        self.first = 0.0
        self.last = 0.0


class Watcher:
    def __init__(self, runner: SyncRunner, sources: list[SourceConfig], debounce: float = 0.3, max_delay: float = 5.0) -> None:
        self.runner = runner
        self.sources = [s for s in sources if s.watchable]
        self.debounce = debounce
        self.max_delay = max_delay
        self._pending: dict[str, _QuietPeriod] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # an event handled, a sync started or finished
        self._syncing = False
        self.events_seen = 0  # file-system events handled (noted or ignored), for `wait_idle`
        self._stop = threading.Event()
        self._observer: BaseObserver | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Watcher:
        """Watch the sources. Returns with the watches in place (watchdog's observer adds them in
        its `start`), so a save made after this returns is seen."""
        from watchdog.observers import Observer

        observer = self._observer = Observer()
        for source in self.sources:
            # the observer only ever calls `dispatch(event)`, which _Handler has (see its docstring)
            handler = cast("FileSystemEventHandler", _Handler(self, source))
            observer.schedule(handler, str(source.location), recursive=True)
        observer.start()
        self._thread = threading.Thread(target=self._loop, name="docent-watcher", daemon=True)
        self._thread.start()
        log.info("watching %s", ", ".join(f"{s.name} ({s.location})" for s in self.sources) or "nothing")
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=30)

    def wait_idle(self, timeout: float = 30.0, events_after: int | None = None) -> bool:
        """Wait until the watcher holds no change waiting for its quiet period and runs no sync,
        so every save it has been told of is searchable (or its failure logged); True if so
        within `timeout`. `events_after`: first wait until more file-system events than that
        were handled (`events_seen` read before the save) — an event the OS has not delivered
        yet is one the watcher cannot know it is waiting for."""
        def idle() -> bool:
            seen = events_after is None or self.events_seen > events_after
            return seen and not self._pending and not self._syncing

        with self._changed:
            return self._changed.wait_for(idle, timeout)

    def _handled(self) -> None:
        with self._changed:
            self.events_seen += 1
            self._changed.notify_all()

    def note(self, source: SourceConfig, path: str | None, folder: bool = False) -> None:
        """Record a change: a relative path (`folder`: a directory moved or deleted), or None for
        'something structural, sync it all'."""
        now = time.monotonic()
        with self._lock:
            pending = self._pending.setdefault(source.name, _QuietPeriod())
            if not pending.paths and not pending.folders and not pending.full:
                pending.first = now
            pending.last = now
            if path is None:
                pending.full = True
            elif folder:
                pending.folders.add(path)
            else:
                pending.paths.add(path)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._stop.wait(0.05)
            try:
                self._sync_due()
            finally:
                with self._changed:
                    self._syncing = False
                    self._changed.notify_all()

    def _sync_due(self) -> None:
        for name, pending in self._due():
            try:
                if pending.full:
                    report = self.runner.sync(name, trigger="watcher")
                else:
                    report = self.runner.sync_paths(name, pending.paths, trigger="watcher", folders=pending.folders)
                    if report is not None:
                        log.info("watcher synced %d path(s) of %s: %s", len(pending.paths), name, report)
                if report is not None and report.refused:
                    log.error("watcher: sync of %s refused, nothing deleted: %s (run `kb sync --source %s "
                              "--allow-deletes` if the pages are meant to go)", name, report.refused, name)
            except Exception:  # a failed sync must not kill the watcher
                log.exception("watcher sync of %s failed", name)

    def _due(self) -> list[tuple[str, _QuietPeriod]]:
        """The sources whose quiet period is over, taken out of `_pending` and marked as syncing in
        one step (`wait_idle` never sees a change that is in neither)."""
        now = time.monotonic()
        due = []
        with self._lock:
            for name, pending in list(self._pending.items()):
                if now - pending.last >= self.debounce or now - pending.first >= self.max_delay:
                    due.append((name, self._pending.pop(name)))
            self._syncing = bool(due)
        return due


class _Handler:
    """One source's events. watchdog's observer calls `dispatch(event)` on a handler; this one
    implements that method rather than subclassing `FileSystemEventHandler`, whose import would
    load watchdog with this module."""

    def __init__(self, watcher: Watcher, source: SourceConfig) -> None:
        from connectors.connector import IncrementalConnector
        from sources import open_connector

        self.watcher = watcher
        self.source = source
        self.root = Path(source.location).resolve()
        connector = open_connector(source)
        # None: a connector that reads its folder whole
        self.wants = connector.wants if isinstance(connector, IncrementalConnector) else None

    def dispatch(self, event: FileSystemEvent) -> None:
        try:
            self.on_any_event(event)
        finally:
            self.watcher._handled()  # after the change is noted: `wait_idle` then waits for its sync

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            if event.event_type in ("moved", "deleted"):
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    rel = self._relative(raw)
                    if rel is not None:
                        self.watcher.note(self.source, rel, folder=True)
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            rel = self._relative(raw)
            if rel is None or is_editor_noise(rel):
                continue
            if self.wants is None:
                self.watcher.note(self.source, None)
            elif self.wants(rel):
                self.watcher.note(self.source, rel)

    def _relative(self, raw: str | bytes) -> str | None:
        if not raw:
            return None
        path = Path(raw.decode() if isinstance(raw, bytes) else raw)
        try:
            rel = path.resolve().relative_to(self.root) if path.exists() else path.relative_to(self.root)
        except ValueError:
            return None
        if any(part.startswith(".") for part in rel.parts):
            return None  # editors' swap files, .git internals
        return rel.as_posix()


_EDITOR_NOISE = re.compile(r"(~|\.sw[a-p]|\.swx|\.tmp|\.bak|\.orig)$|^(\.#|#.*#$)|^\d+$")


def is_editor_noise(rel: str) -> bool:
    """Editors' backup, swap and lock files, and vim's numbered write probe (`4913`)."""
    return bool(_EDITOR_NOISE.search(PurePosixPath(rel).name))
