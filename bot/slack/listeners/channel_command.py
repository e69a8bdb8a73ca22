"""`/kb channel` (admins): how Docent behaves in the channel it is typed in — its `[channels.C…]`
settings from the sources file (`sources.channels`), or that it has none and answers only
when mentioned. Ephemeral, and only for admins (`KB_ADMIN_USERS`, as `/kb resync`): the list of
people Docent hands questions over to is not everyone's business."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, Respond

from bot import messages
from bot.slack.mrkdwn import escape
from bot.slack.services import Services

if TYPE_CHECKING:
    from sources import ChannelSettings


def show_channel(services: Services, ack: Ack, command: dict[str, Any], respond: Respond, text: str) -> None:
    if command["user_id"] not in services.settings.admin_users:
        ack(text=messages.CHANNEL_ADMINS_ONLY, response_type="ephemeral")
        return
    ack(text=channel_text(services.channels.get(command.get("channel_id"))), response_type="ephemeral")


def channel_text(settings: ChannelSettings) -> str:
    """The channel's settings as a Slack message; mentions are shown as ids, so nobody is pinged."""
    here = f"<#{settings.channel}>" if settings.channel else "this conversation"
    if settings.answers_questions:
        respond = "`questions`: I answer every question posted here (top-level messages), when the wiki has the answer"
    else:
        respond = "`mention`: I answer here only when mentioned (and follow-ups in my threads)"
    escalate = ", ".join(f"`{escape(who)}`" for who in settings.escalate) or "nobody (no `escalate`)"
    sources = ", ".join(f"`{escape(name)}`" for name in settings.sources) or "every source visible here"
    verifiers = ", ".join(f"`{escape(who)}`" for who in settings.verifiers) or "`KB_ADMIN_USERS` only (no `verifiers`)"
    lines = [f"*Docent in {here}*", f"Respond: {respond}", f"Hand over to: {escalate}", f"Sources: {sources}",
             f"Verify answers: {verifiers}"]
    if not (settings.answers_questions or settings.escalate or settings.sources or settings.verifiers):
        lines.append(f"(No `[channels.{escape(settings.channel)}]` table in the sources file: the defaults apply.)")
    return "\n".join(lines)
