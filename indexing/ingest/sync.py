"""Incremental sync: documents in, index brought up to date, report out.

- Unchanged documents (same content hash, last indexed fine) cost one dictionary lookup.
- Changed and new documents are chunked, embedded in batches across documents (the model is the
  bottleneck, and it is faster on full batches), then each is swapped in its own transaction:
  old chunks serve until the new ones are committed.
- A document that cannot be read or embedded is marked FAILED with the reason; its previous
  version (if any) stays searchable, and the sync goes on. A failed embedding batch is retried
  one document at a time, so only the documents the model cannot take fail.
- A document with nothing to index (an empty page) is SKIPPED with the reason; a previous version
  of it is withdrawn, since the page itself is now empty.
- A page's access scope is applied even when its new version FAILS or is SKIPPED: the registry row
  and the chunks of the version still serving take the new scope at once (the keyword leg's too:
  a relabel is logged and published like an edit), so a page moved to a restricted scope never
  stays visible where it no longer is because its new text is broken (retrieval also checks every
  hit against the registry row, whatever a process's keyword index still holds).
  A page whose scope could not be determined at all (`UNKNOWN_SCOPE`) FAILS and changes no scope.
- A folder the connector could not list (`Unreadable`: EACCES, ESTALE, EIO) is not an empty one:
  every page indexed under it is FAILED with the reason and keeps serving; none is deleted.
- With `prune`, documents of the source that were not seen are deleted from every store — unless
  the deletion guard refuses: a sync that found nothing where there were pages, or whose
  deletions with those of the source's syncs in the last hour (`recent_deletions`, summed from
  the `sync_runs` table, so the watcher in `kb serve` and a `kb sync` in another shell count
  together) would exceed the source's `max_delete`, deletes (and withdraws) nothing, is recorded
  as refused with the reason, and says so in its report. `allow_deletes` lets a deliberate mass
  deletion through (and its deletions are not counted).
- Each stored section's sentences are embedded with it, for the answer's lead
  (`indexing.vectors.sentence_vectors`: cached by text like the children, written and deleted with the
  section); a full sync (`prune`) also backfills documents indexed before that existed.
- BM25 is rebuilt once at the end if anything changed.

No one document can stop or stall a sync. Whatever a connector yields is made storable first (NUL
characters and lone surrogates, which Postgres text refuses, are dropped or replaced), then held to
the per-document limit every source shares: at most `MAX_TEXT_CHARS` of Markdown (chunking costs
~20 ms per KB, embedding more). Over it, the document is FAILED with the reason. The chunker
reads any line, however hostile, in linear time (headings come from the one CommonMark parse,
`connectors.commonmark`). The connectors
bound their own reading and conversion (bytes, tags, nesting depth, a per-page deadline).
Failures are written in batches, so a folder of 10,000 unreadable files costs seconds, not minutes.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import text
from sqlmodel import col, select

from connectors.document import UNKNOWN_SCOPE, SourceDocument, Unreadable
from sources import DeletionLimit
from indexing.vectors import sentence_vectors
from indexing.ingest.chunking import CHUNKING_VERSION, chunk_document
from indexing.values.sections import Parent
from indexing.ingest.sentence_backfill import backfill
from indexing.vectors.embedding import embed_with_cache
from indexing.index import Index
from indexing.storage.database import is_disk_full, short_error
from indexing.storage.memory import release_free_memory
from indexing.storage.index_tables import RUNNER_ID, DocumentRecord, RunResult, Status, SyncRun
from indexing.ingest.storable import storable
from indexing.ingest.sync_records import (
    FAILED_BATCH,
    Failures,
    SyncReport,
    count_deletions,
    finish_run,
    mark_failed,
    recent_deletions,
    upsert_record,
)

log = logging.getLogger(__name__)

# Markdown per document. The largest real wiki pages are ~100 KB; chunking is superlinear in a
# section's size (500 KB of unbroken text ~10 s, 1 MB ~45 s on a 2-core machine), so this bounds it.
MAX_TEXT_CHARS = 500_000
SLOW_CHUNKING_SECONDS = 5.0  # a document that takes longer is logged, to find what to limit next


@dataclass
class _ChunkedDocument:
    """A changed document, split into its sections, waiting to be embedded and written in a batch."""

    doc: SourceDocument
    parents: list[Parent]
    is_new: bool


DocumentDone = Callable[[SourceDocument], None]  # called once per document a sync has dealt with


def sync_documents(
    index: Index,
    documents: Iterable[SourceDocument | Unreadable],
    source: str,
    *,
    prune: bool = True,
    delete_ids: Iterable[str] = (),
    trigger: str = "cli",
    progress: DocumentDone | None = None,
    limit: DeletionLimit | None = None,
    allow_deletes: bool = False,
    listed: int | None = None,
) -> SyncReport:
    """Bring the index in line with `documents` (all of `source`'s documents when `prune`).

    `delete_ids` names documents known to be gone (the watcher's deletes and renames). Every
    deletion goes through the guard (`limit`, default `DeletionLimit()`), unless `allow_deletes`;
    a refused sync still adds and updates what it read, deletes nothing, and sets `refused`.
    `listed`, without `prune`: the pages the source's own listing found (an empty one is refused).
    """
    started = time.perf_counter()
    report = SyncReport(source=source)
    run = SyncRun(source=source, trigger=trigger, runner=RUNNER_ID)
    with index.session() as s:
        s.add(run)
        s.commit()
        s.refresh(run)
        # Plain rows, not ORM objects: at 68,000 pages building the objects took 3.0 of a one-page
        # edit's 3.7 s (docs/scaling.md).
        indexed = {row[0]: _Indexed(row[1], Status(row[2]), *row[3:]) for row in s.execute(text(
            "SELECT id, content_hash, status::text, chunk_count, path, access, title FROM documents WHERE source = :s"
        ), {"s": source})}
    embedded_before = index.embedder.texts_embedded
    found: set[str] = set()
    skips: list[tuple[SourceDocument, str]] = []
    unreadable: list[Unreadable] = []
    failures = Failures(index, report)
    try:
        _sync_all(index, documents, indexed, found, skips, unreadable, report, progress, failures)
    except Exception as exc:  # the source itself is unreadable (e.g. a broken export): prune nothing
        failures.finish()
        _record_skips(index, skips, report, withdraw=False)
        if report.changed or index.bm25.stale():  # stale: e.g. pages relabelled before the abort
            index.bm25.rebuild()
        report.errors.insert(0, f"sync aborted: {short_error(exc)}")
        report.seconds = time.perf_counter() - started
        finish_run(index, run, report, RunResult.ABORTED, reason=f"sync aborted: {short_error(exc)}")
        raise
    _fail_unreadable(source, unreadable, indexed, found, failures)
    failures.finish()
    gone = sorted(((set(indexed) - found) if prune else set()) | (set(delete_ids) - found))
    withdrawn = [doc for doc, _ in skips if indexed.get(doc.doc_id) and indexed[doc.doc_id].chunk_count]
    deleting = len([d for d in gone if d in indexed]) + len(withdrawn)
    if not allow_deletes and deleting:
        report.refused = (limit or DeletionLimit()).refusal(deleting, indexed=len(indexed),
                                                            found=len(found) if prune else listed,
                                                            recent=recent_deletions(index, source, run.id))
    if report.refused:
        log.info("sync of %s refused: %s", source, report.refused)  # the caller says so, once
        _record_skips(index, skips, report, withdraw=False)
    else:
        if deleting and not allow_deletes:
            count_deletions(index, run, deleting)  # before deleting: a sync killed midway still counts them
        _record_skips(index, skips, report, withdraw=True)
        report.deleted += delete_documents(index, gone) + len(withdrawn)
    if prune:
        _backfill_sentences(index, source, report)

    if report.changed or index.bm25.stale():  # stale: e.g. a previous sync was killed before this step
        index.bm25.rebuild()
    if report.added + report.updated + report.deleted >= max(1, len(indexed) // 10):
        index.store.analyze(index.engine)  # a large change: the planner's scope sizes now, not in a minute
    report.embedded = index.embedder.texts_embedded - embedded_before
    report.seconds = time.perf_counter() - started
    finish_run(index, run, report, RunResult.REFUSED if report.refused else RunResult.OK, reason=report.refused)
    if report.changed:
        release_free_memory()  # embedding batches and the BM25 build are freed, but glibc keeps the pages
    return report


class _Indexed(NamedTuple):
    """What the registry says of a document before this sync (a tuple: one is made per page of
    the source on every sync, 68,000 at a million chunks)."""

    content_hash: str
    status: Status
    chunk_count: int
    path: str
    access: str
    title: str


def _fail_unreadable(source: str, unreadable: list[Unreadable], indexed: dict[str, _Indexed], found: set[str],
                     failures: Failures) -> None:
    """Every page indexed under a path the connector could not list FAILS with that reason, and
    counts as found: it is not deleted, and its version keeps serving under the scope it has."""
    for place in unreadable:
        log.warning("%s: %s", source, place.reason)
        for doc_id, known in indexed.items():
            if doc_id not in found and place.holds(known.path):
                found.add(doc_id)
                failures.add(SourceDocument(source=source, path=known.path, title=known.title, access=known.access),
                             f"{place.reason}; the version indexed before keeps serving")


def _sync_all(index: Index, documents: Iterable[SourceDocument | Unreadable], indexed: dict[str, _Indexed],
              found: set[str], skips: list[tuple[SourceDocument, str]], unreadable: list[Unreadable],
              report: SyncReport, progress: DocumentDone | None, failures: Failures) -> None:
    """The main loop: skip unchanged, fail unreadable, set aside empty, batch the rest for embedding;
    folders the connector could not list are set aside for `_fail_unreadable`."""
    pending: list[_ChunkedDocument] = []
    for doc in documents:
        if isinstance(doc, Unreadable):
            unreadable.append(doc)
            continue
        doc = storable(doc)
        found.add(doc.doc_id)
        before = indexed.get(doc.doc_id)
        current = indexed_hash(doc, index.embedder.name)
        if doc.error:
            failures.add(doc, doc.error)
        elif doc.access == UNKNOWN_SCOPE:  # never index a page whose scope nobody decided
            failures.add(doc, "the page's access scope could not be determined; not indexed")
        elif doc.skipped:
            skips.append((doc, doc.skipped))
        elif len(doc.text) > MAX_TEXT_CHARS:
            failures.add(doc, f"document is {len(doc.text):,} characters of text, over the limit of {MAX_TEXT_CHARS:,}")
        elif before is not None and before.content_hash == current and before.status in (Status.SUCCESS, Status.SKIPPED):
            if before.status == Status.SKIPPED:
                report.skipped += 1
                report.skips.append(f"{doc.path}: nothing to index (unchanged)")
            else:
                report.unchanged += 1
        else:
            try:
                chunking_started = time.perf_counter()
                parents = chunk_document(doc)
                if (took := time.perf_counter() - chunking_started) > SLOW_CHUNKING_SECONDS:
                    log.warning("chunking %s took %.1f s (%d characters)", doc.doc_id, took, len(doc.text))
            except Exception as exc:  # a parser bug must fail one document, not the sync
                failures.add(doc, f"could not chunk: {exc}")
            else:
                if not parents:
                    skips.append((doc, "no indexable text (only headings, macros or whitespace)"))
                    continue
                pending.append(_ChunkedDocument(doc, parents, is_new=doc.doc_id not in indexed))
                if sum(len(p.children) for item in pending for p in item.parents) >= index.config.sync_batch_children:
                    failures.flush()
                    _flush(index, pending, report)
                    pending.clear()
        if progress:
            progress(doc)
    failures.flush()
    _flush(index, pending, report)


def _record_skips(index: Index, skips: list[tuple[SourceDocument, str]], report: SyncReport, *, withdraw: bool) -> None:
    """SKIPPED rows with their reasons, `FAILED_BATCH` to a transaction (10,000 placeholder files
    cost seconds). With `withdraw`, a previous version is removed (the page is empty now);
    without (the deletion guard refused), it keeps serving, under the page's current scope."""
    for start in range(0, len(skips), FAILED_BATCH):
        batch = skips[start : start + FAILED_BATCH]
        with index.session() as s, s.begin():
            ids = [doc.doc_id for doc, _ in batch]
            rows = {r.id: r for r in s.exec(select(DocumentRecord).where(col(DocumentRecord.id).in_(ids)))}
            for doc, reason in batch:
                record = rows.get(doc.doc_id)
                if withdraw:
                    if record is not None and record.chunk_count:
                        index.store.delete_document(s, doc.doc_id)  # logs the change for the keyword leg
                    upsert_record(s, doc, status=Status.SKIPPED, error=reason, chunk_count=0, record=record,
                                   content_hash=indexed_hash(doc, index.embedder.name))
                else:
                    upsert_record(s, doc, status=Status.SKIPPED, error=reason, keep_version=True, record=record,
                                   store=index.store, report=report)
                report.skipped += 1
                report.skips.append(f"{doc.path}: {reason}")


def indexed_hash(doc: SourceDocument, model: str) -> str:
    """What a document's registry row records as indexed: its content hash, salted with how it
    was chunked and which model embedded it. A new chunker (`CHUNKING_VERSION`) or another
    embedding model then re-indexes every page on the next sync, instead of leaving the pages
    that did not change cut and embedded the old way."""
    return hashlib.sha256(f"{doc.content_hash}|chunking {CHUNKING_VERSION}|{model}".encode()).hexdigest()


def delete_documents(index: Index, doc_ids: list[str]) -> int:
    """Remove documents from every store, each in one transaction (the store logs each change for
    the keyword leg); returns how many existed. The sync's prune and `kb forget` both come here."""
    count = 0
    for doc_id in doc_ids:
        with index.session() as s, s.begin():
            record = s.get(DocumentRecord, doc_id)
            index.store.delete_document(s, doc_id)
            if record:
                s.delete(record)
                count += 1
    return count


def _flush(index: Index, pending: list[_ChunkedDocument], report: SyncReport) -> None:
    """Embed a batch of documents' children (cache first), then swap each document in."""
    if not pending:
        return
    with index.session() as s, s.begin():
        for item in pending:
            upsert_record(s, item.doc, status=Status.PROCESSING, keep_version=True, store=index.store, report=report)
    for item, doc_vectors, sections in _embed(index, pending, report):
        try:
            with index.session() as s, s.begin():
                chunks = index.store.replace_document(s, item.doc, item.parents, doc_vectors)
                report.sentences += sentence_vectors.store_sections(s, item.doc.doc_id, index.embedder.name, sections)
                upsert_record(s, item.doc, status=Status.SUCCESS, chunk_count=chunks,
                               content_hash=indexed_hash(item.doc, index.embedder.name))
        except Exception as exc:
            if is_disk_full(exc):  # every later write would fail the same way: the sync stops here
                raise
            log.warning("could not write %s: %s", item.doc.doc_id, short_error(exc))
            mark_failed(index, item.doc, f"could not write to the index: {short_error(exc)}", report)
            continue
        report.chunks += chunks
        if item.is_new:
            report.added += 1
        else:
            report.updated += 1


def _embed(index: Index, pending: list[_ChunkedDocument],
           report: SyncReport) -> list[tuple[_ChunkedDocument, list[list[float]], list[sentence_vectors.SectionSentences]]]:
    """Each pending document with its children's vectors and its sections' sentences with theirs,
    embedded together (cache first).

    If the batch fails, each of its documents is tried alone: a document the model cannot take
    must not hold back the others that happened to share its batch (the model being down fails
    them all, each quickly). A document that fails alone is marked FAILED with the reason, and its
    previous version stays searchable until a later sync embeds it.
    """
    texts = [c.embed_text for item in pending for p in item.parents for c in p.children]
    try:
        sections = [sentence_vectors.of_parents(item.doc.title, item.parents) for item in pending]
        with index.session() as s, s.begin():
            vectors = embed_with_cache(s, index.embedder, texts)
            sentence_vectors.embed_sections(s, index.embedder, [section for doc in sections for section in doc])
    except Exception as exc:
        if is_disk_full(exc):  # the vector cache's write: no document alone would fare better
            raise
        if len(pending) > 1:
            log.warning("embedding a batch of %d documents failed (%s: %s); trying them one by one",
                        len(pending), type(exc).__name__, short_error(exc))
            return [pair for item in pending for pair in _embed(index, [item], report)]
        mark_failed(index, pending[0].doc, f"embedding failed: {short_error(exc)}", report)
        return []
    embedded, offset = [], 0
    for item, doc_sections in zip(pending, sections):
        n = sum(len(p.children) for p in item.parents)
        embedded.append((item, vectors[offset : offset + n], doc_sections))
        offset += n
    return embedded


def _backfill_sentences(index: Index, source: str, report: SyncReport) -> None:
    """Sentence vectors for the source's pages indexed without them (an index from before they
    existed): a one-off on the first full sync. Never fails the sync: the lead embeds what is
    missing at question time, as it did before."""
    try:
        report.sentences += backfill(index, source)
    except Exception as exc:
        log.warning("could not backfill the lead's sentence vectors of %s (%s: %s); answers embed them when asked",
                    source, type(exc).__name__, exc, exc_info=True)


