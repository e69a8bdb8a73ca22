"""The index as one object: database, chunk store, BM25, embedder and rerank stage, opened once per process."""

from __future__ import annotations

from sqlmodel import Session

from indexing.keyword.bm25 import Bm25Index
from indexing.config import IndexConfig
from indexing.storage.database import connect, database_url, safe_url
from indexing.storage import standby
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
        from indexing.vectors.onnx_embedding import OnnxEmbedder, default_model_cache

        return OnnxEmbedder(config.model_cache or default_model_cache(), config.embed_model,
                            config.embed_backend == "onnx-int8", config.embed_batch_size)
    return TorchEmbedder(config.embed_model, config.embed_batch_size)


def describe_embedding(embedder: Embedder) -> str:
    """How questions and pages become vectors, for `kb status`: the service, or the local model,
    how it runs and — under ONNX Runtime — which export file it loads, or that the first
    embedding will make it. Read off the embedder `make_embedder` chose, which has loaded no model
    yet (the export's key hashes the weights: ~0.1 s)."""
    from indexing.vectors.embedding_service import ServiceEmbedder
    from indexing.vectors.onnx_embedding import OnnxEmbedder, export_path

    if isinstance(embedder, ServiceEmbedder):
        return f"{embedder.model} from the embedding service at {embedder.url}"
    if not isinstance(embedder, (TorchEmbedder, OnnxEmbedder)):
        return embedder.name  # one a caller built itself (benchmarks hand in their own)
    name = embedder.model_path or "all-MiniLM-L6-v2 (bundled)"
    if isinstance(embedder, TorchEmbedder):
        return f"{name} under torch (sentence-transformers)"
    path = export_path(embedder.model_dir, embedder.cache, embedder.quantized)
    how = "ONNX Runtime, int8" if embedder.quantized else "ONNX Runtime"
    if path.is_file():
        return f"{name} under {how}, from {path}"
    return f"{name} under {how}, not exported yet: the first embedding exports it to {path} (~10 s, once)"


class Index:
    """Open (creating if needed) Docent's index. Heavy parts (the model) load on first use.

    Two engines, the same one unless `database_read_url` is set: `engine` on the primary (every
    write, migrations, advisory locks, LISTEN/NOTIFY, and the bot's own tables), `read_engine` on
    the server questions read the index from — a hot standby (`indexing.storage.standby`).
    `session()` is the primary's, `read_session()` the reads'."""

    def __init__(self, config: IndexConfig, embedder: Embedder | None = None) -> None:
        self.config = config
        config.home.mkdir(parents=True, exist_ok=True)
        self.url = database_url(config.database_url, config.home)
        self.engine = connect(self.url)
        self.read_url, self.read_engine = self.url, self.engine
        try:
            migrate(self.engine)  # the index's tables (indexing.storage.migrations); the bot's are bot.migrations'
            if config.database_read_url:
                self.read_url = database_url(config.database_read_url, config.home, setting=standby.SETTING)
                self.read_engine = standby.connect_standby(self.read_url, self.engine)
        except BaseException:
            self.engine.dispose()
            raise
        self.store = ChunkStore(self.engine, self.url, reads=(self.read_engine, self.read_url))
        self.bm25 = Bm25Index(config.home, self.engine, self.store, read_engine=self.read_engine)
        self.embedder: Embedder = embedder or make_embedder(config)
        self.rerank = open_stage(config.rerank)  # None when KB_RERANK is off; the model loads on first use

    @property
    def location(self) -> str:
        """The primary's URL, password hidden."""
        return safe_url(self.url)

    def reads(self) -> standby.ReadServer:
        """Which server answers this process's reads (and how far a standby is behind)."""
        return standby.read_server(self.engine, self.read_engine, self.read_url)

    def session(self) -> Session:
        """A session on the primary: for writes, and reads that must see them (the bot's records)."""
        return Session(self.engine)

    def read_session(self) -> Session:
        """A session on the server questions read from (a hot standby, else the primary): only reads."""
        return Session(self.read_engine)

    def chunk_count(self) -> int:
        with self.read_session() as s:
            return self.store.count(s)

    def close(self) -> None:
        """Let go of every database connection: the keyword leg's follower, the vector stores'
        engines (psycopg2 and asyncpg), then ours (disposing twice is harmless)."""
        self.bm25.close()
        self.store.close()
        self.engine.dispose()
        self.read_engine.dispose()
        if self.rerank is not None:
            self.rerank.close()

