"""Index status: what is indexed, what failed, and each source's last sync — one typed value."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from sqlalchemy.orm import Session
from sqlmodel import col, func, select

from indexing.storage import index_tables
from indexing.keyword import keyword_versions
from indexing.keyword.bm25_terms import TERMS_VERSION
from indexing.index import Index, describe_embedding
from indexing.storage.standby import ReadServer


@dataclass(frozen=True)
class KeywordState:
    """The keyword index as Postgres holds it for every process: the version they all serve, and
    how much a process starting cold replays on top of the newest saved base."""

    published: int | None  # the version every process searches (None: nothing published yet)
    committed: int  # the generation of the last committed page change (published catches up at the sync's end)
    base: int | None  # the newest saved base of this tokenizer version (None: the first search builds one)
    changed_since_base: int  # pages changed after that base (a cold start re-reads just these)


def keyword_state(session: Session) -> KeywordState:
    base = keyword_versions.latest_base_generation(session, TERMS_VERSION)
    return KeywordState(
        published=keyword_versions.published(session),
        committed=keyword_versions.generation(session),
        base=base,
        changed_since_base=keyword_versions.changes_since(session, base or 0),
    )


@dataclass(frozen=True)
class IndexStatus:
    """Counts for `kb status` and `/kb status`.

    `documents`: documents by registry status; `failed` / `skipped`: (document id, reason);
    `last_runs`: the last sync run of every source, newest first; `unconfigured`: sources still
    answering although the configuration no longer names them; `database` (password hidden) and
    `home`: where the index lives; `reads`: which server answers reads (a hot standby, else the
    primary); `keywords`: the keyword index's published version, as the reads see it; `embedding`:
    how text becomes vectors (`indexing.index.describe_embedding`).
    """

    documents: dict[str, int]
    chunks: int
    failed: list[tuple[str, str | None]]
    skipped: list[tuple[str, str | None]]
    last_runs: list[index_tables.SyncRun]
    database: str
    home: str
    unconfigured: list[str] = field(default_factory=list)
    keywords: KeywordState | None = None
    reads: ReadServer | None = None
    embedding: str = ""

    def limited_to_sources(self, names: set[str]) -> IndexStatus:
        """Only these sources' sync runs and failed or skipped pages (the others may not be named)."""
        return replace(
            self,
            last_runs=[run for run in self.last_runs if run.source in names],
            failed=[(doc_id, why) for doc_id, why in self.failed if doc_id.split(":", 1)[0] in names],
            skipped=[(doc_id, why) for doc_id, why in self.skipped if doc_id.split(":", 1)[0] in names],
        )

    def to_json(self) -> dict[str, object]:
        """As `kb status --json` prints it."""
        return {
            "documents": self.documents,
            "chunks": self.chunks,
            "failed": self.failed,
            "skipped": self.skipped,
            "last_runs": [run.model_dump(mode="json") for run in self.last_runs],
            "database": self.database,
            "home": self.home,
            "unconfigured_sources": self.unconfigured,
            "keywords": asdict(self.keywords) if self.keywords else None,
            "reads": self.reads.to_json() if self.reads else None,
            "embedding": self.embedding,
        }


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
