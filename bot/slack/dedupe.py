"""Once-only handling of Slack deliveries, durable across restarts and processes.

Slack redelivers an event when it thinks we missed it (`X-Slack-Retry-Num`: after a slow ack, a
restart, a deploy), and one channel message can arrive as two events (`app_mention` and
`message`). Each would become a second answer. So before answering a message the bot *claims*
its key — `message:<channel>:<ts>`, the same for every delivery of it, whatever the event — in
the database (a primary-key insert, so two processes racing for it cannot both win), and any
later claim of the same key is refused. Only messages Docent answers are claimed: the chatter of
a busy channel (every message there arrives as an event) is never written down.

If the database cannot be reached, claims fall back to this process's memory: a duplicate
answer is better than the silence of dropping every question while the database is down.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Field, SQLModel, Session

from indexing.index import Index
from indexing.registry import timestamptz, utcnow

log = logging.getLogger(__name__)

MEMORY_KEYS = 10_000
KEEP = timedelta(days=3)  # Slack retries within minutes; older claims are pruned


class Delivery(SQLModel, table=True):
    """A claimed message; the table is made by `indexing.migrations` (m005_slack_tables)."""

    __tablename__ = "slack_deliveries"

    key: str = Field(primary_key=True)  # "message:C123:1700000000.000100"
    seen_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False, index=True))


class Deduper:
    """`claim(key)` is True exactly once per key."""

    def __init__(self, index: Index) -> None:
        self.engine = index.engine
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def claim(self, key: str) -> bool:
        with self._lock:  # the cheap check first: most duplicates hit the same process
            if key in self._recent:
                return False
            self._recent[key] = None
            if len(self._recent) > MEMORY_KEYS:
                self._recent.popitem(last=False)
        try:
            with Session(self.engine) as s:
                inserted = s.execute(insert(Delivery.__table__).values(key=key, seen_at=utcnow())
                                     .on_conflict_do_nothing(index_elements=["key"]))
                s.commit()
            return inserted.rowcount == 1
        except SQLAlchemyError as exc:
            log.warning("could not record delivery %s in the database (%s); deduplicating in memory only",
                        key, type(exc).__name__)
            return True

    def prune(self, keep: timedelta = KEEP, now: datetime | None = None) -> int:
        """Forget claims older than `keep`; returns how many (run daily by `bot.housekeeping`)."""
        try:
            with Session(self.engine) as s:
                result = s.execute(delete(Delivery).where(Delivery.seen_at < (now or utcnow()) - keep))
                s.commit()
            return result.rowcount or 0
        except SQLAlchemyError:
            log.warning("could not prune old Slack deliveries", exc_info=True)
            return 0
