"""What happened in Slack, kept in Docent's database (sqlmodel, the same Postgres as the index).

- `query_log`: every question the bot answered (or failed to): who, where (the conversation and
  its kind, `ChannelKind`), the question and
  the thread context used, the answer id and text, its outcome (answered / uncertain /
  not_found; `found` is kept: outcome != not_found), cited documents with scores,
  the gate signals, per-stage timings, whether an LLM wrote it. Wiki owners read it to see what
  is missing; the bot reads it to re-render an answer (votes, sharing) and to know which threads
  it is part of (follow-ups without a mention).
- `feedback`: one vote per user per answer (voting again changes it), with the optional reason
  from the 👎 form.
- `admin_actions`: who tried which admin command, when, whether it was allowed, and the result.
- `answered_gaps`: questions the wiki had no answer to that a person answered in a handed-over
  thread, added by the asker or the answerer with "Add to the wiki's gaps"
  (`bot.slack.listeners.answered_gaps`): the question, the answer as written in that channel, who answered,
  where (channel, thread, permalink), when, and the access scopes visible in that channel, which
  limit where it is shown (`bot.records.gaps`).

The classes are the Python view of the tables; `bot.migrations` creates and changes them (right
after the index opens), so a column added here needs a migration there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import JSON, Column, Text, UniqueConstraint, func, or_
from sqlalchemy import Index as SqlIndex
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from bot.answering import Answer, Source
from indexing.ingest import HeadingPath
from indexing.search import Outcome
from indexing.storage import affected, timestamptz, utcnow

UP, DOWN = "up", "down"


class Database(Protocol):
    """What the records need of the index: its Postgres engine and sessions on it (an `Index` is
    one). The Slack listeners hold it as `Services.db` and only pass it to these functions and
    `bot.slack.store`'s: what they read of the wiki itself comes through `KnowledgeBase`."""

    engine: Engine

    def session(self) -> Session: ...


class ChannelKind(StrEnum):
    """Where a question was asked, as the query log keeps it. Only questions asked in public
    channels are anyone's business but the people there: the App Home's example questions and
    the assistant's suggested prompts, shown to the whole workspace, are drawn from those alone.
    UNKNOWN is a row logged before kinds were kept, or a conversation Slack would not describe:
    it never counts as public."""

    PUBLIC = "public"  # a public channel of the workspace (or shared only within its Grid organisation)
    PRIVATE = "private"  # a private channel, or a group DM
    DM = "dm"  # someone's direct message with Docent (the App Home's Messages tab, an assistant thread)
    SHARED = "shared"  # shared with another organisation (Slack Connect)
    UNKNOWN = ""


class QueryLog(SQLModel, table=True):
    __tablename__ = "query_log"
    # `thread_question` runs for every message in a thread of a channel Docent is in: these let it
    # find the bot's answer in that thread without reading the whole log.
    __table_args__ = (
        SqlIndex("ix_query_log_channel_thread", "channel_id", "thread_ts"),
        SqlIndex("ix_query_log_channel_message", "channel_id", "message_ts"),
    )

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False, index=True))
    answer_id: str | None = Field(default=None, unique=True)  # None when answering failed
    surface: str  # mention / dm / thread / command
    user_id: str = Field(index=True)
    channel_id: str | None = None
    channel_kind: str = ChannelKind.UNKNOWN.value  # public / private / dm / shared ("": unknown, older rows)
    thread_ts: str | None = None  # the thread the answer went to (for follow-ups)
    message_ts: str | None = None  # the question's own message
    question: str = Field(sa_column=Column(Text, nullable=False))
    context_question: str | None = Field(default=None, sa_column=Column(Text))  # earlier question in the thread
    found: bool = False
    outcome: str = ""  # answered / uncertain / not_found ("" for rows logged before outcomes existed)
    answer_text: str = Field(default="", sa_column=Column(Text, nullable=False))
    note: str | None = Field(default=None, sa_column=Column(Text))
    doc_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    scores: list[float] = Field(default_factory=list, sa_column=Column(JSON))
    sources: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))  # Source.to_json: to re-render the answer
    signals: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # not-found gate inputs (GateSignals.to_json)
    timings_ms: dict[str, float] = Field(default_factory=dict, sa_column=Column(JSON))
    llm_used: bool = False
    error_ref: str | None = Field(default=None, index=True)  # the reference id the user was shown
    verified_id: int | None = Field(default=None, index=True)  # the verified answer given (bot.verified), if one was


