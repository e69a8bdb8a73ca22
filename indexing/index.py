"""The index as one object: database, chunk store, BM25, embedder and rerank stage, opened once per process;
and its status (`index_status`), read across them. The top of indexing: it composes the rooms below it."""

from __future__ import annotations

from sqlmodel import Session, col, func, select

from indexing.keyword.bm25 import Bm25Index
from indexing.config import IndexConfig
from indexing.storage.database import connect, database_url, safe_url
from indexing.storage import standby
from indexing.vectors.embedding import Embedder, TorchEmbedder
from indexing.storage.migrations import migrate
from indexing.search.rerank import open_stage
from indexing.vectors.store import ChunkStore
from indexing.keyword.keyword_versions import keyword_state
from indexing.storage import index_tables
from indexing.storage.status import IndexStatus


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


def index_status(index: Index, scopes: list[str] | None = None) -> IndexStatus:
    """Documents by status, chunks, failed and skipped pages with their reasons, and the last sync
    of every source (with its result: ok, refused, aborted).

    With `scopes` (what `/kb status` may show where it is asked), documents, chunks and failures
    are those of these access scopes only. Sync runs belong to a source, not a scope, so they are
    all returned: the caller decides which sources it may name (`limited_to_sources`). All of it is
    read where questions read (a hot standby, when there is one): what the replicas serve.
    """
    Record = index_tables.DocumentRecord
    visible = [] if scopes is None else [col(Record.access).in_(list(scopes))]
    with index.read_session() as s:
        by_status = dict(s.exec(select(Record.status, func.count()).where(*visible).group_by(Record.status)).all())
        failures = s.exec(select(Record).where(Record.status == index_tables.Status.FAILED, *visible)).all()
        skips = s.exec(select(Record).where(Record.status == index_tables.Status.SKIPPED, *visible)).all()
        # The last run of every source (not the last 50 runs of all: a busy source would hide the others).
        Run = index_tables.SyncRun
        latest = select(func.max(Run.id)).group_by(Run.source)
        runs = s.exec(select(Run).where(col(Run.id).in_(latest)).order_by(col(Run.id).desc())).all()
        chunks = index.store.count(s, None if scopes is None else list(scopes))
        keywords = keyword_state(s)
    last_runs = {run.source: run for run in runs}
    return IndexStatus(
        documents={str(k.value if isinstance(k, index_tables.Status) else k): v for k, v in by_status.items()},
        chunks=chunks,
        failed=[(d.id, d.error) for d in failures],
        skipped=[(d.id, d.error) for d in skips],
        last_runs=list(last_runs.values()),
        database=index.location,
        home=str(index.config.home),
        keywords=keywords,
        reads=index.reads(),
        embedding=describe_embedding(index.embedder),
    )
