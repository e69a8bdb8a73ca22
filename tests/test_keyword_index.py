"""The BM25 index: what it indexes, and that a rebuild after an edit tokenises only what changed
yet scores exactly as a build from scratch with LlamaIndex's BM25Retriever would (with its own
metadata filter for a scoped search)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from connectors.markdown import MarkdownFolder
from indexing import bm25_terms
from indexing.bm25 import TOKEN_PATTERN, _stemmer, analyze, chunk_search_text, path_words, tokens
from indexing.sync import sync_documents

QUESTIONS = ["vpn gateway port", "expense report receipts deadline", "on call escalation pager",
             "报销 发票", "parental leave weeks", "laptop encryption"]


def _sync(index, root, source):
    return sync_documents(index, MarkdownFolder(root, source=source, access=source).documents(), source)


def _search_texts(index) -> list[tuple[str, str, str]]:
    """(node_id, access, what BM25 indexes) of every child, in the index's row order."""
    with index.session() as s:
        rows = index.store.keyword_rows(s)
        texts = index.store.texts(s, [r.node_id for r in rows])
    return [(r.node_id, r.access, analyze(chunk_search_text(texts[r.node_id], r.title, r.heading_path, r.path)))
            for r in rows]


def test_path_words():
    assert path_words("departments/engineering/process/on_call.md") == "departments engineering process on call"
    assert path_words("people/time-off.MD") == "people time off"
    assert path_words("zh/报销流程.md") == "zh 报销流程"
    assert path_words("") == ""


def test_a_page_is_found_by_the_words_of_its_path(index, wiki_copy):
    """The folders and file name name a page as its title does: here they are the only place
    the words occur (the page's own title and text never use them)."""
    page = wiki_copy / "runbooks" / "escalation_matrix.md"
    page.parent.mkdir()
    page.write_text("# Who to call\n\nPage the secondary after ten minutes, then the team lead.\n")
    _sync(index, wiki_copy, "kw-path")
    hits = index.bm25.search("escalation matrix", ["kw-path"], 5)
    assert hits and hits[0].metadata["doc_id"] == "kw-path:runbooks/escalation_matrix.md"


def test_an_edit_tokenises_only_its_new_chunks_and_scores_as_a_fresh_build(index, wiki_copy):
    from llama_index.core.schema import QueryBundle, TextNode
    from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
    from llama_index.retrievers.bm25 import BM25Retriever

    _sync(index, wiki_copy, "kw-inc")
    page = wiki_copy / "it" / "vpn.md"
    # Text no other test adds: a chunk another source already has is not tokenised again.
    page.write_text(page.read_text() + "\n\n## Ocelot relay\n\nThe ocelot relay is marmot-3 on port 5522.\n")
    report = _sync(index, wiki_copy, "kw-inc")
    assert report.updated == 1
    assert 1 <= index.bm25.last_tokenised <= 3  # of every chunk of every source in the index

    # The same chunks, indexed from scratch by the library (no reuse of anything).
    rows = _search_texts(index)
    fresh = BM25Retriever(
        nodes=[TextNode(id_=node_id, text=text, metadata={"access": access}, excluded_embed_metadata_keys=["access"])
               for node_id, access, text in rows],
        stemmer=_stemmer(), language="en", token_pattern=TOKEN_PATTERN, similarity_top_k=10,
    )
    fresh.bm25.corpus = fresh.corpus  # as BM25Retriever.from_persist_dir would have it
    only_this_source = BM25Retriever(  # the library's own metadata filter, for the scoped search
        existing_bm25=fresh.bm25, stemmer=_stemmer(), token_pattern=TOKEN_PATTERN, similarity_top_k=10,
        filters=MetadataFilters(filters=[MetadataFilter(key="access", value=["kw-inc"], operator=FilterOperator.IN)]),
    )
    for question in QUESTIONS:
        for scopes, reference in ((None, fresh), (["kw-inc"], only_this_source)):
            ours = [(h.node_id, round(h.score, 4)) for h in index.bm25.search(question, scopes, 10)]
            theirs = [(h.node.node_id, round(float(h.score), 4))
                      for h in reference.retrieve(QueryBundle(query_str=analyze(question))) if h.score > 0]
            assert ours == theirs, (question, scopes)

    # The gate's document frequencies, counted the slow way for the edited source.
    expected: dict[str, int] = {}
    for _, access, text in rows:
        if access == "kw-inc":
            for term in set(tokens(text)):  # tokens() analyses again: a no-op on analysed text
                expected[term] = expected.get(term, 0) + 1
    _, known = index.bm25.idf(set(expected) | {"zzzunseenterm"}, ["kw-inc"])
    assert known == set(expected)
    assert index.bm25._current().doc_freq["kw-inc"] == expected


def test_a_stale_or_broken_term_cache_means_tokenising_everything(index, sample_synced, monkeypatch):
    index.bm25.rebuild()
    assert index.bm25.last_tokenised == 0  # nothing changed since the last build
    with index.session() as s:
        total = len(index.store.keyword_rows(s))

    for broken_file, content in (("terms.json", "{not json"), ("terms.npz", "not a zip file")):
        published = index.bm25.dir / index.bm25._published_version()
        (published / broken_file).write_text(content)
        index.bm25.rebuild()
        assert index.bm25.last_tokenised == total, broken_file

    monkeypatch.setattr(bm25_terms, "TERMS_VERSION", "next")  # what a release with a new analyzer sets
    index.bm25.rebuild()
    assert index.bm25.last_tokenised == total
    assert index.bm25.search("vpn", ["sample"], 1)[0].metadata["doc_id"] == "sample:it/vpn.md"


def test_the_syncing_process_searches_the_new_version_without_loading_it(index, sample_synced):
    version = index.bm25.rebuild()
    built = index.bm25._loaded
    assert built is not None and built.version == version  # swapped in by the rebuild itself
    assert index.bm25.search("vpn", ["sample"], 1)[0].metadata["doc_id"] == "sample:it/vpn.md"
    assert index.bm25._loaded is built, "the question did not load anything"


@pytest.mark.parametrize("groups", [["a", "b", "a"], ["only", "only", "only"]])
def test_document_frequencies_count_each_chunk_once_per_term(groups):
    def tokenise(texts):
        vocab: dict[str, int] = {}
        return [[vocab.setdefault(w, len(vocab)) for w in t.split()] for t in texts], vocab

    texts = ["x x y", "y z", "x"]
    corpus, tokenised = bm25_terms.tokenise_corpus(
        ["f1", "f2", "f3"], lambda positions: [texts[p] for p in positions], tokenise, None)
    assert tokenised == 3
    expected: dict[str, dict[str, int]] = {}
    for group, text in zip(groups, texts):
        for term in set(text.split()):
            expected.setdefault(group, {}).setdefault(term, 0)
            expected[group][term] += 1
    assert corpus.doc_freq(groups) == expected

    # Reusing two of them: only the new text is tokenised, the vocabulary keeps just what is used.
    again, tokenised = bm25_terms.tokenise_corpus(
        ["f3", "f4", "f1"], lambda positions: ["w x"] * len(positions), tokenise, corpus)
    assert tokenised == 1
    assert [[again.vocab[i] for i in again.terms_of(n)] for n in range(3)] == [["x"], ["w", "x"], ["x", "x", "y"]]
    assert sorted(again.vocab) == ["w", "x", "y"]
