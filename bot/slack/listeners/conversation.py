"""Conversation context: which question a message asks, and Docent's answer kept in step with it.

- **The parent question.** "@Docent" alone, or "@Docent can you answer this?", in a thread under
  a colleague's question answers that question: the parent message (`conversations.replies`)
  is the question (`question_in_context`, called by `bot.slack.listeners.questions.answer`).
- **Follow-ups.** In a thread, a later message is searched together with the thread's earlier
  question. A direct message follows the same rule: a reply in the thread of Docent's answer
  (found through `bot.slack.store`), or a top-level message that opens like a
  follow-up ("and for part-timers?", "what about…") within `FOLLOW_UP_MINUTES` of the previous
  question there, is searched with that previous question (`earlier_question`).
- **Edits and deletions.** Every answer Docent posts is remembered by its question's message
  (`bot.slack.store.remember_answer`). A question edited (`message_changed`) within `EDIT_MINUTES` of
  being asked is answered again, in place (`chat.update` of the same answer message); a deleted
  question (`message_deleted`) deletes Docent's answer to it. These two listeners are registered
  before `bot.slack.listeners.questions`' general `message` listener: Bolt runs the first that matches.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import timedelta
from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from bot import messages
from bot.records import Database, question_log
from bot.slack import blocks, store
from bot.slack.asked import Asked
from bot.slack.errors import apology_on_error, quietly
from bot.slack.mrkdwn import slack_to_plain
from bot.slack.services import Services
from indexing.storage import utcnow

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


def register(app: App, services: Services) -> None:
    """Edits and deletions of questions; both hand their work to the answers pool."""

    @app.event({"type": "message", "subtype": "message_changed"})
    def edited(event: dict[str, Any], context: BoltContext, client: WebClient) -> None:
        services.answers.submit(on_edited, services, client, event, context.bot_user_id)

    @app.event({"type": "message", "subtype": "message_deleted"})
    def deleted(event: dict[str, Any], client: WebClient) -> None:
        services.answers.submit(on_deleted, services, client, event)


# -- which question ------------------------------------------------------------------------------


def question_in_context(client: WebClient, asked: Asked, question: str) -> str:
    """The question a message asks: its own text, or — for a bare mention or a request to answer
    in a thread — the thread's parent message (when a person wrote it)."""
    thread_ts = asked.context_thread
    if not thread_ts or thread_ts == asked.ts or (question and not PARENT_REQUEST.match(question)):
        return question
    try:
        reply = client.conversations_replies(channel=asked.channel, ts=thread_ts, limit=1, inclusive=True)
    except Exception as exc:
        log.warning("could not read the thread %s in %s for its question: %s", thread_ts, asked.channel, exc)
        return question
    parent = (reply.get("messages") or [{}])[0]
    if parent.get("ts") != thread_ts or parent.get("bot_id") or not parent.get("user"):
        return question
    return slack_to_plain(parent.get("text") or "", asked.bot_user) or question


def earlier_question(db: Database, asked: Asked, context_thread: str | None) -> str | None:
    """The earlier question a message follows up (see the module docstring), or None."""
    if context_thread:
        earlier = question_log.thread_question(db, asked.channel, context_thread)
        if earlier is None:  # a reply under Docent's answer, posted outside the question's thread (a DM)
            earlier = store.question_answered_by(db, asked.channel, context_thread)
        return earlier
    if not asked.is_dm or not _FOLLOW_UP.match(slack_to_plain(asked.text)):
        return None
    since = utcnow() - timedelta(minutes=FOLLOW_UP_MINUTES)
    return question_log.latest_question(db, asked.channel, asked.user, since, other_than_ts=asked.ts)


# -- edits and deletions -------------------------------------------------------------------------


def on_edited(services: Services, client: WebClient, event: dict[str, Any], bot_user: str | None) -> None:
    """A question edited within `EDIT_MINUTES`: answered again in its answer's place."""
    message, channel = event.get("message") or {}, event.get("channel") or ""
    if message.get("bot_id") or not message.get("user") or not message.get("ts"):
        return  # our own answers being updated, other bots
    if not message.get("edited") or message.get("text") == (event.get("previous_message") or {}).get("text"):
        return  # Slack also says "changed" when a reply, an unfurl or a reaction count changes: not an edit
    db = services.db
    row = store.answer_to(db, channel, message["ts"])
    if row is None:
        return
    if time.time() - float(message["ts"]) > EDIT_MINUTES * 60:
        log.info("not answering the edit of %s/%s again: asked more than %d minutes ago", channel, message["ts"],
                 EDIT_MINUTES)
        return
    edited_at = (message.get("edited") or {}).get("ts") or event.get("event_ts") or ""
    if not services.deduper.claim(f"edit:{channel}:{message['ts']}:{edited_at}"):
        return
    asked = Asked(surface=row.surface, channel=channel, user=message["user"], ts=message["ts"],
                  text=message.get("text") or "", bot_user=bot_user, reply_thread=row.thread_ts,
                  context_thread=message.get("thread_ts"), is_dm=row.surface == "dm", team=message.get("team"))

    def apologise(ref: str) -> None:
        client.chat_update(channel=channel, ts=row.answer_ts, text=messages.apology(ref),
                           blocks=blocks.text_blocks(messages.apology(ref)))

    with apology_on_error(f"answering the edit of {channel}/{message['ts']}", apologise):
        question = question_in_context(client, asked, slack_to_plain(asked.text, bot_user))
        if not question:
            return
        audience = services.access.audience(channel, asked.user, is_dm=asked.is_dm)
        earlier = earlier_question(db, asked, row.thread_ts if row.surface == "thread" else None)
        answer = services.kb.ask(question, audience, follows=earlier)
        quietly(question_log.log_query, db, question=question, answer=answer, context_question=earlier, timings_ms={},
                surface=row.surface, user_id=asked.user, channel_id=channel, thread_ts=row.thread_ts,
                message_ts=asked.ts, channel_kind=services.access.kind_of(channel, is_dm=asked.is_dm))
        client.chat_update(channel=channel, ts=row.answer_ts, text=blocks.fallback_text(answer),
                           blocks=blocks.answer_blocks(answer))
        store.remember_answer(db, channel, asked.ts, row.answer_ts, surface=row.surface,
                              thread_ts=row.thread_ts, user=asked.user, answer_id=answer.id)


def on_deleted(services: Services, client: WebClient, event: dict[str, Any]) -> None:
    """A deleted question takes Docent's answer with it."""
    channel, ts = event.get("channel") or "", event.get("deleted_ts") or (event.get("previous_message") or {}).get("ts")
    if not ts:
        return
    row = store.answer_to(services.db, channel, ts)
    if row is None:
        return
    try:
        client.chat_delete(channel=channel, ts=row.answer_ts)
    except Exception as exc:
        log.warning("could not delete the answer %s to the deleted question %s/%s: %s", row.answer_ts, channel, ts, exc)
        return
    store.forget_answer(services.db, channel, ts)
