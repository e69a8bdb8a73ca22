"""Sentence vectors for pages indexed before they existed: a one-off of the first full sync.

`sync_documents` runs it when it prunes (`kb sync` and the scheduler, not the watcher's one-file
syncs): documents indexed without sentence vectors for the current embedder
(`indexing.vectors.sentence_vectors`) are read back from the database, embedded and written,
`BACKFILL_DOCUMENTS` to a transaction. Until then the lead embeds what it misses at question time.
"""

from __future__ import annotations

import logging

from sqlalchemy import exists, select
from sqlmodel import col

from indexing.index import Index
from indexing.values.heading_path import HeadingPath
from indexing.storage.index_tables import DocumentRecord, ParentSection, Status
from indexing.vectors import sentence_vectors

log = logging.getLogger(__name__)

BACKFILL_DOCUMENTS = 50  # documents read, embedded and written per transaction


def backfill(index: Index, source: str) -> int:
    """Give the source's indexed documents that have no sentence vectors of the current embedder
    theirs, `BACKFILL_DOCUMENTS` to a transaction; returns the rows written.

    A one-off for an index built before sentence vectors existed: afterwards the query finds only
    documents whose sections hold no sentence at all (only code or headings), which cost a read and
    no embedding. Each document's rows are written only if it is still the version read (its
    registry row is locked and its hash compared): a sync that replaced it meanwhile wrote its own."""
    model = index.embedder.name
    with index.session() as s:
        stored = sentence_vectors.TABLE.c
        has_rows = exists().where(stored.doc_id == DocumentRecord.id, stored.model == model)
        todo = list(s.execute(
            select(col(DocumentRecord.id)).where(col(DocumentRecord.source) == source,
                                                 col(DocumentRecord.status) == Status.SUCCESS,
                                                 col(DocumentRecord.chunk_count) > 0, ~has_rows).order_by(col(DocumentRecord.id))
        ).scalars())
    written = 0
    for start in range(0, len(todo), BACKFILL_DOCUMENTS):
        batch = todo[start : start + BACKFILL_DOCUMENTS]
        with index.session() as s:
            docs = {d.id: (d.title, d.content_hash)
                    for d in s.execute(select(DocumentRecord).where(col(DocumentRecord.id).in_(batch))).scalars()}
            parents = list(s.execute(select(ParentSection).where(col(ParentSection.doc_id).in_(batch))
                                     .order_by(col(ParentSection.doc_id), col(ParentSection.position))).scalars())
            children: dict[str, list[str]] = {}
            for chunk in index.store.keyword_chunks(s, batch):
                children.setdefault(chunk.parent_id, []).append(chunk.text)
        by_doc: dict[str, list[sentence_vectors.SectionSentences]] = {}
        for p in parents:
            if p.doc_id in docs:
                texts = sentence_vectors.section_sentences(docs[p.doc_id][0], HeadingPath(p.heading_path or ()), p.text,
                                                           children.get(p.id, []))
                by_doc.setdefault(p.doc_id, []).append(sentence_vectors.SectionSentences(p.id, texts))
        with index.session() as s, s.begin():
            sentence_vectors.embed_sections(s, index.embedder, [one for sections in by_doc.values() for one in sections])
        for doc_id, sections in by_doc.items():
            with index.session() as s, s.begin():
                record = s.execute(select(DocumentRecord).where(col(DocumentRecord.id) == doc_id).with_for_update()).scalar()
                if record is None or record.content_hash != docs[doc_id][1]:
                    continue  # replaced or deleted since it was read: that sync wrote its own rows
                sentence_vectors.delete_document(s, doc_id)
                written += sentence_vectors.store_sections(s, doc_id, model, sections)
    if written:
        log.info("sentence vectors: %d rows written for %d documents of %s indexed without them", written, len(todo), source)
    return written
