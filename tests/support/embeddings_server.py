"""A local embedding service speaking OpenAI's `/v1/embeddings` wire format (as OpenAI, vLLM,
TEI and Ollama do), computing its vectors with a real model — by default the bundled one, the
`TorchEmbedder` the local path uses — so a test can compare the two paths number for number.

A real HTTP server (stdlib `ThreadingHTTPServer` on 127.0.0.1, a free port), so the client
under test goes through its real HTTP stack. What it does is set per test:

    server.script = [(429, {"Retry-After": "1"}), (500, {})]   # the next replies, then 200s
    server.dimensions = 768                                    # pad vectors to the wrong size
    server.delay = 0.2                                         # seconds per request (to overlap)

It records every request (`requests`: body and headers) and the most requests it had in flight
at once (`peak_in_flight`).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EMBEDDINGS_PATH = "/v1/embeddings"


class FakeEmbeddings:
    def __init__(self, embedder=None) -> None:
        from indexing.vectors.embedding import TorchEmbedder

        self.embedder = embedder or TorchEmbedder()
        self.requests: list[dict] = []
        self.script: list[tuple[int, dict]] = []
        self.dimensions: int | None = None
        self.delay = 0.0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()  # one encode at a time, as a one-model server would
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-embeddings", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeEmbeddings:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def texts_seen(self) -> int:
        return sum(len(r["body"]["input"]) for r in self.requests if isinstance(r["body"].get("input"), list))

    def _answer(self, body: dict) -> tuple[int, dict, dict]:
        with self._lock:
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            status, headers = scripted
            return status, headers, {"error": {"message": f"scripted {status}", "type": "test"}}
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, {}, {"error": {"message": "input must be a string or a list of strings", "type": "invalid_request_error"}}
        if self.delay:
            time.sleep(self.delay)
        with self._model_lock:
            vectors = self.embedder.embed_texts(texts)
        if self.dimensions:
            vectors = [list(v) + [0.0] * (self.dimensions - len(v)) for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)]
        data.reverse()  # the wire format orders by "index", not by position: the client must too
        return 200, {}, {"object": "list", "data": data, "model": body.get("model"),
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}}


def _handler_for(server: FakeEmbeddings):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with server._lock:
                server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                server.in_flight += 1
                server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            try:
                if self.path != EMBEDDINGS_PATH:
                    status, headers, payload = 404, {}, {"error": {"message": "not found"}}
                else:
                    status, headers, payload = server._answer(body)
            finally:
                with server._lock:
                    server.in_flight -= 1
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args) -> None:
            pass

    return Handler


def main() -> None:
    """`python tests/support/embeddings_server.py PORT`: serve until killed (for benchmarks, in a process
    of its own, as a real service would be)."""
    import sys

    server = FakeEmbeddings()
    server._httpd.server_close()
    server._httpd = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _handler_for(server))
    server._httpd.daemon_threads = True
    server.embedder.embed_query("load the model before the first request")
    print("ready", flush=True)
    server._httpd.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
