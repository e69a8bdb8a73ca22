"""Vectors from an embedding service that speaks OpenAI's `/v1/embeddings` wire format — OpenAI
itself, vLLM, Hugging Face TEI and Ollama all do — instead of the bundled model (`KB_EMBED_URL`).

An `indexing.vectors.embedding.Embedder` (`embed_texts`, `embed_unindexed`, `embed_query`, `name`,
`texts_embedded`) like the bundled model, so the sync, its vector cache and retrieval do not know
which one they have:

- texts go out in batches of `batch_size`, up to `in_flight` requests at a time (a service
  embeds faster with several requests queued; Docent's own CPU is then free);
- a rate-limited (429) or failing (5xx, connection lost, timeout) request is retried with
  exponential backoff, honouring the service's `Retry-After`; other errors fail at once, with
  the service's message (`indexing.vectors.service_calls`, shared with the rerank service);
- the vectors' size is checked against the index's (`EMBED_DIM`) on the first reply: a model of
  another size cannot share an index built for this one, and says so in one line.

`name` is the model name sent to the service. It keys the vector cache and the registry's
"which model embedded this" hash, so a service that serves the bundled model under its usual name
("all-MiniLM-L6-v2") reuses vectors the local path cached, and any other name re-embeds.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from indexing.vectors.service_calls import ServiceError, http_client, post_json

if TYPE_CHECKING:
    import httpx


class EmbeddingServiceError(RuntimeError):
    """The embedding service refused, failed after its retries, or sent vectors that cannot be used."""


class EmbeddingDimensionError(EmbeddingServiceError):
    """The service's vectors are not the size this index holds: a configuration mistake, not an outage."""


class ServiceEmbedder:
    def __init__(self, url: str, model: str, api_key: str | None = None, *, dimensions: int, batch_size: int = 64,
                 in_flight: int = 4, timeout: float = 60.0, retries: int = 5, backoff: float = 0.5) -> None:
        self.url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/embeddings") else "/embeddings")
        self.model = model
        self.api_key = api_key
        self.dimensions = dimensions
        self.batch_size = max(1, batch_size)
        self.in_flight = max(1, in_flight)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.texts_embedded = 0
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.model

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors in the order of `texts`, `in_flight` batches at a time. Texts are batched
        shortest first (by characters), as the local path does by word-pieces: a service pads each
        batch to its longest text, so batches of like lengths cost it less."""
        vectors = self._embed(texts)
        with self._lock:
            self.texts_embedded += len(texts)
        return vectors

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [[texts[i] for i in order[start : start + self.batch_size]]
                   for start in range(0, len(order), self.batch_size)]
        if len(batches) == 1 or self.in_flight == 1:
            results = [self._request(batch) for batch in batches]
        else:
            with ThreadPoolExecutor(max_workers=min(self.in_flight, len(batches)), thread_name_prefix="docent-embed") as pool:
                results = list(pool.map(self._request, batches))
        vectors: list[list[float]] = [[] for _ in texts]
        for i, vector in zip(order, (v for result in results for v in result)):
            vectors[i] = vector
        return vectors

    def embed_unindexed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts that are never stored (an answer's candidate sentences): not counted
        in `texts_embedded`, which a sync reports as what it embedded."""
        return self._embed(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._request([text])[0]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    # -- one request, with retries ---------------------------------------------------------------

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = http_client(self.api_key, self.timeout, self.in_flight)
            return self._client

    def _request(self, batch: list[str]) -> list[list[float]]:
        body = {"model": self.model, "input": batch, "encoding_format": "float"}
        try:
            response = post_json(self._http(), self.url, body, what="embedding service", retries=self.retries,
                                 backoff=self.backoff)
        except ServiceError as exc:
            raise EmbeddingServiceError(str(exc)) from None
        return self._vectors(response, len(batch))

    def _vectors(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingServiceError(f"the embedding service at {self.url} sent no usable embeddings ({exc!r})") from None
        if len(vectors) != expected:
            raise EmbeddingServiceError(f"the embedding service sent {len(vectors)} vectors for {expected} texts")
        sizes = {len(v) for v in vectors}
        if sizes != {self.dimensions}:
            raise EmbeddingDimensionError(
                f"model {self.model!r} at {self.url} gives {', '.join(map(str, sorted(sizes)))}-dimensional vectors; "
                f"this index holds {self.dimensions}-dimensional ones (use a model of that size, or a fresh KB_HOME "
                f"and database)")
        return vectors