class Feedback(SQLModel, table=True):
    __tablename__ = "feedback"
    __table_args__ = (UniqueConstraint("answer_id", "user_id", name="uq_feedback_answer_user"),)

    id: int | None = Field(default=None, primary_key=True)
    answer_id: str = Field(index=True)
    user_id: str
    vote: str  # up / down
    reason: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    updated_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False, index=True))


class AdminAction(SQLModel, table=True):
    __tablename__ = "admin_actions"

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False, index=True))
    user_id: str = Field(index=True)
    action: str  # e.g. "resync"
    argument: str = ""
    allowed: bool = False
    result: str = Field(default="", sa_column=Column(Text, nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=timestamptz())


# -- query log -------------------------------------------------------------------------------


def log_query(
    index: Database,
    *,
    surface: str,
    user_id: str,
    question: str,
    answer: Answer | None = None,
    channel_id: str | None = None,
    channel_kind: ChannelKind = ChannelKind.UNKNOWN,
    thread_ts: str | None = None,
    message_ts: str | None = None,
    context_question: str | None = None,
    timings_ms: dict[str, float] | None = None,
    error_ref: str | None = None,
) -> QueryLog:
    """One row per question; `answer` is None (and `error_ref` set) when answering failed. Every
    question Slack asks is logged here, so it is also where `/metrics` counts them. `channel_kind`:
    where it was asked (`ChannelKind`; unknown unless the caller knows)."""
    from bot.metrics import observe_question

    observe_question(surface, answer, timings_ms)
    row = QueryLog(
        surface=surface, user_id=user_id, channel_id=channel_id, channel_kind=ChannelKind(channel_kind).value,
        thread_ts=thread_ts, message_ts=message_ts,
        question=question, context_question=context_question, error_ref=error_ref,
        timings_ms=dict(timings_ms or {}),
    )
    if answer is not None:
        row.answer_id = answer.id
        row.found = answer.found
        row.outcome = answer.outcome.value
        row.answer_text = answer.text
        row.note = answer.note
        row.doc_ids = [s.doc_id for s in answer.sources]
        row.scores = [s.score for s in answer.sources]
        row.sources = [s.to_json() for s in answer.sources]
        row.signals = dict(answer.signals)
        row.timings_ms = {**answer.timings_ms, **row.timings_ms}
        row.llm_used = answer.llm_used
        row.verified_id = answer.verified.id if answer.verified else None
    with index.session() as s:
        s.add(row)
        s.commit()
        s.refresh(row)
    return row


def find_answer(index: Database, answer_id: str) -> QueryLog | None:
    with index.session() as s:
        return s.exec(select(QueryLog).where(QueryLog.answer_id == answer_id)).first()


def answer_from_log(row: QueryLog) -> Answer:
    """The answer as it was given, to render it again (after a vote, or when shared)."""
    sources = [
        Source(
            n=d["n"], doc_id=d["doc_id"], source=d["source"], path=d["path"], title=d["title"],
            heading_path=HeadingPath.parse(d.get("heading_path")), url=d["url"],
            score=d["score"], updated_at=datetime.fromisoformat(d["updated_at"]) if d.get("updated_at") else None,
        )
        for d in row.sources
    ]
    return Answer(question=row.question, text=row.answer_text, sources=sources,
                  timings_ms=row.timings_ms, id=row.answer_id or "", llm_used=row.llm_used, note=row.note,
                  signals=row.signals, outcome=Outcome.logged(row.outcome, row.found),
                  searched=(row.signals or {}).get("searched"))


def document_access(index: Database, doc_ids: list[str]) -> dict[str, str]:
    """The current access scope of each of these documents that is still indexed."""
    from indexing.storage import document_queries

    if not doc_ids:
        return {}
    with index.session() as s:
        return document_queries.access_of(s, doc_ids)


def prune_query_log(index: Database, before: datetime) -> tuple[int, int]:
    """Delete the questions logged before `before`, and the votes on their answers (a vote with
    its 👎 reason is about the question, and as personal); returns (questions, votes) deleted."""
    from sqlalchemy import delete

    with index.session() as s:
        old = select(QueryLog.answer_id).where(col(QueryLog.created_at) < before, col(QueryLog.answer_id).is_not(None))
        votes = affected(s.execute(delete(Feedback).where(col(Feedback.answer_id).in_(old))))
        questions = affected(s.execute(delete(QueryLog).where(col(QueryLog.created_at) < before)))
        s.commit()
    return questions, votes


def thread_question(index: Database, channel_id: str, thread_ts: str) -> str | None:
    """The latest question the bot answered in this thread (or whose message started it), or None
    if the bot has no part in the thread."""
    with index.session() as s:
        row = s.exec(
            select(QueryLog)
            .where(QueryLog.channel_id == channel_id, col(QueryLog.answer_id).is_not(None),
                   or_(col(QueryLog.thread_ts) == thread_ts, col(QueryLog.message_ts) == thread_ts))
            .order_by(col(QueryLog.created_at).desc())
            .limit(1)
        ).first()
    return row.question if row else None


def latest_question(index: Database, channel_id: str, user_id: str, since: datetime,
                    other_than_ts: str) -> str | None:
    """The latest question `user_id` asked in `channel_id` since `since` and was answered (or
    refused), other than the message `other_than_ts` itself — what a DM follow-up follows."""
    with index.session() as s:
        row = s.exec(select(QueryLog).where(QueryLog.channel_id == channel_id, QueryLog.user_id == user_id,
                                            QueryLog.created_at >= since, col(QueryLog.answer_id).is_not(None),
                                            QueryLog.message_ts != other_than_ts)
                     .order_by(col(QueryLog.created_at).desc()).limit(1)).first()
    return row.question if row else None


def answered_in_public(index: Database, surfaces: tuple[str, ...], limit: int) -> list[QueryLog]:
    """The latest `limit` questions that were answered, asked in a public channel on one of
    `surfaces` — where everyone could read them (the candidates for example questions)."""
    with index.session() as s:
        return list(s.exec(select(QueryLog).where(QueryLog.outcome == Outcome.ANSWERED.value,
                                                  col(QueryLog.answer_id).is_not(None),
                                                  QueryLog.channel_kind == ChannelKind.PUBLIC.value,
                                                  col(QueryLog.surface).in_(surfaces))
                           .order_by(col(QueryLog.created_at).desc()).limit(limit)).all())


def questions_of(index: Database, user_id: str, limit: int) -> list[QueryLog]:
    """`user_id`'s latest `limit` questions, newest first (failed ones too)."""
    with index.session() as s:
        return list(s.exec(select(QueryLog).where(QueryLog.user_id == user_id)
                           .order_by(col(QueryLog.created_at).desc()).limit(limit)).all())


# -- feedback --------------------------------------------------------------------------------


def record_vote(index: Database, answer_id: str, user_id: str, vote: str) -> dict[str, int]:
    """Store (or change) this user's vote on this answer; returns the answer's tally."""
    if vote not in (UP, DOWN):
        raise ValueError(f"unknown vote {vote!r}")
    now = utcnow()
    statement = insert(Feedback).values(
        answer_id=answer_id, user_id=user_id, vote=vote, reason=None, created_at=now, updated_at=now
    )
    # a changed vote drops the old reason: it explained the other vote
    statement = statement.on_conflict_do_update(
        constraint="uq_feedback_answer_user", set_={"vote": vote, "reason": None, "updated_at": now}
    )
    with index.session() as s:
        s.execute(statement)
        s.commit()
    return vote_counts(index, answer_id)


def record_reason(index: Database, answer_id: str, user_id: str, reason: str | None) -> None:
    """The text of the 👎 form, kept with that user's (down) vote."""
    now = utcnow()
    statement = insert(Feedback).values(
        answer_id=answer_id, user_id=user_id, vote=DOWN, reason=reason, created_at=now, updated_at=now
    ).on_conflict_do_update(constraint="uq_feedback_answer_user", set_={"vote": DOWN, "reason": reason, "updated_at": now})
    with index.session() as s:
        s.execute(statement)
        s.commit()


def vote_counts(index: Database, answer_id: str) -> dict[str, int]:
    with index.session() as s:
        rows = s.exec(
            select(Feedback.vote, func.count()).where(Feedback.answer_id == answer_id).group_by(Feedback.vote)
        ).all()
    counts = {UP: 0, DOWN: 0}
    counts.update(dict(rows))
    return counts


# -- admin actions ---------------------------------------------------------------------------


def log_admin_action(index: Database, user_id: str, action: str, argument: str, allowed: bool, result: str) -> int:
    with index.session() as s:
        row = AdminAction(user_id=user_id, action=action, argument=argument, allowed=allowed, result=result)
        if not allowed:
            row.finished_at = row.created_at
        s.add(row)
        s.commit()
        s.refresh(row)
        assert row.id is not None  # the primary key, assigned by the database on commit
        return row.id


def finish_admin_action(index: Database, action_id: int, result: str) -> None:
    with index.session() as s:
        row = s.get(AdminAction, action_id)
        if row is not None:
            row.result = result
            row.finished_at = utcnow()
            s.add(row)
            s.commit()


# -- answered by people, missing from the wiki --------------------------------------------------


class AnsweredGap(SQLModel, table=True):
    """A question a person answered in a handed-over thread, added to the wiki's gaps (one per thread)."""

    __tablename__ = "answered_gaps"

    channel_id: str = Field(primary_key=True)
    thread_ts: str = Field(primary_key=True)
    question: str = Field(sa_column=Column(Text, nullable=False))
    answer: str = Field(sa_column=Column(Text, nullable=False))  # as said in the channel, Slack markup made plain
    answered_by: str
    asked_by: str
    answer_ts: str
    permalink: str = ""  # the answer in its thread ("" when Slack would not give one)
    scopes: list[str] = Field(default_factory=list, sa_column=Column(JSON))  # the channel's, before any narrowing
    channel_kind: str = ChannelKind.UNKNOWN.value  # public / private: private ones are listed only on opt-in
    answered_at: datetime = Field(sa_column=timestamptz(nullable=False))
    added_by: str
    added_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False, index=True))


