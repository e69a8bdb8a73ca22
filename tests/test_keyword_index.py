"""The keyword leg: what it indexes, and that an edit re-reads only the changed page yet scores
exactly as a build from scratch with LlamaIndex's BM25Retriever would (for a scoped search, a build
of the visible chunks alone: statistics per audience); a process with nothing in memory loads the
saved base from Postgres."""

from __future__ import annotations

import math

from connectors.markdown import MarkdownFolder
from indexing.keyword import bm25 as bm25_module
from indexing.keyword import keyword_versions
from indexing.keyword.bm25 import TOKEN_PATTERN, Bm25Index, _stemmer, analyze, chunk_search_text, path_words, tokens
from indexing.keyword.keyword_segments import KeywordIndex, KeywordRow
from indexing.ingest.sync import sync_documents

QUESTIONS = ["vpn gateway port", "expense report receipts deadline", "on call escalation pager",
             "报销 发票", "parental leave weeks", "laptop encryption"]


def _sync(index, root, source):
    return sync_documents(index, MarkdownFolder(root, source=source, access=source).documents(), source)


def _search_texts(index) -> list[tuple[str, str, str]]:
    """(node_id, access, what BM25 indexes) of every child, in the index's row order."""
    with index.session() as s:
        rows = [chunk for batch in index.store.keyword_chunk_batches(s, 10_000) for chunk in batch]
    return [(r.node_id, r.access, analyze(chunk_search_text(r.text, r.title, r.heading_path, r.path))) for r in rows]


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


def _reference(rows, scopes):
    """LlamaIndex's BM25Retriever built from scratch on the texts these scopes may see (None: all).

    Not BM25Retriever's own metadata filter over a build of every text: that scores with the
    statistics of chunks the asker cannot see, which ours deliberately does not
    (`indexing.keyword.keyword_segments`; tests/test_keyword_audience.py)."""
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever(
        nodes=[TextNode(id_=node_id, text=text, metadata={"access": access}, excluded_embed_metadata_keys=["access"])
               for node_id, access, text in rows if scopes is None or access in scopes],
        stemmer=_stemmer(), language="en", token_pattern=TOKEN_PATTERN, similarity_top_k=10,
    )


def _same_ranking(ours, theirs):
    """Equal scores (float32, bit for bit) in the same order; chunks of equal score may swap."""
    assert [s for _, s in ours] == [s for _, s in theirs]

    def by_score(hits):
        return sorted(hits, key=lambda h: (-h[1], h[0]))

    # The k-th place may be one of several equal scores: compare all but the last tie group.
    last = theirs[-1][1] if theirs else None
    assert by_score([h for h in ours if h[1] != last]) == by_score([h for h in theirs if h[1] != last])


def _assert_scores_as_fresh_build(index, bm25, strict: bool = False, scope: str = "kw-inc"):
    """Scores equal to a fresh build's; with `strict` (an index built from the chunks, or just
    merged: its rows are in a fresh build's order) equal scores come in that order (node ids
    ascending). bm25s leaves equal scores wherever its argpartition puts them ("arbitrary order",
    its own comment); ours are ordered, and chosen among the rows that scored (`_top_k`)."""
    from llama_index.core.schema import QueryBundle

    rows = _search_texts(index)
    for scopes in (None, [scope]):
        reference = _reference(rows, scopes)
        for question in QUESTIONS:
            ours = [(h.node_id, h.score) for h in bm25.search(question, scopes, 10)]
            theirs = [(h.node.node_id, float(h.score))
                      for h in reference.retrieve(QueryBundle(query_str=analyze(bm25_module.question_text(question))))
                      if h.score > 0]
            assert ours, question
            _same_ranking(ours, theirs)
            if strict:
                ties = [(a, b) for (a, sa), (b, sb) in zip(ours, ours[1:]) if sa == sb]
                assert all(a < b for a, b in ties), (question, scopes, ties)
    return rows


def test_an_edit_re_reads_only_its_page_and_scores_as_a_fresh_build(index, wiki_copy):
    _sync(index, wiki_copy, "kw-inc")
    index.bm25.search("warm", None, 1)  # this process holds the index in memory, as `kb serve` does
    page = wiki_copy / "it" / "vpn.md"
    page.write_text(page.read_text() + "\n\n## Ocelot relay\n\nThe ocelot relay is marmot-3 on port 5522.\n")
    report = _sync(index, wiki_copy, "kw-inc")
    assert report.updated == 1
    with index.session() as s:
        page_chunks = len(index.store.keyword_chunks(s, ["kw-inc:it/vpn.md"]))
    assert index.bm25.last_tokenised == page_chunks  # the edited page's chunks, not the index's
    assert index.bm25.search("ocelot marmot", ["kw-inc"], 1)[0].metadata["doc_id"] == "kw-inc:it/vpn.md"

    rows = _assert_scores_as_fresh_build(index, index.bm25)

    # The gate's IDF weights, from document frequencies counted the slow way for the edited source.
    expected: dict[str, int] = {}
    for _, access, text in rows:
        if access == "kw-inc":
            for term in set(tokens(text)):  # tokens() analyses again: a no-op on analysed text
                expected[term] = expected.get(term, 0) + 1
    weights, known = index.bm25.idf(set(expected) | {"zzzunseenterm"}, ["kw-inc"])
    assert known == set(expected)
    n = sum(1 for _, access, _ in rows if access == "kw-inc")
    assert weights["zzzunseenterm"] == math.log(1 + (n + 0.5) / 0.5)
    assert all(weights[t] == math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in expected.items())


