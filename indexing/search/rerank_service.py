"""Rerank scores from a service (`KB_RERANK_URL`, the full URL of its rerank endpoint), in either
of the two wire formats rerank servers speak:

- Hugging Face TEI: `POST /rerank {"query", "texts"}` → `[{"index", "score"}, …]`;
- Cohere (and Jina, vLLM, Infinity, which copy it): `{"model", "query", "documents", "top_n"}` →
  `{"results": [{"index", "relevance_score"}, …]}`.

`wire_format="auto"` (the default) tries the Cohere body first when a model name is set (those
services need one) and TEI's otherwise; a 400/404/405/422 reply tries the other, and the one that
worked is kept for the process. Replies are read by their shape, whichever body was sent.

Texts go out in batches of `batch` (TEI refuses more than its `--max-client-batch-size`, 32 by
default); `KB_RERANK_API_KEY` is sent as `Authorization: Bearer …`. Retries (429 honouring
`Retry-After`, 5xx, lost connections) are `indexing.vectors.service_calls`', bounded by the stage's
deadline (`indexing.search.rerank_base.deadline`): a retry that cannot finish within the budget is not tried,
and a reply still arriving at the deadline is cut off with its connection.

A reply is used only when it is exactly one finite score per text sent: every index an integer
(not a bool, not 1.0) from 0 to n-1, each once; every score a number (not "0.5", not NaN or
Infinity, which Python's JSON parser accepts and Postgres's JSON columns refuse); at most
`MAX_REPLY_BYTES`. Anything else is an error, and the stage serves the fused order and the gate
without it.
"""

from __future__ import annotations

import threading
import math
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from indexing.search.rerank_base import RerankTimeout, deadline
from indexing.vectors.service_calls import ServiceError, ServiceTimeout, http_client, post_json

if TYPE_CHECKING:
    import httpx

FORMATS = ("tei", "cohere")
_WRONG_FORMAT = frozenset({400, 404, 405, 422})  # the body's shape was refused: the other format may fit
MAX_REPLY_BYTES = 1 << 20  # 32 scores are ~1.5 KB; a megabyte is no reply to a rerank request


class RerankServiceError(RuntimeError):
    """The rerank service refused, failed after its retries, or sent scores that cannot be used."""


class ServiceReranker:
    workers = 4  # questions reranked at once (the service does the work)

    def __init__(self, url: str, model: str | None = None, api_key: str | None = None, *, wire_format: str = "auto",
                 batch: int = 32, timeout: float = 30.0, retries: int = 2, backoff: float = 0.05) -> None:
        if wire_format not in ("auto", *FORMATS):
            raise ValueError(f"KB_RERANK_FORMAT={wire_format!r}: expected auto, tei or cohere")
        self.url = url
        self.model = model
        self.api_key = api_key
        self.batch = max(1, batch)
        self.timeout = timeout  # without a stage deadline (benchmarks, direct calls)
        self.retries = retries
        self.backoff = backoff
        self.format = None if wire_format == "auto" else wire_format  # learnt from the first reply when auto
        self.name = f"service:{model or urlsplit(url).netloc}"
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores: list[float] = []
        for start in range(0, len(texts), self.batch):
            scores.extend(self._batch(query, texts[start : start + self.batch]))
        return scores

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = http_client(self.api_key, self.timeout, self.workers)
            return self._client

    def _batch(self, query: str, texts: list[str]) -> list[float]:
        formats = [self.format] if self.format else (["cohere", "tei"] if self.model else ["tei", "cohere"])
        for n, wire in enumerate(formats):
            try:
                response = post_json(self._http(), self.url, self._body(wire, query, texts), what="rerank service",
                                     retries=self.retries, backoff=self.backoff, deadline=deadline(),
                                     max_bytes=MAX_REPLY_BYTES)
            except ServiceTimeout as exc:
                raise RerankTimeout(str(exc)) from None
            except ServiceError as exc:
                if exc.status in _WRONG_FORMAT and n + 1 < len(formats):
                    continue
                raise RerankServiceError(str(exc)) from None
            scores = _scores(response, len(texts), self.url)
            self.format = wire
            return scores
        raise AssertionError("unreachable")

    def _body(self, wire: str, query: str, texts: list[str]) -> dict[str, object]:
        if wire == "tei":
            return {"query": query, "texts": texts, **({"model": self.model} if self.model else {})}
        return {"model": self.model, "query": query, "documents": texts, "top_n": len(texts)}


def _scores(response: httpx.Response, expected: int, url: str) -> list[float]:
    """Scores in the order the texts were sent, from either format (both list results by `index`,
    best first, not in the order sent); anything but one finite score per text is refused."""
    try:
        payload = response.json()
        if isinstance(payload, dict) and "results" in payload:
            items = [(r["index"], r["relevance_score"]) for r in payload["results"]]
        else:
            items = [(r["index"], r["score"]) for r in payload]
    except (ValueError, KeyError, TypeError) as exc:
        raise RerankServiceError(f"the rerank service at {url} sent no usable scores ({type(exc).__name__}: {exc})") from None
    by_index: dict[int, float] = {}
    for index, score in items:
        if type(index) is not int or not 0 <= index < expected or index in by_index:
            raise RerankServiceError(f"the rerank service at {url} sent index {index!r}: expected each of "
                                     f"0–{expected - 1} once, as an integer")
        if type(score) not in (int, float) or not math.isfinite(score):
            raise RerankServiceError(f"the rerank service at {url} sent score {score!r}: expected a finite number")
        by_index[index] = float(score)
    if len(by_index) != expected:
        raise RerankServiceError(f"the rerank service at {url} sent scores for {len(by_index)} of {expected} texts")
    return [by_index[i] for i in range(expected)]
