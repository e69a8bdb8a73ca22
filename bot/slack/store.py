"""Slack's own tables, and every query on them: delivery claims, answer messages, hand-overs.

The listeners call these functions (and `bot.records.question_log` for the query log, votes and admin actions)
with the database (`Services.db`); nothing else in `bot.slack` runs SQL.

**Delivery claims** (`slack_deliveries`, `Deduper`): once-only handling of Slack deliveries,
durable across restarts and processes. Slack redelivers an event when it thinks we missed it
(`X-Slack-Retry-Num`: after a slow ack, a restart, a deploy), and one channel message can arrive
as two events (`app_mention` and `message`). Each would become a second answer. So before
answering a message the bot *claims* its key — `message:<channel>:<ts>`, the same for every
delivery of it, whatever the event — in the database (a primary-key insert, so two processes
racing for it cannot both win), and any later claim of the same key is refused. Only messages
Docent answers are claimed: the chatter of a busy channel (every message there arrives as an
event) is never written down. If the database cannot be reached, claims fall back to this
process's memory: a duplicate answer is better than the silence of dropping every question while
the database is down.

**Answer messages** (`answer_messages`): which Slack message is Docent's answer to which question
message. Every answer Docent posts in reply to a message is remembered (`remember_answer`), by
the question's channel and ts, so that an edited question is answered again in the same message
and a deleted question takes its answer with it (`bot.slack.listeners.conversation`), and a reply under a
DM answer finds the question it follows. Rows are kept as long as the query log keeps questions
(`prune_answers`, run by `bot.housekeeping`).

**Hand-overs** (`handovers`, `HandoverRecord`; `claim_handover`):
at most one per thread and at most `KB_HANDOVERS_PER_HOUR` per channel in any rolling hour,
decided under a per-channel advisory lock (`bot.slack.handover` posts them). A hand-over keeps
who asked, and once a person answers in its thread, that Docent offered the answer as a gap
(`claim_gap_offer`: once per thread) and what the person said (`bot.slack.listeners.answered_gaps`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cachetools import FIFOCache

from sqlalchemy import Column, Index, Text, delete, func, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Field, Session, SQLModel, col, select

from bot.records import Database
from indexing.storage import affected, timestamptz, utcnow

if TYPE_CHECKING:
    from bot.records import QueryLog

log = logging.getLogger(__name__)

MEMORY_KEYS = 10_000
KEEP = timedelta(days=3)  # Slack retries within minutes; older claims are pruned


# -- delivery claims -----------------------------------------------------------------------------


class DeliveryClaim(SQLModel, table=True):
    """A Slack delivery this process or another has claimed (answered, or is answering). The table
    is made by `bot.migrations` (m005_slack_tables)."""

    __tablename__ = "slack_deliveries"

    key: str = Field(primary_key=True)  # "message:C123:1700000000.000100"
    seen_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False, index=True))


class Deduper:
    """`claim(key)` is True exactly once per key."""

    def __init__(self, db: Database) -> None:
        self.engine = db.engine
        self._recent: FIFOCache[str, None] = FIFOCache(maxsize=MEMORY_KEYS)
        self._lock = threading.Lock()

    def claim(self, key: str) -> bool:
        with self._lock:  # the cheap check first: most duplicates hit the same process
            if key in self._recent:
                return False
            self._recent[key] = None  # the oldest key out
        try:
            with Session(self.engine) as s:
                inserted = s.execute(insert(DeliveryClaim).values(key=key, seen_at=utcnow())
                                     .on_conflict_do_nothing(index_elements=["key"]))
                s.commit()
            return affected(inserted) == 1
        except SQLAlchemyError as exc:
            log.warning("could not record delivery %s in the database (%s); deduplicating in memory only",
                        key, type(exc).__name__)
            return True

    def prune(self, keep: timedelta = KEEP, now: datetime | None = None) -> int:
        """Forget claims older than `keep`; returns how many (run daily by `bot.housekeeping`)."""
        try:
            with Session(self.engine) as s:
                result = s.execute(delete(DeliveryClaim).where(col(DeliveryClaim.seen_at) < (now or utcnow()) - keep))
                s.commit()
            return affected(result)
        except SQLAlchemyError:
            log.warning("could not prune old Slack deliveries", exc_info=True)
            return 0


# -- answer messages -----------------------------------------------------------------------------


class AnswerMessage(SQLModel, table=True):
    """Which message is Docent's answer to which question (for edits, deletions, DM threads).
    The table is made by `bot.migrations` (m005_slack_tables)."""

    __tablename__ = "answer_messages"

    channel_id: str = Field(primary_key=True)
    question_ts: str = Field(primary_key=True)
    answer_ts: str = Field(index=True)
    thread_ts: str | None = None
    surface: str = ""
    user_id: str = ""
    answer_id: str = ""
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))


def remember_answer(db: Database, channel: str, question_ts: str, answer_ts: str, *, surface: str,
                    thread_ts: str | None, user: str | None, answer_id: str) -> None:
    """Record (or re-point) the answer to one question; a failure is one log line — the answer is
    delivered, only its later edit or deletion will not follow."""
    values = dict(channel_id=channel, question_ts=question_ts, answer_ts=answer_ts, thread_ts=thread_ts,
                  surface=surface, user_id=user or "", answer_id=answer_id, created_at=utcnow())
    statement = insert(AnswerMessage).values(**values).on_conflict_do_update(
        index_elements=["channel_id", "question_ts"], set_={k: v for k, v in values.items()
                                                            if k not in ("channel_id", "question_ts")})
    try:
        with db.session() as s:
            s.execute(statement)
            s.commit()
    except Exception as exc:
        from indexing.storage import is_unreachable

        if is_unreachable(exc):
            log.warning("could not remember answer %s for %s/%s: the database cannot be reached", answer_ts,
                        channel, question_ts)
        else:
            log.exception("could not remember answer %s for %s/%s", answer_ts, channel, question_ts)


def answer_to(db: Database, channel: str, question_ts: str) -> AnswerMessage | None:
    """Docent's answer to the question message `channel`/`question_ts`, if it posted one."""
    with db.session() as s:
        return s.get(AnswerMessage, (channel, question_ts))


