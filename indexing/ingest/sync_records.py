"""What a sync writes about itself and its documents: the report it returns (`SyncReport`), each
document's registry row (indexed, or FAILED with the reason, in batches of `FAILED_BATCH`), and the
run's own row (`SyncRun`: its deletions, which the deletion guard counts over a rolling hour, and
its result). Kept apart from `indexing.ingest.sync`, which decides what to write.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlmodel import Session, col, select

from connectors.document import UNKNOWN_SCOPE, SourceDocument
from sources import DELETE_WINDOW_SECONDS
from indexing.index import Index
from indexing.storage.database import is_disk_full, short_error
from indexing.storage.index_tables import DocumentRecord, RunResult, Status, SyncRun, utcnow
from indexing.vectors.store import ChunkStore

__all__ = ["FAILED_BATCH", "LOGGED_FAILURES", "Failures", "SyncReport", "count_deletions", "finish_run", "mark_failed",
           "recent_deletions", "upsert_record"]

log = logging.getLogger("indexing.ingest.sync")  # the sync's own log lines, as before the split

FAILED_BATCH = 500  # failures written per transaction
LOGGED_FAILURES = 20  # failures logged one per line per sync; the rest are counted in one line


@dataclass
class SyncReport:
    source: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0  # pages removed, and previous versions of pages now SKIPPED withdrawn
    failed: int = 0
    skipped: int = 0
    chunks: int = 0  # children written
    embedded: int = 0  # texts that reached the model (cache misses): children and the lead's sentences
    sentences: int = 0  # sentence vectors written for the lead (indexing.vectors.sentence_vectors), backfill included
    relabelled: int = 0  # pages whose old chunks took a new access scope (their new version failed)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)  # "path: reason" of each SKIPPED page
    refused: str | None = None  # why the deletion guard deleted nothing (None: not refused)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.deleted)


def upsert_record(
    s: Session, doc: SourceDocument, *, status: Status, chunk_count: int | None = None, content_hash: str = "",
    error: str | None = None, keep_version: bool = False, record: DocumentRecord | None = None,
    store: ChunkStore | None = None, report: SyncReport | None = None,
) -> None:
    """Write a document's registry row. `keep_version` leaves hash and chunk count as they were
    (the indexed version keeps serving) — but not its access scope: if the page's scope changed,
    the serving chunks take the new one in this transaction (`store` must then be given).
    Otherwise `content_hash` is the `indexed_hash` of the version just indexed.
    `record`: the row already loaded (None: looked up here)."""
    record = record or s.get(DocumentRecord, doc.doc_id) or DocumentRecord(id=doc.doc_id, source=doc.source, path=doc.path)
    record.status = status
    record.error = error
    record.title = record.title or doc.title
    if keep_version and doc.access == UNKNOWN_SCOPE:
        # The page's scope is unknown (a Confluence page whose space cannot be read): the version
        # still serving keeps the scope it was indexed with, never one guessed now.
        if not record.content_hash:
            record.access = UNKNOWN_SCOPE  # never indexed: visible to no audience
    elif keep_version:
        if record.access != doc.access and record.chunk_count:
            # Both legs filter on the chunks' scope: relabel them now. The store logs it as a keyword
            # change, published once the batch is written (`Failures.flush`) or at the sync's end
            # (skips); until a process has caught up, retrieval checks every hit against this row.
            if store is None:
                raise TypeError("upsert_record: relabelling the version still serving needs the chunk store")
            store.set_access(s, doc.doc_id, doc.access)
            log.warning("%s: access scope %s -> %s applied to the version still serving", doc.doc_id,
                        record.access, doc.access)
            if report is not None:
                report.relabelled += 1
        record.access = doc.access
    else:
        record.title = doc.title
        record.url = doc.url
        record.access = doc.access
        record.content_hash = content_hash
        record.updated_at = doc.updated_at
        record.indexed_at = utcnow()
        record.chunk_count = chunk_count or 0
    s.add(record)


def mark_failed(index: Index, doc: SourceDocument, reason: str, report: SyncReport) -> None:
    """FAILED with the reason; whatever version was indexed before stays searchable."""
    failures = Failures(index, report)
    failures.add(doc, reason)
    failures.finish()


class Failures:
    """FAILED records, written `FAILED_BATCH` to a transaction; the first `LOGGED_FAILURES` of a sync
    are logged one per line, the rest in one summary line at the end."""

    def __init__(self, index: Index, report: SyncReport) -> None:
        self.index, self.report = index, report
        self.batch: list[tuple[SourceDocument, str]] = []
        self.logged = 0
        self.unlogged = 0

    def add(self, doc: SourceDocument, reason: str) -> None:
        self.batch.append((doc, reason))
        self.report.failed += 1
        self.report.errors.append(f"{doc.path}: {reason}")
        if self.logged < LOGGED_FAILURES:
            self.logged += 1
            log.warning("failed %s: %s", doc.doc_id, reason)
        else:
            self.unlogged += 1
        if len(self.batch) >= FAILED_BATCH:
            self.flush()

    def flush(self) -> None:
        batch, self.batch = list({doc.doc_id: (doc, reason) for doc, reason in self.batch}.values()), []
        relabelled = self.report.relabelled
        self._write(batch)
        if self.report.relabelled > relabelled:
            # Published now, not at the sync's end: until then the keyword leg's statistics and typo
            # repair would still count the relabelled pages under their old scope.
            self.index.bm25.rebuild()

    def _write(self, batch: list[tuple[SourceDocument, str]]) -> None:
        if batch:
            try:
                with self.index.session() as s, s.begin():
                    ids = [doc.doc_id for doc, _ in batch]
                    rows = {r.id: r for r in s.exec(select(DocumentRecord).where(col(DocumentRecord.id).in_(ids)))}
                    for doc, reason in batch:
                        record = rows.get(doc.doc_id) or DocumentRecord(id=doc.doc_id, source=doc.source, path=doc.path)
                        upsert_record(s, doc, status=Status.FAILED, error=reason, keep_version=True, record=record,
                                       store=self.index.store, report=self.report)
            except Exception as exc:  # one record the database refuses must not lose the others
                if is_disk_full(exc):  # ... but a full disk refuses each of them: the sync stops
                    raise
                log.warning("could not record %d failures in one batch (%s); recording them one by one", len(batch),
                            short_error(exc))
                for doc, reason in batch:
                    try:
                        with self.index.session() as s, s.begin():
                            upsert_record(s, doc, status=Status.FAILED, error=reason, keep_version=True,
                                           store=self.index.store, report=self.report)
                    except Exception as one:
                        if is_disk_full(one):
                            raise
                        log.error("could not record the failure of %s: %s", doc.doc_id, short_error(one))

    def finish(self) -> None:
        self.flush()
        if self.unlogged:
            log.warning("%d more documents of %s failed (see `kb status`)", self.unlogged, self.report.source)
            self.unlogged = 0


def recent_deletions(index: Index, source: str, run_id: int | None = None) -> int:
    """The deletions of `source` the guard counted in the last `DELETE_WINDOW_SECONDS`, by every
    sync run in the database (any process), except run `run_id`. The database's clock decides
    the window, so processes on hosts whose clocks differ agree on it."""
    when = func.coalesce(SyncRun.finished_at, SyncRun.started_at)
    since = func.now() - func.make_interval(0, 0, 0, 0, 0, 0, DELETE_WINDOW_SECONDS)
    with index.session() as s:
        query = select(func.coalesce(func.sum(SyncRun.guarded_deletes), 0)).where(
            SyncRun.source == source, SyncRun.id != (run_id or -1), when >= since)
        return int(s.exec(query).one())


def count_deletions(index: Index, run: SyncRun, deleting: int) -> None:
    with index.session() as s, s.begin():
        row = s.get(SyncRun, run.id)
        assert row is not None  # the run's own row, written when it started
        row.guarded_deletes = deleting


def finish_run(index: Index, run: SyncRun, report: SyncReport, result: RunResult, reason: str | None = None) -> None:
    with index.session() as s, s.begin():
        row = s.get(SyncRun, run.id)
        assert row is not None  # the run's own row, written when it started
        row.finished_at = utcnow()
        for name in ("added", "updated", "unchanged", "deleted", "failed", "skipped"):
            setattr(row, name, getattr(report, name))
        row.result = result.value
        row.reason = reason
        row.errors = report.errors[:100]
