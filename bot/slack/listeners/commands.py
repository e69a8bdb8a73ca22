"""The `/kb` slash command: its router and the `help`, `ask` and `status` subcommands.

Slack allows 3 seconds for the acknowledgement, so every branch acks first; answering runs on
the answers pool and replies through the response URL. `/kb ask` answers privately, with a
"Share in channel" button (`bot.slack.listeners.feedback`); `/kb resync` lives in `bot.slack.listeners.resync_command`
and `/kb channel` in `bot.slack.listeners.channel_command`. A new
subcommand is one entry in `SUBCOMMANDS`.

Once per request: a signed `/kb` sent again within its five minutes (a replay: Slack itself never
resends a slash command) is acknowledged again but answered once. The request's signature names
its body and timestamp; the first of the work it starts claims it (`services.first_time`, Slack's
delivery claims, `bot.slack.store`) — after the ack, on the answers pool, as a claim waits for the
database and Slack's 3-second ack must not.
"""

from __future__ import annotations

import time
from typing import Any

from slack_bolt import Ack, App, BoltRequest, Respond

from bot import messages
from bot.records import question_log
from bot.knowledge import sync_counts
from bot.slack import blocks
from bot.slack.asked import Logged
from bot.slack.errors import apology_on_error, quietly
from bot.slack.listeners.channel_command import show_channel
from bot.slack.listeners.resync_command import resync
from bot.slack.mrkdwn import escape, neutralise, slack_to_plain
from bot.slack.services import DELIVERY, Services, delivery_key, first_time
from indexing.storage import IndexStatus

COMMAND = "/kb"


def register(app: App, services: Services) -> None:
    @app.command(COMMAND)
    def kb(ack: Ack, command: dict[str, Any], respond: Respond, request: BoltRequest) -> None:
        """`/kb <subcommand> …`: each subcommand acks first."""
        name, _, rest = (command.get("text") or "").strip().partition(" ")
        subcommand = SUBCOMMANDS.get(name.lower())
        if subcommand is None:
            ack(text=messages.unknown_subcommand(neutralise(escape(name.lower()[:40]))), response_type="ephemeral")
            return
        command = {**command, DELIVERY: delivery_key(request)}  # claimed by the work it starts (`first_time`)
        subcommand(services, ack, command, respond, rest.strip())


def help_(services: Services, ack: Ack, command: dict[str, Any], respond: Respond, text: str) -> None:
    ack(text=messages.HELP, response_type="ephemeral")


def ask(services: Services, ack: Ack, command: dict[str, Any], respond: Respond, text: str) -> None:
    """A private answer through the response URL, with a "Share in channel" button."""
    question = slack_to_plain(text)
    if not question:
        ack(text=messages.ASK_USAGE, response_type="ephemeral")
        return
    ack(text=messages.LOOKING_IT_UP, response_type="ephemeral")
    services.answers.submit(answer_privately, services, command, respond, question, time.perf_counter())


def answer_privately(services: Services, command: dict[str, Any], respond: Respond, question: str, started: float) -> None:
    """The one reply, in place of the "Looking that up…" acknowledgement (`replace_original`)."""
    if not first_time(services, command.get(DELIVERY)):
        return
    channel, user = command.get("channel_id"), command["user_id"]
    details: Logged = {"surface": "command", "user_id": user, "channel_id": channel}
    db = services.db

    def apologise(ref: str) -> None:
        quietly(question_log.log_query, db, question=question or "(empty)", error_ref=ref, **details)
        respond(text=messages.apology(ref), response_type="ephemeral", replace_original=True)

    def unavailable() -> None:
        respond(text=messages.UNAVAILABLE, response_type="ephemeral", replace_original=True)

    with apology_on_error("/kb ask", apologise, unavailable):
        audience = services.access.audience(channel, user)
        if audience.sees_nothing:
            respond(text=messages.NOT_HERE, response_type="ephemeral", replace_original=True)
            return
        details["channel_kind"] = services.access.kind_of(channel)
        answer = services.kb.ask(question, audience)
        timings = {"slack_total": round((time.perf_counter() - started) * 1000, 2)}
        quietly(question_log.log_query, db, question=question, answer=answer, context_question=None,
                timings_ms=timings, **details)
        respond(text=blocks.fallback_text(answer), blocks=blocks.answer_blocks(answer, share=True),
                response_type="ephemeral", replace_original=True)


def status(services: Services, ack: Ack, command: dict[str, Any], respond: Respond, text: str) -> None:
    """Documents, chunks, last sync per source, failures — of what could be searched here.

    Anyone may ask, so it tells no more than `/kb ask` could (`KnowledgeBase.status` limits it to
    the audience of the conversation it is asked in)."""
    ack()
    services.answers.submit(show_status, services, command, respond)


def show_status(services: Services, command: dict[str, Any], respond: Respond) -> None:
    if not first_time(services, command.get(DELIVERY)):
        return
    with apology_on_error("/kb status", lambda ref: respond(text=messages.apology(ref), response_type="ephemeral")):
        audience = services.access.audience(command.get("channel_id"), command.get("user_id"))
        text = status_text(services.kb.status(audience), visible_here=True)
        respond(text=neutralise(text), blocks=blocks.text_blocks(text), response_type="ephemeral")


def status_text(info: IndexStatus, visible_here: bool = False) -> str:
    """An index status as a Slack message; `visible_here`: it was limited to a conversation."""
    docs = ", ".join(f"{n} {str(k).lower()}" for k, n in sorted(info.documents.items())) or "none"
    where = " searchable here" if visible_here else ""
    lines = ["*Knowledge base status*", f"Documents{where}: {docs}", f"Chunks: {info.chunks}"]
    for run in info.last_runs:
        when = run.finished_at or run.started_at
        state = "" if run.finished_at else " (still running)"
        refused = f" — *refused, nothing deleted*: {escape((run.reason or '')[:300])}" if run.result == "refused" else ""
        lines.append(
            f"Last sync of `{escape(run.source)}` ({escape(run.trigger)}) {when:%Y-%m-%d %H:%M} UTC{state}: "
            f"{sync_counts(run)}{refused}"
        )
    for name in info.unconfigured:
        lines.append(f"Source `{escape(name)}` is no longer configured; its pages still answer until an admin "
                     f"runs `kb forget {escape(name)}`.")
    for title, rows in (("Failed documents", info.failed), ("Skipped pages (nothing to index)", info.skipped)):
        if rows:
            lines.append(f"*{title}* ({len(rows)}):")
            lines += [f"• `{escape(doc_id)}`: {escape((why or '')[:200])}" for doc_id, why in rows[:10]]
    return "\n".join(lines)


SUBCOMMANDS = {"": help_, "help": help_, "ask": ask, "status": status, "resync": resync, "channel": show_channel}
