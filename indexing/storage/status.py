"""Index status: what is indexed, what failed, and each source's last sync — one typed value
(read by `indexing.index.index_status`; the keyword state by `indexing.keyword.keyword_versions.keyword_state`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from indexing.storage import index_tables
from indexing.storage.standby import ReadServer


@dataclass(frozen=True)
class KeywordState:
    """The keyword index as Postgres holds it for every process: the version they all serve, and
    how much a process starting cold replays on top of the newest saved base."""

    published: int | None  # the version every process searches (None: nothing published yet)
    committed: int  # the generation of the last committed page change (published catches up at the sync's end)
    base: int | None  # the newest saved base of this tokenizer version (None: the first search builds one)
    changed_since_base: int  # pages changed after that base (a cold start re-reads just these)


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
