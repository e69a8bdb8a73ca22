"""The index as one object: database, chunk store, BM25, embedder and rerank stage, opened once per process."""

from __future__ import annotations

from sqlmodel import Session

from indexing.keyword.bm25 import Bm25Index
from indexing.config import IndexConfig
from indexing.storage.database import connect, database_url, safe_url
from indexing.vectors.embedding import Embedder, TorchEmbedder
from indexing.storage.migrations import migrate
from indexing.search.rerank import open_stage
from indexing.storage.store import ChunkStore


def make_embedder(config: IndexConfig) -> Embedder:
    """The bundled (or a local) sentence-transformers model, or an embedding service when
    `embed_url` is set (`indexing.vectors.embedding_service`); both embed lazily, on first use."""
    if config.embed_url:
        from indexing.vectors.embedding import EMBED_DIM
        from indexing.vectors.embedding_service import ServiceEmbedder

        assert config.embed_model is not None  # IndexConfig refuses an embed_url without the model's name
        return ServiceEmbedder(config.embed_url, config.embed_model, config.embed_api_key, dimensions=EMBED_DIM,
                               batch_size=config.embed_service_batch, in_flight=config.embed_in_flight)
    if config.embed_backend != "torch":
        from indexing.vectors.onnx_embedding import OnnxEmbedder

        return OnnxEmbedder(config.home, config.embed_model, config.embed_backend == "onnx-int8", config.embed_batch_size)
    return TorchEmbedder(config.embed_model, config.embed_batch_size)


class Index:
    """Open (creating if needed) Docent's index. Heavy parts (the model) load on first use."""

    def __init__(self, config: IndexConfig, embedder: Embedder | None = None) -> None:
        self.config = config
        config.home.mkdir(parents=True, exist_ok=True)
        self.url = database_url(config.database_url, config.home)
        self.engine = connect(self.url)
        migrate(self.engine)  # every Docent table, the bot's too (indexing.storage.migrations)
        self.store = ChunkStore(self.engine, self.url)
        self.bm25 = Bm25Index(config.home, self.engine, self.store)
        self.embedder: Embedder = embedder or make_embedder(config)
        self.rerank = open_stage(config.rerank)  # None when KB_RERANK is off; the model loads on first use

    @property
    def location(self) -> str:
        return safe_url(self.url)

    def session(self) -> Session:
        return Session(self.engine)

    def chunk_count(self) -> int:
        with self.session() as s:
            return self.store.count(s)

    def close(self) -> None:
        """Let go of every database connection: the vector store's two engines (psycopg2 and
        asyncpg), then ours (the same psycopg2 engine; disposing twice is harmless)."""
        self.store.close()
        self.engine.dispose()
        if self.rerank is not None:
            self.rerank.close()

