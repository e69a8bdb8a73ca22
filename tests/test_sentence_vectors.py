"""The lead's sentence vectors, stored at sync time: written, reused, replaced and deleted with their
sections; read back by the lead in place of embedding at question time (real index, real model)."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select, update

from bot.answering.answer import _sources, answer_question
from bot.quality.evaluation import load_questions
from bot.answering.lead import SentenceVectors, choose_lead, render_lead
from connectors.markdown import MarkdownFolder
from indexing.vectors import sentence_vectors
from indexing.ingest.chunking import chunk_document
from indexing.ingest.sentence_backfill import backfill
from indexing.search.retrieval import retrieve
from indexing.vectors.sentence_vectors import TABLE, section_sentences, stored_vectors, text_md5
from indexing.ingest.sync import sync_documents
from tests.support.corpora import SAMPLE_WIKI

VPN = "it/vpn.md"


def _sync(index, root, source):
    return sync_documents(index, MarkdownFolder(root, source=source, access=source).documents(), source)


def _rows(index, doc_id):
    """(parent_id, position, model, dim, text_md5, vector bytes) of a document, in order."""
    with index.session() as s:
        return s.execute(select(TABLE.c.parent_id, TABLE.c.position, TABLE.c.model, TABLE.c.dim, TABLE.c.text_md5,
                                TABLE.c.vector).where(TABLE.c.doc_id == doc_id)
                         .order_by(TABLE.c.parent_id, TABLE.c.position)).all()


def _expected_texts(root, source, path):
    """Every sentence the lead could score from this page, as chunked now."""
    doc = next(d for d in MarkdownFolder(root, source=source, access=source).documents() if d.path == path)
    return [t for p in chunk_document(doc)
            for t in section_sentences(doc.title, p.heading_path, p.text, (c.text for c in p.children))]


class CountingVectors(SentenceVectors):
    """The lead's question-time fallback, counting what it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def vectors(self, embedder, texts):
        self.embedded += [t for t in texts if (embedder.name, t) not in self._items]
        return super().vectors(embedder, texts)


@pytest.fixture
def fallback(monkeypatch) -> CountingVectors:
    counting = CountingVectors()
    monkeypatch.setattr("bot.answering.lead.SENTENCE_VECTORS", counting)
    return counting


def test_a_sync_stores_every_sentence_of_every_section_with_the_embedders_vector(index, wiki_copy):
    report = _sync(index, wiki_copy, "sv-store")
    rows = _rows(index, f"sv-store:{VPN}")
    texts = _expected_texts(wiki_copy, "sv-store", VPN)
    assert len(rows) == len(texts) > 5 and report.sentences >= len(rows)
    assert [r.text_md5 for r in sorted(rows, key=lambda r: (r.parent_id, r.position))] == \
        [r.text_md5 for r in rows] and {r.text_md5 for r in rows} == {text_md5(t) for t in texts}
    assert {(r.model, r.dim) for r in rows} == {(index.embedder.name, 384)}
    # The vector is the model's vector of the text as the lead scores it, stored as float32.
    by_hash = {text_md5(t): t for t in texts}
    sample = rows[3]
    expected = np.asarray(index.embedder.embed_unindexed([by_hash[sample.text_md5]])[0], dtype=np.float32)
    assert np.allclose(np.frombuffer(sample.vector, dtype=np.float32), expected, atol=1e-5)


def test_an_unchanged_resync_and_a_new_chunker_reuse_the_vectors(index, wiki_copy, monkeypatch):
    _sync(index, wiki_copy, "sv-reuse")
    before = _rows(index, f"sv-reuse:{VPN}")
    again = _sync(index, wiki_copy, "sv-reuse")
    assert (again.unchanged, again.embedded, again.sentences) == (16, 0, 0)
    monkeypatch.setattr("indexing.ingest.sync.CHUNKING_VERSION", "next")  # every page rewritten, nothing re-embedded
    rewritten = _sync(index, wiki_copy, "sv-reuse")
    assert rewritten.updated == 16 and rewritten.embedded == 0 and rewritten.sentences > 100
    assert _rows(index, f"sv-reuse:{VPN}") == before


def test_an_edit_embeds_only_the_changed_sentences_and_replaces_the_pages_rows(index, wiki_copy):
    _sync(index, wiki_copy, "sv-edit")
    other = _rows(index, "sv-edit:it/security.md")
    page = wiki_copy / VPN
    page.write_text(page.read_text() + "\n\n## Zebra gateway\n\nThe zebra gateway is quokka-7 on port 4411. "
                    "Ask the network team before you use it.\n")
    report = _sync(index, wiki_copy, "sv-edit")
    assert report.updated == 1
    # The new section's child and its two sentences reach the model; the page's other sentences come from the cache.
    assert 1 <= report.embedded <= 4
    rows = _rows(index, f"sv-edit:{VPN}")
    assert {r.text_md5 for r in rows} == {text_md5(t) for t in _expected_texts(wiki_copy, "sv-edit", VPN)}
    assert text_md5("The zebra gateway is quokka-7 on port 4411.") in {r.text_md5 for r in rows}
    assert _rows(index, "sv-edit:it/security.md") == other


