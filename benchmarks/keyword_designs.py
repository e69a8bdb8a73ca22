"""Three designs for an incremental keyword leg, on the same synthetic chunks, same run.

    PYTHONPATH=/path/to/tantivy .venv/bin/python -m benchmarks.keyword_designs [--chunks 100000] [--rounds 10]

The corpus is `benchmarks.keyword_scale`'s (real handbook pages plus synthetic pages made from
them), tokenised once with Docent's analyser. Each design indexes the same term lists; then the
handbook's eval questions are asked (scope "public", k=100) and one page is edited `--rounds`
times. Compared with the from-scratch bm25s arithmetic (`indexing.keyword.keyword_segments`, which the
tests hold equal to LlamaIndex's BM25Retriever):

1. **segments** — `indexing.keyword.keyword_segments.KeywordIndex`: term frequencies in memory, scored
   live; an edit masks the old rows and adds a small segment (the chosen design).
2. **postgres** — postings in a Postgres table (term, row, tf) with the rows' lengths and scopes
   in another, BM25 computed in one SQL query; an edit deletes and inserts the page's postings.
3. **tantivy** — the `tantivy` package (not a Docent dependency: put it on PYTHONPATH, e.g.
   `pip install --target DIR tantivy==0.27.0`; skipped when absent), pre-tokenised terms in a
   whitespace-tokenised field (every chunk is public: no scope filter); an edit deletes and adds the page's chunks,
   commits and reloads the searcher.

Reported per design: build time, question p50/p95, one-page update p50/p95, and how far its
scores and top-10s are from bm25s's (the largest relative score difference among the top 10, and
how many questions get a different top-10 set).
"""

from __future__ import annotations

import argparse
import io
import random
import tempfile
import time

import numpy as np

from benchmarks._common import eval_questions, pct, table


def corpus(chunks: int):
    """(rows, terms, docs): KeywordRows and term lists, and for each doc its row positions."""
    from benchmarks.scale import real_corpus, synthetic_pages
    from indexing.keyword.bm25 import _chunk_terms
    from indexing.ingest.chunking import chunk_document
    from indexing.keyword.keyword_segments import KeywordRow
    from indexing.vectors.store import KeywordChunk

    real = real_corpus(3000, eval_questions())
    vectors = np.random.default_rng(2).standard_normal((len(real.real), 384)).astype(np.float32)
    real.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    docs, count, stream = list(real.real_docs), len(real.real), synthetic_pages(real, 5, 0.1)
    while count < chunks:
        doc, children = next(stream)
        docs.append(doc)
        count += len(children)
    kchunks = [KeywordChunk(c.id, c.text, d.doc_id, p.id, d.access, d.title, p.heading, d.path)
               for d in docs for p in chunk_document(d) for c in p.children]
    terms = _chunk_terms(kchunks)
    rows = [KeywordRow(c.node_id, c.doc_id, c.parent_id, c.access) for c in kchunks]
    return rows, terms


class Segments:
    name = "segments (chosen)"

    def __init__(self, rows, terms):
        from indexing.keyword.keyword_segments import KeywordIndex

        self.index = KeywordIndex.build(rows, terms, 1)

    def search(self, terms, k):
        return [(r.node_id, s) for r, s in self.index.search(terms, ["public"], k)]

    def edit(self, doc_id, rows, terms):
        self.index = self.index.replaced([doc_id], rows, terms, self.index.generation + 1)


class Postgres:
    name = "postgres (postings table)"

    def __init__(self, rows, terms):
        from benchmarks._common import fresh_index

        self.idx = fresh_index()
        self.vocab: dict[str, int] = {}
        self.conn = self.idx.engine.raw_connection()
        cur = self.conn.cursor()
        cur.execute("CREATE TABLE kw_rows (row INT PRIMARY KEY, node_id TEXT, doc_id TEXT, length INT, access TEXT)")
        cur.execute("CREATE TABLE kw_postings (term INT, row INT, tf REAL)")
        cur.execute("CREATE TABLE kw_stats (n BIGINT, total BIGINT)")
        self.next_row = 0
        self._insert(cur, rows, terms)
        cur.execute("CREATE INDEX ON kw_postings (term) INCLUDE (row, tf)")
        cur.execute("CREATE INDEX ON kw_rows (doc_id)")
        cur.execute("INSERT INTO kw_stats SELECT count(*), sum(length) FROM kw_rows")
        cur.execute("ANALYZE")
        self.conn.commit()

    def _insert(self, cur, rows, terms):
        rbuf, pbuf = io.StringIO(), io.StringIO()
        for row, ts in zip(rows, terms):
            r = self.next_row
            self.next_row += 1
            rbuf.write(f"{r}\t{row.node_id}\t{row.doc_id}\t{len(ts)}\t{row.access}\n")
            counts: dict[int, int] = {}
            for t in ts:
                tid = self.vocab.setdefault(t, len(self.vocab))
                counts[tid] = counts.get(tid, 0) + 1
            for tid, tf in counts.items():
                pbuf.write(f"{tid}\t{r}\t{tf}\n")
        rbuf.seek(0)
        pbuf.seek(0)
        cur.copy_from(rbuf, "kw_rows")
        cur.copy_from(pbuf, "kw_postings")

    def search(self, terms, k):
        ids = [self.vocab[t] for t in terms if t in self.vocab]
        if not ids:
            return []
        cur = self.conn.cursor()
        cur.execute("""
            WITH q AS (SELECT unnest(%(ids)s::int[]) AS term),
                 s AS (SELECT n, total::float8 / n AS avg FROM kw_stats),
                 df AS (SELECT term, count(*) AS df FROM kw_postings WHERE term = ANY(%(ids)s) GROUP BY term)
            SELECT r.node_id, sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                                  * p.tf / (1.5 * (0.25 + 0.75 * r.length / s.avg) + p.tf)) AS score
            FROM q JOIN df USING (term) JOIN kw_postings p USING (term) JOIN kw_rows r USING (row), s
            WHERE r.access = 'public'
            GROUP BY r.node_id ORDER BY score DESC LIMIT %(k)s""", {"ids": ids, "k": k})
        out = cur.fetchall()
        self.conn.commit()
        return [(n, float(s)) for n, s in out]

    def edit(self, doc_id, rows, terms):
        cur = self.conn.cursor()
        cur.execute("SELECT count(*), coalesce(sum(length), 0) FROM kw_rows WHERE doc_id = %s", (doc_id,))
        n, total = cur.fetchone()
        cur.execute("DELETE FROM kw_postings WHERE row IN (SELECT row FROM kw_rows WHERE doc_id = %s)", (doc_id,))
        cur.execute("DELETE FROM kw_rows WHERE doc_id = %s", (doc_id,))
        self._insert(cur, rows, terms)
        cur.execute("UPDATE kw_stats SET n = n - %s + %s, total = total - %s + %s",
                    (n, len(rows), total, sum(len(t) for t in terms)))
        self.conn.commit()


