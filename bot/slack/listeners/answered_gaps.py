"""The loop back to the wiki: a person's answer in a handed-over thread, offered as a gap.

When Docent handed a question over (`bot.slack.handover`) and a person — not the asker, not a
bot — then replies in that thread with what reads as an answer (at least `MIN_WORDS` words, not
thanks or "+1", not a question back by `bot.slack.question_detector`), Docent offers, once per
thread, an "Add to the wiki's gaps" button, as an ephemeral message to the asker and to that
answerer. Ephemeral, not a threaded message: only the two people whose
question and words it would record see it — the asker can tell whether it answered them, the
answerer agrees to their words going to the wiki owners — and the channel and everyone following
the thread get no extra message (and no one else a button). The once-per-thread claim is the
hand-over's row (`bot.slack.store.claim_gap_offer`), so a redelivery, a restart or a second
replica never offers twice.

A click (by the asker or the answerer; others are refused) records in `answered_gaps`
(`bot.records.question_log.add_answered_gap`) the question, the answer as the person wrote it in that channel,
who answered and who asked, the channel, the answer's permalink, when it was said, and the
access scopes visible in that channel — `bot.records.gaps` shows the gap only where all of those are
visible. The first click wins; a second one is told it is already added. Not offered in Slack
Connect channels (people of another organisation) nor where the channel sees no scope.

Replies in threads without a hand-over, and the asker's own replies, are what they were before:
thread follow-ups (`bot.slack.listeners.questions`). Registered before `questions` in
`bot.slack.app.LISTENERS`: its matcher accepts only people's replies in threads of channels
with `escalate` (the only channels with hand-overs), decided without the database.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timezone
from typing import Any

from slack_bolt import Ack, App, BoltContext, Respond
from slack_sdk import WebClient

from bot import messages
from bot.metrics import GAPS_ADDED
from bot.records import AnsweredGap, ChannelKind, question_log
from bot.slack.question_detector import is_question
from bot.slack import store
from bot.slack.asked import Asked, asked_from
from bot.slack.blocks import Block
from bot.slack.client import permalink
from bot.slack.errors import apology_on_error
from bot.slack.listeners.questions import (
    HUMAN_SUBTYPES, answer_follow_up, is_follow_up_candidate, is_human_message, is_small_talk)
from bot.slack.mrkdwn import escape, mentions, neutralise, slack_to_markdown, slack_to_plain
from bot.slack.services import Services
from sources import SHARED

log = logging.getLogger(__name__)

ACTION_ADD_GAP = "docent_add_gap"
BUTTON = "Add to the wiki's gaps"
MIN_WORDS = 3  # "yes", "same here": not an answer to write up
_NOT_AN_ANSWER = re.compile(r"^(?:thanks?|thank you|thx|ty|\+1|same|me too|following|bump|any news|any update)\b",
                            re.IGNORECASE)  # thanks and "+1" from others who wait for the answer


def register(app: App, services: Services) -> None:
    def in_escalation_thread(event: dict[str, Any]) -> bool:
        thread = event.get("thread_ts")
        return (event.get("channel_type") != "im" and bool(thread) and thread != event.get("ts")
                and event.get("subtype") in HUMAN_SUBTYPES
                and bool(services.channels.get(event.get("channel")).escalate))

    @app.event("message", matchers=[in_escalation_thread])
    def reply_in_escalation_channel(event: dict[str, Any], body: dict[str, Any], client: WebClient,
                                    context: BoltContext) -> None:
        if not is_human_message(event) or mentions(event.get("text") or "", context.bot_user_id):
            return  # a mention is `questions.mention`'s
        thread = event["thread_ts"]
        asked = asked_from(event, body, context, surface="thread", reply_thread=thread, context_thread=thread)
        services.answers.submit(reply_in_thread, services, client, asked,
                                is_follow_up_candidate(event, context.bot_user_id))

    @app.action(ACTION_ADD_GAP)
    def add_gap_button(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Respond) -> None:
        ack()
        channel, _, thread = (action.get("value") or "").partition(" ")
        services.answers.submit(add_gap, services, client, respond, body["user"]["id"], channel, thread)


def reply_in_thread(services: Services, client: WebClient, asked: Asked, follow_up: bool) -> None:
    """A person's reply in a thread of a channel with `escalate`: in a handed-over thread, someone
    else's answer is offered as a gap; otherwise the reply is what it always was (a follow-up)."""
    thread = asked.context_thread or ""
    try:
        handover = store.handover_in(services.db, asked.channel, thread)
    except Exception:
        log.warning("could not look up a hand-over in %s/%s", asked.channel, asked.context_thread, exc_info=True)
        handover = None
    if handover is None or not handover.asker or asked.user == handover.asker:
        # no hand-over; or one made before askers were kept, when the asker cannot be told apart
        if follow_up:
            answer_follow_up(services, client, asked)
        return
    if handover.offered or not reads_as_answer(slack_to_plain(asked.text, asked.bot_user)):
        return
    audience = services.access.audience(asked.channel, asked.user, is_dm=False, said_shared=asked.said_shared)
    if audience.kind == SHARED or audience.sees_nothing:
        log.info("no gap offered in %s/%s: %s", asked.channel, asked.context_thread,
                 "a Slack Connect channel" if audience.kind == SHARED else "no scope is visible there")
        return
    offer = store.claim_gap_offer(services.db, asked.channel, thread, asked.user, asked.ts,
                                  slack_to_markdown(asked.text))
    if offer is None:
        return  # another delivery or replica offered first
    for user in dict.fromkeys(u for u in (asked.user, offer.asker) if u):
        offer_gap(client, offer, user)


