"""Shared bits of the Slack benchmarks: the bot served over real HTTP against a local Slack Web API.

The app runs as `kb serve` runs it — `build_app` (Bolt's own listener pool, as in production),
inside `web_app` under uvicorn on a free port of 127.0.0.1 — with its `WebClient` pointed at the
local Slack Web API of the tests (`tests/support/slack_api_server.py`, loaded from its file so
that the benchmarks need not import the tests). Events are sent the way Slack sends them, signed with the
signing secret; every reply the bot posts is recorded with its arrival time, keyed by
(channel, thread), so "answered exactly once" can be checked per question.

Loopback only: both servers bind 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from training.corpora import REPO
from benchmarks._common import pct, support_module

SECRET = "bench-signing-secret-0123456789abcdef"
APOLOGY_MARK = "something went wrong on my side"
QUESTIONS_FILE = REPO / "sample-wiki" / "QUESTIONS.jsonl"


_api = support_module("slack_api_server")
FakeSlack = _api.FakeSlack
BOT_TOKEN, BOT_USER, TEAM = _api.BOT_TOKEN, _api.BOT_USER, _api.TEAM


@dataclass
class Reply:
    """A recorded `chat.postMessage`, kept small: a long soak must not grow the process for the harness."""

    at: float  # time.monotonic() when it reached the local Slack API
    apology: bool
    digest: str  # sha1 of the message text


def digest(text: str | None) -> str:
    return hashlib.sha1((text or "").encode()).hexdigest()


class RecordingSlack(FakeSlack):
    """The tests' local Slack Web API, keeping only what the benchmarks check: replies by
    (channel, thread) and 👀 counts by (channel, ts); other calls are recorded as usual."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: dict[tuple[str, str], list[Reply]] = {}
        self.reactions: dict[tuple[str, str], int] = {}

    def record(self, call) -> None:
        with self._changed:
            if call.method == "chat.postMessage":
                text = call.params.get("text") or ""
                key = (call.params.get("channel"), call.params.get("thread_ts"))
                self.replies.setdefault(key, []).append(Reply(call.at, APOLOGY_MARK in text, digest(text)))
            elif call.method == "reactions.add":
                key = (call.params.get("channel"), call.params.get("timestamp"))
                self.reactions[key] = self.reactions.get(key, 0) + 1
            else:
                self.calls.append(call)
            self._changed.notify_all()

    def answered(self, keys) -> int:
        with self._changed:
            return sum(1 for k in keys if self.replies.get(k))

    def wait_answered(self, keys, timeout: float) -> bool:
        """Block until every (channel, ts) in `keys` has at least one threaded reply, or timeout."""
        pending = set(keys)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                pending = {k for k in pending if not self.replies.get(k)}
                if not pending:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.5))


def load_questions() -> list[str]:
    return [json.loads(line)["question"] for line in QUESTIONS_FILE.read_text().splitlines() if line.strip()]


def bot_settings(slack: FakeSlack):
    from bot.settings import Settings

    return Settings(_env_file=None, slack_bot_token=BOT_TOKEN, slack_signing_secret=SECRET, slack_api_url=slack.api_url,
                    slack_app_token=None, kb_admin_users="", kb_sources=None, kb_wiki=None, kb_llm_base_url=None)


def sync_sample(index) -> None:
    """The sample wiki, synced as source `sample` (as the tests do)."""
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.sync import sync_documents

    wiki = MarkdownFolder(REPO / "sample-wiki", source="sample", exclude=["*.jsonl"])
    sync_documents(index, wiki.documents(), "sample")


@contextmanager
def serving(index, slack: FakeSlack, *, max_connections: int = 256) -> Iterator[Bot]:
    """The bot as `kb serve` runs it in HTTP mode, on a free loopback port; yields a sender."""
    import httpx

    from bot.serve import serving_in_thread, web_app
    from bot.slack.app import build_app
    from bot.slack.client import web_client

    settings = bot_settings(slack)
    app = build_app(settings, index, web_client(settings))  # Bolt's default listener pool, as `kb serve`
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    served = web_app(app, index, signing_secret=settings.slack_signing_secret.get_secret_value())
    with serving_in_thread(served) as url, httpx.Client(timeout=30, limits=limits) as http:
        yield Bot(url=url, http=http)


@dataclass
class Sent:
    """One question sent as a signed `app_mention` event, and what became of it."""

    question: str
    channel: str
    ts: str
    phase: str
    sent_at: float = 0.0  # time.monotonic() just before the request
    ack_s: float | None = None  # request → HTTP response
    status: int | None = None
    error: str | None = None  # the request itself failed (connection, timeout)

    @property
    def key(self) -> tuple[str, str]:
        return (self.channel, self.ts)


_seq = count(1)
_run = uuid.uuid4().hex[:6].upper()


def new_question(question: str, phase: str) -> Sent:
    n = next(_seq)
    return Sent(question=question, channel=f"CB{_run}{n:06d}", ts=f"{int(time.time())}.{n:06d}", phase=phase)