def add_answered_gap(index: Database, gap: AnsweredGap) -> AnsweredGap | None:
    """Record `gap` unless its thread's gap is recorded already: the new row, or None (the first
    click wins; the gap stays as it was first added)."""
    from sqlalchemy import inspect

    values = {c.name: getattr(gap, c.name) for c in inspect(AnsweredGap).columns}
    with index.session() as s:
        inserted = s.execute(insert(AnsweredGap).values(**values)
                             .on_conflict_do_nothing(index_elements=["channel_id", "thread_ts"]))
        s.commit()
    return gap if affected(inserted) == 1 else None


def answered_gap(index: Database, channel_id: str, thread_ts: str) -> AnsweredGap | None:
    with index.session() as s:
        return s.get(AnsweredGap, (channel_id, thread_ts))


def answered_gaps(index: Database, since: datetime, until: datetime) -> list[AnsweredGap]:
    """Gaps added in [since, until), newest first."""
    with index.session() as s:
        return list(s.exec(select(AnsweredGap).where(AnsweredGap.added_at >= since, AnsweredGap.added_at < until)
                           .order_by(col(AnsweredGap.added_at).desc(), AnsweredGap.channel_id, AnsweredGap.thread_ts)))


def prune_answered_gaps(index: Database, before: datetime) -> int:
    """Forget gaps added before `before` (`bot.housekeeping`, with the query log's retention)."""
    from sqlalchemy import delete

    with index.session() as s:
        gone = affected(s.execute(delete(AnsweredGap).where(col(AnsweredGap.added_at) < before)))
        s.commit()
    return gone


