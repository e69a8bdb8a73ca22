"""A tiny local Slack Web API, for testing the bot over real HTTP.

A stdlib `http.server` in a thread on 127.0.0.1, answering the Web API methods Docent calls
with Slack's response shapes (`auth.test`, `chat.postMessage`, `chat.postEphemeral`,
`chat.update`, `chat.getPermalink`, `reactions.add`, `views.open`, `views.update` (the modals opened,
as they stand, in `views` by id), `conversations.info`, `usergroups.list`,
`usergroups.users.list`, and `apps.connections.open` with the app-level token, handing out
the WebSocket URL of `tests/support/socket_mode_peer.py`), and also serving as the target of response URLs
(`/response/<name>`). Requests arrive from the real `slack_sdk` clients (JSON or form-encoded
bodies, `Authorization: Bearer …`), are parsed here, and every call is recorded in order:

    slack = FakeSlack().start()
    client = WebClient(token="xoxb-test", base_url=slack.api_url)
    slack.wait_for(lambda: slack.calls_to("chat.postMessage"))
    slack.response_url("ask-1")     # a response URL whose uses are recorded as "response:ask-1"

An unknown token gets `invalid_auth`, as from Slack. `fail(method, error)` makes a method
answer `{"ok": false, "error": error}` (e.g. "not_in_channel"). `rate_limit(method, times,
retry_after)` makes its next `times` calls answer as Slack does when a method's rate limit is hit
(HTTP 429, `Retry-After: <seconds>`, `{"ok": false, "error": "ratelimited"}`), and
`server_error(method, times, status)` makes them answer HTTP 5xx; every call, answered or not, is
recorded with the status it got (`Call.status`).

For the AI-app surface and App Home it also answers `views.publish` (checking Slack's limit of
100 blocks in a Home view: `invalid_arguments` beyond it; the last view per user is in `homes`),
`assistant.threads.setStatus` / `setSuggestedPrompts` / `setTitle`, `chat.startStream` /
`chat.appendStream` / `chat.stopStream` (text sent as `markdown_text` or as `markdown_text`
chunks, as slack_sdk's `ChatStream` sends it), `chat.delete`, and `conversations.replies` for
threads a test defines with `add_thread(channel, ts, messages)`. `messages[(channel, ts)]` is
each message as it stands after posts, streams, updates and deletes. A method a workspace does
not have is `fail(method, "unknown_method")`, which is also what any method not listed here gets.

Conversations: any C…/G… id is an ordinary channel of the workspace unless `share_channel(id)`
made it a Slack Connect channel; a D… id is `channel_not_found` (a DM the bot is not part of)
unless `add_im(id, user)` made it that user's direct message with the bot. User groups exist once
`set_usergroup(id, [users])` defines them.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any
from collections.abc import Callable
from urllib.parse import parse_qsl

BOT_TOKEN = "xoxb-test"
APP_TOKEN = "xapp-1-A0DOCENT-1-test"  # app-level token: only for apps.connections.open (Socket Mode)
BOT_USER = "UDOCENT"
BOT_ID = "BDOCENT"
TEAM = "T0ACME"
JSON_FIELDS = ("blocks", "attachments", "view", "metadata")  # JSON-encoded when sent as form fields


@dataclass
class Call:
    method: str  # "chat.postMessage", or "response:<name>" for a response URL
    params: dict[str, Any]
    token: str | None = None
    at: float = field(default_factory=time.monotonic)
    status: int = 200  # the HTTP status it was answered with (429 when rate-limited)


@dataclass
class Scripted:
    """A reply given instead of the normal one: HTTP status, headers and JSON body."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.tokens = {BOT_TOKEN}
        self.failures: dict[str, str] = {}
        self.scripted: dict[str, list[Scripted]] = {}  # method → replies for its next calls, in order
        self.conversations: dict[str, dict[str, Any]] = {}  # channel id → conversations.info fields
        self.usergroups: dict[str, list[str]] = {}  # user-group id → member user ids
        self.socket_mode_url: Callable[[], str] | None = None  # a fresh WebSocket URL per apps.connections.open
        self.homes: dict[str, dict[str, Any]] = {}  # user id → the last Home view published for them
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, ts) → the message as it stands
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (channel, thread ts) → its messages
        self.views: dict[str, dict[str, Any]] = {}  # view id → a modal as it stands (views.open, views.update)
        self._changed = threading.Condition()
        self._ts = count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-slack", daemon=True)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/response/{name}"

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def fail(self, method: str, error: str) -> None:
        self.failures[method] = error

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next `times` calls of `method` are rate-limited, as Slack answers them."""
        reply = Scripted(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)})
        self._script(method, [reply] * times)

    def server_error(self, method: str, times: int = 1, status: int = 500) -> None:
        """The next `times` calls of `method` fail with HTTP `status` (a 5xx)."""
        self._script(method, [Scripted(status, {"ok": False, "error": "internal_error"})] * times)

    def _script(self, method: str, replies: list[Scripted]) -> None:
        with self._changed:
            self.scripted.setdefault(method, []).extend(replies)

    def scripted_reply(self, method: str) -> Scripted | None:
        with self._changed:
            queue = self.scripted.get(method)
            return queue.pop(0) if queue else None

    def share_channel(self, channel: str, **fields: Any) -> None:
        """Make `channel` a Slack Connect channel (shared with another organisation)."""
        self.conversations[channel] = {"is_channel": True, "is_shared": True, "is_ext_shared": True,
                                       "is_org_shared": False, **fields}

    def add_im(self, channel: str, user: str) -> None:
        """Make `channel` the direct message between `user` and the bot."""
        self.conversations[channel] = {"is_im": True, "user": user, "is_ext_shared": False, "is_shared": False}

    def set_usergroup(self, group: str, users: list[str]) -> None:
        self.usergroups[group] = list(users)

    def add_thread(self, channel: str, thread_ts: str, messages: list[dict[str, Any]]) -> None:
        """A thread `conversations.replies` returns: its parent message first, then the replies."""
        self.threads[(channel, thread_ts)] = [dict(m) for m in messages]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        with self._changed:
            return self.messages.get((channel, ts))

    # -- reading what happened -----------------------------------------------------------------

    def calls_to(self, method: str, **match: Any) -> list[Call]:
        """Recorded calls of `method` whose params include every `match` item."""
        with self._changed:
            calls = list(self.calls)
        return [c for c in calls if c.method == method and all(c.params.get(k) == v for k, v in match.items())]

    def wait_for(self, condition: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Block until `condition()` is truthy (re-checked on every recorded call); returns its value."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                value = condition()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout}s; calls so far: {[c.method for c in self.calls]}")
                self._changed.wait(min(remaining, 0.2))

    def record(self, call: Call) -> None:
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    # -- answering -----------------------------------------------------------------------------

    def answer(self, method: str, params: dict, token: str | None) -> dict:
        if method == "apps.connections.open":
            if token in self.tokens:
                return {"ok": False, "error": "not_allowed_token_type"}  # a bot token, not an app token
            if token != APP_TOKEN or self.socket_mode_url is None:
                return {"ok": False, "error": "invalid_auth"}
            return {"ok": True, "url": self.socket_mode_url()}
        if method == "auth.test":
            if token is None:
                return {"ok": False, "error": "not_authed"}
        if token not in self.tokens:
            return {"ok": False, "error": "invalid_auth"}
        if method in self.failures:
            return {"ok": False, "error": self.failures[method]}
        if method == "auth.test":
            return {"ok": True, "url": "https://acme.slack.com/", "team": "Acme", "user": "docent", "team_id": TEAM,
                    "user_id": BOT_USER, "bot_id": BOT_ID, "is_enterprise_install": False}
        if method in ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream",
                      "chat.delete"):
            return self.chat(method, params)
        if method == "views.publish":
            view = params.get("view") or {}
            if view.get("type") != "home" or not params.get("user_id"):
                return {"ok": False, "error": "invalid_arguments"}
            if len(view.get("blocks") or []) > 100:
                return {"ok": False, "error": "invalid_arguments",
                        "response_metadata": {"messages": ["[ERROR] must be less than 101 items [json-pointer:/view/blocks]"]}}
            published = {**view, "id": f"V{next(self._ts):08d}", "team_id": TEAM, "state": {"values": {}},
                         "hash": "1700000000.abcdef", "app_id": "A0DOCENT", "bot_id": BOT_ID}
            with self._changed:
                self.homes[params["user_id"]] = published
            return {"ok": True, "view": published}
        if method in ("assistant.threads.setStatus", "assistant.threads.setSuggestedPrompts",
                      "assistant.threads.setTitle"):
            needs_thread = method != "assistant.threads.setSuggestedPrompts"
            if not params.get("channel_id") or (needs_thread and not params.get("thread_ts")):
                return {"ok": False, "error": "invalid_arguments"}
            return {"ok": True}
        if method == "conversations.replies":
            thread = self.threads.get((params.get("channel") or "", params.get("ts") or ""))
            if thread is None:
                return {"ok": False, "error": "thread_not_found"}
            limit = int(params.get("limit") or 1000)
            return {"ok": True, "messages": thread[:limit], "has_more": len(thread) > limit,
                    "response_metadata": {"next_cursor": ""}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self.next_ts()}
        if method == "reactions.add":
            return {"ok": True}
        if method == "chat.getPermalink":
            channel, ts = params.get("channel") or "", params.get("message_ts") or ""
            if not channel or not ts:
                return {"ok": False, "error": "invalid_arguments"}
            return {"ok": True, "channel": channel,
                    "permalink": f"https://acme.slack.com/archives/{channel}/p{ts.replace('.', '')}"}
        if method == "conversations.info":
            return self.conversation_info(params.get("channel") or "")
        if method == "usergroups.list":
            with_users = str(params.get("include_users", "")).lower() in ("1", "true")
            groups = [{"id": g, "team_id": TEAM, "handle": g.lower(), "name": g, "user_count": len(users),
                       **({"users": list(users)} if with_users else {})} for g, users in self.usergroups.items()]
            return {"ok": True, "usergroups": groups}
        if method == "usergroups.users.list":
            group = params.get("usergroup") or ""
            if group not in self.usergroups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": list(self.usergroups[group])}
        if method == "views.open":
            view = dict(params.get("view") or {})
            view.update({"id": f"V{next(self._ts):08d}", "team_id": TEAM, "state": {"values": {}},
                         "hash": "1700000000.abcdef", "app_id": "A0DOCENT", "bot_id": BOT_ID})
            with self._changed:
                self.views[view["id"]] = view
            return {"ok": True, "view": view}
        if method == "views.update":
            with self._changed:
                if params.get("view_id") not in self.views:
                    return {"ok": False, "error": "not_found"}
                view = {**dict(params.get("view") or {}), "id": params["view_id"], "team_id": TEAM,
                        "state": {"values": {}}, "hash": "1700000000.abcdef", "app_id": "A0DOCENT", "bot_id": BOT_ID}
                self.views[params["view_id"]] = view
            return {"ok": True, "view": view}
        return {"ok": False, "error": "unknown_method"}

    def chat(self, method: str, params: dict) -> dict:
        """Messages: posted, streamed (start, append, stop), updated and deleted, kept in `messages`."""
        channel, ts = params.get("channel") or "", params.get("ts") or ""
        with self._changed:
            current = self.messages.get((channel, ts))
            if method == "chat.update" and current is None:
                # a message the tests made up (e.g. a click on a message never posted here): kept lenient
                current = self.messages[(channel, ts)] = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "ts": ts}
            if method in ("chat.appendStream", "chat.stopStream", "chat.delete") and current is None:
                return {"ok": False, "error": "message_not_found"}
            if method in ("chat.appendStream", "chat.stopStream") and not current.get("streaming"):
                return {"ok": False, "error": "message_not_in_streaming_state"}
            if method == "chat.startStream" and not params.get("thread_ts"):
                return {"ok": False, "error": "invalid_arguments"}
            if method == "chat.startStream" and channel[:1] in ("C", "G") and not (
                    params.get("recipient_user_id") and params.get("recipient_team_id")):
                return {"ok": False, "error": "invalid_arguments"}  # required when streaming to a channel
            if method == "chat.delete":
                del self.messages[(channel, ts)]
                return {"ok": True, "channel": channel, "ts": ts}
            streamed = (params.get("markdown_text") or "") + "".join(
                c.get("text", "") for c in params.get("chunks") or [] if c.get("type") == "markdown_text")
            if method in ("chat.postMessage", "chat.startStream"):
                ts = self.next_ts()
                current = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "ts": ts, "text": "", "blocks": []}
                if params.get("thread_ts"):
                    current["thread_ts"] = params["thread_ts"]
                self.messages[(channel, ts)] = current
            if method in ("chat.postMessage", "chat.update"):
                current.update(text=params.get("text", ""), blocks=params.get("blocks", []))
            else:
                current["text"] += streamed
                current["streaming"] = method != "chat.stopStream"
                if params.get("blocks"):
                    current["blocks"] = params["blocks"]
            message = {k: v for k, v in current.items() if k != "streaming"}
        reply = {"ok": True, "channel": channel, "ts": ts, "message": message}
        if method == "chat.update":
            reply["text"] = params.get("text", "")
        return reply

    def conversation_info(self, channel: str) -> dict:
        if channel in self.conversations:
            return {"ok": True, "channel": {"id": channel, **self.conversations[channel]}}
        if channel[:1] in ("C", "G"):
            return {"ok": True, "channel": {"id": channel, "is_channel": True, "is_private": channel.startswith("G"),
                                            "is_shared": False, "is_ext_shared": False, "is_org_shared": False}}
        return {"ok": False, "error": "channel_not_found"}

    def next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"


def _handler_for(slack: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self._serve()

        def do_GET(self) -> None:  # noqa: N802
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            params = _parse(self.headers.get("Content-Type") or "", self.rfile.read(length))
            path, _, query = self.path.partition("?")
            params.update(dict(parse_qsl(query)))
            auth = self.headers.get("Authorization") or ""
            token = auth.removeprefix("Bearer ").strip() or params.pop("token", None)
            if path.startswith("/response/"):
                slack.record(Call(method="response:" + path.removeprefix("/response/"), params=params))
                self._send(200, b"ok", "text/plain")
                return
            if not path.startswith("/api/"):
                self._send(404, b"not found", "text/plain")
                return
            method = path.removeprefix("/api/")
            scripted = slack.scripted_reply(method)
            if scripted is not None:
                slack.record(Call(method=method, params=params, token=token, status=scripted.status))
                self._send(scripted.status, json.dumps(scripted.body).encode(), "application/json; charset=utf-8",
                           scripted.headers)
                return
            reply = slack.answer(method, params, token)
            slack.record(Call(method=method, params=params, token=token))
            self._send(200, json.dumps(reply).encode(), "application/json; charset=utf-8")

        def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args) -> None:
            pass

    return Handler


def _parse(content_type: str, raw: bytes) -> dict[str, Any]:
    if not raw:
        return {}
    if "json" in content_type:
        try:
            return json.loads(raw)
        except ValueError:
            return {"_unparsed": raw.decode("utf-8", "replace")}
    params: dict[str, Any] = dict(parse_qsl(raw.decode("utf-8")))
    for name in JSON_FIELDS:
        if isinstance(params.get(name), str):
            try:
                params[name] = json.loads(params[name])
            except ValueError:
                pass
    return params
