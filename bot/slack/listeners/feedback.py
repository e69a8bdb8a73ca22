"""Feedback on answers: 👍 / 👎 votes, the "what was wrong?" form, and the Share button.

- One vote per user per answer; the message shows the tally; 👎 opens an optional form whose
  text is stored with the vote.
- 👎 on an answer in a thread of a channel with `escalate` hands the thread over to those people,
  as "not found" does (`bot.slack.handover`: once per thread, within the channel's hourly cap).
- 👎 on a verified answer (`bot.verified`) tells whoever verified it, in a direct message, once per
  person and answer (`bot.slack.verified_review`); re-shown from the query log, it stays verified.
- Share posts a private `/kb ask` answer in the channel, only if every page it cites (or lists
  as nearest) is visible there now — and a verified one only if it is live and one of its scopes
  is visible there; otherwise it refuses and the answer stays private.

Every listener here acks at once and hands an explicit value (`Click`, `Reason`) to the answers
pool (`Services.answers`, as `bot.slack.listeners.questions` does for questions): storing a vote, reading
an answer back, `chat.update`, `views.open`, posting a shared answer all wait on the database or
on Slack — a rate limit's `Retry-After` is slept through by the Web API client — and done on
Bolt's listener pool they would keep `/kb` and every other click from being acked within Slack's
3 seconds. The 👎 form's trigger id lives 3 s: it is opened first thing on the pool, so a pool
busy with answers may miss it (logged; the vote still counts). The form closes when sent; if
its text cannot be stored, the user gets a direct message saying so, with what they wrote.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import Ack, App, BoltRequest, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import messages
from bot.answering import Answer
from bot.records import Database, question_log
from bot.slack import blocks
from bot.slack.client import post
from bot.slack.errors import apology_on_error, first_line, quietly, reference_id
from bot.slack.handover import hand_over
from bot.slack.mrkdwn import escape
from bot.slack.services import Services, delivery_key, first_time
from bot.slack.verified_review import tell_verifier, tell_verifier_why
from bot.verified import store
from sources import Audience
from indexing.storage import is_unreachable

log = logging.getLogger(__name__)

TALLY_ROUNDS = 3  # how often a vote re-reads the tally after showing it, so the message ends on the latest


@dataclass(frozen=True)
class Click:
    """A click on an answer's 👍, 👎 or Share, as the answers pool needs it: who, which answer,
    and the message it was on (a posted message's blocks, to redraw with the tally)."""

    user: str
    answer_id: str
    channel: str | None
    trigger_id: str | None = None
    message_ts: str | None = None
    message_text: str = ""
    message_blocks: list[blocks.Block] | None = field(default=None, hash=False)  # None: ephemeral, or not sent

    @classmethod
    def of(cls, body: dict[str, Any], action: dict[str, Any]) -> Click:
        container, message = body.get("container") or {}, body.get("message") or {}
        posted = bool(message.get("blocks")) and not container.get("is_ephemeral")
        return cls(user=body["user"]["id"], answer_id=action.get("value") or "",
                   channel=(body.get("channel") or {}).get("id") or container.get("channel_id"),
                   trigger_id=body.get("trigger_id"), message_ts=message.get("ts") if posted else None,
                   message_text=message.get("text") or "", message_blocks=list(message["blocks"]) if posted else None)


@dataclass(frozen=True)
class Reason:
    """The 👎 form as sent: who, about which answer, what they wrote (None: nothing)."""

    user: str
    answer_id: str
    text: str | None

    @classmethod
    def of(cls, body: dict[str, Any], view: dict[str, Any]) -> Reason:
        state = ((view.get("state") or {}).get("values") or {}).get(blocks.REASON_BLOCK) or {}
        text = ((state.get(blocks.REASON_INPUT) or {}).get("value") or "").strip() or None
        return cls(user=body["user"]["id"], answer_id=view.get("private_metadata") or "", text=text)


def register(app: App, services: Services) -> None:
    @app.action(blocks.ACTION_VOTE_UP)
    def vote_up(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Respond) -> None:
        ack()
        services.answers.submit(vote, services, Click.of(body, action), client, respond, question_log.UP)

    @app.action(blocks.ACTION_VOTE_DOWN)
    def vote_down(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Respond) -> None:
        ack()
        services.answers.submit(vote, services, Click.of(body, action), client, respond, question_log.DOWN)

    @app.action(blocks.ACTION_SHARE)
    def share_button(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Respond,
                     request: BoltRequest) -> None:
        ack()
        services.answers.submit(share, services, Click.of(body, action), client, respond, delivery_key(request))

    @app.view(blocks.REASON_CALLBACK)
    def reason_form(ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient,
                    request: BoltRequest) -> None:
        ack()  # closes the form; a failure to store it is told to the user (`store_reason`)
        services.answers.submit(store_reason, services, Reason.of(body, view), client, delivery_key(request))


def vote(services: Services, click: Click, client: WebClient, respond: Respond, choice: str) -> None:
    """One stored vote per user per answer; the message shows the tally; 👎 opens the form."""
    if choice == question_log.DOWN and click.trigger_id:
        try:  # first: the trigger id expires 3 s after the click
            client.views_open(trigger_id=click.trigger_id, view=blocks.reason_modal(click.answer_id))
        except Exception:
            log.warning("could not open the 👎 form for %s", click.answer_id, exc_info=True)
    recorded = False
    with apology_on_error("recording a vote", lambda ref: respond(
            text=messages.apology(ref), response_type="ephemeral", replace_original=False), lambda: respond(
            text=messages.UNAVAILABLE_VOTE, response_type="ephemeral", replace_original=False)):
        votes = question_log.record_vote(services.db, click.answer_id, click.user, choice)
        recorded = True
        show_votes(services.db, click, votes, client, respond)
    if choice == question_log.DOWN:
        quietly(hand_over_voted_down, services, click, client)
        if recorded:  # a verified answer's verifier hears of it (once per person and answer)
            quietly(tell_verifier, services, client, click.answer_id, click.user, click.channel, click.message_ts)


def hand_over_voted_down(services: Services, click: Click, client: WebClient) -> None:
    """A 👎 on an answer in a thread of a channel with `escalate`: the same hand-over as "not found"
    (`bot.slack.handover`), under the same once-per-thread claim and hourly cap. The thread is the
    one the query log says the answer went to (never what the click says), so a `/kb ask` answer,
    a shared one or a DM answer hands nothing over."""
    settings = services.channels.get(click.channel)
    if not settings.escalate:
        return
    row = question_log.find_answer(services.db, click.answer_id)
    if row is None or not row.thread_ts or row.channel_id != click.channel:
        return
    hand_over(services.db, client, settings, row.thread_ts, logged_answer(services.db, row),
              services.settings.kb_handovers_per_hour, access=services.access, asker=row.user_id, voted_down=True)


def show_votes(db: Database, click: Click, votes: dict[str, int], client: WebClient, respond: Respond) -> None:
    """Refresh the answer with its tally: `chat.update` for a posted message; the response URL for
    a private one (ephemeral messages cannot be updated through the Web API).

    Votes of several people are shown concurrently, and one `chat.update` may be retried after a
    rate limit while another lands: after showing a tally, it is read again, and shown again if it
    moved — so the message ends on the latest count, whichever update lands last."""
    if click.message_blocks is not None and click.channel and click.message_ts:
        for _ in range(TALLY_ROUNDS):
            client.chat_update(channel=click.channel, ts=click.message_ts, text=click.message_text,
                               blocks=blocks.with_votes(click.message_blocks, votes))
            latest = question_log.vote_counts(db, click.answer_id)
            if latest == votes:
                return
            votes = latest
        return
    row = question_log.find_answer(db, click.answer_id)
    if row is None:
        respond(text=messages.VOTE_RECORDED, response_type="ephemeral", replace_original=False)
        return
    answer = logged_answer(db, row)
    respond(text=blocks.fallback_text(answer), blocks=blocks.answer_blocks(answer, share=True, votes=votes),
            response_type="ephemeral", replace_original=True)


def share(services: Services, click: Click, client: WebClient, respond: Respond, delivery: str = "") -> None:
    """Post a private answer publicly in the channel, then remove the private copy — only if every
    page it cites (or lists as nearest) is visible in that channel now; otherwise refuse. A replay
    of the same signed click (`delivery`, `services.first_time`) posts nothing."""
    if not first_time(services, delivery):
        return
    user, answer_id, channel = click.user, click.answer_id, click.channel
    db = services.db
    with apology_on_error("sharing an answer", lambda ref: respond(
            text=messages.apology(ref), response_type="ephemeral", replace_original=False), lambda: respond(
            text=messages.UNAVAILABLE, response_type="ephemeral", replace_original=False)):
        row = question_log.find_answer(db, answer_id)
        if row is None:
            respond(text=messages.SHARE_GONE,
                    response_type="ephemeral", replace_original=False)
            return
        audience = services.access.audience(channel, user)
        if audience.sees_nothing or not shareable(db, row.doc_ids, audience):
            log.info("refused to share answer %s in %s: it uses pages not visible there", answer_id, channel)
            respond(text=messages.NOT_HERE if audience.sees_nothing else messages.SHARE_REFUSED, response_type="ephemeral",
                    replace_original=False)
            return
        answer = logged_answer(db, row)
        if row.verified_id is not None and not verified_shareable(answer, audience):
            log.info("refused to share answer %s in %s: its verified answer is not for there, or retired", answer_id,
                     channel)
            respond(text=messages.SHARE_VERIFIED_REFUSED, response_type="ephemeral", replace_original=False)
            return
        public = blocks.answer_blocks(answer, shared_by=user, question=row.question)
        posted = False
        if channel is not None:  # a click from a message names its conversation; without one, Slack would refuse the post
            try:
                client.chat_postMessage(channel=channel, text=blocks.fallback_text(answer), blocks=public,
                                        unfurl_links=False, unfurl_media=False)
                posted = True
            except SlackApiError as exc:
                if exc.response.get("error") not in ("not_in_channel", "channel_not_found"):
                    raise
        if not posted:
            # the bot is not in this channel (or none was named); the command's response URL may still post there
            respond(text=blocks.fallback_text(answer), blocks=public, response_type="in_channel", replace_original=False)
        respond(delete_original=True)


def logged_answer(db: Database, row: question_log.QueryLog) -> Answer:
    """The answer as the query log keeps it, to show again (a private answer's tally, Share, a
    hand-over): a verified one stays verified — its provenance line read again
    (`bot.verified.store.get`), its text as it was given."""
    answer = question_log.answer_from_log(row)
    if row.verified_id is not None:
        with db.session() as session:
            answer.verified = store.get(session, row.verified_id)
    return answer


def shareable(db: Database, doc_ids: list[str], audience: Audience) -> bool:
    """Whether every document an answer used is, now, in a scope `audience` sees (a document that is
    no longer indexed cannot be checked, so it is not shareable)."""
    access = question_log.document_access(db, doc_ids)
    return all(doc_id in access and audience.sees_all([access[doc_id]]) for doc_id in doc_ids)


def verified_shareable(answer: Answer, audience: Audience) -> bool:
    """Whether a verified answer may be posted for `audience`: still there, not retired, and one
    of its scopes visible to them — as it would be given there (`bot.verified.lookup`)."""
    verified = answer.verified
    if verified is None or verified.retired:
        return False
    return audience.scopes is None or bool(set(verified.scopes) & set(audience.scopes))


def store_reason(services: Services, reason: Reason, client: WebClient, delivery: str = "") -> None:
    """The 👎 form's text, stored with the vote. The form has closed by now: if storing fails, the
    user is told in a direct message from Docent, with what they wrote, so it is not lost. A replay
    of the same signed submission (`delivery`) tells the verifier nothing twice."""
    if not first_time(services, delivery):
        return
    try:
        question_log.record_reason(services.db, reason.answer_id, reason.user, reason.text)
    except Exception as exc:
        ref = reference_id()
        if is_unreachable(exc):
            log.warning("could not store a 👎 reason for %s: the database cannot be reached: %s", reason.answer_id,
                        first_line(exc))
            why = messages.NOTE_UNAVAILABLE
        else:
            log.exception("could not store a 👎 reason for %s [ref %s]", reason.answer_id, ref)
            why = messages.note_failed(ref)
    else:
        quietly(tell_verifier_why, services, client, reason.answer_id, reason.user, reason.text)  # its verifier too
        return
    message = messages.note_not_saved(why)
    if reason.text:
        message += f"\n{messages.WHAT_YOU_WROTE}\n" + "\n".join(f"> {escape(line)}" for line in reason.text.splitlines())
    try:
        post(client, reason.user, None, message)
    except Exception:
        log.warning("could not tell %s that their 👎 note was not saved", reason.user, exc_info=True)
