"""The lead's sentence vectors, embedded when a section is stored instead of when it is asked about.

The lead (`bot.answering.lead`) scores a section's sentences by their cosine with the question. Embedding
them at question time was most of an answer's cost (p95 ~150 ms of a ~220 ms answer on the
12,000-chunk handbook, docs/benchmarks.md), so the sync embeds every sentence of every section it
stores — as the lead scores it (`indexing.values.sentences.in_context`: a short one with its heading) —
and keeps the vectors in a table of their own, `sentence_vectors`, one row per (section,
sentence, embedder):

- written in the transaction that writes the section, and deleted with it (`delete_document`,
  called by the chunk store whenever it deletes a document's sections);
- cached by content hash like chunk vectors (`indexing.vectors.embedding.embed_with_cache`, the same
  `embedding_cache` rows): an unchanged section is never re-embedded, an edit embeds only the
  sentences it changed;
- keyed by the embedder's name and the vectors' dimension: the lead reads only rows of the model
  that embedded its question, so vectors of another embedder are never mixed in;
- matched by text (an md5 of the scored text), not by position: the lead asks for the texts it
  is about to score, and any it does not find (a section indexed before this table existed, or a
  sentence cut at a chunk boundary that the section's own sentences do not hold) it embeds then,
  as before. A stale row can never give a sentence another text's vector.

Which sentences: those of the whole section and those of each of its child chunks. The lead
reads the sentences of a section's best-matching chunks (or of the whole section when none
matched), and a chunk may begin or end mid-sentence; with both, every sentence the lead can
score is stored.

Existing indexes get theirs on the next full sync (`indexing.ingest.sentence_backfill`); until
then their sections are served by the fallback.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Column, Index, Integer, LargeBinary, MetaData, String, Table, delete, insert, select
from sqlalchemy.orm import Session

from indexing.values.sections import Parent
from indexing.vectors.embedding import Embedder, embed_with_cache
from indexing.values.heading_path import HeadingPath
from indexing.values.sentences import in_context, plain_sentences

# Every sentence of a section (the lead reads at most 40 of the text it scores; a parent is at most
# ~900 tokens, so this only bounds a pathological one).
MAX_SENTENCES = 1_000

# Created by indexing.storage.migrations (m003_sentence_vectors); described here for the queries.
TABLE = Table(
    "sentence_vectors", MetaData(),
    Column("parent_id", String, primary_key=True),
    Column("model", String, primary_key=True),  # the embedder's name (its cache key)
    Column("dim", Integer, primary_key=True),  # the vector's length
    Column("position", Integer, primary_key=True),  # order in the section
    Column("doc_id", String, nullable=False),
    Column("text_md5", String(32), nullable=False),  # md5 of the text as embedded (in_context)
    Column("vector", LargeBinary, nullable=False),  # float32, native byte order (as embedding_cache)
    Index("sentence_vectors_doc_idx", "doc_id", "model"),
)


@dataclass
class SectionSentences:
    """One section's sentences as the lead scores them, with their vectors once embedded."""

    parent_id: str
    texts: list[str]
    vectors: list[list[float]] | None = None


def section_sentences(title: str, heading_path: HeadingPath, text: str, child_texts: Iterable[str]) -> list[str]:
    """Every text the lead can score from this section, once each, in reading order: the
    sentences of the section and of each of its children (`in_context`, as `bot.answering.lead` scores them:
    under the section's last heading, else the page title)."""
    heading = heading_path[-1] if heading_path else title
    out: dict[str, None] = {}
    for part in (text, *child_texts):
        for sentence in plain_sentences(part, MAX_SENTENCES):
            out.setdefault(in_context(heading, sentence.text))
    return list(out)


def of_parents(title: str, parents: list[Parent]) -> list[SectionSentences]:
    """The sentences of a document's sections as chunked for this sync."""
    return [SectionSentences(p.id, section_sentences(title, p.heading_path, p.text, (c.text for c in p.children)))
            for p in parents]


def embed_sections(session: Session, embedder: Embedder, sections: list[SectionSentences]) -> None:
    """Fill in each section's vectors, cache first (`embed_with_cache`, in the caller's session)."""
    texts = [t for section in sections for t in section.texts]
    vectors = embed_with_cache(session, embedder, texts)
    offset = 0
    for section in sections:
        section.vectors = vectors[offset : offset + len(section.texts)]
        offset += len(section.texts)


def store_sections(session: Session, doc_id: str, model: str, sections: list[SectionSentences]) -> int:
    """Write a document's sentence vectors in the caller's transaction (its old rows are gone
    already: `delete_document` runs whenever its sections are replaced); returns the rows written."""
    rows = [
        {"parent_id": section.parent_id, "model": model, "dim": len(vector), "position": position, "doc_id": doc_id,
         "text_md5": text_md5(text), "vector": np.asarray(vector, dtype=np.float32).tobytes()}
        for section in sections
        for position, (text, vector) in enumerate(zip(section.texts, section.vectors or []))
    ]
    if rows:
        session.execute(insert(TABLE), rows)
    return len(rows)


def delete_document(session: Session, doc_id: str) -> None:
    """Remove a document's sentence vectors, every embedder's, in the caller's transaction."""
    session.execute(delete(TABLE).where(TABLE.c.doc_id == doc_id))


def stored_vectors(session: Session, model: str, dim: int, parent_ids: list[str], texts: list[str]) -> dict[str, np.ndarray]:
    """text → stored float32 vector, for those of `texts` that these sections hold, embedded by
    `model` at `dim` dimensions; one query. Texts not found are left out (the caller embeds them)."""
    if not parent_ids or not texts:
        return {}
    wanted = {text_md5(t): t for t in texts}
    rows = session.execute(
        select(TABLE.c.text_md5, TABLE.c.vector).where(
            TABLE.c.parent_id.in_(sorted(set(parent_ids))), TABLE.c.model == model, TABLE.c.dim == dim,
            TABLE.c.text_md5.in_(sorted(wanted)))
    )
    return {wanted[h]: np.frombuffer(v, dtype=np.float32) for h, v in rows if len(v) == 4 * dim}


def text_md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()
