"""**Show it**: the verified answer offered beside the wiki's, given when the asker takes it.

A question refused a verified answer only for its wording (`bot.verified.lookup.Offered`) is
answered from the wiki, with one more line: the verified question and a **Show it** button
(`bot.slack.blocks.offer_block`). A click:

- is acked at once; the rest runs on the answers pool, and a replay of the same signed click
  (`services.first_time`) does nothing;
- reads the answer it was clicked on from the query log (the button names only ids: the question
  is the one the log says was asked, the verified answer the one the log says was offered);
- decides the audience as a question asked in that conversation is (`SlackAccess.audience`: a Slack
  Connect conversation sees public scopes only), and reads the verified answer again
  (`bot.verified.store.get`): gone, retired, or none of its scopes visible there — the clicker
  alone is told so, and nothing is posted;
- otherwise posts it where the answer is — in its thread; in a direct message beside it; a private
  `/kb ask` answer's privately, through the response URL — rendered as a verified answer given to
  the question is (provenance line, text, the cited pages the audience may see), once per answer
  (a claim, `bot.slack.store.Deduper`), and logged in the query log with its `verified_id`, so
  👍 / 👎 work on it and a 👎 tells the verifier (`bot.slack.verified_review`);
- then, only in a public channel of the workspace, records the asker's question as a suggested
  question for a verifier (`bot.verified.suggestions.suggest`; the App Home lists them,
  `bot.slack.listeners.suggested`). A question from a DM, a private channel, a Slack Connect
  conversation or a private `/kb ask` is the asker's own: it is never recorded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt import Ack, App, BoltRequest, Respond
from slack_sdk import WebClient

from bot import messages
from bot.answering import Answer
from bot.records import ChannelKind, QueryLog, question_log
from bot.slack import blocks
from bot.slack.client import post
from bot.slack.errors import apology_on_error, quietly
from bot.slack.listeners.feedback import verified_shareable
from bot.slack.services import Services, delivery_key, first_time
from bot.verified import VerifiedAnswer, store, suggestions, verified_text
from indexing.search import Outcome
from sources import Audience

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OfferClick:
    """A click on **Show it**: who, which verified answer on which logged answer, and the message
    it was on (its conversation and thread; ephemeral for a private `/kb ask` answer)."""

    user: str
    verified_id: int | None
    answer_id: str
    channel: str | None
    message_ts: str | None
    thread_ts: str | None
    ephemeral: bool
    said_shared: bool

    @classmethod
    def of(cls, body: dict[str, Any], action: dict[str, Any]) -> OfferClick:
        container, message = body.get("container") or {}, body.get("message") or {}
        offer, _, answer_id = str(action.get("value") or "").partition(" ")
        return cls(user=body["user"]["id"], verified_id=int(offer) if offer.isdigit() else None,
                   answer_id=answer_id.strip(),
                   channel=(body.get("channel") or {}).get("id") or container.get("channel_id"),
                   message_ts=message.get("ts") or container.get("message_ts"),
                   thread_ts=message.get("thread_ts") or container.get("thread_ts"),
                   ephemeral=bool(container.get("is_ephemeral")), said_shared=bool(body.get("is_ext_shared_channel")))


def register(app: App, services: Services) -> None:
    @app.action(blocks.ACTION_OFFER_SHOW)
    def show_it(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Respond,
                request: BoltRequest) -> None:
        ack()
        services.answers.submit(show_offered, services, OfferClick.of(body, action), client, respond,
                                delivery_key(request))


def show_offered(services: Services, click: OfferClick, client: WebClient, respond: Respond, delivery: str = "") -> None:
    """The verified answer offered on the answer clicked, given there (see the module docstring)."""
    if not first_time(services, delivery):
        return

    def tell(text: str) -> None:
        respond(text=text, response_type="ephemeral", replace_original=False)

    with apology_on_error(f"showing verified answer {click.verified_id} offered on {click.answer_id}",
                          lambda ref: tell(messages.apology(ref)), lambda: tell(messages.UNAVAILABLE)):
        row = question_log.find_answer(services.db, click.answer_id) if click.answer_id else None
        if row is None or click.verified_id is None or (row.signals or {}).get("verified_offer_id") != click.verified_id:
            tell(messages.VERIFIED_OFFER_GONE)  # not an offer Docent made on that answer (or its log row is gone)
            return
        audience = services.access.audience(click.channel, click.user, said_shared=click.said_shared)
        if audience.sees_nothing:
            tell(messages.NOT_HERE)
            return
        with services.db.session() as session:
            verified = store.get(session, click.verified_id)
        answer = given(services, verified, row, audience) if verified is not None else None
        if answer is None or not verified_shareable(answer, audience):
            log.info("refused to show verified answer %s offered on %s in %s: gone, retired or not for there",
                     click.verified_id, click.answer_id, click.channel)
            tell(messages.VERIFIED_OFFER_GONE)
            return
        if not services.deduper.claim(f"verified-offer:{click.answer_id}"):
            tell(messages.VERIFIED_OFFER_SHOWN)
            return
        kind = services.access.kind_of(click.channel, said_shared=click.said_shared)
        deliver(services, client, respond, click, row, answer, kind)
        if kind == ChannelKind.PUBLIC and click.channel and not click.ephemeral:  # asked where everyone reads it
            quietly(suggest, services, answer, row, click.channel)


def given(services: Services, verified: VerifiedAnswer, row: QueryLog, audience: Audience) -> Answer:
    """The verified answer as it is given to a question (`bot.answering.answer`): its provenance and
    text, the pages it cites that `audience` may see as its sources; asked `row`'s question."""
    sources = services.kb.verified_sources(verified, audience)
    offered = (row.signals or {}).get("verified_offer_question")
    return Answer(question=row.question, text=verified_text(verified), sources=sources, timings_ms={},
                  verified=verified, outcome=Outcome.ANSWERED,
                  signals={"verified_id": verified.id, "verified_question": offered if isinstance(offered, str) else None,
                           "verified_offer_taken_on": row.answer_id})


