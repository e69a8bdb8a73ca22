"""Help channels (`respond = "questions"` in `[channels.C…]`, `sources.channels`): a top-level
question posted there is answered without a mention — but only when the wiki answers it.

- Which messages: a person's new top-level message (not a bot's, not an edit, not a reply in a
  thread) that `bot.slack.question_detector` takes for a question and that is not addressed to someone
  (a user or user-group mention) nor to Docent (an @mention is `questions.mention`'s).
- Only *answered* is posted, as the normal threaded answer with sources and feedback buttons.
  *Uncertain* and *not found* are handed over to the channel's `escalate` people
  (`bot.slack.handover`), or left alone: a bot that says "I don't know" under every message
  gets muted.
- Never in a Slack Connect channel (the audience kind `shared`): people of another organisation
  did not ask for a bot. Access as everywhere: only the scopes visible in the channel, narrowed by
  the channel's `sources`.
- Never twice: the message is claimed (`bot.slack.store.Deduper`) under the same key as a mention of it.

Registered before `questions` in `bot.slack.app.LISTENERS`; Bolt runs the first listener whose
matcher accepts an event, and this one's accepts only top-level messages in help channels, so
thread follow-ups and direct messages still reach `questions.message`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from bot.records import question_log
from bot.metrics import UNPROMPTED
from bot.slack.question_detector import is_question
from bot.slack import blocks, store
from bot.slack.asked import Asked, Logged, asked_from
from bot.slack.errors import quietly
from bot.slack.handover import hand_over
from bot.slack.listeners.questions import is_human_message
from bot.slack.mrkdwn import mentions, mentions_someone_else, slack_to_plain
from bot.slack.services import Services
from bot.slack.streaming import AnswerDelivery
from sources import SHARED
from indexing.search import Outcome

if TYPE_CHECKING:
    from slack_bolt import App, BoltContext
    from slack_sdk import WebClient

log = logging.getLogger(__name__)

SURFACE = "channel"  # the query log's `surface` of an unprompted answer


def register(app: App, services: Services) -> None:
    def in_help_channel(event: dict[str, Any]) -> bool:
        thread = event.get("thread_ts")
        return (event.get("channel_type") != "im" and (not thread or thread == event.get("ts"))
                and services.channels.get(event.get("channel")).answers_questions)

    @app.event("message", matchers=[in_help_channel])
    def help_channel_message(event: dict[str, Any], body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        if not is_human_message(event) or (body or {}).get("is_ext_shared_channel"):
            return
        text = event.get("text") or ""
        if mentions(text, context.bot_user_id) or mentions_someone_else(text, context.bot_user_id) or "<!subteam^" in text:
            return  # for Docent (the mention listener answers it) or for a colleague
        if not is_question(slack_to_plain(text, context.bot_user_id)):
            return
        services.answers.submit(answer_unprompted, services, client, asked_from(
            event, body, context, surface=SURFACE, reply_thread=event["ts"], context_thread=None))


def answer_unprompted(services: Services, client: WebClient, asked: Asked) -> None:
    """The normal threaded answer when the wiki answers; a hand-over or silence otherwise."""
    channel, ts = asked.channel, asked.ts
    audience = services.access.audience(channel, asked.user, is_dm=False, said_shared=asked.said_shared)
    if audience.kind == SHARED or audience.sees_nothing:
        log.info("not answering %s/%s unprompted: %s", channel, ts,
                 "a Slack Connect channel" if audience.kind == SHARED else "no scope is visible there")
        return
    if not services.deduper.claim(f"message:{channel}:{ts}"):
        return
    started = time.perf_counter()
    question = slack_to_plain(asked.text, asked.bot_user)
    try:
        reply = services.kb.ask(question, audience)
    except Exception:  # unprompted: nobody asked Docent, so no apology in their channel
        log.exception("could not answer %s/%s unprompted", channel, ts)
        return
    db = services.db
    details: Logged = {"surface": SURFACE, "user_id": asked.user, "channel_id": channel, "thread_ts": ts, "message_ts": ts}
    timings = {"slack_total": round((time.perf_counter() - started) * 1000, 2)}
    if reply.outcome != Outcome.ANSWERED:
        settings = services.channels.get(channel)
        if hand_over(db, client, settings, ts, reply, services.settings.kb_handovers_per_hour, access=services.access,
                     said_shared=asked.said_shared, asker=asked.user):
            # logged without its thread or message: people answer there, and Docent must not take their
            # replies for follow-ups to it (`question_log.thread_question` finds threads by those two)
            unthreaded: Logged = {**details, "thread_ts": None, "message_ts": None}
            quietly(question_log.log_query, db, question=question, answer=reply, context_question=None,
                    timings_ms=timings, **unthreaded)
        return
    answer_ts = AnswerDelivery(client, channel, ts, user=asked.user, team=asked.team).finish(
        blocks.fallback_text(reply), blocks.answer_blocks(reply))
    UNPROMPTED.inc()
    services.threads.add(channel, ts)
    quietly(question_log.log_query, db, question=question, answer=reply, context_question=None, timings_ms=timings,
            **details)
    quietly(store.remember_answer, db, channel, ts, answer_ts, surface=SURFACE, thread_ts=ts, user=asked.user,
            answer_id=reply.id)
