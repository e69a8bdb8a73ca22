"""Conversation context: which question a message asks, and Docent's answer kept in step with it.

- **The parent question.** "@Docent" alone, or "@Docent can you answer this?", in a thread under
  a colleague's question answers that question: the parent message (`conversations.replies`)
  is the question.
- **Follow-ups.** In a thread, a later message is searched together with the thread's earlier
  question (the rule `bot.slack_app` applies). A direct message follows the same rule: a reply in
  the thread of Docent's answer (found through `answer_messages`), or a top-level message that
  opens like a follow-up ("and for part-timers?", "what about…") within `FOLLOW_UP_MINUTES` of
  the previous question there, is searched with that previous question.
- **Edits and deletions.** Every answer Docent posts is remembered by its question's message
  (`answer_messages`). A question edited (`message_changed`) within `EDIT_MINUTES` of being
  asked is answered again, in place (`chat.update` of the same answer message); a deleted
  question (`message_deleted`) deletes Docent's answer to it.

Answers go out through `bot.streaming.Delivery`, so an LLM answer is streamed where Slack can.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from sqlalchemy import Column, DateTime
from sqlmodel import Field, SQLModel, select

from bot import blocks, records
from bot.answer import answer_question
from bot.mrkdwn import slack_to_plain
from bot.streaming import Delivery, llm_for

if TYPE_CHECKING:
    from bot.slack_app import Docent

log = logging.getLogger(__name__)

EDIT_MINUTES = 10
FOLLOW_UP_MINUTES = 10
# "answer this", "can you answer this?", "could you help with that one please" — a request to
# answer the thread's question, not a question itself
PARENT_REQUEST = re.compile(
    r"^(?:(?:hey|hi|hello)[\s,!]*)?(?:please[\s,]*)?(?:(?:can|could|would|will) you[\s,]*)?(?:please[\s,]*)?"
    r"(?:answer|help(?: with| on)?|look at|take a look at|check|field|handle|get)"
    r"(?:\s+(?:this|that|it|the question|this one|that one|this question|above))?(?:[\s,]*(?:please|pls|thanks?))?[\s?.!]*$",
    re.IGNORECASE)
_FOLLOW_UP = re.compile(r"^(?:and|but|also|or|what about|how about|what if|same for|then|so)\b", re.IGNORECASE)


class AnswerMessage(SQLModel, table=True):
    """Which message is Docent's answer to which question (for edits, deletions, DM threads)."""

    __tablename__ = "answer_messages"

    channel_id: str = Field(primary_key=True)
    question_ts: str = Field(primary_key=True)
    answer_ts: str = Field(index=True)
    thread_ts: str | None = None
    surface: str = ""
    user_id: str = ""
    answer_id: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc),
                                 sa_column=Column(DateTime(timezone=True), nullable=False))


def create_tables(index) -> None:
    SQLModel.metadata.create_all(index.engine, tables=[AnswerMessage.__table__])


def register(app, docent: Docent, answers) -> None:
    """Edits and deletions of questions (the Slack app's one call into this module). Registered
    before the app's general `message` listener: Bolt runs the first listener that matches."""
    create_tables(docent.index)

    @app.event({"type": "message", "subtype": "message_changed"})
    def edited(event, context, client):
        answers.submit(on_edited, docent, event, context.bot_user_id, client)

    @app.event({"type": "message", "subtype": "message_deleted"})
    def deleted(event, client):
        answers.submit(on_deleted, docent, event, client)


# -- which question ------------------------------------------------------------------------------


def question_in_context(client, event: dict, question: str, bot_user: str | None) -> str:
    """The question a message asks: its own text, or — for a bare mention or a request to answer
    in a thread — the thread's parent message (when a person wrote it)."""
    thread_ts = event.get("thread_ts")
    if not thread_ts or thread_ts == event.get("ts") or (question and not PARENT_REQUEST.match(question)):
        return question
    try:
        reply = client.conversations_replies(channel=event["channel"], ts=thread_ts, limit=1, inclusive=True)
    except Exception as exc:
        log.warning("could not read the thread %s in %s for its question: %s", thread_ts, event.get("channel"), exc)
        return question
    parent = (reply.get("messages") or [{}])[0]
    if parent.get("ts") != thread_ts or parent.get("bot_id") or not parent.get("user"):
        return question
    return slack_to_plain(parent.get("text") or "", bot_user) or question