def reads_as_answer(plain: str) -> bool:
    """A reply worth offering as the answer: a few words, not thanks, not a question back."""
    return (len(plain.split()) >= MIN_WORDS and not is_small_talk(plain) and not _NOT_AN_ANSWER.match(plain)
            and not is_question(plain))


def offer_gap(client: WebClient, offer: store.Handover, user: str) -> None:
    """The ephemeral offer to one of the two people, in the thread."""
    if user == offer.answered_by:
        line = messages.GAP_OFFER_TO_ANSWERER
    else:
        line = messages.gap_offer_to_asker(offer.answered_by)
    question = neutralise(escape(" ".join(offer.question.split())[:300]))
    message_blocks: list[Block] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": line}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"Question: {question}"}]},
        {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": BUTTON},
                                          "action_id": ACTION_ADD_GAP, "style": "primary",
                                          "value": f"{offer.channel} {offer.thread_ts}"}]},
    ]
    try:
        client.chat_postEphemeral(channel=offer.channel, user=user, thread_ts=offer.thread_ts, text=line,
                                  blocks=message_blocks)
    except Exception as exc:
        log.warning("could not offer the gap of %s/%s to %s: %s", offer.channel, offer.thread_ts, user, exc)


def add_gap(services: Services, client: WebClient, respond: Respond, user: str, channel: str, thread: str) -> None:
    """The button: record the thread's question and the person's answer as a gap (first click wins)."""
    def tell(text: str, replace: bool = False) -> None:
        respond(text=text, response_type="ephemeral", replace_original=replace)

    with apology_on_error(f"adding the gap of {channel}/{thread}", lambda ref: tell(messages.apology(ref)),
                          lambda: tell(messages.UNAVAILABLE)):
        db = services.db
        handover = store.handover_in(db, channel, thread) if channel and thread else None
        if handover is None or not handover.offered:
            tell(messages.GAP_GONE)
            return
        if user not in (handover.asker, handover.answered_by):
            tell(messages.GAP_NOT_YOURS)
            return
        existing = question_log.answered_gap(db, channel, thread)
        if existing is not None:
            tell(messages.gap_added_by(existing.added_by), replace=True)
            return
        # The channel's own scopes, before `[channels.X] sources` narrowing: an HR channel searching
        # only public pages still sees HR's, and its people's words belong there.
        audience = services.access.audience(channel, user, is_dm=False, narrow=False)
        kind = services.access.kind_of(channel)
        if audience.kind == SHARED or audience.sees_nothing or kind == ChannelKind.SHARED:
            tell(messages.GAP_NOT_HERE, replace=True)
            return
        gap = AnsweredGap(channel_id=channel, thread_ts=thread, question=handover.question,
                          answer=handover.answer_text, answered_by=handover.answered_by, asked_by=handover.asker,
                          answer_ts=handover.answer_ts, permalink=permalink(client, channel, handover.answer_ts),
                          scopes=sorted(audience.scopes or ()), channel_kind=kind.value,
                          answered_at=slack_time(handover.answer_ts), added_by=user)
        added = question_log.add_answered_gap(db, gap)
        if added is None:
            tell(messages.GAP_ALREADY_ADDED, replace=True)
            return
        GAPS_ADDED.inc()
        tell(messages.GAP_ADDED, replace=True)


def slack_time(ts: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(ts), tz=timezone.utc)
    except ValueError:
        return datetime.now(timezone.utc)