def question_answered_by(db: Database, channel: str, answer_ts: str) -> str | None:
    """The question whose answer is the message `channel`/`answer_ts` (a reply under a DM answer)."""
    asked = logged_answer(db, channel, answer_ts)
    return asked.question if asked else None


def logged_answer(db: Database, channel: str, answer_ts: str) -> QueryLog | None:
    """The query log's row of the answer that is the message `channel`/`answer_ts`: its question
    and the answer's text as Docent wrote it (`bot.slack.listeners.verify`), None for another message."""
    from bot.records import QueryLog

    with db.session() as s:
        row = s.exec(select(AnswerMessage).where(AnswerMessage.channel_id == channel,
                                                 AnswerMessage.answer_ts == answer_ts)).first()
        if row is None:
            return None
        return s.exec(select(QueryLog).where(QueryLog.answer_id == row.answer_id)).first()


def forget_answer(db: Database, channel: str, question_ts: str) -> None:
    with db.session() as s:
        gone = s.get(AnswerMessage, (channel, question_ts))
        if gone is not None:
            s.delete(gone)
            s.commit()


def prune_answers(db: Database, before: datetime) -> int:
    """Forget answers older than the query log keeps questions (`bot.housekeeping`)."""
    with db.session() as s:
        gone = affected(s.execute(delete(AnswerMessage).where(col(AnswerMessage.created_at) < before)))
        s.commit()
    return gone


# -- hand-overs ----------------------------------------------------------------------------------