def earlier_question(index, event: dict, context_thread: str | None) -> str | None:
    """The earlier question a message follows up (see the module docstring), or None."""
    channel = event["channel"]
    if context_thread:
        earlier = records.thread_question(index, channel, context_thread)
        if earlier is None:  # a reply under Docent's answer, posted outside the question's thread (a DM)
            with index.session() as s:
                row = s.exec(select(AnswerMessage).where(AnswerMessage.channel_id == channel,
                                                         AnswerMessage.answer_ts == context_thread)).first()
            if row is not None:
                asked = records.QueryLog
                with index.session() as s:
                    q = s.exec(select(asked).where(asked.answer_id == row.answer_id)).first()
                earlier = q.question if q else None
        return earlier
    if event.get("channel_type") != "im" or not _FOLLOW_UP.match(slack_to_plain(event.get("text") or "")):
        return None
    since = datetime.now(timezone.utc) - timedelta(minutes=FOLLOW_UP_MINUTES)
    Q = records.QueryLog
    with index.session() as s:
        row = s.exec(select(Q).where(Q.channel_id == channel, Q.user_id == event.get("user"), Q.created_at >= since,
                                     Q.answer_id.is_not(None), Q.message_ts != event.get("ts"))
                     .order_by(Q.created_at.desc()).limit(1)).first()
    return row.question if row else None


# -- answering, delivering, remembering ----------------------------------------------------------


def answer_in_slack(docent: Docent, client, event: dict, question: str, scopes: list[str], *,
                    context_thread: str | None, reply_thread: str | None, details: dict, started: float) -> None:
    """Answer `question` (asked by `event`) and deliver it — streamed when an LLM writes it — then
    log it and remember which message answered it."""
    from bot.slack_app import _log_answer, retrieval_text

    earlier = earlier_question(docent.index, event, context_thread)
    in_assistant_thread = event.get("channel_type") == "im" and bool(reply_thread)
    delivery = Delivery(client, event["channel"], reply_thread, user=event.get("user"), team=event.get("team"),
                        status_thread=reply_thread if in_assistant_thread else None)
    try:
        answer = answer_question(docent.index, retrieval_text(question, earlier), scopes=scopes,
                                 llm=llm_for(docent.llm, delivery))
    except Exception:
        delivery.abandon()  # the apology (bot.slack_app) is the one reply, not beside half an answer
        raise
    timings = {"slack_total": round((time.perf_counter() - started) * 1000, 2)}
    _log_answer(docent.index, question, answer, earlier, timings, details)
    ts = delivery.finish(blocks.fallback_text(answer), blocks.answer_blocks(answer))
    if reply_thread:
        docent.threads.add(event["channel"], reply_thread)  # before any more database work: see RecentThreads
    remember(docent.index, event, ts, details.get("surface", ""), reply_thread, answer.id)


def remember(index, event: dict, answer_ts: str, surface: str, thread_ts: str | None, answer_id: str) -> None:
    from sqlalchemy.dialects.postgresql import insert

    values = dict(channel_id=event["channel"], question_ts=event["ts"], answer_ts=answer_ts, thread_ts=thread_ts,
                  surface=surface, user_id=event.get("user") or "", answer_id=answer_id,
                  created_at=datetime.now(timezone.utc))
    statement = insert(AnswerMessage.__table__).values(**values).on_conflict_do_update(
        index_elements=["channel_id", "question_ts"], set_={k: v for k, v in values.items()
                                                            if k not in ("channel_id", "question_ts")})
    try:
        with index.session() as s:
            s.execute(statement)
            s.commit()
    except Exception as exc:  # the answer is delivered; only its later edit or deletion will not follow
        from indexing.database import is_unreachable

        if is_unreachable(exc):
            log.warning("could not remember answer %s for %s/%s: the database cannot be reached", answer_ts,
                        event.get("channel"), event.get("ts"))
        else:
            log.exception("could not remember answer %s for %s/%s", answer_ts, event.get("channel"), event.get("ts"))