def test_a_process_starting_cold_loads_the_saved_base_from_postgres(index, wiki_copy, tmp_path):
    """No local files anywhere: a new process gets the published version from the database."""
    _sync(index, wiki_copy, "kw-inc")
    index.bm25.rebuild()
    cold = Bm25Index(tmp_path / "elsewhere", index.engine, index.store)
    _assert_scores_as_fresh_build(index, cold)  # base + the changes after it: ties may swap
    assert cold.last_load == "base"
    assert not (tmp_path / "elsewhere").exists()  # nothing written to its disk


def test_a_damaged_or_foreign_base_means_building_from_the_chunks(index, sample_synced, monkeypatch, tmp_path):
    from sqlalchemy import text

    index.bm25.rebuild()
    monkeypatch.setattr(bm25_module, "TERMS_VERSION", "next")  # what a release with a new analyzer sets
    fresh = Bm25Index(tmp_path, index.engine, index.store)
    assert fresh.search("vpn", ["sample"], 1)[0].metadata["doc_id"] == "sample:it/vpn.md"
    assert fresh.last_load == "scratch"
    _assert_scores_as_fresh_build(index, fresh, strict=True, scope="sample")  # ties in bm25s's order too
    monkeypatch.undo()

    with index.engine.begin() as conn:
        conn.execute(text("UPDATE keyword_bases SET payload = 'not a base'"))
    damaged = Bm25Index(tmp_path, index.engine, index.store)
    assert damaged.search("vpn", ["sample"], 1)[0].metadata["doc_id"] == "sample:it/vpn.md"
    assert damaged.last_load == "scratch"
    with index.engine.begin() as conn:  # leave a good base for the tests after this one
        conn.execute(text("DELETE FROM keyword_bases"))
    index.bm25.rebuild()


def test_the_syncing_process_searches_the_new_version_without_loading_it(index, wiki_copy):
    _sync(index, wiki_copy, "kw-inc")
    index.bm25.search("warm", None, 1)
    page = wiki_copy / "it" / "vpn.md"
    page.write_text(page.read_text() + "\n\nThe quokka tunnel closes at dusk.\n")
    _sync(index, wiki_copy, "kw-inc")
    built = index.bm25._index
    with index.session() as s:
        assert built.generation == keyword_versions.published(s)  # caught up by the sync itself
    assert index.bm25.search("quokka tunnel", ["kw-inc"], 1)[0].metadata["doc_id"] == "kw-inc:it/vpn.md"
    assert index.bm25._index is built, "the question did not load anything"


def test_answering_never_publishes(index, sample_synced):
    index.bm25.rebuild()
    with index.session() as s:
        before = keyword_versions.published_versions(s)
    for question in QUESTIONS:
        index.bm25.search(question, ["sample"], 5)
        index.bm25.idf(set(tokens(question)), ["sample"])
    with index.session() as s:
        assert keyword_versions.published_versions(s) == before
    assert index.bm25.rebuild() == str(before[-1])  # nothing changed: nothing new to publish
    with index.session() as s:
        assert keyword_versions.published_versions(s) == before


def _rows(n, doc="d", access="a"):
    return [KeywordRow(f"{doc}-{i}", doc, f"{doc}-p", access) for i in range(n)]


def test_deltas_masks_and_merges_score_as_one_build():
    """The same live rows, reached by edits (masked rows, small segments) or built in one go,
    score identically, and a merge keeps them so."""
    texts = {"d1": ["alpha beta beta", "gamma"], "d2": ["beta delta", "alpha alpha alpha"], "d3": ["delta epsilon"]}

    def terms(doc):
        return [t.split() for t in texts[doc]]

    index = KeywordIndex.build(_rows(2, "d1") + _rows(2, "d2"), terms("d1") + terms("d2"), 1)
    texts["d1"] = ["beta zeta"]  # d1 edited, d3 added, d2 deleted
    index = index.replaced(["d1"], _rows(1, "d1"), terms("d1"), 2)
    index = index.replaced(["d3"], _rows(1, "d3", "b"), terms("d3"), 3)
    index = index.replaced(["d2"], [], [], 4)
    assert len(index.segments) == 3 and index.live_rows == 2
    once = KeywordIndex.build(_rows(1, "d1") + _rows(1, "d3", "b"), terms("d1") + terms("d3"), 4)
    for query in (["beta"], ["delta", "zeta"], ["alpha"], ["beta", "beta", "epsilon"]):
        for scopes in (None, ["b"], ["a", "b"], ["nobody"]):
            expected = once.search(query, scopes, 5)
            assert index.search(query, scopes, 5) == expected
            assert index.merged().search(query, scopes, 5) == expected
            assert KeywordIndex.from_bytes(index.to_bytes()).search(query, scopes, 5) == expected
    assert index.search(["alpha"], None, 5) == []  # only the deleted page had it

    for n in range(12):  # many small edits: the small segments are combined, never the base
        texts["d3"] = [f"delta epsilon e{n}"]
        index = index.replaced(["d3"], _rows(1, "d3", "b"), terms("d3"), 5 + n)
    assert 2 <= len(index.segments) <= 9 and index.live_rows == 2
    assert index.search(["delta"], None, 5) == KeywordIndex.build(
        _rows(1, "d1") + _rows(1, "d3", "b"), terms("d1") + terms("d3"), 0).search(["delta"], None, 5)
    assert index.doc_freq({"beta", "alpha"}, ["a"]) == ({"beta": 1, "alpha": 0}, 1)
    assert sorted(index.merged().vocab) == ["beta", "delta", "e11", "epsilon", "zeta"]  # e0..e10 are gone