def test_the_vectors_leave_with_their_page(index, wiki_copy):
    _sync(index, wiki_copy, "sv-delete")
    doc_id = "sv-delete:engineering/on-call.md"
    assert _rows(index, doc_id)
    (wiki_copy / "engineering" / "on-call.md").unlink()
    assert _sync(index, wiki_copy, "sv-delete").deleted == 1
    assert _rows(index, doc_id) == []


def _question_time_lead(index, question, scopes):
    """The lead as it was chosen before stored vectors: every sentence and the question embedded now."""
    retrieval = retrieve(index, question, scopes=scopes)
    if not retrieval.found:
        return ""  # an answer that found nothing shows no lead
    _, numbers = _sources(retrieval.hits)
    return render_lead(choose_lead(retrieval.searched, retrieval.hits, numbers, index.embedder,
                                   retrieval.terms.searched_idf()))


def test_the_lead_is_the_same_with_stored_vectors_as_with_question_time_ones(index, sample_synced, fallback):
    questions = load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl")
    stored = [answer_question(index, q.question, scopes=["sample"]).lead for q in questions]
    assert fallback.embedded == []  # every sentence scored came from the table, the question from retrieval
    assert sum(1 for lead in stored if lead) >= 15
    assert [_question_time_lead(index, q.question, ["sample"]) for q in questions] == stored
    assert fallback.embedded  # the comparison really embedded at question time


def test_a_section_without_stored_vectors_still_gets_its_lead_and_a_full_sync_backfills_it(index, wiki_copy, fallback):
    _sync(index, wiki_copy, "sv-old")
    question = "what port does the vpn use?"
    with_stored = answer_question(index, question, scopes=["sv-old"]).lead
    assert with_stored and fallback.embedded == []
    with index.session() as s, s.begin():  # as an index built before sentence vectors existed
        s.execute(TABLE.delete().where(TABLE.c.doc_id.like("sv-old:%")))
    assert answer_question(index, question, scopes=["sv-old"]).lead == with_stored
    assert fallback.embedded  # embedded at question time instead
    report = _sync(index, wiki_copy, "sv-old")  # unchanged pages: only the backfill runs
    assert report.unchanged == 16 and report.embedded == 0 and report.sentences > 100
    assert {r.text_md5 for r in _rows(index, f"sv-old:{VPN}")} == \
        {text_md5(t) for t in _expected_texts(wiki_copy, "sv-old", VPN)}
    fallback.embedded.clear()
    assert answer_question(index, "how do I connect to the vpn from home?", scopes=["sv-old"]).lead
    assert fallback.embedded == []
    assert _sync(index, wiki_copy, "sv-old").sentences == 0  # a one-off


def test_another_embedders_vectors_are_never_read(index, wiki_copy, fallback):
    _sync(index, wiki_copy, "sv-model")
    question = "what port does the vpn use?"
    lead = answer_question(index, question, scopes=["sv-model"]).lead
    texts = _expected_texts(wiki_copy, "sv-model", VPN)
    parents = sorted({r.parent_id for r in _rows(index, f"sv-model:{VPN}")})
    name = index.embedder.name

    def found(model, dim):
        with index.session() as s:
            return stored_vectors(s, model, dim, parents, texts)

    assert len(found(name, 384)) == len(texts) and fallback.embedded == []
    with index.session() as s, s.begin():  # the same rows, as another model stored them
        s.execute(update(TABLE).where(TABLE.c.doc_id.like("sv-model:%"))
                  .values(model="another-model", vector=np.ones(384, dtype=np.float32).tobytes()))
    assert found(name, 384) == {} and len(found("another-model", 384)) == len(texts)
    assert answer_question(index, question, scopes=["sv-model"]).lead == lead
    assert fallback.embedded  # this model's vectors, embedded at question time
    with index.session() as s, s.begin():  # this model's name, another dimension
        s.execute(update(TABLE).where(TABLE.c.doc_id.like("sv-model:%"))
                  .values(model=name, dim=768, vector=np.ones(768, dtype=np.float32).tobytes()))
    assert found(name, 384) == {} and len(found(name, 768)) == len(texts)
    fallback.embedded.clear()
    fallback._items.clear()
    assert answer_question(index, question, scopes=["sv-model"]).lead == lead
    assert fallback.embedded


def test_a_page_the_backfill_finds_replaced_is_left_to_the_sync_that_replaced_it(index, wiki_copy, monkeypatch):
    _sync(index, wiki_copy, "sv-race")
    with index.session() as s, s.begin():
        s.execute(TABLE.delete().where(TABLE.c.doc_id == f"sv-race:{VPN}"))
    real_embed = sentence_vectors.embed_sections

    def edit_meanwhile(session, embedder, sections):  # another sync commits a new version of the page here
        real_embed(session, embedder, sections)
        from indexing.storage.index_tables import DocumentRecord

        with index.session() as other, other.begin():
            record = other.get(DocumentRecord, f"sv-race:{VPN}")
            if record is not None:
                record.content_hash = "a newer version"

    monkeypatch.setattr(sentence_vectors, "embed_sections", edit_meanwhile)
    assert backfill(index, "sv-race") == 0
    assert _rows(index, f"sv-race:{VPN}") == []
