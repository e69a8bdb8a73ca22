"""Verified answers captured where people answer: the **Verify as the answer** message shortcut and
the App Home's **Verify** button on an answered gap, both opening one form (`bot.slack.verify_form`).

- Who: `KB_ADMIN_USERS` everywhere, and the channel's `verifiers` (users, user groups) from the
  sources file (`bot.verified.may_verify`). Anyone else is refused — in the form, where they are
  looking — and the refusal is an admin action in the log (`allowed=False`), as a refused resync is.
- Where: never from a Slack Connect conversation, nor one Docent cannot read (`SlackAccess` fails
  closed: such a conversation counts as shared), nor where no scope is visible.
- What the form holds: the thread's question (its parent message; for Docent's own answer, the
  question the query log says it answered), the message as people wrote it (Slack markup made
  Markdown), the scopes the channel sees — all ticked, narrowing allowed — a review date
  (`KB_VERIFIED_REVIEW_DAYS` from today) and other ways of asking. From a gap: its question, its
  answer, and the scopes both the gap and its channel see now.
- On submit everything is checked again on the server — verifier, conversation, every scope among
  the channel's *now* (a replayed or forged submission cannot widen them) — and refused with the
  reason under the input. Then the form closes, and on the answers pool the answer is stored
  (`bot.verified.store.add`: its questions are embedded), logged as an admin action, and Docent
  says so in the thread. A failure there is told to the verifier in a direct message.

Slack's trigger id lives 3 s, so the shortcut and the button open a small "Reading the thread…"
form first thing after the ack, and the answers pool fills it in (`views.update`) once the thread,
the conversation and the groups are read — or puts the refusal there.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot import messages
from bot.records import question_log
from bot.slack.errors import apology_on_error, quietly
from bot.slack.mrkdwn import escape, neutralise, slack_to_markdown, slack_to_plain
from bot.slack.services import Services
from bot.slack.store import logged_answer
from bot.slack.verify_form import (
    ACTION_VERIFY_GAP, CALLBACK, SHORTCUT, Origin, Prefill, form_view, loading_view, problems, refusal_view, submitted)
from bot.verified import Change, VerifiedError, may_verify, store
from indexing.storage import utcnow
from sources import SHARED

if TYPE_CHECKING:
    from sources import Audience

log = logging.getLogger(__name__)

ACTION = "answers add"  # the admin log's action, as `kb answers add` logs it
_CITATION = re.compile(r"\s?\[\d{1,2}\]")  # Docent's "[1]" markers: the verified text cites no numbered sources


@dataclass(frozen=True)
class Picked:
    """The message a verifier picked with the shortcut."""

    user: str
    origin: Origin
    text: str
    by_docent: bool  # Docent's own answer: its question is the one the query log says it answered
    said_shared: bool
    bot_user: str | None


def register(app: App, services: Services) -> None:
    @app.shortcut(SHORTCUT)
    def verify_shortcut(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        ack()
        message = body.get("message") or {}
        ts = str(message.get("ts") or body.get("message_ts") or "")
        origin = Origin(channel=str((body.get("channel") or {}).get("id") or ""), message_ts=ts,
                        thread_ts=str(message.get("thread_ts") or ts))
        picked = Picked(user=body["user"]["id"], origin=origin, text=str(message.get("text") or ""),
                        by_docent=bool(context.bot_user_id) and message.get("user") == context.bot_user_id,
                        said_shared=bool(body.get("is_ext_shared_channel")), bot_user=context.bot_user_id)
        view_id = open_loading(client, body.get("trigger_id"), origin)
        if view_id:
            services.answers.submit(fill_from_message, services, client, picked, view_id)

    @app.action(ACTION_VERIFY_GAP)
    def verify_gap_button(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        channel, _, thread = (action.get("value") or "").partition(" ")
        origin = Origin(channel=channel, message_ts="", thread_ts=thread, gap=True)
        view_id = open_loading(client, body.get("trigger_id"), origin)
        if view_id:
            services.answers.submit(fill_from_gap, services, client, body["user"]["id"], origin, view_id)

    @app.view(CALLBACK)
    def verify_form_sent(ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        user, origin = body["user"]["id"], Origin.of(view.get("private_metadata"))
        if origin is None:
            ack()  # not a form Docent opened: nothing to store
            return
        form = submitted(view)
        refusal = refused(services, user, origin.channel)
        if refusal is not None:
            log_refusal(services, user, origin, refusal)
            ack(response_action="errors", errors={"question": refusal[1]})
            return
        checked = problems(form, allowed_scopes(services, user, origin.channel), utcnow().date())
        if checked.widened:
            log_refusal(services, user, origin, ("a scope the channel does not see: " + ", ".join(checked.widened),
                                                 checked.problems["scopes"]))
        if checked.problems or checked.review_by is None:
            ack(response_action="errors", errors=checked.problems)
            return
        ack()
        services.answers.submit(save, services, client, user, origin, form.questions, form.answer, form.scopes,
                                checked.review_by)


# -- who may, where ------------------------------------------------------------------------------


def refused(services: Services, user: str, channel: str, said_shared: bool = False) -> tuple[str, str] | None:
    """Why `user` may not verify in `channel` — (for the log, for them) — or None when they may."""
    if not channel:
        return "no conversation", messages.VERIFY_NOT_HERE
    if not verifies_in(services, user, channel):
        return f"not a verifier in {channel}", messages.VERIFY_NOT_A_VERIFIER
    audience = channel_audience(services, user, channel, said_shared)
    if audience.kind == SHARED:
        return f"{channel} is a Slack Connect conversation (or could not be read)", messages.VERIFY_NOT_HERE
    if audience.sees_nothing:
        return f"no scope is visible in {channel}", messages.VERIFY_NO_SCOPE
    return None


def verifies_in(services: Services, user: str, channel: str) -> bool:
    """`may_verify`, with the members of the channel's verifier groups read from Slack (cached,
    `SlackAccess.members`) only when the user is neither an admin nor named there."""
    settings = services.channels.get(channel)
    admins = services.settings.admin_users
    if may_verify(user, (), settings, admins):
        return True
    groups = [g for g in settings.verifiers if g.startswith("S") and user in services.access.members(g)]
    return may_verify(user, groups, settings, admins)


def channel_audience(services: Services, user: str, channel: str, said_shared: bool = False) -> Audience:
    """Who sees the channel: its scopes before `[channels.X] sources` narrows what is searched there
    (what people said in an HR channel belongs to HR's scopes, as `bot.slack.listeners.answered_gaps` keeps it)."""
    return services.access.audience(channel, user, said_shared=said_shared, narrow=False)


def allowed_scopes(services: Services, user: str, channel: str) -> list[str]:
    return sorted(channel_audience(services, user, channel).scopes or ())


def log_refusal(services: Services, user: str, origin: Origin, why: tuple[str, str]) -> None:
    where = f"{origin.channel}/{origin.message_ts or origin.thread_ts}"
    try:
        question_log.log_admin_action(services.db, user, ACTION, where[:200], allowed=False, result=f"refused: {why[0]}")
    except Exception:
        log.warning("could not log the refused verification by %s in %s", user, where, exc_info=True)


# -- the form -------------------------------------------------------------------------------------


def open_loading(client: WebClient, trigger_id: str | None, origin: Origin) -> str | None:
    """The form, open at once while its trigger id is valid; its view id (None: not opened)."""
    if not trigger_id:
        return None
    try:
        view = client.views_open(trigger_id=trigger_id, view=loading_view(origin))["view"] or {}
        return str(view.get("id") or "") or None
    except Exception:
        log.warning("could not open the verify form in %s", origin.channel, exc_info=True)
        return None


def fill_from_message(services: Services, client: WebClient, picked: Picked, view_id: str) -> None:
    """The shortcut's form: refused, or prefilled from the picked message and its thread."""
    origin = picked.origin
    with apology_on_error(f"opening the verify form in {origin.channel}",
                          lambda ref: show(client, view_id, refusal_view(origin, messages.apology(ref))),
                          lambda: show(client, view_id, refusal_view(origin, messages.UNAVAILABLE))):
        refusal = refused(services, picked.user, origin.channel, picked.said_shared)
        if refusal is not None:
            log_refusal(services, picked.user, origin, refusal)
            show(client, view_id, refusal_view(origin, refusal[1]))
            return
        logged = logged_answer(services.db, origin.channel, origin.message_ts) if picked.by_docent else None
        if logged is not None:  # Docent's answer: the question it answered, its text as written (not Slack's rendering)
            question, answer = logged.question, _CITATION.sub("", logged.answer_text).strip()
        else:
            question, answer = thread_question(services, client, picked), slack_to_markdown(picked.text)
        prefill = Prefill(question=question, answer=answer, scopes=allowed_scopes(services, picked.user, origin.channel),
                          review_by=store.default_review_by(services.settings.kb_verified_review_days))
        show(client, view_id, form_view(origin, prefill))


def fill_from_gap(services: Services, client: WebClient, user: str, origin: Origin, view_id: str) -> None:
    """The App Home button's form: the gap's question and answer, the scopes its channel sees now
    that the gap was recorded with."""
    with apology_on_error(f"opening the verify form for the gap {origin.channel}/{origin.thread_ts}",
                          lambda ref: show(client, view_id, refusal_view(origin, messages.apology(ref))),
                          lambda: show(client, view_id, refusal_view(origin, messages.UNAVAILABLE))):
        refusal = refused(services, user, origin.channel)
        if refusal is not None:
            log_refusal(services, user, origin, refusal)
            show(client, view_id, refusal_view(origin, refusal[1]))
            return
        gap = question_log.answered_gap(services.db, origin.channel, origin.thread_ts)
        if gap is None:
            show(client, view_id, refusal_view(origin, messages.VERIFY_GAP_GONE))
            return
        scopes = [s for s in allowed_scopes(services, user, origin.channel) if s in set(gap.scopes or ())]
        origin = Origin(channel=origin.channel, message_ts=gap.answer_ts, thread_ts=origin.thread_ts, gap=True)
        prefill = Prefill(question=gap.question, answer=gap.answer, scopes=scopes,
                          review_by=store.default_review_by(services.settings.kb_verified_review_days))
        show(client, view_id, form_view(origin, prefill))


def thread_question(services: Services, client: WebClient, picked: Picked) -> str:
    """The thread's parent message as plain text ("" for a message that is no reply: the verifier
    types the question)."""
    origin = picked.origin
    if origin.thread_ts == origin.message_ts:
        return ""
    try:
        replies = client.conversations_replies(channel=origin.channel, ts=origin.thread_ts, limit=1)
        parent = (replies.get("messages") or [{}])[0]
    except Exception as exc:
        log.warning("could not read the thread %s/%s for the verify form: %s", origin.channel, origin.thread_ts, exc)
        return ""
    return slack_to_plain(str(parent.get("text") or ""), picked.bot_user)


def show(client: WebClient, view_id: str, view: dict[str, Any]) -> None:
    client.views_update(view_id=view_id, view=view)


# -- storing ----------------------------------------------------------------------------------------


def save(services: Services, client: WebClient, user: str, origin: Origin, questions: list[str], answer: str,
         scopes: list[str], review_by: date) -> None:
    """Store the verified answer (its questions embedded), log it, and say so in the thread."""
    def tell(why: str) -> None:
        client.chat_postMessage(channel=user, text=messages.verify_failed(why))

    stored: int | None = None
    with apology_on_error(f"storing the answer verified by {user} in {origin.channel}",
                          lambda ref: tell(messages.note_failed(ref)), lambda: tell(messages.NOTE_UNAVAILABLE)):
        try:
            stored = services.kb.add_verified(Change(user), questions=questions, answer=answer, scopes=scopes,
                                              review_by=review_by, channel_id=origin.channel,
                                              message_ts=origin.message_ts or None)
        except VerifiedError as exc:
            question_log.log_admin_action(services.db, user, ACTION, questions[0][:200], True, f"failed: {exc}")
            tell(str(exc))
            return
    if stored is None:
        return  # told by `apology_on_error`
    # stored: the log row and the thread's line are bookkeeping (not invited to post there: only the line is lost)
    where = f"{origin.channel}/{origin.message_ts or origin.thread_ts}"
    quietly(question_log.log_admin_action, services.db, user, ACTION, questions[0][:200], True,
            f"{stored} (Slack, {where})")
    question = neutralise(escape(" ".join(questions[0].split())[:200]))
    quietly(client.chat_postMessage, channel=origin.channel, thread_ts=origin.thread_ts,
            text=messages.verified_in_thread(user, question))
