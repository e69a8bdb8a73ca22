"""Answer messages: which Slack message is Docent's answer to which question message.

Every answer Docent posts in reply to a message is remembered here (`remember`), by the
question's channel and ts, so that an edited question is answered again in the same message and
a deleted question takes its answer with it (`bot.slack.conversation`), and a reply under a DM
answer finds the question it follows. Rows are kept as long as the query log keeps questions
(`prune`, run by `bot.housekeeping`).
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlmodel import Field, SQLModel, select

from indexing.registry import timestamptz, utcnow

log = logging.getLogger(__name__)


class AnswerMessage(SQLModel, table=True):
    """Which message is Docent's answer to which question (for edits, deletions, DM threads).
    The table is made by `indexing.migrations` (m005_slack_tables)."""

    __tablename__ = "answer_messages"

    channel_id: str = Field(primary_key=True)
    question_ts: str = Field(primary_key=True)
    answer_ts: str = Field(index=True)
    thread_ts: str | None = None
    surface: str = ""
    user_id: str = ""
    answer_id: str = ""
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))


def remember(index, channel: str, question_ts: str, answer_ts: str, *, surface: str, thread_ts: str | None,
             user: str | None, answer_id: str) -> None:
    """Record (or re-point) the answer to one question; a failure is one log line — the answer is
    delivered, only its later edit or deletion will not follow."""
    from sqlalchemy.dialects.postgresql import insert

    values = dict(channel_id=channel, question_ts=question_ts, answer_ts=answer_ts, thread_ts=thread_ts,
                  surface=surface, user_id=user or "", answer_id=answer_id, created_at=utcnow())
    statement = insert(AnswerMessage.__table__).values(**values).on_conflict_do_update(
        index_elements=["channel_id", "question_ts"], set_={k: v for k, v in values.items()
                                                            if k not in ("channel_id", "question_ts")})
    try:
        with index.session() as s:
            s.execute(statement)
            s.commit()
    except Exception as exc:
        from indexing.database import is_unreachable

        if is_unreachable(exc):
            log.warning("could not remember answer %s for %s/%s: the database cannot be reached", answer_ts,
                        channel, question_ts)
        else:
            log.exception("could not remember answer %s for %s/%s", answer_ts, channel, question_ts)


def answered(index, channel: str, question_ts: str) -> AnswerMessage | None:
    """Docent's answer to the question message `channel`/`question_ts`, if it posted one."""
    with index.session() as s:
        return s.get(AnswerMessage, (channel, question_ts))


def question_answered_by(index, channel: str, answer_ts: str) -> str | None:
    """The question whose answer is the message `channel`/`answer_ts` (a reply under a DM answer)."""
    from bot.records import QueryLog

    with index.session() as s:
        row = s.exec(select(AnswerMessage).where(AnswerMessage.channel_id == channel,
                                                 AnswerMessage.answer_ts == answer_ts)).first()
        if row is None:
            return None
        asked = s.exec(select(QueryLog).where(QueryLog.answer_id == row.answer_id)).first()
    return asked.question if asked else None


def forget(index, channel: str, question_ts: str) -> None:
    with index.session() as s:
        gone = s.get(AnswerMessage, (channel, question_ts))
        if gone is not None:
            s.delete(gone)
            s.commit()


def prune(index, before: datetime) -> int:
    """Forget answers older than the query log keeps questions (`bot.housekeeping`)."""
    from sqlalchemy import delete

    with index.session() as s:
        gone = s.execute(delete(AnswerMessage).where(AnswerMessage.created_at < before)).rowcount or 0
        s.commit()
    return gone