class HandoverRecord(SQLModel, table=True):
    """A thread Docent handed over to people, and what became of it. The table is made by
    `bot.migrations` (m005_slack_tables, m007_answered_gaps)."""

    __tablename__ = "handovers"
    __table_args__ = (Index("handovers_channel_created_idx", "channel", "created_at"),)

    channel: str = Field(primary_key=True)
    thread_ts: str = Field(primary_key=True)
    question: str = Field(default="", sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    asker: str = ""  # "" for hand-overs made before askers were kept
    offered_at: datetime | None = Field(default=None, sa_column=timestamptz(nullable=True))  # offered as a gap
    answered_by: str = ""
    answer_ts: str = ""
    answer_text: str = Field(default="", sa_column=Column(Text, nullable=False))


def claim_handover(db: Database, channel: str, thread_ts: str, question: str, per_hour: int, asker: str = "") -> str:
    """Record a hand-over for this thread if none was made and the channel's hourly cap allows:
    "claimed", "already" (this thread had one) or "capped". The hour is the database's clock, so
    replicas on hosts whose clocks differ count the same hand-overs."""
    in_channel = col(HandoverRecord.channel) == channel
    with db.engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"docent:handover:{channel}"})
        if conn.execute(select(HandoverRecord.thread_ts).where(in_channel, col(HandoverRecord.thread_ts) == thread_ts)).first():
            return "already"
        recent = conn.execute(select(func.count()).select_from(HandoverRecord).where(
            in_channel, col(HandoverRecord.created_at) > func.now() - timedelta(hours=1))).scalar_one()
        if recent >= per_hour:
            return "capped"
        conn.execute(insert(HandoverRecord).values(channel=channel, thread_ts=thread_ts, question=question[:2000],
                                                   created_at=func.now(), asker=asker or ""))
    return "claimed"


@dataclass(frozen=True)
class Handover:
    """A thread Docent handed over: the question, who asked it ("" for hand-overs made before askers
    were kept), and — once a person answered there and Docent offered it as a gap — who answered,
    which message, what it said."""

    channel: str
    thread_ts: str
    question: str
    asker: str
    offered: bool
    answered_by: str = ""
    answer_ts: str = ""
    answer_text: str = ""


def handover_in(db: Database, channel: str, thread_ts: str) -> Handover | None:
    """The hand-over of this thread, if Docent made one."""
    with db.session() as s:
        row = s.get(HandoverRecord, (channel, thread_ts))
    return None if row is None else Handover(channel, thread_ts, row.question, row.asker, row.offered_at is not None,
                                             row.answered_by, row.answer_ts, row.answer_text)


def claim_gap_offer(db: Database, channel: str, thread_ts: str, answered_by: str, answer_ts: str,
                    answer_text: str) -> Handover | None:
    """Mark this handed-over thread's gap as offered, with the person's answer: the hand-over, or None
    when the thread had no hand-over or its offer was made already (once per thread, across processes)."""
    with db.engine.begin() as conn:
        row = conn.execute(
            update(HandoverRecord)
            .where(col(HandoverRecord.channel) == channel, col(HandoverRecord.thread_ts) == thread_ts,
                   col(HandoverRecord.offered_at).is_(None))
            .values(offered_at=func.now(), answered_by=answered_by, answer_ts=answer_ts, answer_text=answer_text[:8000])
            .returning(col(HandoverRecord.question), col(HandoverRecord.asker))).first()
    if row is None:
        return None
    return Handover(channel, thread_ts, row[0], row[1], True, answered_by, answer_ts, answer_text[:8000])


def prune_handovers(db: Database, before: datetime) -> int:
    """Forget hand-overs made before `before` — their questions and people's answers are personal
    data, kept as long as the query log keeps questions (`bot.housekeeping`)."""
    with db.engine.begin() as conn:
        return affected(conn.execute(delete(HandoverRecord).where(col(HandoverRecord.created_at) < before)))
