"""Hand-over: when the wiki has no answer in a channel with `escalate` (`sources.channels`),
Docent asks the people named there, once, in the question's thread:

    I couldn't find this in the wiki — <!subteam^S0PEOPLE1> can you help?
    Nearest pages: [1] …

with the nearest pages the channel may see (the answer's own sources: retrieval searched only the
channel's scopes). At most one hand-over per thread and at most `KB_HANDOVERS_PER_HOUR` per
channel in any rolling hour — both decided in Postgres (`bot.slack.store.claim_handover`: the
`handovers` table, created by migration in `bot.migrations`) under a per-channel advisory
lock, so a restart, a redelivered event or a second replica never pings the group twice for one
thread, and a burst of unanswerable questions cannot page a team a hundred times.

Never in a Slack Connect conversation, however the hand-over is reached (a not-found mention, a
not-found unprompted question, a 👎): it would page the company's own people for, and show its
nearest pages to, people of another organisation. The check is here, in the one function that
posts, so no caller can forget it; a conversation whose details cannot be read counts as shared.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot import messages
from bot.metrics import HANDOVERS
from bot.records import Database
from bot.slack import blocks
from bot.slack.store import claim_handover

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from bot.answering import Answer
    from bot.slack.audiences import SlackAccess
    from sources import ChannelSettings

log = logging.getLogger(__name__)

NEAREST = 3  # nearest pages shown with a hand-over


def hand_over(db: Database, client: WebClient, settings: ChannelSettings, thread_ts: str, answer: Answer,
              per_hour: int, *, access: SlackAccess, said_shared: bool = False, asker: str | None = None,
              voted_down: bool = False) -> bool:
    """Ask the channel's `escalate` people in the thread, unless the thread already had a hand-over
    or the hourly cap is reached; True when the message was posted. `asker`: who asked (a person's
    answer in the thread is offered as a gap to them, `bot.slack.listeners.answered_gaps`). `voted_down`: the
    answer in the thread was voted 👎 (`bot.slack.listeners.feedback`): said so, and no pages repeated.
    `access` says whether the conversation is shared with another organisation (`said_shared`:
    the event envelope already said so)."""
    if not settings.escalate:
        return False
    if said_shared or access.conversation(settings.channel).shared:
        log.info("no hand-over in %s/%s: a Slack Connect conversation", settings.channel, thread_ts)
        return False
    outcome = claim_handover(db, settings.channel, thread_ts, answer.question, per_hour, asker=asker or "")
    HANDOVERS.labels(outcome).inc()
    if outcome != "claimed":
        log.info("no hand-over in %s/%s: %s", settings.channel, thread_ts,
                 "this thread already had one" if outcome == "already" else f"the cap of {per_hour} an hour is reached")
        return False
    line = messages.handover(settings.escalation_mentions(), voted_down)
    message_blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": line}}]
    nearest = [] if voted_down else answer.sources[:NEAREST]
    if nearest:
        message_blocks.append(blocks.sources_block(nearest, found=False))
    # Not `bot.slack.client.post`: it neutralises mentions, and pinging these people is the point.
    # Only the ids of the sources file are mentioned; page titles are neutralised by `source_line`.
    client.chat_postMessage(channel=settings.channel, thread_ts=thread_ts, text=line, blocks=message_blocks,
                            unfurl_links=False, unfurl_media=False)
    return True
