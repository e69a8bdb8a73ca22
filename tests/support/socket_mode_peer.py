"""A local Socket Mode peer: Slack's end of the WebSocket, for testing the bot in Socket Mode.

In Socket Mode the app calls `apps.connections.open` with its app-level token (answered by
`tests/slack_api_server.FakeSlack`, which hands out this peer's `ws://` URL), opens the
WebSocket, receives `{"type": "hello"}`, and then gets every event, slash command and
interaction as an envelope; it must acknowledge each envelope by sending back its
`envelope_id` (with a `payload` for a slash command's immediate reply). This peer speaks that
wire format over a real WebSocket (aiohttp, on 127.0.0.1 in a thread), so the bot's real
`SocketModeHandler` and slack_sdk's WebSocket client are what is exercised:

    peer = SocketModePeer().start()
    slack.socket_url = peer.url
    ...connect the app...
    envelope_id = peer.send("events_api", event_callback)
    ack = peer.wait_ack(envelope_id)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from typing import Any

from aiohttp import WSMsgType, web


class SocketModePeer:
    def __init__(self) -> None:
        self.acks: dict[str, dict[str, Any]] = {}  # envelope_id → the app's acknowledgement
        self.connections = 0  # WebSockets opened by the app so far
        self._sockets: list[web.WebSocketResponse] = []
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="socket-mode-peer", daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket={uuid.uuid4()}&app_id=A0DOCENT"

    def start(self) -> SocketModePeer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # -- what Slack sends ----------------------------------------------------------------------

    def send(self, kind: str, payload: dict, *, accepts_response_payload: bool = False,
             retry_attempt: int = 0, retry_reason: str = "") -> str:
        """Deliver one envelope ("events_api", "slash_commands", "interactive") on the newest
        open WebSocket; returns its envelope id. A retry is a new envelope with the same payload."""
        envelope_id = str(uuid.uuid4())
        envelope = {"envelope_id": envelope_id, "type": kind, "payload": payload,
                    "accepts_response_payload": accepts_response_payload,
                    "retry_attempt": retry_attempt, "retry_reason": retry_reason}
        self.wait_for(lambda: self._open_sockets())
        socket = self._open_sockets()[-1]
        asyncio.run_coroutine_threadsafe(socket.send_str(json.dumps(envelope)), self._loop).result(timeout=10)
        return envelope_id

    def drop_connections(self) -> None:
        """Close every open WebSocket from Slack's side, as Slack does when it rotates them."""
        for socket in self._open_sockets():
            asyncio.run_coroutine_threadsafe(socket.close(), self._loop).result(timeout=10)

    # -- reading what happened -----------------------------------------------------------------

    def wait_ack(self, envelope_id: str, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait_for(lambda: self.acks.get(envelope_id), timeout)

    def wait_for(self, condition, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (value := condition()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout}s (acks so far: {list(self.acks)})")
                self._changed.wait(min(remaining, 0.2))
            return value

    def _open_sockets(self) -> list[web.WebSocketResponse]:
        return [s for s in self._sockets if not s.closed]

    # -- the server ----------------------------------------------------------------------------

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # aiohttp has no public accessor for port 0

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(autoping=True)  # answers the client's pings, as Slack does
        await socket.prepare(request)
        with self._changed:
            self._sockets.append(socket)
            self.connections += 1
            self._changed.notify_all()
        await socket.send_str(json.dumps({
            "type": "hello", "num_connections": len(self._open_sockets()),
            "debug_info": {"host": "applink-local", "approximate_connection_time": 18060},
            "connection_info": {"app_id": "A0DOCENT"},
        }))
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            if "envelope_id" in data:
                with self._changed:
                    self.acks[data["envelope_id"]] = data
                    self._changed.notify_all()
        return socket
