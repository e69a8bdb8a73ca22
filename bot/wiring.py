"""The composition root: the one place Docent's parts are built — and stopped.

`kb` commands and `kb serve` ask a `Root` for what they need: the index, the configured sources,
the `SyncRunner`, the `KnowledgeBase`, the file watcher and the scheduled re-syncs. Nothing
else opens the index or reads the list of sources, so "how is Docent put together" has one
answer, and a new long-running part has one place to start and stop. (Who sees what in Slack,
`[scopes.*]` and `[channels.*]`, is the Slack app's business: `bot.slack.app.slack_access`.)

Each part is built on first use, once — `kb status` never starts a watcher, `kb ask` never
builds the list of sources — and this module imports only the standard library at the top, so
`kb --help` stays instant.

Expected failures — no database, a sources file with a mistake, a setting that cannot work —
are one `ConfigurationError` line, which the CLI prints as `error: …` and `kb serve` raises as
its `StartupError` (the same class); tracebacks are for bugs.

Shutdown lives here too. Whatever was started through the root (its watcher and scheduler, and
what `kb serve` hands it with `on_close`: the listener, housekeeping, the answers pool, the
Socket Mode connection, the metrics server) stops in the reverse order of starting — what takes
in new work first, the index last, as everything before it may still use the database while
stopping. `running()` adds SIGTERM: a normal exit instead of the default sudden death, so that
this shutdown (and the embedded Postgres's own, at exit) still runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from bot.knowledge import KnowledgeBase
    from bot.settings import Settings
    from sources import SourceConfig
    from indexing.index import Index
    from indexing.ingest import SyncRunner, Watcher

log = logging.getLogger(__name__)

T = TypeVar("T")


class ConfigurationError(RuntimeError):
    """A configuration problem the operator must fix; the message is one line, safe to print."""


def open_index(settings: Settings) -> Index:
    """The configured index with the bot's tables migrated too, or a `ConfigurationError` saying
    why it cannot open."""
    from indexing.index import Index
    from indexing.storage import DatabaseUnavailable, MigrationFailed

    from bot.migrations import migrate_bot

    try:
        index = Index(settings.index_config())
    except (DatabaseUnavailable, MigrationFailed, ValueError) as exc:  # ValueError: a setting that cannot work
        raise ConfigurationError(str(exc)) from None
    try:
        migrate_bot(index.engine)  # the bot's own tables (bot.migrations), right after the index's
    except MigrationFailed as exc:
        index.close()
        raise ConfigurationError(str(exc)) from None
    return index


def _from_sources_file(read: Callable[[], T]) -> T:
    """`read()`, with a mistake in the sources file as the one-line `ConfigurationError`."""
    from sources import SourcesError

    try:
        return read()
    except SourcesError as exc:
        raise ConfigurationError(str(exc)) from None


class Root:
    """Docent's parts for one process, built from `settings` on first use, stopped by `close`.

    Use it as a context manager (or through `running()`) in anything long-running; a one-shot
    `kb` command may leave it open, as the process ends with it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stops: list[tuple[str, Callable[[], object]]] = []  # in the order started
        self._lock = threading.Lock()
        self._closing = False
        self.watcher: Watcher | None = None  # `start_indexing`'s, once started
        self.scheduler: Any = None  # apscheduler's BackgroundScheduler

    # -- the parts ------------------------------------------------------------------------------

    @cached_property
    def sources(self) -> list[SourceConfig]:
        """The configured sources: the sources file, else KB_WIKI, else the sample wiki."""
        return _from_sources_file(self.settings.sources)

    @cached_property
    def index(self) -> Index:
        """The index, opened on first use; closed last by `close`."""
        index = open_index(self.settings)
        self.on_close(index.close, "the index")
        return index

    @cached_property
    def runner(self) -> SyncRunner:
        """The one runner of the configured sources: the watcher, the scheduler and Slack's
        `/kb resync` share it, so its per-source lock and deletion limits hold for all three."""
        from indexing.ingest import SyncRunner

        sources = self.sources  # a mistake in the sources file is reported before the database is tried
        return SyncRunner(self.index, sources)

    def knowledge_base(self, *, sources: list[SourceConfig] | None = None, llm: bool = False) -> KnowledgeBase:
        """The facade over this root's index. `sources` None: the configured sources, through the
        shared `runner`; a list (the sources `kb sync` was asked for, or none for `kb ask` and
        `kb eval`, which only answer): a runner of their own over just those. `llm`: answer with
        the configured LLM (KB_LLM_BASE_URL), if any; else extractively."""
        from bot.knowledge import KnowledgeBase

        client = self.settings.llm_client() if llm else None
        if sources is None:
            return KnowledgeBase(self.index, llm=client, runner=self.runner)
        return KnowledgeBase(self.index, sources, client)

    def start_indexing(self, add_jobs: Callable[[Any], object] | None = None) -> None:
        """Keep the index fresh: watch the folder sources and run the scheduled re-syncs, both
        through the shared `runner`. `add_jobs(scheduler)` adds jobs the same leader runs (the
        weekly digest, `bot.slack.digest`). Stopped by `close`: the watcher, then the scheduler."""
        from indexing.ingest import Watcher, start_scheduler, stop_scheduler

        runner = self.runner
        watcher = Watcher(runner, self.sources).start()
        try:
            scheduler = start_scheduler(runner, self.sources)
        except BaseException:
            watcher.stop()
            raise
        self.watcher, self.scheduler = watcher, scheduler

        def stop() -> None:
            try:
                watcher.stop()  # no sync starts from a saved file from here on
            finally:
                stop_scheduler(scheduler)  # waits for a scheduled sync (or digest) in progress

        self.on_close(stop, "the watcher and the scheduler")
        if add_jobs is not None:
            add_jobs(scheduler)

    # -- shutdown -------------------------------------------------------------------------------

    def on_close(self, stop: Callable[[], object], name: str = "") -> None:
        """Have `close` call `stop`, before whatever was started earlier: start things in the
        order they depend on each other, and they stop the other way round."""
        with self._lock:
            self._stops.append((name or getattr(stop, "__qualname__", repr(stop)), stop))

    def close(self) -> None:
        """Stop everything started through this root, newest first, the index last. A stop that
        fails is logged and the rest still run (a half-stopped process would keep the database,
        the leader lock or a port). Calling it again does nothing."""
        while True:
            with self._lock:
                self._closing = True
                if not self._stops:
                    return
                name, stop = self._stops.pop()
            try:
                stop()
            except Exception:
                log.exception("stopping %s failed; stopping the rest", name)

    def __enter__(self) -> Root:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def running(self) -> Iterator[Root]:
        """The body runs until it returns, raises, Ctrl-C or SIGTERM; then `close` runs.

        SIGTERM (docker stop, systemd, Kubernetes) becomes `SystemExit(0)`: its default action
        would kill the process on the spot, leaving the watcher, the scheduler's leader lock and
        the embedded Postgres behind. A second SIGTERM while closing is ignored, so the shutdown
        is not cut short halfway (SIGKILL still is). Signal handlers exist only in the main
        thread; elsewhere (tests) this only closes."""
        import signal

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, self._on_sigterm) if main else None
        try:
            yield self
        finally:
            try:
                self.close()
            finally:
                if main:
                    signal.signal(signal.SIGTERM, previous)

    def wait_until_stopped(self) -> None:
        """Block until Ctrl-C, or SIGTERM under `running()` (which raises SystemExit(0))."""
        import time

        try:
            while True:
                time.sleep(3600)  # a signal interrupts the sleep and its handler runs here
        except KeyboardInterrupt:
            pass

    def _on_sigterm(self, signum: int, frame: object) -> None:
        if not self._closing:
            raise SystemExit(0)
