"""The index as one object: database, chunk store, BM25 and embedder, opened once per process."""

from __future__ import annotations

from sqlmodel import Session, SQLModel, func, select

from indexing import registry
from indexing.bm25 import Bm25Index
from indexing.config import IndexConfig
from indexing.database import connect, database_url, safe_url
from indexing.embedding import Embedder
from indexing.migrations import migrate
from indexing.store import ChunkStore


def make_embedder(config: IndexConfig):
    """The bundled (or a local) sentence-transformers model, or an embedding service when
    `embed_url` is set (`indexing.embedding_service`); both embed lazily, on first use."""
    if config.embed_url:
        from indexing.embedding import EMBED_DIM
        from indexing.embedding_service import ServiceEmbedder

        return ServiceEmbedder(config.embed_url, config.embed_model, config.embed_api_key, dimensions=EMBED_DIM,
                               batch_size=config.embed_service_batch, in_flight=config.embed_in_flight)
    if config.embed_backend != "torch":
        from indexing.onnx_embedding import OnnxEmbedder

        return OnnxEmbedder(config.home, config.embed_model, config.embed_backend == "onnx-int8", config.embed_batch_size)
    return Embedder(config.embed_model, config.embed_batch_size)


class Index:
    """Open (creating if needed) Docent's index. Heavy parts (the model) load on first use."""

    def __init__(self, config: IndexConfig, embedder: Embedder | None = None) -> None:
        self.config = config
        config.home.mkdir(parents=True, exist_ok=True)
        self.url = database_url(config.database_url, config.home)
        self.engine = connect(self.url)
        SQLModel.metadata.create_all(self.engine, tables=[m.__table__ for m in _TABLES])
        migrate(self.engine)
        self.store = ChunkStore(self.engine, self.url)
        self.bm25 = Bm25Index(config.home, self.engine, self.store)
        self.embedder = embedder or make_embedder(config)

    @property
    def location(self) -> str:
        return safe_url(self.url)

    def session(self) -> Session:
        return Session(self.engine)

    def chunk_count(self) -> int:
        with self.session() as s:
            return self.store.count(s)

    def status(self, scopes: list[str] | None = None) -> dict:
        """Counts for `kb status`: documents by status, chunks, failed and skipped pages with their
        reasons, last sync per source (with its result: ok, refused, aborted).

        With `scopes` (what `/kb status` may show where it is asked), documents, chunks and
        failures are those of these access scopes only. Sync runs belong to a source, not a
        scope, so they are all returned: the caller decides which sources it may name.
        """
        Record = registry.DocumentRecord
        visible = [] if scopes is None else [Record.access.in_(list(scopes))]
        with self.session() as s:
            by_status = dict(s.exec(select(Record.status, func.count()).where(*visible).group_by(Record.status)).all())
            failures = s.exec(select(Record).where(Record.status == registry.Status.FAILED, *visible)).all()
            skips = s.exec(select(Record).where(Record.status == registry.Status.SKIPPED, *visible)).all()
            # The last run of every source (not the last 50 runs of all: a busy source would hide the others).
            Run = registry.SyncRun
            latest = select(func.max(Run.id)).group_by(Run.source)
            runs = s.exec(select(Run).where(Run.id.in_(latest)).order_by(Run.id.desc())).all()
            chunks = self.store.count(s, None if scopes is None else list(scopes))
        last_runs = {run.source: run for run in runs}
        return {
            "documents": {str(k.value if hasattr(k, "value") else k): v for k, v in by_status.items()},
            "chunks": chunks,
            "failed": [(d.id, d.error) for d in failures],
            "skipped": [(d.id, d.error) for d in skips],
            "last_runs": list(last_runs.values()),
            "database": self.location,
            "home": str(self.config.home),
        }

    def close(self) -> None:
        """Let go of every database connection: the vector store's two engines (psycopg2 and
        asyncpg), then ours (the same psycopg2 engine; disposing twice is harmless)."""
        self.store.close()
        self.engine.dispose()


_TABLES = [
    registry.DocumentRecord,
    registry.ParentSection,
    registry.EmbeddingCache,
    registry.SyncRun,
    registry.IndexState,
    registry.SourceRecord,
]
