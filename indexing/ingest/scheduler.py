"""Periodic full re-syncs (apscheduler 3.x), run by exactly one Docent process per database.

Every process may start a scheduler, but a job only runs in the process holding the
"scheduler" leader lock (a Postgres advisory lock); the others skip with a log line. If the
leader dies, Postgres frees the lock and the next process to try becomes leader.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sources import SourceConfig
from indexing.storage.locks import LeaderLock
from indexing.ingest.runner import SyncRunner

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)


def start_scheduler(runner: SyncRunner, sources: list[SourceConfig]) -> BackgroundScheduler:
    """Start a background scheduler with one job per source that has a schedule; returns it."""
    from apscheduler.schedulers.background import BackgroundScheduler

    leader = LeaderLock(runner.index.engine, "scheduler")
    scheduler = BackgroundScheduler(timezone="UTC")
    for source in sources:
        if not source.schedule:
            continue
        scheduler.add_job(
            scheduled_sync, source.schedule.trigger(), args=[runner, leader, source.name], id=f"sync:{source.name}",
            max_instances=1, coalesce=True, misfire_grace_time=60,
        )
    scheduler.start()
    scheduler.docent_leader = leader  # kept alive with the scheduler; released on shutdown
    return scheduler


def stop_scheduler(scheduler: BackgroundScheduler) -> None:
    scheduler.shutdown(wait=True)
    scheduler.docent_leader.release()


def scheduled_sync(runner: SyncRunner, leader: LeaderLock, name: str) -> None:
    if not leader.is_leader():
        log.info("scheduled sync of %s skipped: another Docent process is the scheduler", name)
        return
    try:
        report = runner.sync(name, trigger="schedule", wait=False)
        if report is not None and report.refused:
            log.error("scheduled sync of %s refused, nothing deleted: %s (run `kb sync --source %s --allow-deletes` "
                      "if the pages are meant to go)", name, report.refused, name)
        elif report is not None:
            log.info("scheduled sync of %s: %s", name, report)
    except Exception:
        log.exception("scheduled sync of %s failed", name)
