"""What every Slack listener may use (`Services`), built once by `bot.slack.app.build_app`.

Listener modules import this module; `bot.slack.app` imports them; this module imports no
listener module — so imports point one way. A listener reads the wiki through `kb`
(`KnowledgeBase`: answers, status, page titles, source health, the gaps report), the query log,
votes and admin actions through `bot.records.question_log` and Slack's own tables through `bot.slack.store`,
both with `db`; it never reaches into the index or runs SQL itself.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from cachetools import LRUCache
from slack_bolt import BoltRequest

from bot.knowledge import KnowledgeBase
from bot.records import Database
from bot.settings import Settings
from bot.slack.audiences import SlackAccess
from bot.slack.resync_runs import Resyncs
from bot.slack.store import Deduper
from bot.slack.workers import CountingPool
from sources import ChannelsConfig

log = logging.getLogger(__name__)

RECENT_THREADS = 10_000  # threads remembered in memory, for follow-ups while the database is down
DELIVERY = "docent_delivery"  # put in a `/kb` command by its listener: the key its request is claimed under


class RecentThreads:
    """The threads this process has answered in, newest last, bounded.

    The durable record of the bot's threads is the query log (`question_log.thread_question`); this is
    consulted only when the database cannot be reached, so that a follow-up in a thread the bot
    is part of gets "temporarily unavailable" rather than silence — while other people's threads,
    which the bot cannot tell apart without the database, are still left alone."""

    def __init__(self, limit: int = RECENT_THREADS) -> None:
        self.limit = limit
        self._threads: LRUCache[tuple[str, str], None] = LRUCache(maxsize=limit)
        self._lock = threading.Lock()

    def add(self, channel: str, thread_ts: str) -> None:
        with self._lock:
            self._threads.pop((channel, thread_ts), None)  # seen again: the most recently used
            self._threads[(channel, thread_ts)] = None  # the least recently used out

    def __contains__(self, key: tuple[str, str]) -> bool:
        with self._lock:
            return key in self._threads


@dataclass
class Services:
    """What every listener uses: the knowledge base (`kb`), the database of the records and of
    Slack's own tables (`db`: only ever passed to `bot.records.question_log` and `bot.slack.store` functions),
    who sees what (`access`), the once-only claims (`deduper`), admin resyncs, the threads
    answered here, and the answers pool."""

    settings: Settings
    kb: KnowledgeBase
    db: Database
    access: SlackAccess
    deduper: Deduper
    resyncs: Resyncs
    answers: CountingPool
    threads: RecentThreads = field(default_factory=RecentThreads)
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)  # `[channels.C…]` (sources.channels)


def delivery_key(request: BoltRequest) -> str:
    """The key a signed request is claimed under (`first_time`): its signature, which names its body
    and timestamp, so only the very same request sent again has it. "" in Socket Mode (unsigned, and
    nobody outside can send one)."""
    signature = (request.headers.get("x-slack-signature") or [""])[0]
    return f"request:{signature.removeprefix('v0=')}" if signature else ""


def first_time(services: Services, key: str | None) -> bool:
    """Whether the request `key` names (`delivery_key`) is handled for the first time: False for a
    replay of the same signed request within its five minutes (Slack never resends a slash command
    or a click), which is logged. Called after the ack, on the answers pool: the claim may wait
    for the database, and Slack's 3-second ack must not."""
    if not key or services.deduper.claim(key):
        return True
    log.info("not handling a Slack request again: the same signed request was handled before (%s…)", key[:20])
    return False
