"""A local rerank service speaking both wire formats rerank servers use, scoring with a real model
(any `indexing.search.rerank.Reranker`, e.g. a CrossEncoder folder), so a test can compare the service
path with the local one number for number:

- `POST /rerank` — Hugging Face TEI: `{"query", "texts"}` → `[{"index", "score"}]`, best first;
- `POST /v2/rerank` — Cohere (as Jina, vLLM, Infinity): `{"model", "query", "documents", "top_n"}`
  → `{"results": [{"index", "relevance_score"}]}`, best first.

Each path refuses the other's body with 422, as the real servers' validation does. A real HTTP
server (stdlib `ThreadingHTTPServer` on 127.0.0.1, a free port). Set per test:

    server.script = [(429, {"Retry-After": "1"}), (500, {})]   # the next replies, then 200s
    server.delay = 1.0                                         # seconds before each reply
    server.reply = b'[{"index": 0, "score": NaN}]'             # this body (bytes) for every 200
    server.drip = 0.1                                          # the body one byte per 0.1 s
    server.echo = True                                         # error bodies echo the request's headers

It records every request (`requests`: path, body and headers) and every reply the client cut off
before it was sent whole (`cut_off`: seconds from the request to the broken connection).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TEI_PATH, COHERE_PATH = "/rerank", "/v2/rerank"


class FakeRerank:
    def __init__(self, reranker) -> None:
        self.reranker = reranker
        self.requests: list[dict] = []
        self.script: list[tuple[int, dict]] = []
        self.delay = 0.0
        self.reply: bytes | None = None
        self.drip = 0.0
        self.echo = False
        self.cut_off: list[float] = []
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()  # one forward pass at a time, as a one-model server would
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-rerank", daemon=True)

    def url(self, path: str = TEI_PATH) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> FakeRerank:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, path: str, body: dict) -> tuple[int, dict, object]:
        with self._lock:
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            status, headers = scripted
            error = f"scripted {status}" + (f"; you sent {json.dumps(self.requests[-1]['headers'])}" if self.echo else "")
            return status, headers, {"error": error, "error_type": "test"}
        if path == TEI_PATH:
            texts = body.get("texts")
            if not isinstance(body.get("query"), str) or not isinstance(texts, list):
                return 422, {}, {"error": "Failed to deserialize the JSON body: missing field `texts`",
                                 "error_type": "Validation"}
        elif path == COHERE_PATH:
            texts = body.get("documents")
            if not isinstance(body.get("query"), str) or not isinstance(texts, list) or not body.get("model"):
                return 422, {}, {"message": "model, query and documents are required"}
        else:
            return 404, {}, {"error": "not found"}
        if self.delay:
            time.sleep(self.delay)
        if self.reply is not None:
            return 200, {}, self.reply
        with self._model_lock:
            scores = self.reranker.score(body["query"], texts)
        ranked = sorted(range(len(texts)), key=lambda i: -scores[i])
        if path == TEI_PATH:
            return 200, {}, [{"index": i, "score": scores[i]} for i in ranked]
        top_n = int(body.get("top_n") or len(texts))
        return 200, {}, {"id": "test", "results": [{"index": i, "relevance_score": scores[i]} for i in ranked[:top_n]],
                         "meta": {"billed_units": {"search_units": 1}}}


def _handler_for(server: FakeRerank):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with server._lock:
                server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            started = time.monotonic()
            status, headers, payload = server._answer(self.path, body)
            raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if server.drip and status == 200:
                    for k in range(len(raw)):
                        self.wfile.write(raw[k : k + 1])
                        self.wfile.flush()
                        time.sleep(server.drip)
                else:
                    self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (its budget ran out)
                with server._lock:
                    server.cut_off.append(time.monotonic() - started)

        def log_message(self, *args) -> None:
            pass

    return Handler


def main() -> None:
    """`python tests/support/rerank_server.py PORT MODEL_FOLDER`: serve a CrossEncoder folder until killed
    (for benchmarks, in a process of its own, as a real service would be)."""
    import sys

    from indexing.search.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(sys.argv[2])
    reranker.load()
    server = FakeRerank(reranker)
    server._httpd.server_close()
    server._httpd = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _handler_for(server))
    server._httpd.daemon_threads = True
    print("ready", flush=True)
    server._httpd.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