class Tantivy:
    name = "tantivy"

    def __init__(self, rows, terms):
        import tantivy

        self.t = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("terms", tokenizer_name="whitespace", stored=False)
        builder.add_text_field("access", tokenizer_name="raw", stored=False)
        builder.add_text_field("doc", tokenizer_name="raw", stored=False)
        builder.add_text_field("node", tokenizer_name="raw", stored=True)
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema, path=tempfile.mkdtemp(prefix="docent-tantivy-"))
        self.writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        for row, ts in zip(rows, terms):
            self._add(row, ts)
        self.writer.commit()
        self.index.reload()

    def _add(self, row, ts):
        self.writer.add_document(self.t.Document(terms=" ".join(ts), access=row.access, doc=row.doc_id, node=row.node_id))

    def search(self, terms, k):
        t = self.t
        should = [(t.Occur.Should, t.Query.term_query(self.schema, "terms", term)) for term in terms]
        if not should:
            return []
        # Every chunk here is "public": no scope filter (a scoring Must clause would add its own score).
        query = t.Query.boolean_query(should)
        searcher = self.index.searcher()
        hits = searcher.search(query, k).hits
        # Tantivy's BM25 multiplies by (k1 + 1), bm25s's does not: divided out, so that what is
        # left of the difference is its one-byte length norms and its statistics.
        return [(searcher.doc(address)["node"][0], float(score) / 2.5) for score, address in hits]

    def edit(self, doc_id, rows, terms):
        self.writer.delete_documents("doc", doc_id)
        for row, ts in zip(rows, terms):
            self._add(row, ts)
        self.writer.commit()
        self.index.reload()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    from indexing.keyword.bm25 import _terms, analyze, question_text
    from indexing.keyword.keyword_segments import KeywordRow

    started = time.perf_counter()
    rows, terms = corpus(args.chunks)
    print(f"{len(rows):,} chunks tokenised in {time.perf_counter() - started:.0f} s", flush=True)
    questions = [_terms(analyze(question_text(q["question"]))) for q in eval_questions()]
    by_doc: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_doc.setdefault(r.doc_id, []).append(i)
    rng = random.Random(7)
    edits = []
    for n in range(args.rounds):
        doc = rng.choice(sorted(by_doc))
        new_rows = [KeywordRow(f"{rows[i].node_id}-e{n}", doc, rows[i].parent_id, rows[i].access) for i in by_doc[doc]]
        new_terms = [terms[i] + [f"zq{n}relay", "relay"] for i in by_doc[doc]]
        edits.append((doc, new_rows, new_terms))

    designs = [Segments, Postgres]
    try:
        import tantivy  # noqa: F401

        designs.append(Tantivy)
    except ImportError:
        print("tantivy is not importable: skipped (see the docstring)")
    reference = None
    results = []
    for design in designs:
        t = time.perf_counter()
        d = design(rows, terms)
        build_s = time.perf_counter() - t
        d.search(questions[0], 100)
        times = []
        for _ in range(3):
            for q in questions:
                t = time.perf_counter()
                d.search(q, 100)
                times.append((time.perf_counter() - t) * 1000)
        tops = [d.search(q, 10) for q in questions]
        update = []
        for doc, new_rows, new_terms in edits:
            t = time.perf_counter()
            d.edit(doc, new_rows, new_terms)
            update.append((time.perf_counter() - t) * 1000)
        after = d.search(["zq0relay"], 3)
        if reference is None:
            reference = tops
        worst, differing = 0.0, 0
        for ours, theirs in zip(tops, reference):
            ref = dict(theirs)
            if {n for n, _ in ours} != set(ref):
                differing += 1
            for n, s in ours:
                if n in ref and ref[n]:
                    worst = max(worst, abs(s - ref[n]) / ref[n])
        results.append((d.name, build_s, pct(times, 50), pct(times, 95), pct(update, 50), pct(update, 95),
                        worst, differing, bool(after)))
        print(f"{d.name}: done", flush=True)
    for name, build_s, q50, q95, u50, u95, worst, differing, found in results:
        table(f"{name} at {len(rows):,} chunks", [
            ("build, s", build_s), ("question p50, ms", q50), ("question p95, ms", q95),
            ("one-page update p50, ms", u50), ("one-page update p95, ms", u95),
            ("largest relative score difference from bm25s (top 10)", f"{worst:.2e}"),
            (f"questions whose top-10 set differs (of {len(questions)})", differing),
            ("edited page found by its new word", found),
        ])


if __name__ == "__main__":
    main()