@dataclass
class Bot:
    url: str
    http: object  # httpx.Client

    def mention(self, sent: Sent) -> Sent:
        """POST the signed event; fills in send time, ack time and status."""
        from slack_sdk.signature import SignatureVerifier

        event = {"type": "app_mention", "user": "UBENCH", "text": f"<@{BOT_USER}> {sent.question}", "ts": sent.ts,
                 "channel": sent.channel, "event_ts": sent.ts, "team": TEAM}
        body = json.dumps({
            "token": "legacy", "team_id": TEAM, "api_app_id": "A0DOCENT", "event": event, "type": "event_callback",
            "event_id": "Ev" + uuid.uuid4().hex[:12].upper(), "event_time": int(time.time()),
            "authorizations": [{"enterprise_id": None, "team_id": TEAM, "user_id": BOT_USER, "is_bot": True,
                                "is_enterprise_install": False}],
        }).encode()
        stamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
                   "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)}
        sent.sent_at = time.monotonic()
        try:
            response = self.http.post(f"{self.url}/slack/events", content=body, headers=headers)
            sent.status = response.status_code
        except Exception as exc:  # a refused connection or a timeout is a result to report
            sent.error = f"{type(exc).__name__}: {exc}"
        sent.ack_s = time.monotonic() - sent.sent_at
        return sent

    def command(self, text: str, response_url: str) -> tuple[int | None, float]:
        """A signed `/kb <text>` slash command; returns (HTTP status or None, ack seconds)."""
        from urllib.parse import urlencode

        from slack_sdk.signature import SignatureVerifier

        body = urlencode({
            "token": "legacy", "team_id": TEAM, "team_domain": "acme", "channel_id": "CBENCHCMD", "channel_name": "general",
            "user_id": "UBENCH", "user_name": "ubench", "command": "/kb", "text": text, "api_app_id": "A0DOCENT",
            "response_url": response_url, "trigger_id": f"{time.time()}.trigger",
        }).encode()
        stamp = str(int(time.time()))
        headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
                   "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)}
        started = time.monotonic()
        try:
            status = self.http.post(f"{self.url}/slack/events", content=body, headers=headers).status_code
        except Exception:
            status = None
        return status, time.monotonic() - started

    def burst(self, batch: list[Sent]) -> list[Sent]:
        """Every event of `batch` sent at once: one thread each, released together."""
        gate = threading.Barrier(len(batch))

        def send(sent: Sent) -> Sent:
            gate.wait()
            return self.mention(sent)

        with ThreadPoolExecutor(max_workers=len(batch), thread_name_prefix="burst") as pool:
            return list(pool.map(send, batch))


@dataclass
class Outcome:
    sent: int = 0
    answered: int = 0  # questions with at least one threaded reply
    duplicates: int = 0  # replies beyond the first, over all questions
    apologies: int = 0  # replies carrying the apology (an error inside the bot)
    request_errors: int = 0  # non-200 acks and failed requests
    eyes_not_once: int = 0  # questions whose 👀 was added other than exactly once
    ack: list[float] = field(default_factory=list)  # seconds
    answer: list[float] = field(default_factory=list)  # seconds, event sent → first chat.postMessage
    missing: list[Sent] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return self.apologies + self.request_errors


def outcome(slack: RecordingSlack, batch: list[Sent]) -> Outcome:
    out = Outcome(sent=len(batch))
    with slack._changed:
        replies = {s.key: list(slack.replies.get(s.key, [])) for s in batch}
        eyes = {s.key: slack.reactions.get(s.key, 0) for s in batch}
    for s in batch:
        if s.error or s.status != 200:
            out.request_errors += 1
        if s.ack_s is not None:
            out.ack.append(s.ack_s)
        got = replies[s.key]
        if got:
            out.answered += 1
            out.duplicates += len(got) - 1
            out.answer.append(got[0].at - s.sent_at)
        else:
            out.missing.append(s)
        out.apologies += sum(1 for r in got if r.apology)
        out.eyes_not_once += eyes[s.key] != 1
    return out


def direct_answers(index, questions: list[str], repeat: int = 1) -> list[float]:
    """Seconds per `KnowledgeBase.ask` call, one at a time, in this thread: the baseline."""
    from bot.knowledge import KnowledgeBase

    took = []
    for _ in range(repeat):
        for q in questions:
            started = time.perf_counter()
            KnowledgeBase(index).ask(q)
            took.append(time.perf_counter() - started)
    return took


def ms(values: list[float], p: float) -> float:
    """Percentile `p` of seconds, in milliseconds (NaN for no values)."""
    return pct(values, p) * 1000 if values else float("nan")


def rss_mb() -> float:
    """This process's resident memory now (not the peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def grid(title: str, columns: list[str], rows: list[list]) -> None:
    """A rich table with several value columns (benchmarks._common.table has one)."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for i, name in enumerate(columns):
        t.add_column(name, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*[f"{v:,.2f}" if isinstance(v, float) else str(v) for v in row])
    Console(width=200).print(t)
