"""Feedback on answers: 👍 / 👎 votes, the "what was wrong?" form, and the Share button.

- One vote per user per answer; the message shows the tally; 👎 opens an optional form whose
  text is stored with the vote.
- Share posts a private `/kb ask` answer in the channel, only if every page it cites (or lists
  as nearest) is visible there now; otherwise it refuses and the answer stays private.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import records
from bot.slack import blocks
from bot.slack.access import NOT_HERE
from bot.slack.errors import UNAVAILABLE, UNAVAILABLE_VOTE, apology, apology_on_error, first_line, reference_id
from connectors.access import Audience
from indexing.database import is_unreachable
from indexing.index import Index

if TYPE_CHECKING:
    from bot.slack.app import Services

log = logging.getLogger(__name__)

SHARE_REFUSED = ("I can't share this answer here: it uses pages that are not visible in this conversation. "
                 "It stays visible only to you.")


def register(app, services: Services) -> None:
    @app.action(blocks.ACTION_VOTE_UP)
    def vote_up(ack, body, action, client, respond):
        ack()
        vote(services, body, action, client, respond, records.UP)

    @app.action(blocks.ACTION_VOTE_DOWN)
    def vote_down(ack, body, action, client, respond):
        ack()
        vote(services, body, action, client, respond, records.DOWN)

    @app.action(blocks.ACTION_SHARE)
    def share_button(ack, body, action, client, respond):
        ack()
        share(services, body, action, client, respond)

    @app.view(blocks.REASON_CALLBACK)
    def reason_form(ack, body, view):
        reason(services, ack, body, view)


def vote(services: Services, body: dict, action: dict, client: WebClient, respond, choice: str) -> None:
    """One stored vote per user per answer; the message shows the tally; 👎 opens the form."""
    user, answer_id = body["user"]["id"], action["value"]
    if choice == records.DOWN and body.get("trigger_id"):
        try:  # first: the trigger id expires 3 s after the click
            client.views_open(trigger_id=body["trigger_id"], view=blocks.reason_modal(answer_id))
        except Exception:
            log.warning("could not open the 👎 form for %s", answer_id, exc_info=True)
    with apology_on_error("recording a vote", lambda ref: respond(
            text=apology(ref), response_type="ephemeral", replace_original=False), lambda: respond(
            text=UNAVAILABLE_VOTE, response_type="ephemeral", replace_original=False)):
        votes = records.record_vote(services.kb.index, answer_id, user, choice)
        show_votes(services.kb.index, body, answer_id, votes, client, respond)


def show_votes(index: Index, body: dict, answer_id: str, votes: dict, client: WebClient, respond) -> None:
    """Refresh the answer with its tally: `chat.update` for a posted message; the response URL for
    a private one (ephemeral messages cannot be updated through the Web API)."""
    container = body.get("container") or {}
    message = body.get("message")
    if message and message.get("blocks") and not container.get("is_ephemeral"):
        client.chat_update(channel=container.get("channel_id") or body["channel"]["id"], ts=message["ts"],
                           text=message.get("text") or "", blocks=blocks.with_votes(message["blocks"], votes))
        return
    row = records.find_answer(index, answer_id)
    if row is None:
        respond(text="Thanks — your vote was recorded.", response_type="ephemeral", replace_original=False)
        return
    answer = records.answer_from_log(row)
    respond(text=blocks.fallback_text(answer), blocks=blocks.answer_blocks(answer, share=True, votes=votes),
            response_type="ephemeral", replace_original=True)


def share(services: Services, body: dict, action: dict, client: WebClient, respond) -> None:
    """Post a private answer publicly in the channel, then remove the private copy — only if every
    page it cites (or lists as nearest) is visible in that channel now; otherwise refuse."""
    user, answer_id = body["user"]["id"], action["value"]
    index = services.kb.index
    with apology_on_error("sharing an answer", lambda ref: respond(
            text=apology(ref), response_type="ephemeral", replace_original=False), lambda: respond(
            text=UNAVAILABLE, response_type="ephemeral", replace_original=False)):
        row = records.find_answer(index, answer_id)
        if row is None:
            respond(text="Sorry, I can no longer find this answer to share it — please ask again.",
                    response_type="ephemeral", replace_original=False)
            return
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        audience = services.access.audience(channel, user)
        if audience.sees_nothing or not shareable(index, row.doc_ids, audience):
            log.info("refused to share answer %s in %s: it uses pages not visible there", answer_id, channel)
            respond(text=NOT_HERE if audience.sees_nothing else SHARE_REFUSED, response_type="ephemeral",
                    replace_original=False)
            return
        answer = records.answer_from_log(row)
        public = blocks.answer_blocks(answer, shared_by=user, question=row.question)
        try:
            client.chat_postMessage(channel=channel, text=blocks.fallback_text(answer), blocks=public,
                                    unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            if exc.response.get("error") not in ("not_in_channel", "channel_not_found"):
                raise
            # the bot is not in this channel; the command's response URL may still post there
            respond(text=blocks.fallback_text(answer), blocks=public, response_type="in_channel", replace_original=False)
        respond(delete_original=True)


def shareable(index: Index, doc_ids: list[str], audience: Audience) -> bool:
    """Whether every document an answer used is, now, in a scope `audience` sees (a document that is
    no longer indexed cannot be checked, so it is not shareable)."""
    access = records.document_access(index, doc_ids)
    return all(doc_id in access and audience.sees_all([access[doc_id]]) for doc_id in doc_ids)


def reason(services: Services, ack, body: dict, view: dict) -> None:
    """The 👎 form's text, stored with the vote. Stored before the ack — one small write — because
    a modal offers no other way to tell the user that saving failed."""
    user, answer_id = body["user"]["id"], view.get("private_metadata") or ""
    value = (((view.get("state") or {}).get("values") or {}).get(blocks.REASON_BLOCK) or {}).get(blocks.REASON_INPUT) or {}
    text = (value.get("value") or "").strip() or None
    try:
        records.record_reason(services.kb.index, answer_id, user, text)
    except Exception as exc:
        ref = reference_id()
        if is_unreachable(exc):
            log.warning("could not store a 👎 reason for %s: the database cannot be reached: %s", answer_id, first_line(exc))
            message = "Sorry, this could not be saved: the knowledge base is temporarily unavailable. Please try again in a minute."
        else:
            log.exception("could not store a 👎 reason for %s [ref %s]", answer_id, ref)
            message = f"Sorry, this could not be saved (reference {ref})."
        ack(response_action="errors", errors={blocks.REASON_BLOCK: message})
        return
    ack()
