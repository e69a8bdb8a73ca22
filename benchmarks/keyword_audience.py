"""What BM25 statistics per audience cost a keyword question, against the whole index's, same run.

    .venv/bin/python -m benchmarks.keyword_audience [--sizes real,100000] [--rounds 3] [--restricted 0.2]
        [--home COPY_OF_KB_HOME]

Until issue 23 the keyword leg scored a scoped question with the statistics of every live chunk
(chunk count, average length, document frequencies) and masked the scores afterwards, so a
restricted page moved public pages' scores. Now (`indexing.keyword.keyword_segments.KeywordIndex.search`)
the statistics are those of the chunks the asker may see. This script measures both on the same
in-memory index, question by question alternately (`whole_index_search` below is the previous
search, kept here as the baseline), in alternating order (reversed every other round):

- real: the Sourcegraph handbook's real chunks — with `--home` (a copy of `kb-sg`), every chunk
  of that index's published keyword version, read from its saved base in seconds; without, its
  first 12,000 chunks, chunked and tokenised as the keyword leg does (`bm25.chunk_search_text`,
  `bm25.tokens_of_each`; minutes);
- a number (100000): those plus synthetic chunks, each the first half of one real chunk's terms
  and the second half of another's (as `benchmarks.scale` mixes texts, at the term level: no
  Postgres, no model).

Pages, 15 chunks to a synthetic one, are given scopes at random (seeded): `--restricted` of them
"hr" or "eng", the rest "public". The handbook's eval questions are asked as `Bm25Index.search`
asks them (function words out, k=100), scoped to "public" as a Slack channel asks, and with all
scopes as the operator asks. Also printed: for how many questions the restricted pages changed the
public top 10 under the old statistics, and a check that the new scores equal an index built
from the public chunks alone, bit for bit.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import time
from pathlib import Path

import numpy as np

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, eval_questions, pct, require

SCOPES = ("public", "hr", "eng")


def whole_index_search(index, query_terms: list[str], scopes: list[str] | None, k: int):
    """`KeywordIndex.search` as it was before issue 23 (9fb6d61): statistics of every live row,
    the asker's scopes applied to the scores afterwards."""
    from indexing.keyword.keyword_segments import B, K1, _top_k

    if not index.live_rows:
        return []
    ids = [index.vocab[t] for t in query_terms if t in index.vocab]
    avg_len = np.float64(index.live_length) / np.float64(index.live_rows)
    scores = [np.zeros(s.size, dtype=np.float32) for s in index.segments]
    for term in ids:
        postings = [s.postings(term, s.alive) for s in index.segments]
        df = sum(len(rows) for rows, _ in postings)
        if not df:
            continue
        idf = np.float32(math.log(1 + (index.live_rows - df + 0.5) / (df + 0.5)))
        for s, (rows, tf), into in zip(index.segments, postings, scores):
            tfc = tf / (K1 * ((1 - B) + B * s.lengths[rows] / avg_len) + tf)
            into[rows] += (idf * tfc).astype(np.float32)
    visible = index._audience(scopes)[0]
    flat = np.concatenate([sc * v for sc, v in zip(scores, visible)])
    top = _top_k(flat, min(k, len(flat)))
    starts = np.cumsum([0] + [s.size for s in index.segments])
    hits = []
    for i in top.tolist():
        if flat[i] > 0:
            seg = int(np.searchsorted(starts, i, side="right") - 1)
            hits.append((index.row(index.segments[seg], int(i - starts[seg])), float(flat[i])))
    return hits


def real_rows(target: int) -> tuple[list[tuple[str, list[str]]], int]:
    """(doc_id, terms) of the handbook's children, page by page, until `target` children."""
    from connectors.markdown import MarkdownFolder
    from indexing.keyword.bm25 import chunk_search_text, tokens_of_each
    from indexing.ingest.chunking import chunk_document
    from indexing.ingest.storable import storable

    folder = MarkdownFolder(require(HANDBOOK), source="handbook", exclude=CORPUS_EXCLUDES)
    rows: list[tuple[str, list[str]]] = []
    pages = 0
    for path in folder.paths():
        if len(rows) >= target:
            break
        doc = storable(folder.read(path))
        if doc.error:
            continue
        texts = [chunk_search_text(child.text, doc.title, parent.heading, doc.path)
                 for parent in chunk_document(doc) for child in parent.children]
        rows += [(doc.doc_id, terms) for terms in tokens_of_each(texts)]
        pages += 1
    return rows, pages


def index_rows(home) -> tuple[list[tuple[str, list[str]]], int]:
    """(doc_id, terms) of every chunk an index's keyword leg holds (its published version), and
    the number of pages. Terms come back grouped (a bag of words: BM25 reads no order)."""
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    try:
        held = index.bm25._current()
        held = held.merged() if len(held.segments) > 1 else held
    finally:
        index.close()
    segment, vocab = held.segments[0], list(held.vocab)
    tf = segment.tf.tocsr()
    rows = []
    for i in range(segment.size):
        start, end = tf.indptr[i], tf.indptr[i + 1]
        counts = zip(tf.indices[start:end].tolist(), tf.data[start:end].tolist())
        rows.append((held.row(segment, i).doc_id, [vocab[t] for t, n in counts for _ in range(int(n))]))
    return rows, len({doc for doc, _ in rows})


