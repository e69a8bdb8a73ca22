"""The weekly gaps digest: the gaps report (`bot.records.gaps`) posted to the admins' channel on a schedule.

`KB_DIGEST_CHANNEL` (a channel id) turns it on; `KB_DIGEST_SCHEDULE` says when (a 5-field cron
in UTC, or "every 7d"; by default Mondays 09:00 UTC). The job is added to the scheduler that runs
the periodic re-syncs and asks the same leader lock (`indexing.ingest.scheduler`, a Postgres advisory
lock): with several `kb serve` replicas on one database, only the scheduler's leader posts it.

Page titles in the digest are limited to the access scopes visible in that channel (as if asked
there); the questions themselves are shown, so the channel should be the wiki owners' own. The
verified answers due for review (`bot.slack.verified_review`) visible there head it, when there
are any, and one line counts the suggested questions waiting for a verifier (`bot.verified.suggestions`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from bot import messages
from bot.slack.home_blocks import due_blocks, gaps_blocks
from bot.slack.verified_review import due_for_review
from bot.verified import suggestions

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler
    from slack_sdk import WebClient

    from bot.knowledge import KnowledgeBase
    from bot.records import GapsReport
    from bot.settings import Settings
    from bot.slack.blocks import Block
    from bot.verified import VerifiedAnswer

log = logging.getLogger(__name__)

DAYS = 7
MESSAGE_BLOCKS = 50  # Slack: blocks in one message


class Leader(Protocol):
    """The scheduler's leader lock (`indexing.ingest.scheduler`), as the job asks it: only its leader posts."""

    def is_leader(self) -> bool: ...


@dataclass
class DigestRun:
    """What one run of the job did: posted (with the message ts) or skipped, and why."""

    posted: bool
    ts: str | None = None
    reason: str = ""


def digest_problem(settings: Settings) -> str | None:
    """What is wrong with the digest settings, in one line (checked when `kb serve` starts), or None."""
    from sources import SourcesError, parse_schedule

    if not settings.kb_digest_channel:
        return None
    if settings.kb_digest_channel[:1] not in ("C", "G"):
        return f"KB_DIGEST_CHANNEL must be a channel id (C…), not {settings.kb_digest_channel[:40]!r}"
    try:
        parse_schedule(settings.kb_digest_schedule, where="KB_DIGEST_SCHEDULE")
    except SourcesError as exc:
        return str(exc)
    return None


def schedule_digest(scheduler: BackgroundScheduler, settings: Settings, kb: KnowledgeBase, client: WebClient) -> bool:
    """Add the weekly job to `scheduler` (started by `indexing.ingest.scheduler.start_scheduler`, whose
    leader lock it shares); False when no digest channel is configured."""
    from sources import parse_schedule

    channel = settings.kb_digest_channel
    if not channel:
        return False
    schedule = parse_schedule(settings.kb_digest_schedule, where="KB_DIGEST_SCHEDULE")
    scheduler.add_job(run_digest, schedule.trigger(), args=[settings, kb, client, scheduler.docent_leader],
                      id="digest", max_instances=1, coalesce=True, misfire_grace_time=3600)
    log.info("gaps digest to %s scheduled: %s", channel, schedule.text)
    return True


def run_digest(settings: Settings, kb: KnowledgeBase, client: WebClient, leader: Leader) -> DigestRun:
    """One run: post the digest if this process leads the scheduler; never raises."""
    channel = settings.kb_digest_channel
    try:
        if not leader.is_leader():
            log.info("gaps digest skipped: another Docent process is the scheduler")
            return DigestRun(posted=False, reason="not the leader")
        assert channel, "schedule_digest adds the job only with a KB_DIGEST_CHANNEL"
        return DigestRun(posted=True, ts=post_digest(settings, kb, client, channel))
    except Exception as exc:
        log.exception("the gaps digest to %s failed", channel)
        return DigestRun(posted=False, reason=f"{type(exc).__name__}: {exc}")


def post_digest(settings: Settings, kb: KnowledgeBase, client: WebClient, channel: str, days: int = DAYS) -> str:
    """Post the digest of the last `days` to `channel` now (the job, and `kb gaps --post`); returns the message's ts."""
    from bot.slack.audiences import SlackAccess

    from bot.records import Listing

    access = SlackAccess(settings.access_config(), client)
    audience = access.audience(channel, None)
    scopes = audience.search_scopes
    listing = Listing(None if scopes is None else frozenset(scopes), settings.kb_gaps_include_private_channels,
                      lambda said_in: access.audience(said_in, None, narrow=False).scopes or ())
    report = kb.gaps(days, scopes=scopes, listing=listing)
    due = due_for_review(kb.index, scopes)
    with kb.index.session() as session:
        waiting = len(suggestions.listing(session))
    message = digest_blocks(report, due, waiting)
    c = report.current
    text = (f"Docent's weekly gaps: {c.questions} questions, {c.not_found} not found, {c.uncertain} uncertain, "
            f"👎 {c.down}" + (f", {len(due)} verified answers due for review" if due else ""))
    reply = client.chat_postMessage(channel=channel, text=text, blocks=message, unfurl_links=False, unfurl_media=False)
    ts: str = reply["ts"]  # Slack's reply is untyped JSON; a posted message's `ts` is a string
    return ts


def digest_blocks(report: GapsReport, due: list[VerifiedAnswer] | None = None, suggested: int = 0) -> list[Block]:
    """The digest message: the gaps report, after the verified answers due for review and the count
    of suggested questions waiting, when there are any."""
    head = {"type": "header", "text": {"type": "plain_text", "text": "📋 Docent's weekly gaps digest", "emoji": True}}
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": (
        f"The last {report.days} days to {report.generated_at:%Y-%m-%d %H:%M} UTC, against the {report.days} before. "
        f"`kb gaps --days {report.days}` prints the same in a terminal.")}]}
    waiting = [{"type": "context", "elements": [{"type": "mrkdwn", "text": messages.suggestions_waiting(suggested)}]}]
    body: list[Block] = [head, note, *(due_blocks(due) if due else []), *(waiting if suggested else []),
                         *gaps_blocks(report)]
    if len(body) > MESSAGE_BLOCKS:
        body = body[: MESSAGE_BLOCKS - 1] + [{"type": "context", "elements": [
            {"type": "mrkdwn", "text": "…shortened to fit Slack: `kb gaps` has the rest."}]}]
    return body
