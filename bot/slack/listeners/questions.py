"""Questions in messages: @mentions, direct messages, and follow-ups in threads Docent answered.

- @mention in a channel → 👀 at once, then one reply in the question's thread. In a thread the
  bot has answered, later messages are answered without a mention, with the thread's earlier
  question as retrieval context. Direct messages are answered the same way.
- Never twice: a question is claimed (`bot.slack.store.Deduper`, by its channel and message ts) before
  it is answered, so a redelivered event (`X-Slack-Retry-Num`) and the second event for one
  message are dropped; only messages Docent answers are claimed. The bot's own messages and
  other bots' are ignored.
- Bolt acks events before running their listener; the listener only decides whether a message
  is a question and hands it to the answers pool (`Services.answers`).
- Which question, with which context: a bare mention in a thread asks the thread's question, a
  DM follow-up carries the previous one (`bot.slack.listeners.conversation`). The answer is delivered by
  `bot.slack.streaming` (an LLM's text streamed as it is written) and remembered by its question
  message (`bot.slack.store.remember_answer`), so an edit or a deletion of the question follows it.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import messages
from bot.records import question_log
from bot.slack import blocks, store
from bot.slack.asked import Asked, Logged, asked_from
from bot.slack.client import post
from bot.slack.handover import hand_over
from bot.slack.errors import apology_on_error, quietly
from bot.slack.listeners.conversation import earlier_question, question_in_context
from bot.slack.mrkdwn import mentions, mentions_someone_else, slack_to_plain
from bot.slack.services import Services
from bot.slack.streaming import AnswerDelivery
from indexing.storage import is_unreachable

log = logging.getLogger(__name__)

HUMAN_SUBTYPES = {None, "thread_broadcast", "file_share"}
_SMALL_TALK = re.compile(
    r"^(thanks?( you| a lot)?|thank you|thx|ty|ok(ay)?|great|cool|nice|got it|perfect|awesome|"
    r"👍|🙏|:\+1:|:pray:|:thumbsup:)[\s!.]*$", re.IGNORECASE,
)


def register(app: App, services: Services) -> None:
    """Mentions and messages; both hand the answering to the answers pool."""

    @app.event("app_mention")
    def mention(event: dict[str, Any], body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        if not is_human_message(event):
            return
        thread = event.get("thread_ts")
        services.answers.submit(answer, services, client, asked_from(
            event, body, context, surface="mention", reply_thread=thread or event["ts"], context_thread=thread))

    @app.event("message")
    def message(event: dict[str, Any], body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        if not is_human_message(event):
            return
        thread = event.get("thread_ts")
        if event.get("channel_type") == "im":
            services.answers.submit(answer, services, client, asked_from(
                event, body, context, surface="dm", reply_thread=thread, context_thread=thread, is_dm=True))
        elif is_follow_up_candidate(event, context.bot_user_id):
            services.answers.submit(answer_follow_up, services, client, asked_from(
                event, body, context, surface="thread", reply_thread=thread, context_thread=thread))


def is_human_message(event: dict[str, Any]) -> bool:
    """A person's new message — not a bot's (ours or another), not an edit, join or deletion."""
    return (
        event.get("subtype") in HUMAN_SUBTYPES
        and not event.get("bot_id")
        and not event.get("bot_profile")
        and bool(event.get("user"))
    )


def is_small_talk(plain: str) -> bool:
    """Thanks, "ok", 👍: a reply that asks and tells nothing."""
    return bool(_SMALL_TALK.match(plain))


def is_follow_up_candidate(event: dict[str, Any], bot_user: str | None) -> bool:
    """A reply in some thread, not a mention (those are `mention`'s), not addressed to a colleague,
    not thanks: worth checking whether the thread is one Docent answered."""
    text, thread_ts = event.get("text") or "", event.get("thread_ts")
    if not thread_ts or thread_ts == event.get("ts") or mentions(text, bot_user):
        return False
    return not (mentions_someone_else(text, bot_user) or _SMALL_TALK.match(slack_to_plain(text, bot_user)))


def answer_follow_up(services: Services, client: WebClient, asked: Asked) -> None:
    """Answer a thread reply only if the thread is one Docent answered in (the query log says so)."""
    # only a thread reply is submitted here (`is_follow_up_candidate`: the event has a thread_ts)
    assert asked.context_thread is not None
    try:
        earlier = question_log.thread_question(services.db, asked.channel, asked.context_thread)
    except Exception as exc:
        if not is_unreachable(exc):
            log.exception("could not look up thread %s in %s; not treating the message as a follow-up",
                          asked.context_thread, asked.channel)
            return
        if (asked.channel, asked.context_thread) not in services.threads:
            log.warning("could not look up thread %s in %s (the database cannot be reached); not treating the "
                        "message as a follow-up", asked.context_thread, asked.channel)
            return
        earlier = ""  # the database is down, but this process answered in the thread: reply, never silence
    if earlier is not None:
        answer(services, client, asked)


def answer(services: Services, client: WebClient, asked: Asked) -> None:
    """👀 at once, then exactly one reply: the answer, or an apology with a reference id.

    Retrieval searches only what the conversation's audience may see (`SlackAccess.audience`);
    where that is nothing (a Slack Connect conversation with `shared_channels = "none"`) the reply
    says so."""
    channel, ts, reply_thread = asked.channel, asked.ts, asked.reply_thread
    if not services.deduper.claim(f"message:{channel}:{ts}"):
        # Slack redelivered the event (a slow ack, a restart), or the same message also arrived
        # as another event (app_mention and message): it is being, or has been, answered.
        log.info("not answering %s/%s again: already claimed", channel, ts)
        return
    started = time.perf_counter()
    add_reaction(client, channel, ts)
    details: Logged = {"surface": asked.surface, "user_id": asked.user, "channel_id": channel, "thread_ts": reply_thread,
                       "message_ts": ts}
    question = ""

    def apologise(ref: str) -> None:
        quietly(question_log.log_query, services.db, question=question or asked.text or "(empty)", error_ref=ref,
                **details)
        post(client, channel, reply_thread, messages.apology(ref))

    def unavailable() -> None:  # no query log row: it lives in the database that is gone
        post(client, channel, reply_thread, messages.UNAVAILABLE)

    with apology_on_error(f"answering {asked.surface} {channel}/{ts}", apologise, unavailable):
        question = question_in_context(client, asked, slack_to_plain(asked.text, asked.bot_user))
        if not question:
            post(client, channel, reply_thread, messages.EMPTY_MENTION)
            return
        audience = services.access.audience(channel, asked.user, is_dm=asked.is_dm, said_shared=asked.said_shared)
        if audience.sees_nothing:
            log.info("not answering %s %s/%s: no access scope is visible there", asked.surface, channel, ts)
            post(client, channel, reply_thread, messages.NOT_HERE)
            return
        details["channel_kind"] = services.access.kind_of(channel, is_dm=asked.is_dm, said_shared=asked.said_shared,
                                                          channel_type=asked.channel_type)
        db = services.db
        earlier = earlier_question(db, asked, asked.context_thread)
        delivery = AnswerDelivery(client, channel, reply_thread, user=asked.user, team=asked.team,
                            status_thread=reply_thread if asked.is_dm and reply_thread else None)  # an assistant thread
        try:
            reply = services.kb.ask(question, audience, follows=earlier, on_text=delivery.append)
        except Exception:
            delivery.abandon()  # the apology is the one reply, not beside half an answer
            raise
        timings = {"slack_total": round((time.perf_counter() - started) * 1000, 2)}
        quietly(question_log.log_query, db, question=question, answer=reply, context_question=earlier,
                timings_ms=timings, **details)
        answer_ts = delivery.finish(blocks.fallback_text(reply), blocks.answer_blocks(reply))
        if reply_thread:
            services.threads.add(channel, reply_thread)  # before any more database work: see RecentThreads
        store.remember_answer(db, channel, ts, answer_ts, surface=asked.surface, thread_ts=reply_thread,
                              user=asked.user, answer_id=reply.id)
        if not reply.found and reply_thread and not asked.is_dm:  # the channel's `escalate` people, if any
            hand_over(db, client, services.channels.get(channel), reply_thread, reply,
                      services.settings.kb_handovers_per_hour, access=services.access, said_shared=asked.said_shared,
                      asker=asked.user)


def add_reaction(client: WebClient, channel: str, ts: str) -> None:
    """👀: "seen, working on it". A failure here must not stop the answer."""
    try:
        client.reactions_add(channel=channel, name="eyes", timestamp=ts)
    except SlackApiError as exc:
        if exc.response.get("error") != "already_reacted":
            log.warning("could not add 👀 to %s/%s: %s", channel, ts, exc.response.get("error"))
    except Exception as exc:
        log.warning("could not add 👀 to %s/%s: %s", channel, ts, exc)
