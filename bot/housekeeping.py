"""What `kb serve` tidies up while it runs: old delivery claims, and questions past their retention.

- `slack_deliveries` keeps a claim per answered message for `bot.slack.store.KEEP` (Slack redelivers within
  minutes); older claims are deleted.
- `query_log` holds people's questions — personal data — so rows older than `KB_QUERY_LOG_DAYS`
  are deleted, with the votes and 👎 reasons on those answers (0 keeps everything); so are
  hand-overs (their questions, and the answers people gave in their threads) and the gaps people
  answered (`answered_gaps`, by when they were added).

Both run at start and then every `EVERY`, on one background thread (apscheduler, as the
re-syncs). Every process may run them: deleting rows that another process already deleted is
harmless. A failure is logged and tried again at the next run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from indexing.index import Index

log = logging.getLogger(__name__)

EVERY = timedelta(days=1)


@dataclass
class Tidied:
    deliveries: int
    questions: int
    votes: int


def tidy(index: Index, query_log_days: int, now: datetime | None = None) -> Tidied:
    """One housekeeping run; returns how many rows went."""
    from bot.records import question_log
    from bot.slack import store

    now = now or datetime.now(timezone.utc)
    deliveries = store.Deduper(index).prune(now=now)
    questions = votes = 0
    if query_log_days > 0:
        questions, votes = question_log.prune_query_log(index, before=now - timedelta(days=query_log_days))
        store.prune_answers(index, before=now - timedelta(days=query_log_days))
        store.prune_handovers(index, before=now - timedelta(days=query_log_days))
        question_log.prune_answered_gaps(index, before=now - timedelta(days=query_log_days))
    if deliveries or questions or votes:
        log.info("housekeeping: %d delivery claims, %d logged questions and %d votes older than their "
                 "retention deleted", deliveries, questions, votes)
    return Tidied(deliveries, questions, votes)


def start_housekeeping(index: Index, query_log_days: int, every: timedelta = EVERY) -> Callable[[], None]:
    """`tidy` now and then every `every`, in the background; returns the function that stops it."""
    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.triggers.interval import IntervalTrigger

    def run() -> None:
        try:
            tidy(index, query_log_days)
        except Exception:
            log.exception("housekeeping failed; it runs again in %s", every)

    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(run, IntervalTrigger(seconds=every.total_seconds()), id="housekeeping",
                      next_run_time=datetime.now(timezone.utc), max_instances=1, coalesce=True)
    scheduler.start()
    return lambda: scheduler.shutdown(wait=True)
