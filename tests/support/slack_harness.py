"""The Slack app under test and what Slack sends it: shared by tests/test_slack.py and every
module that talks to Docent over Slack (the `slack` and `bot` fixtures are in tests/conftest.py).

The app runs as `kb serve` runs it (the Bolt app in the Starlette app under uvicorn, on
127.0.0.1), its `WebClient` pointed at `FakeSlack` (tests/support/slack_api_server.py), which records
every Web API call and every use of a response URL. Events, slash commands, button clicks and
form submissions are built here the way Slack sends them, and signed with the signing secret.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx
from slack_sdk.signature import SignatureVerifier
from sqlmodel import select

from tests.support.slack_api_server import BOT_TOKEN, BOT_USER, TEAM, FakeSlack

from bot.records.question_log import Feedback, QueryLog
from bot.serve import serving_in_thread, web_app
from bot.settings import Settings
from bot.slack import blocks
from bot.slack.app import build_app
from bot.slack.client import web_client
from bot.slack.workers import Workers

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ADMIN = "UADMIN"
PARENTAL = "how many weeks of parental leave does the primary caregiver get?"


# -- the app under test ------------------------------------------------------------------------


@dataclass
class Bot:
    url: str
    workers: Workers  # Bolt's listener pool and the answers pool, as `kb serve` runs them
    http: httpx.Client

    def wait_idle(self, timeout: float = 20.0) -> None:
        """Until no listener and no answer is queued or running (to assert that nothing happened)."""
        assert self.workers.wait_idle(timeout), "listeners or answers still busy"

    def post(self, body: bytes, content_type: str, *, secret: str = SECRET, timestamp: int | None = None,
             headers: dict | None = None) -> httpx.Response:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
        sent = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}
        return self.http.post(f"{self.url}/slack/events", content=body, headers={**sent, **(headers or {})})

    def event(self, event: dict, event_id: str | None = None, **kwargs) -> httpx.Response:
        return self.post(json.dumps(envelope(event, event_id)).encode(), "application/json", **kwargs)

    def command(self, text: str, *, user: str = "U1", channel: str = "C1", response_url: str) -> httpx.Response:
        form = {"token": "legacy", "team_id": TEAM, "team_domain": "acme", "channel_id": channel, "channel_name": "general",
                "user_id": user, "user_name": user.lower(), "command": "/kb", "text": text, "api_app_id": "A0DOCENT",
                "response_url": response_url, "trigger_id": f"{time.time()}.trigger"}
        return self.post(urlencode(form).encode(), "application/x-www-form-urlencoded")

    def interaction(self, payload: dict) -> httpx.Response:
        return self.post(urlencode({"payload": json.dumps(payload)}).encode(), "application/x-www-form-urlencoded")


@contextmanager
def running_bot(settings: Settings, index, llm=None) -> Iterator[Bot]:
    """The app as `kb serve` runs it — Bolt's listener pool and the answers pool of `bot.slack.workers`
    (the same `Workers` `kb serve` builds), in the Starlette app under uvicorn, on a free port of
    127.0.0.1; `llm` a `bot.answering.llm.LLMClient` (None: extractive answers)."""
    workers = Workers()
    app = build_app(settings, index, web_client(settings), llm, workers=workers)
    try:
        served = web_app(app, index, signing_secret=settings.slack_signing_secret.get_secret_value())
        with serving_in_thread(served) as url, httpx.Client(timeout=10) as http:
            running = Bot(url=url, workers=workers, http=http)
            try:
                yield running
            finally:
                running.wait_idle()
    finally:
        workers.shutdown(wait=True)


SAMPLE_SOURCES = Path(__file__).resolve().parents[1] / "fixtures" / "slack-sources.toml"  # scope "sample" everywhere


def bot_settings(slack: FakeSlack, **overrides) -> Settings:
    """The bot's settings; unless a test names its own wiki, the sample (scope "sample") is visible
    in every channel and DM, as its answers are what these tests check."""
    sources = None if "kb_wiki" in overrides else SAMPLE_SOURCES
    values = dict(slack_bot_token=BOT_TOKEN, slack_signing_secret=SECRET, slack_api_url=slack.api_url,
                  kb_admin_users=ADMIN, kb_sources=sources, kb_wiki=None, kb_llm_base_url=None)
    return Settings(_env_file=None, **{**values, **overrides})


# -- what Slack sends --------------------------------------------------------------------------

_ts = iter(range(1, 10**9))


def new_ts() -> str:
    return f"{int(time.time())}.{next(_ts):06d}"


def new_channel(prefix: str = "C") -> str:
    return prefix + uuid.uuid4().hex[:10].upper()


def envelope(event: dict, event_id: str | None = None) -> dict:
    return {
        "token": "legacy", "team_id": TEAM, "api_app_id": "A0DOCENT", "event": event, "type": "event_callback",
        "event_id": event_id or "Ev" + uuid.uuid4().hex[:12].upper(), "event_time": int(time.time()),
        "authorizations": [{"enterprise_id": None, "team_id": TEAM, "user_id": BOT_USER, "is_bot": True,
                            "is_enterprise_install": False}],
        "is_ext_shared_channel": False,
    }


def mention(question: str, channel: str, *, user: str = "U1", ts: str | None = None, thread_ts: str | None = None) -> dict:
    ts = ts or new_ts()
    event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER}> {question}", "ts": ts, "channel": channel,
             "event_ts": ts, "team": TEAM}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def message(text: str, channel: str, *, channel_type: str = "channel", user: str | None = "U1",
            ts: str | None = None, thread_ts: str | None = None, **extra) -> dict:
    ts = ts or new_ts()
    event = {"type": "message", "text": text, "ts": ts, "channel": channel, "event_ts": ts,
             "channel_type": channel_type, "team": TEAM, **extra}
    if user:
        event["user"] = user
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def click(action_id: str, value: str, *, user: str, channel: str, response_url: str, message: dict | None = None,
          ephemeral: bool = False) -> dict:
    container = {"type": "message", "channel_id": channel, "is_ephemeral": ephemeral,
                 "message_ts": (message or {}).get("ts", new_ts())}
    payload = {
        "type": "block_actions", "team": {"id": TEAM, "domain": "acme"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "api_app_id": "A0DOCENT", "token": "legacy",
        "container": container, "trigger_id": f"{time.time()}.trigger", "channel": {"id": channel, "name": "general"},
        "response_url": response_url,
        "actions": [{"action_id": action_id, "block_id": blocks.FEEDBACK_BLOCK, "value": value, "type": "button",
                     "action_ts": str(time.time())}],
    }
    if message is not None:
        payload["message"] = message
    return payload


# -- reading the results -----------------------------------------------------------------------


def button(message_blocks: list[dict], action_id: str) -> dict | None:
    for block in message_blocks:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return element
    return None


def sources_heading(message_blocks: list[dict]) -> str | None:
    """The first line of an answer's sources block: "*Sources*" (found) or "*Nearest pages*"."""
    block = next((b for b in message_blocks if b.get("block_id") == blocks.SOURCES_BLOCK), None)
    return block["elements"][0]["text"].split("\n", 1)[0] if block else None


def all_text(message_blocks: list[dict]) -> str:
    return "\n".join(blocks._walk(message_blocks))


def posts_in(slack: FakeSlack, channel: str):
    return slack.calls_to("chat.postMessage", channel=channel)


def query_rows(index, **match) -> list[QueryLog]:
    with index.session() as s:
        statement = select(QueryLog)
        for key, value in match.items():
            statement = statement.where(getattr(QueryLog, key) == value)
        return list(s.exec(statement.order_by(QueryLog.id)))


def wait_until(condition, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def feedback_rows(index, answer_id: str) -> list[Feedback]:
    with index.session() as s:
        return list(s.exec(select(Feedback).where(Feedback.answer_id == answer_id)))
