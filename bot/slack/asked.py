"""A message to answer (`Asked`): where it was asked, where the reply goes, and what shapes its
audience — read from a message event once (`asked_from`) for mentions, direct messages, thread
follow-ups (`bot.slack.listeners.questions`), help channels (`bot.slack.listeners.help_channels`) and edits
(`bot.slack.listeners.conversation`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from bot.records import ChannelKind

if TYPE_CHECKING:
    from slack_bolt import BoltContext


@dataclass(frozen=True)
class Asked:
    """One message to answer: where it was asked, where the reply goes, and what shapes its audience."""

    surface: str  # "mention" | "dm" | "thread" (the query log's `surface`)
    channel: str
    user: str
    ts: str
    text: str
    bot_user: str | None
    reply_thread: str | None  # the thread the answer goes to (None: the DM itself)
    context_thread: str | None  # the thread whose earlier question joins retrieval
    is_dm: bool | None = None  # None: `conversations.info` decides
    said_shared: bool = False  # the event envelope said the channel is shared with another organisation
    team: str | None = None  # the asker's workspace (a channel stream names its recipient)
    channel_type: str | None = None  # a message event's "channel" / "group" / "im" / "mpim" (mentions have none)


class Logged(TypedDict):
    """Where a question was asked, as its query log row keeps it: `question_log.log_query`'s keywords,
    gathered before the question is answered and passed on with `**` (so a misspelt one is a type error)."""

    surface: str
    user_id: str
    channel_id: NotRequired[str | None]
    channel_kind: NotRequired[ChannelKind]
    thread_ts: NotRequired[str | None]
    message_ts: NotRequired[str | None]


def asked_from(event: dict[str, Any], body: dict[str, Any] | None, context: BoltContext, **where: Any) -> Asked:
    """The `Asked` value of a message event (mentions, DMs, follow-ups, help channels: one reading)."""
    return Asked(channel=event["channel"], user=event["user"], ts=event["ts"], text=event.get("text") or "",
                 bot_user=context.bot_user_id, said_shared=bool((body or {}).get("is_ext_shared_channel")),
                 team=event.get("team"), channel_type=event.get("channel_type"), **where)
