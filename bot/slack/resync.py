"""`/kb resync`: a real sync of a configured source, started from Slack, run in the background.

Admins only (KB_ADMIN_USERS), and every attempt is recorded (`records.log_admin_action`).

The sync goes through `indexing.runner.SyncRunner` — the same path as `kb sync`, the watcher
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
from typing import TYPE_CHECKING

from bot import records
from bot.knowledge import KnowledgeBase
from bot.slack.errors import apology, apology_on_error, quietly, reference_id
from bot.slack.mrkdwn import escape, neutralise
from connectors.connector import open_connector
from indexing.sync import SyncReport

if TYPE_CHECKING:
    from bot.slack.app import Services

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
            if not source.location.exists():
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
    state = {"done": 0, "sent": 0, "last": time.monotonic()}

    def advance(_doc) -> None:
        state["done"] += 1
        now = time.monotonic()
        if state["sent"] < PROGRESS_MESSAGES and now - state["last"] >= PROGRESS_SECONDS and state["done"] < total:
            state["sent"] += 1
            state["last"] = now
            quietly(progress, state["done"], total)

    return advance


def summary(report: SyncReport) -> str:
    """One line per sync, as `kb sync` prints it, plus the first failures."""
    skipped = f", {report.skipped} skipped" if report.skipped else ""
    line = (f"`{report.source}`: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
            f"{report.deleted} deleted, {report.failed} failed{skipped} — {report.chunks} chunks written, "
            f"{report.seconds:.1f} s")
    failures = "".join(f"\n• failed: {error}" for error in report.errors[:5])
    more = f"\n…and {len(report.errors) - 5} more (see `kb status`)" if len(report.errors) > 5 else ""
    return line + failures + more


def resync(services: Services, ack, command: dict, respond, text: str) -> None:
    """Admins only: a real sync in the background; progress and a summary through the response URL.
    `--allow-deletes` after the source name lets a deliberate mass deletion through the guard."""
    user = command["user_id"]
    words = text.split()
    allow_deletes = "--allow-deletes" in words
    source = " ".join(w for w in words if w != "--allow-deletes")
    index = services.kb.index
    if user not in services.settings.admin_users:
        ack(text="Sorry, `/kb resync` is for Docent admins only. Ask one of them, or a wiki owner, to run it.",
            response_type="ephemeral")
        _record_admin(index, user, source, allowed=False, result="refused: not in KB_ADMIN_USERS")
        return
    configured = services.resyncs.names
    names = ", ".join(f"`{escape(n)}`" for n in configured)
    name = source or (configured[0] if len(configured) == 1 else "")
    if not name:
        ack(text=f"Which source? `/kb resync <source>`, with one of: {names}.", response_type="ephemeral")
        return
    if name not in configured:
        ack(text=f"There is no source `{neutralise(escape(name[:80]))}`. Known sources: {names}.", response_type="ephemeral")
        _record_admin(index, user, name, allowed=True, result="refused: unknown source")
        return
    ack(text=f"🔄 Starting a resync of `{escape(name)}`" + (" (deletions allowed)" if allow_deletes else "") + "…",
        response_type="ephemeral")
    action_id = _record_admin(index, user, name + (" --allow-deletes" if allow_deletes else ""),
                              allowed=True, result="started")

    def progress(done: int, total: int) -> None:
        respond(text=f"🔄 Resync of `{escape(name)}`: {done} of {total} documents so far…", response_type="ephemeral",
                replace_original=False)

    def finished(report, error) -> None:
        if report is None and error is None:
            result = "refused: another sync of this source was running"
            respond(text=f"Another sync of `{escape(name)}` is running right now (the watcher, the schedule or "
                         f"another admin); its changes will be indexed when it ends.",
                    response_type="ephemeral", replace_original=False)
        elif error is None and report.refused:
            result = f"refused: {report.refused}"
            respond(text=f"⚠️ The resync of `{escape(name)}` deleted nothing: {neutralise(escape(report.refused))}. "
                         f"If those pages are meant to go, run `/kb resync {escape(name)} --allow-deletes`.",
                    response_type="ephemeral", replace_original=False)
        elif error is not None:
            ref = reference_id()
            log.error("resync of %s failed [ref %s]: %s", name, ref, error)
            result = f"failed [ref {ref}]: {type(error).__name__}: {error}"
            respond(text=f"❌ The resync of `{escape(name)}` failed. {apology(ref)}", response_type="ephemeral",
                    replace_original=False)
        else:
            result = summary(report)
            respond(text=f"✅ Resync finished — {neutralise(escape(result))}", response_type="ephemeral",
                    replace_original=False)
        if action_id is not None:
            quietly(records.finish_admin_action, index, action_id, result)

    with apology_on_error("/kb resync", lambda ref: respond(text=apology(ref), response_type="ephemeral")):
        if not services.resyncs.start(name, progress, finished, allow_deletes=allow_deletes):
            respond(text=f"A resync of `{escape(name)}` is already running; you will see its summary when it ends.",
                    response_type="ephemeral", replace_original=False)
            if action_id is not None:
                quietly(records.finish_admin_action, index, action_id, "refused: already running")


def _record_admin(index, user: str, argument: str, allowed: bool, result: str) -> int | None:
    return quietly(records.log_admin_action, index, user, "resync", argument, allowed, result)