def grown(real: list[tuple[str, list[str]]], size: int, seed: int) -> list[tuple[str, list[str]]]:
    """The real rows plus synthetic ones (half of one real row's terms + half of another's),
    15 to a synthetic page, until `size` rows."""
    rng = random.Random(seed)
    rows = list(real)
    k = 0
    while len(rows) < size:
        a, b = rng.sample(real, 2)
        rows.append((f"synthetic/{k // 15:06d}", a[1][: max(1, len(a[1]) // 2)] + b[1][len(b[1]) // 2:]))
        k += 1
    return rows


def keyword_index(rows: list[tuple[str, list[str]]], restricted: float, seed: int):
    from indexing.keyword.keyword_segments import KeywordIndex, KeywordRow

    rng = random.Random(seed)
    scope_of: dict[str, str] = {}
    for doc, _ in rows:
        if doc not in scope_of:
            scope_of[doc] = rng.choice(SCOPES[1:]) if rng.random() < restricted else "public"
    keyword_rows = [KeywordRow(f"{i:07d}", doc, f"{doc}#p", scope_of[doc]) for i, (doc, _) in enumerate(rows)]
    return KeywordIndex.build(keyword_rows, [terms for _, terms in rows], 1), keyword_rows


def one_size(rows, restricted: float, questions: list[list[str]], rounds: int) -> dict:
    from indexing.keyword.keyword_segments import KeywordIndex

    index, keyword_rows = keyword_index(rows, restricted, seed=len(rows))
    public = [i for i, r in enumerate(keyword_rows) if r.access == "public"]
    alone = KeywordIndex.build([keyword_rows[i] for i in public], [rows[i][1] for i in public], 1)
    r = {"chunks": index.live_rows, "public": len(public)}
    # Correctness first: per audience = an index of the visible rows alone; how often the old
    # statistics changed the public top 10.
    r["equal_to_alone"] = sum(index.search(q, ["public"], 10) == alone.search(q, None, 10) for q in questions)
    r["top10_moved"] = sum([h[0].node_id for h in whole_index_search(index, q, ["public"], 10)]
                           != [h[0].node_id for h in index.search(q, ["public"], 10)] for q in questions)
    times = {key: [] for key in ("before_public", "after_public", "before_all", "after_all")}
    calls = [("before_public", whole_index_search, ["public"]), ("after_public", KeywordIndex.search, ["public"]),
             ("before_all", whole_index_search, None), ("after_all", KeywordIndex.search, None)]
    for n in range(rounds):
        for q in questions:
            for key, call, scopes in (calls if n % 2 == 0 else calls[::-1]):
                started = time.perf_counter()
                call(index, q, scopes, 100)
                times[key].append((time.perf_counter() - started) * 1000)
    r.update(times)
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="real,100000", help="chunks per index; real: the real chunks alone")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--restricted", type=float, default=0.2, help="share of pages in restricted scopes")
    parser.add_argument("--home", default=None, help="a COPY of a KB home (e.g. kb-sg) to take the real chunks from")
    args = parser.parse_args()

    from indexing.keyword.bm25 import _terms, analyze, question_text

    questions = [_terms(analyze(question_text(q["question"]))) for q in eval_questions()]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {len(questions)} questions", flush=True)
    started = time.perf_counter()
    named = args.sizes.split(",")
    real, pages = index_rows(Path(args.home)) if args.home else real_rows(12000)
    sizes = [len(real) if s == "real" else int(s) for s in named]
    print(f"{len(real):,} real chunks of {pages} pages read in {time.perf_counter() - started:.0f} s", flush=True)
    results = [one_size(grown(real, size, seed=size), args.restricted, questions, args.rounds) for size in sizes]

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"Keyword question (k=100), whole-index vs per-audience statistics, same run, "
                    f"{args.rounds} rounds of {len(questions)} questions, {args.restricted:.0%} of pages restricted")
    t.add_column("measure")
    for r in results:
        t.add_column(f"{r['chunks']:,} chunks ({r['public']:,} public)", justify="right")
    for key, name in (("before_public", "scope public, whole-index statistics (before)"),
                      ("after_public", "scope public, per-audience statistics (now)"),
                      ("before_all", "all scopes (operator), before"),
                      ("after_all", "all scopes (operator), now")):
        t.add_row(f"{name} p50 / p95, ms", *[f"{pct(r[key], 50):.2f} / {pct(r[key], 95):.2f}" for r in results])
    t.add_row("scope public: now / before, p50 / p95",
              *[f"{pct(r['after_public'], 50) / pct(r['before_public'], 50):.2f} / "
                f"{pct(r['after_public'], 95) / pct(r['before_public'], 95):.2f}" for r in results])
    t.add_row("questions whose public top 10 the restricted pages moved (before)",
              *[f"{r['top10_moved']} of {len(questions)}" for r in results])
    t.add_row("questions scored bit for bit as an index of the public chunks alone (now)",
              *[f"{r['equal_to_alone']} of {len(questions)}" for r in results])
    Console(width=160).print(t)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