# -- the wiki owners' report -----------------------------------------------------------------


@dataclass
class ReportRow:
    """One line of `kb feedback`: a vote (with the question it was about) or an unanswered question."""

    kind: str  # "vote" or "not_found"
    at: datetime
    user_id: str
    question: str
    answer_id: str | None
    channel_id: str | None
    vote: str | None = None
    reason: str | None = None
    doc_ids: list[str] | None = None  # what was cited (vote) or the nearest pages (not found)


def feedback_report(index: Database, limit: int = 20) -> list[ReportRow]:
    """The `limit` latest votes and the `limit` latest not-found questions, newest first."""
    with index.session() as s:
        # an outer join: a vote whose question is no longer logged comes with None
        votes: Sequence[tuple[Feedback, QueryLog | None]] = s.exec(
            select(Feedback, QueryLog)
            .join(QueryLog, col(QueryLog.answer_id) == col(Feedback.answer_id), isouter=True)
            .order_by(col(Feedback.updated_at).desc())
            .limit(limit)
        ).all()
        missing = s.exec(
            select(QueryLog)
            .where(col(QueryLog.found).is_(False), col(QueryLog.answer_id).is_not(None))
            .order_by(col(QueryLog.created_at).desc())
            .limit(limit)
        ).all()
    rows = [
        ReportRow(kind="vote", at=f.updated_at, user_id=f.user_id, question=q.question if q is not None else "",
                  answer_id=f.answer_id, channel_id=q.channel_id if q is not None else None, vote=f.vote,
                  reason=f.reason, doc_ids=list(q.doc_ids) if q is not None else [])
        for f, q in votes
    ]
    rows += [
        ReportRow(kind="not_found", at=q.created_at, user_id=q.user_id, question=q.question, answer_id=q.answer_id,
                  channel_id=q.channel_id, doc_ids=list(q.doc_ids))
        for q in missing
    ]
    return sorted(rows, key=lambda r: r.at, reverse=True)