def prune_answer_messages(index, before: datetime) -> int:
    """Forget answers older than the query log keeps questions (`bot.housekeeping`)."""
    from sqlalchemy import delete

    create_tables(index)
    with index.session() as s:
        gone = s.execute(delete(AnswerMessage).where(AnswerMessage.created_at < before)).rowcount or 0
        s.commit()
    return gone


def answered(index, channel: str, question_ts: str) -> AnswerMessage | None:
    with index.session() as s:
        return s.get(AnswerMessage, (channel, question_ts))


# -- edits and deletions -------------------------------------------------------------------------


def on_edited(docent: Docent, event: dict, bot_user: str | None, client) -> None:
    """A question edited within `EDIT_MINUTES`: answered again in its answer's place."""
    from bot.slack_app import _log_answer, apology_on_error, apology, retrieval_text, scopes_for

    message, channel = event.get("message") or {}, event.get("channel") or ""
    if message.get("bot_id") or not message.get("user") or not message.get("ts"):
        return  # our own answers being updated, other bots
    if not message.get("edited") or message.get("text") == (event.get("previous_message") or {}).get("text"):
        return  # Slack also says "changed" when a reply, an unfurl or a reaction count changes: not an edit
    row = answered(docent.index, channel, message["ts"])
    if row is None:
        return
    if time.time() - float(message["ts"]) > EDIT_MINUTES * 60:
        log.info("not answering the edit of %s/%s again: asked more than %d minutes ago", channel, message["ts"],
                 EDIT_MINUTES)
        return
    edited_at = (message.get("edited") or {}).get("ts") or event.get("event_ts") or ""
    if not docent.deduper.claim(f"edit:{channel}:{message['ts']}:{edited_at}"):
        return
    asked = {**message, "channel": channel, "channel_type": event.get("channel_type")}
    with apology_on_error(f"answering the edit of {channel}/{message['ts']}",
                          lambda ref: client.chat_update(channel=channel, ts=row.answer_ts, text=apology(ref),
                                                         blocks=blocks.text_blocks(apology(ref)))):
        question = question_in_context(client, asked, slack_to_plain(message.get("text") or "", bot_user), bot_user)
        if not question:
            return
        scopes = scopes_for(docent, channel, message["user"], is_dm=row.surface == "dm")
        earlier = earlier_question(docent.index, asked, row.thread_ts if row.surface == "thread" else None)
        answer = answer_question(docent.index, retrieval_text(question, earlier), scopes=scopes, llm=docent.llm)
        _log_answer(docent.index, question, answer, earlier, {}, dict(
            surface=row.surface, user_id=message["user"], channel_id=channel, thread_ts=row.thread_ts,
            message_ts=message["ts"]))
        client.chat_update(channel=channel, ts=row.answer_ts, text=blocks.fallback_text(answer),
                           blocks=blocks.answer_blocks(answer))
        remember(docent.index, asked, row.answer_ts, row.surface, row.thread_ts, answer.id)


def on_deleted(docent: Docent, event: dict, client) -> None:
    """A deleted question takes Docent's answer with it."""
    channel, ts = event.get("channel") or "", event.get("deleted_ts") or (event.get("previous_message") or {}).get("ts")
    if not ts:
        return
    row = answered(docent.index, channel, ts)
    if row is None:
        return
    try:
        client.chat_delete(channel=channel, ts=row.answer_ts)
    except Exception as exc:
        log.warning("could not delete the answer %s to the deleted question %s/%s: %s", row.answer_ts, channel, ts, exc)
        return
    with docent.index.session() as s:
        gone = s.get(AnswerMessage, (channel, ts))
        if gone is not None:
            s.delete(gone)
            s.commit()