def deliver(services: Services, client: WebClient, respond: Respond, click: OfferClick, row: QueryLog, answer: Answer,
            kind: ChannelKind) -> None:
    """Post `answer` where the answer clicked on is, and log it as an answer to `row`'s question."""
    thread: str | None = None
    if click.ephemeral:  # a private `/kb ask` answer: privately too, with its Share button
        respond(text=blocks.fallback_text(answer), blocks=blocks.answer_blocks(answer, share=True),
                response_type="ephemeral", replace_original=False)
    else:
        assert click.channel is not None  # a posted message's click names its conversation
        if row.channel_id == click.channel and row.thread_ts:
            thread = row.thread_ts  # the question's thread
        elif kind != ChannelKind.DM:
            thread = click.thread_ts or click.message_ts  # a shared answer: under it
        else:
            thread = click.thread_ts  # a direct message: beside the answer
        post(client, click.channel, thread, blocks.fallback_text(answer), blocks.answer_blocks(answer))
    quietly(question_log.log_query, services.db, surface=row.surface, user_id=row.user_id, question=row.question,
            answer=answer, channel_id=click.channel, channel_kind=kind, thread_ts=thread)


def suggest(services: Services, answer: Answer, row: QueryLog, channel: str) -> int | None:
    """The asker's question, suggested as one more of the verified answer's questions (None: not
    suggested — one of its questions already, or suggested before)."""
    assert answer.verified is not None
    with services.db.session() as session:
        suggested = suggestions.suggest(session, answer.verified.id, row.question, row.user_id, channel)
        session.commit()
    if suggested is not None:
        log.info("suggested question %s for verified answer %s (from %s)", suggested, answer.verified.id, channel)
    return suggested
