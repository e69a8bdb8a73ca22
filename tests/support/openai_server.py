"""A tiny local server that speaks the OpenAI chat-completions wire format, for LLM tests.

It is a real HTTP server (stdlib `http.server` in a thread, bound to 127.0.0.1 on a free port),
so the client under test goes through its real HTTP stack: the request is serialised, sent,
parsed here, and the reply is parsed back by the OpenAI SDK.

Every request body is recorded in `requests`. What the server does next is set per test:

    server.reply("Annual leave is 25 days [1].")   # 200 with this content (the default)
    server.delay = 2.0                             # sleep before replying (to trip a timeout)
    server.fail(500)                               # HTTP error status with a JSON error body
    server.garbage()                               # 200 with a body that is not JSON
    server.respond(lambda body: ...)               # 200 with the content this returns for the request's body

`faithful` and `lead_lines` answer as a careful model would: with the prompt's own lead sentences,
each cited as the prompt cites it (benchmarks/llm_grounding.py's faithful stand-in).

A request with `"stream": true` is answered as OpenAI streams: `text/event-stream`, one
`data: {chat.completion.chunk}` event per piece of the content (`stream_pieces`, by default
word by word), then `data: [DONE]`; `stream_pause` sleeps between pieces, and
`stream_fail_after = n` cuts the connection after n pieces (a model server dying mid-answer).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHAT_PATH = "/v1/chat/completions"


class FakeOpenAI:
    """A running OpenAI-compatible endpoint; use `base_url` as the client's api_base."""

    def __init__(self) -> None:
        self.requests: list[dict] = []  # each request's parsed JSON body, in order
        self.paths: list[str] = []
        self.content: str | None = "OK"
        self.status = 200
        self.raw_body: bytes | None = None  # sent as-is instead of a completion, if set
        self.content_type = "application/json"
        self.delay = 0.0
        self.stream_pieces: list[str] | None = None  # how a streamed reply is cut; None: word by word
        self.stream_pause = 0.0
        self.stream_fail_after: int | None = None
        self.responder: Callable[[dict], str | None] | None = None  # the content, from the request's body
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # do not wait for a handler still sleeping
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- behaviour, set per test ---------------------------------------------------------------

    def reply(self, content: str | None) -> None:
        self.status, self.raw_body, self.content_type, self.content = 200, None, "application/json", content
        self.responder = None

    def respond(self, responder: Callable[[dict], str | None]) -> None:
        """Answer each request with `responder(body)`: a reply written from the prompt."""
        self.reply(None)
        self.responder = responder

    def fail(self, status: int = 500) -> None:
        self.status, self.content_type = status, "application/json"
        self.raw_body = json.dumps(
            {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}}
        ).encode()

    def garbage(self, content_type: str = "application/json",
                body: bytes = b"<html><body>502 Bad Gateway: upstream went away</body></html>") -> None:
        """A 200 whose body is not JSON (by default even though it claims to be JSON)."""
        self.status, self.content_type, self.raw_body = 200, content_type, body

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # wakes any handler still sleeping on `delay`
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def chunk(self, model: str, delta: dict, finish_reason: str | None) -> dict:
        return {"id": f"chatcmpl-test{len(self.requests)}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}

    def completion(self, model: str, content: str | None) -> dict:
        return {
            "id": f"chatcmpl-test{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
        }


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            server.paths.append(self.path)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            server.requests.append(body)
            content = server.responder(body) if server.responder is not None else server.content
            if server.delay and server._closing.wait(server.delay):
                return  # the server is shutting down; the client gave up long ago
            if self.path != CHAT_PATH:
                self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
            elif server.raw_body is not None:
                self._send(server.status, server.raw_body, server.content_type)
            elif body.get("stream"):
                self._stream(body.get("model", "?"), content)
            else:
                self._send(server.status, json.dumps(server.completion(body.get("model", "?"), content)).encode())

        def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and hung up

        def _stream(self, model: str, content: str | None) -> None:
            content = content or ""
            pieces = server.stream_pieces if server.stream_pieces is not None else re.findall(r"\S+\s*|\s+", content)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for i, piece in enumerate([None, *pieces]):  # first event: the role, as OpenAI sends it
                    if server.stream_fail_after is not None and i > server.stream_fail_after:
                        self.close_connection = True
                        return
                    delta = {"role": "assistant", "content": ""} if piece is None else {"content": piece}
                    self._event(server.chunk(model, delta, None))
                    if server.stream_pause:
                        time.sleep(server.stream_pause)
                self._event(server.chunk(model, {}, "stop"))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _event(self, payload: dict) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

        def log_message(self, format: str, *args) -> None:  # keep test output quiet
            pass

    return Handler


LEAD_HEADER = "Sentences from the excerpts that seem to answer the question:"


def lead_lines(body: dict) -> list[str]:
    """The lead sentences of a request's prompt, each with its `[n]` ("- text [n]" lines)."""
    prompt = body["messages"][-1]["content"]
    if LEAD_HEADER not in prompt:
        return []
    block = prompt.split(LEAD_HEADER, 1)[1].split("\n\n", 1)[0]
    return [line[2:].strip() for line in block.splitlines() if line.startswith("- ")]


def faithful(body: dict) -> str:
    """What a faithful model answers: the prompt's lead sentences with their citations, else "not found"."""
    lines = lead_lines(body)
    return " ".join(lines) if lines else "I could not find this in the knowledge base."