def test_a_row_costs_its_ids_bytes_not_python_objects():
    """What the keyword leg keeps per chunk, once built and once loaded from a saved base: its ids'
    bytes and a few numbers — not an object with three strings and a row-map entry, which at a
    million chunks cost more memory than the term frequencies (docs/scaling.md). Measured with
    tracemalloc (numpy reports its arrays to it) after the inputs are dropped."""
    import gc
    import tracemalloc

    n = 20_000

    def retained(make):
        gc.collect()
        tracemalloc.start()
        try:
            index = make()
            gc.collect()
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert index.live_rows == n
        return size / n

    def build():
        rows = [KeywordRow(f"{i:040x}", f"doc:page-{i // 15:06d}.md", f"{i // 3:040x}", "public") for i in range(n)]
        terms = [[f"w{i % 97}", f"w{i % 89}", f"w{i % 83}"] for i in range(n)]
        return KeywordIndex.build(rows, terms, 1)

    blob = build().to_bytes()
    built, loaded = retained(build), retained(lambda: KeywordIndex.from_bytes(blob))
    # 80 bytes of ids, 8 of length, 4 + 4 of codes, 1 alive, ~3 × 8 of term frequencies, dict
    # entries for 1,334 documents; a KeywordRow with its strings alone is over 300 bytes
    assert built < 200 and loaded < 200, (built, loaded)


def test_a_base_larger_than_a_part_is_saved_in_parts_and_read_whole(tmp_path):
    """Postgres refuses a message over 1 GB, which a million chunks' base once came to: a base is
    written in parts of at most `part_bytes` and read back whole; older bases go with their parts."""
    from sqlalchemy import text

    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    index = Index(IndexConfig(home=tmp_path / "kb", rerank=RerankConfig(backend="off")))
    try:
        payloads = {g: bytes(range(256)) * (10 + g) for g in (1, 2, 3)}  # 2,816–3,328 bytes: 1,000 + 2 or 3 parts
        for generation, payload in payloads.items():
            assert keyword_versions.save_base(index.engine, generation, "t", 1, payload, part_bytes=1000)
        with index.session() as s:
            assert keyword_versions.latest_base(s, 3, "t").payload == payloads[3]
            assert keyword_versions.latest_base(s, 2, "t").payload == payloads[2]
            parts = s.execute(text("SELECT generation, count(*) FROM keyword_base_parts GROUP BY 1 ORDER BY 1")).all()
        assert [tuple(p) for p in parts] == [(2, 3), (3, 3)]  # the oldest base and its parts are gone
    finally:
        index.close()


def test_an_index_built_from_the_chunks_in_batches_scores_and_orders_as_one_build(index, sample_synced, monkeypatch,
                                                                                   tmp_path):
    """A process with no base tokenises the chunks a batch at a time (a million chunks' texts are
    never held together); merged, it is the index a single build makes, equal scores in the same order."""
    monkeypatch.setattr(bm25_module, "TERMS_VERSION", "batched")  # no saved base of this version: from the chunks
    monkeypatch.setattr(bm25_module, "LOAD_BATCH", 7)
    batched = Bm25Index(tmp_path, index.engine, index.store)
    assert batched.search("vpn", ["sample"], 1)[0].metadata["doc_id"] == "sample:it/vpn.md"
    assert batched.last_load == "scratch" and batched.last_tokenised == index.chunk_count()
    assert len(batched._index.segments) == 1  # merged
    _assert_scores_as_fresh_build(index, batched, strict=True, scope="sample")


def test_kb_serve_loads_the_keyword_leg_at_start_not_at_the_first_question(index, sample_synced, kb_home):
    """At a million chunks loading the saved base takes ~5 s: `kb serve` does it while the model
    loads, before it takes questions (docs/scaling.md, the cold replica)."""
    from bot.serve import warm_up
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    url = index.url.render_as_string(hide_password=False)
    opened = Index(IndexConfig(home=kb_home, database_url=url, rerank=RerankConfig(backend="off")), embedder=index.embedder)
    try:
        assert opened.bm25._index is None
        warm_up(opened)
        with opened.session() as s:
            assert opened.bm25._index is not None
            assert opened.bm25._index.generation == keyword_versions.published(s)
    finally:
        opened.close()
