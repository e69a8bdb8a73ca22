"""Incremental sync: documents in, index brought up to date, report out.

- Unchanged documents (same content hash, last indexed fine) cost one dictionary lookup.
- Changed and new documents are chunked, embedded in batches across documents (the model is the
  bottleneck, and it is faster on full batches), then each is swapped in its own transaction:
  old chunks serve until the new ones are committed.
- A document that cannot be read or embedded is marked FAILED with the reason; its previous
  version (if any) stays searchable, and the sync goes on.
- With `prune`, documents of the source that were not seen are deleted from every store.
- BM25 is rebuilt once at the end if anything changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sqlmodel import select

from connectors.document import SourceDocument
from indexing.chunking import Parent, chunk_document
from indexing.embedding import embed_with_cache
from indexing.index import Index
from indexing.registry import RUNNER_ID, DocumentRecord, Status, SyncRun, bump_generation, utcnow

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    source: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    chunks: int = 0  # children written
    embedded: int = 0  # texts that reached the model (cache misses)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.deleted)


@dataclass
class _Pending:
    doc: SourceDocument
    parents: list[Parent]
    is_new: bool


Progress = Callable[[SourceDocument], None]


def sync_documents(
    index: Index,
    documents: Iterable[SourceDocument],
    source: str,
    *,
    prune: bool = True,
    delete_ids: Iterable[str] = (),
    trigger: str = "cli",
    progress: Progress | None = None,
) -> SyncReport:
    """Bring the index in line with `documents` (all of `source`'s documents when `prune`).

    `delete_ids` names documents known to be gone (the watcher's deletes and renames).
    """
    started = time.perf_counter()
    report = SyncReport(source=source)
    run = SyncRun(source=source, trigger=trigger, runner=RUNNER_ID)
    with index.session() as s:
        s.add(run)
        s.commit()
        s.refresh(run)
        known = {r.id: (r.content_hash, r.status) for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == source))}
    embedded_before = index.embedder.texts_embedded
    seen: set[str] = set()
    try:
        _sync_all(index, documents, known, seen, report, progress)
    except Exception as exc:  # the source itself is unreadable (e.g. a broken export): prune nothing
        if report.changed:
            index.bm25.rebuild()
        report.errors.insert(0, f"sync aborted: {exc}")
        report.seconds = time.perf_counter() - started
        _finish_run(index, run, report)
        raise
    gone = (set(known) - seen if prune else set()) | (set(delete_ids) - seen)
    report.deleted += _delete(index, sorted(gone))

    if report.changed or index.bm25.stale():  # stale: e.g. a previous sync was killed before this step
        index.bm25.rebuild()
    report.embedded = index.embedder.texts_embedded - embedded_before
    report.seconds = time.perf_counter() - started
    _finish_run(index, run, report)
    return report


def _sync_all(index: Index, documents: Iterable[SourceDocument], known: dict, seen: set[str],
              report: SyncReport, progress: Progress | None) -> None:
    """The main loop: skip unchanged, fail unreadable, batch the rest for embedding."""
    pending: list[_Pending] = []
    for doc in documents:
        seen.add(doc.doc_id)
        if doc.error:
            _mark_failed(index, doc, doc.error, report)
        elif known.get(doc.doc_id) == (doc.content_hash, Status.SUCCESS):
            report.unchanged += 1
        else:
            try:
                parents = chunk_document(doc)
                if not parents:
                    raise ValueError("no indexable text (only headings or whitespace)")
            except Exception as exc:  # a parser bug must fail one document, not the sync
                _mark_failed(index, doc, f"could not chunk: {exc}", report)
            else:
                pending.append(_Pending(doc, parents, is_new=doc.doc_id not in known))
                if sum(len(p.children) for item in pending for p in item.parents) >= index.config.sync_batch_children:
                    _flush(index, pending, report)
                    pending.clear()
        if progress:
            progress(doc)
    _flush(index, pending, report)


def _delete(index: Index, doc_ids: list[str]) -> int:
    """Remove documents from every store, each in one transaction; returns how many existed."""
    count = 0
    for doc_id in doc_ids:
        with index.session() as s, s.begin():
            record = s.get(DocumentRecord, doc_id)
            index.store.delete_document(s, doc_id)
            bump_generation(s)
            if record:
                s.delete(record)
                count += 1
    return count


def _flush(index: Index, pending: list[_Pending], report: SyncReport) -> None:
    """Embed a batch of documents' children (cache first), then swap each document in."""
    if not pending:
        return
    with index.session() as s, s.begin():
        for item in pending:
            _upsert_record(s, item.doc, status=Status.PROCESSING, keep_version=True)
    texts = [c.embed_text for item in pending for p in item.parents for c in p.children]
    try:
        with index.session() as s, s.begin():
            vectors = embed_with_cache(s, index.embedder, texts)
    except Exception as exc:
        log.exception("embedding failed for %d documents", len(pending))
        for item in pending:
            _mark_failed(index, item.doc, f"embedding failed: {exc}", report)
        return
    offset = 0
    for item in pending:
        n = sum(len(p.children) for p in item.parents)
        doc_vectors, offset = vectors[offset : offset + n], offset + n
        try:
            with index.session() as s, s.begin():
                chunks = index.store.replace_document(s, item.doc, item.parents, doc_vectors)
                bump_generation(s)
                _upsert_record(s, item.doc, status=Status.SUCCESS, chunk_count=chunks)
        except Exception as exc:
            log.exception("could not write %s", item.doc.doc_id)
            _mark_failed(index, item.doc, f"could not write to the index: {exc}", report)
            continue
        report.chunks += chunks
        if item.is_new:
            report.added += 1
        else:
            report.updated += 1


def _upsert_record(
    s, doc: SourceDocument, *, status: Status, chunk_count: int | None = None,
    error: str | None = None, keep_version: bool = False,
) -> None:
    """Write a document's registry row. `keep_version` leaves hash and chunk count as they were."""
    record = s.get(DocumentRecord, doc.doc_id) or DocumentRecord(id=doc.doc_id, source=doc.source, path=doc.path)
    record.status = status
    record.error = error
    record.title = record.title or doc.title
    if not keep_version:
        record.title = doc.title
        record.url = doc.url
        record.access = doc.access
        record.content_hash = doc.content_hash
        record.updated_at = doc.updated_at
        record.indexed_at = utcnow()
        record.chunk_count = chunk_count or 0
    s.add(record)


def _mark_failed(index: Index, doc: SourceDocument, reason: str, report: SyncReport) -> None:
    """FAILED with the reason; whatever version was indexed before stays searchable."""
    with index.session() as s, s.begin():
        _upsert_record(s, doc, status=Status.FAILED, error=reason, keep_version=True)
    report.failed += 1
    report.errors.append(f"{doc.path}: {reason}")
    log.warning("failed %s: %s", doc.doc_id, reason)


def _finish_run(index: Index, run: SyncRun, report: SyncReport) -> None:
    with index.session() as s, s.begin():
        row = s.get(SyncRun, run.id)
        row.finished_at = utcnow()
        for name in ("added", "updated", "unchanged", "deleted", "failed"):
            setattr(row, name, getattr(report, name))
        row.errors = report.errors[:100]
