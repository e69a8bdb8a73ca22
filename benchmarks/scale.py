"""Query latency at scale: a synthetic 100,000-chunk index against a 5,000-chunk one, same run.

    .venv/bin/python -m benchmarks.scale [--chunks 100000] [--baseline 5000] [--real 3000] [--repeat 3]
        [--threads 0,1] [--noise 0.1] [--seed 5] [--cache-dir DIR] [--keep] [--no-reindex] [--scope public]
        [--lead all,8 --cold-lead] [--lead-vectors stored,question-time]

Two throwaway indexes (each its own temporary KB home with an embedded Postgres, deleted at
exit unless `--keep`) are built the same way, through Docent's real write path, then the
Sourcegraph eval questions are answered on both, alternating, with the model loaded — the same
call as `kb ask` / `kb eval` (`bot.knowledge.KnowledgeBase.ask`, hybrid, extractive, all scopes; with
`--scope public` filtered to that scope, as every Slack question is — Postgres plans the two
differently, see docs/benchmarks.md).
The small index is the baseline: the ratios show how latency grows with the index.

How the corpora are made (embedding 100k texts with the real model would take ~45+ min here):

1. **Real chunks.** Handbook pages are read at run time (never copied into the repository) —
   first the eval questions' expected pages, then the rest in path order — and chunked by
   `indexing.ingest.chunking.chunk_document` until `--real` children (default 3,000) are collected.
   Their `embed_text`s are embedded with the real model, once: vectors are kept on disk in
   `--cache-dir` (default `~/.cache/docent-benchmarks`, file `scale-vectors.npz`), keyed by
   `indexing.vectors.embedding.cache_key(model, text)` (sha256 of model name + text); later runs embed
   only texts missing there.
2. **Synthetic chunks.** Synthetic pages of 8–20 sections, titled after a real page plus a
   number. Each section takes two random real children A and B: heading = A's section heading,
   body = the first half of A's lines/sentences + the second half of B's (heading and code-fence
   lines dropped, so the chunker sees exactly one section). Its vector = normalise(w·vA +
   (1−w)·vB + n), w = A's share of the body's characters, n a Gaussian vector of norm
   `--noise` (default 0.1), fresh for every child; seeded (`--seed`), so every run and both
   indexes draw the same stream. The pages are chunked by `chunk_document` (a long section may
   give two children, both with the section's mix) to learn each child's exact embed_text.
3. **Writing.** Every child's vector is written into the index's `embedding_cache` table under
   its real key; then the unmodified `indexing.ingest.sync.sync_documents` runs over the real and
   synthetic `SourceDocument`s: chunking, the embedding cache lookup (the model is never
   called — checked), the lead's sentence vectors (`indexing.vectors.sentence_vectors`: a real page's
   sentences embedded with the real model once and kept in the same disk cache; a synthetic
   section's sentences get its mixed vector plus fresh noise, like its children, prefilled in
   the cache too), per-document transactions into `data_docent_chunks` with its HNSW index
   in place, and the BM25 rebuild. The baseline is the real pages plus the first synthetic pages
   of the same stream, so it is a subset of the large index.

Reported per index: build times (cache prefill, sync, BM25 rebuild inside it, and a from-scratch
`REINDEX` of the HNSW index after the queries), sizes (Postgres table/HNSW, the saved keyword base), the
process's RSS and peak RSS per phase (peak reset through /proc/self/clear_refs), the embedded
Postgres processes' PSS, whether the planner uses the HNSW index (after an `ANALYZE`, as
autovacuum would run it; queries are measured with those statistics) (below a few thousand rows it
prefers an exact scan), the first (cold) answer, then answer p50/p95, the same without the
question's embedding (the part that depends on the index), and per-stage p50/p95 over
`--repeat` rounds of the eval questions for each `--threads` setting (default `0,1`: torch's
default — 2 here — and 1 thread, alternating round by round; on a shared 2-core machine two
threads per encode give the question embedding a long tail). hit@5 and not-found refusals are printed only to show
the answers stay sane; they are no quality measure at scale: every synthetic chunk repeats half
a real chunk word for word under a real heading, a near-duplicate competing head-on with the
real page.
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import random
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, eval_questions, pct, require

STAGES = ("embed", "vector", "bm25", "fuse", "lead", "answer")
# Heading, code-fence and HTML-block lines are never put in a synthetic body: under CommonMark an
# HTML comment or block opened by one half-chunk (`<!--` without its `-->`) runs over the next
# `## heading`, and the page would no longer have one section per parent.
_SKIP_LINE = re.compile(r"^(#{1,6}(\s|$)|```|~~~|<)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\[*`])")


# -- memory ---------------------------------------------------------------------------------

def rss_mb() -> float:
    return _status_kb("VmRSS") / 1024


def peak_mb() -> float:
    return _status_kb("VmHWM") / 1024


_PEAKS: list[float] = []  # peaks of the phases before each reset (resetting VmHWM resets ru_maxrss too)


def reset_peak() -> None:
    _PEAKS.append(peak_mb())
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


def _status_kb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return float(line.split()[1])
    return float("nan")


def postgres_pss_mb(pgdata: Path) -> float:
    """Proportional set size of the Postgres serving `pgdata` (postmaster and its children)."""
    import psutil

    total = 0.0
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.info["name"] == "postgres" and str(pgdata) in " ".join(proc.info["cmdline"] or []):
                for p in [proc, *proc.children(recursive=True)]:
                    total += p.memory_full_info().pss
        except (psutil.Error, OSError):
            continue
    return total / 2**20


# -- the corpus -----------------------------------------------------------------------------

@dataclass
class RealChunk:
    embed_text: str
    heading: str
    title: str
    units: list[str]  # lines / sentences a synthetic body is made of


@dataclass
class Corpus:
    real_docs: list = field(default_factory=list)
    real: list[RealChunk] = field(default_factory=list)
    vectors: np.ndarray | None = None  # one row per real chunk


def units_of(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or _SKIP_LINE.match(line):
            continue
        out.extend(s for s in (_SENTENCE.split(line) if len(line) > 200 else [line]) if s.strip())
    return out


def real_corpus(target: int, questions: list[dict]) -> Corpus:
    """Handbook pages (expected sources first) chunked until `target` children."""
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.chunking import chunk_document
    from indexing.ingest.storable import storable

    folder = MarkdownFolder(require(HANDBOOK), source="handbook", exclude=CORPUS_EXCLUDES)
    paths = list(folder.paths())
    expected = list(dict.fromkeys(p for q in questions for p in q["expected_sources"] if p in set(paths)))
    corpus = Corpus()
    for path in [*expected, *(p for p in paths if p not in set(expected))]:
        if len(corpus.real) >= target:
            break
        doc = storable(folder.read(path))
        if doc.error:
            continue
        parents = chunk_document(doc)
        if not parents:
            continue
        corpus.real_docs.append(doc)
        for parent in parents:
            for child in parent.children:
                corpus.real.append(RealChunk(child.embed_text, parent.heading_path[-1] if parent.heading_path else doc.title,
                                             doc.title, units_of(child.text)))
    return corpus


def real_vectors(embedder, texts: list[str], cache_dir: Path) -> tuple[np.ndarray, int, float]:
    """Vectors of `texts` from the on-disk cache, embedding (and saving) the missing ones.
    Returns (vectors, texts embedded now, seconds spent embedding)."""
    from indexing.vectors.embedding import cache_key

    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / "scale-vectors.npz"
    known: dict[str, np.ndarray] = {}
    if path.exists():
        data = np.load(path)
        known = dict(zip(data["keys"].tolist(), data["vectors"]))
    keys = [cache_key(embedder.name, t) for t in texts]
    missing = sorted({k: t for k, t in zip(keys, texts) if k not in known}.items(), key=lambda kv: len(kv[1]))
    seconds = 0.0
    if missing:
        print(f"embedding {len(missing):,} real texts with the model (once; cached in {path}) …", flush=True)
        started = time.perf_counter()
        vecs = embedder.embed_texts([t for _, t in missing])
        seconds = time.perf_counter() - started
        known.update({k: np.asarray(v, dtype=np.float32) for (k, _), v in zip(missing, vecs)})
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
        tmp.replace(path)
    return np.stack([known[k] for k in keys]), len(missing), seconds


def synthetic_pages(corpus: Corpus, seed: int, noise: float, *, rng: random.Random | None = None,
                    nrng: np.random.Generator | None = None, first: int = 1):
    """Endless stream of (SourceDocument, [(embed_text, vector)] of its children, [(text, vector)] of
    its sections' sentences as the lead scores them) built from the real chunks.

    `rng`, `nrng` and `first` (the next page's number) resume a stream where a checkpoint left it
    (`benchmarks.million` saves the generators' states between batches); by default it starts at
    page 1 from `seed`."""
    from connectors.document import SourceDocument
    from indexing.ingest.chunking import chunk_document
    from indexing.ingest.storable import storable

    from indexing.vectors.sentence_vectors import section_sentences

    rng = rng or random.Random(seed)
    nrng = nrng or np.random.default_rng(seed)
    usable = [i for i, c in enumerate(corpus.real) if c.units]
    k = first - 1
    while True:
        k += 1
        a0 = corpus.real[rng.choice(usable)]
        title = f"{a0.title} ({k})"
        sections, mixes = [], []
        for _ in range(rng.randint(8, 20)):
            ia, ib = rng.sample(usable, 2)
            a, b = corpus.real[ia], corpus.real[ib]
            part_a = a.units[: max(1, math.ceil(len(a.units) / 2))]
            part_b = b.units[len(b.units) // 2:] or b.units[-1:]
            body = "\n".join(part_a + part_b)
            la, lb = sum(map(len, part_a)), sum(map(len, part_b))
            sections.append(f"## {a.heading}\n\n{body}")
            mixes.append((ia, ib, la / (la + lb)))
        doc = storable(SourceDocument(source="handbook", path=f"synthetic/page-{k:06d}.md", title=title,
                                      text="\n\n".join(sections) + "\n"))
        out, said, j = [], [], 0
        for parent in chunk_document(doc):
            while j < len(sections) and parent.text.strip() not in sections[j]:
                j += 1
            if j == len(sections):
                raise RuntimeError("the chunker no longer keeps one synthetic section per parent; update benchmarks/scale.py")
            ia, ib, w = mixes[j]
            base = w * corpus.vectors[ia] + (1 - w) * corpus.vectors[ib]
            base /= np.linalg.norm(base)
            for child in parent.children:
                n = nrng.standard_normal(base.shape[0]).astype(np.float32)
                v = base + noise * n / np.linalg.norm(n)
                out.append((child.embed_text, (v / np.linalg.norm(v)).astype(np.float32)))
            for sentence in section_sentences(title, parent.heading_path, parent.text, (c.text for c in parent.children)):
                n = nrng.standard_normal(base.shape[0]).astype(np.float32)
                v = base + noise * n / np.linalg.norm(n)
                said.append((sentence, (v / np.linalg.norm(v)).astype(np.float32)))
        yield doc, out, said


def real_sentence_texts(corpus: Corpus) -> list[str]:
    """Every sentence of the real pages as the lead scores it (what the sync stores for them)."""
    from indexing.ingest.chunking import chunk_document
    from indexing.vectors.sentence_vectors import of_parents

    texts: dict[str, None] = {}
    for doc in corpus.real_docs:
        for section in of_parents(doc.title, chunk_document(doc)):
            texts.update(dict.fromkeys(section.texts))
    return list(texts)


# -- one index ------------------------------------------------------------------------------

@dataclass
class Built:
    label: str
    index: object
    home: Path
    chunks: int = 0
    docs: int = 0
    numbers: dict = field(default_factory=dict)
    totals: dict = field(default_factory=dict)  # torch threads → answer times, ms
    stages: dict = field(default_factory=dict)  # torch threads → stage → times, ms
    hits: list[bool] = field(default_factory=list)
    refusals: list[bool] = field(default_factory=list)


def build(label: str, embedder, docs: list, vectors: dict[str, np.ndarray], keep: bool) -> Built:
    """A fresh index holding `docs`, their vectors prefilled in the embedding cache, via sync_documents.
    Empties `vectors` once they are in the cache, so the sync's memory is measured without them."""
    from sqlalchemy.dialects.postgresql import insert

    from indexing.config import IndexConfig, RerankConfig
    from indexing.vectors.embedding import cache_key
    from indexing.index import Index
    from indexing.storage.index_tables import EmbeddingCache
    from indexing.ingest.sync import sync_documents

    home = Path(tempfile.mkdtemp(prefix=f"docent-scale-{label}-"))
    if not keep:
        atexit.register(shutil.rmtree, home, True)  # registered first: runs after Postgres stops
    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home), embedder=embedder)
    b = Built(label, index, home)
    reset_peak()

    started = time.perf_counter()
    rows = [{"key": cache_key(embedder.name, t), "vector": v.tobytes()} for t, v in vectors.items()]
    with index.engine.begin() as conn:
        for start in range(0, len(rows), 2000):
            conn.execute(insert(EmbeddingCache.__table__).on_conflict_do_nothing(), rows[start : start + 2000])
    b.numbers["cache prefill, s"] = time.perf_counter() - started
    del rows
    vectors.clear()

    rebuild, bm25_seconds = index.bm25.rebuild, []

    def timed_rebuild():
        t = time.perf_counter()
        try:
            return rebuild()
        finally:
            bm25_seconds.append(time.perf_counter() - t)

    index.bm25.rebuild = timed_rebuild
    started = time.perf_counter()
    report = sync_documents(index, iter(docs), "handbook", prune=False, trigger="benchmark")
    b.numbers["sync_documents, s"] = time.perf_counter() - started
    index.bm25.rebuild = rebuild
    if report.embedded:
        print(f"warning: {report.embedded} texts reached the model during the {label} sync (cache prefill missed them)")
    b.chunks, b.docs = index.chunk_count(), report.added
    b.numbers["… of which BM25 rebuild, s"] = sum(bm25_seconds)
    b.numbers["sync: chunks / s"] = b.chunks / b.numbers["sync_documents, s"]
    b.numbers["texts that reached the model"] = report.embedded
    b.numbers["sentence vectors written"] = report.sentences
    b.numbers["failed documents"] = report.failed
    b.numbers["build peak RSS, MB"] = peak_mb()
    return b


def sizes(b: Built) -> None:
    from sqlalchemy import text

    from indexing.vectors.store import HNSW

    table = b.index.store.table.__tablename__
    with b.index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))  # the statistics autovacuum would gather a minute later
    with b.index.engine.connect() as conn:
        q = lambda sql: conn.execute(text(sql)).scalar_one()  # noqa: E731
        b.numbers["chunk table + indexes, MB"] = q(f"SELECT pg_total_relation_size('{table}')") / 2**20
        b.numbers["HNSW index, MB"] = q(f"SELECT pg_relation_size('{table}_embedding_idx')") / 2**20
        b.numbers["shared_buffers / maintenance_work_mem"] = f"{q('SHOW shared_buffers')} / {q('SHOW maintenance_work_mem')}"
        vector = q(f"SELECT embedding::text FROM {table} LIMIT 1")
        # the columns and settings of the store's dense query (LOCAL: this transaction only)
        conn.execute(text(f"SET LOCAL hnsw.ef_search = {HNSW['hnsw_ef_search']}"))
        conn.execute(text("SET LOCAL enable_bitmapscan = off"))
        plan = " ".join(r[0] for r in conn.execute(text(
            f"EXPLAIN SELECT id, node_id, text, metadata_, embedding <=> CAST(:v AS vector) AS distance "
            f"FROM {table} ORDER BY distance LIMIT {b.index.config.vector_candidates}"), {"v": vector}))
        conn.commit()
        b.numbers["vector leg plan (planner's choice)"] = "HNSW index scan" if "embedding_idx" in plan else "exact scan"
        b.numbers["sentence vectors table + indexes, MB"] = q("SELECT pg_total_relation_size('sentence_vectors')") / 2**20
        b.numbers["embedding cache table, MB"] = q("SELECT pg_total_relation_size('embedding_cache')") / 2**20
        b.numbers["keyword base in Postgres, MB"] = q("SELECT coalesce(max(length(payload)), 0) FROM keyword_bases") / 2**20


def reindex_hnsw(b: Built) -> None:
    """The HNSW index rebuilt from scratch over the whole table (server defaults), timed."""
    from sqlalchemy import text

    table = b.index.store.table.__tablename__
    started = time.perf_counter()
    with b.index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"REINDEX INDEX {table}_embedding_idx"))
    b.numbers["HNSW build from scratch (REINDEX), s"] = time.perf_counter() - started


# -- main -----------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000, help="child chunks in the large index")
    parser.add_argument("--baseline", type=int, default=5_000,
                        help="child chunks in the baseline index (at most a tenth of --chunks, at least 1,000)")
    parser.add_argument("--real", type=int, default=3_000, help="real handbook chunks embedded with the model")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the eval questions")
    parser.add_argument("--noise", type=float, default=0.1, help="norm of the noise added to synthetic vectors")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "docent-benchmarks")
    parser.add_argument("--threads", default="0,1",
                        help="torch thread counts to answer with, alternating round by round (0: torch's default)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary KB homes (printed)")
    parser.add_argument("--no-reindex", action="store_true", help="skip the from-scratch HNSW rebuild")
    parser.add_argument("--lead", default=None,
                        help="compare caps on the lead's embedded sentences (bot.answering.lead.EMBEDDED_SENTENCES), "
                             "e.g. 'all,8'; "
                             "settings alternate round by round like --threads")
    parser.add_argument("--cold-lead", action="store_true",
                        help="forget the lead's sentence vectors before every answer (every section unseen: the worst case)")
    parser.add_argument("--lead-vectors", default="stored",
                        help="where the lead's sentence vectors come from: 'stored' (the index), 'question-time' (embedded "
                             "per answer, the process's cache emptied first, as before they were stored), or "
                             "'stored,question-time'; settings alternate round by round like --threads")
    parser.add_argument("--scope", action="append", default=None,
                        help="ask within this access scope (repeatable; every page here is 'public'); default: all")
    args = parser.parse_args()
    baseline = min(args.baseline, max(args.chunks // 10, 1_000))
    real_target = min(args.real, baseline)
    run_started = time.perf_counter()

    from bot.knowledge import KnowledgeBase
    from sources import Audience
    from indexing.vectors.embedding import TorchEmbedder

    questions = eval_questions()
    load_start = os.getloadavg()
    print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}", flush=True)
    embedder = TorchEmbedder()
    embedder.embed_query("load the model before anything is timed")
    model_rss = rss_mb()

    t = time.perf_counter()
    corpus = real_corpus(real_target, questions)
    chunk_real_s = time.perf_counter() - t
    corpus.vectors, embedded_now, embed_s = real_vectors(embedder, [c.embed_text for c in corpus.real], args.cache_dir)
    print(f"{len(corpus.real):,} real chunks from {len(corpus.real_docs)} pages "
          f"({embedded_now:,} embedded now{f', {embedded_now / embed_s:.1f}/s' if embedded_now else ''})", flush=True)
    real_sentences = real_sentence_texts(corpus)
    sentence_vecs, sentences_now, sentences_s = real_vectors(embedder, real_sentences, args.cache_dir)
    print(f"{len(real_sentences):,} real sentences ({sentences_now:,} embedded now"
          f"{f', {sentences_now / sentences_s:.1f}/s' if sentences_now else ''})", flush=True)

    # The synthetic stream, generated once; the baseline takes its first pages.
    t = time.perf_counter()
    stream = synthetic_pages(corpus, args.seed, args.noise)
    real_vecs = dict(zip((c.embed_text for c in corpus.real), corpus.vectors))
    real_vecs.update(zip(real_sentences, sentence_vecs))
    docs_small, vecs_small = list(corpus.real_docs), dict(real_vecs)
    docs_large, vecs_large = list(corpus.real_docs), dict(real_vecs)
    count = len(corpus.real)
    while count < args.chunks:
        doc, children, said = next(stream)
        docs_large.append(doc)
        vecs_large.update(children)
        vecs_large.update(said)
        if count < baseline:
            docs_small.append(doc)
            vecs_small.update(children)
            vecs_small.update(said)
        count += len(children)
    generate_s = time.perf_counter() - t
    generated_rss = rss_mb()
    print(f"synthetic pages generated in {generate_s:.1f} s; building the indexes …", flush=True)

    small = build("baseline", embedder, docs_small, vecs_small, args.keep)
    small.numbers["RSS after build, MB"] = rss_mb()
    print(f"baseline: {small.chunks:,} chunks in {small.numbers['sync_documents, s']:.1f} s", flush=True)
    del vecs_small
    large = build("scale", embedder, docs_large, vecs_large, args.keep)
    large.numbers["RSS after build, MB"] = rss_mb()
    print(f"scale: {large.chunks:,} chunks in {large.numbers['sync_documents, s']:.1f} s", flush=True)
    del vecs_large, docs_large, docs_small, stream, real_vecs
    for b in (small, large):
        sizes(b)

    # Queries: first (the first after the build: the building process already holds its BM25),
    # then warm rounds alternating the indexes.
    print(f"load before queries: {os.getloadavg()[0]:.2f}; scopes searched: {', '.join(args.scope or ['all'])}", flush=True)
    reset_peak()
    audience = Audience.limited(args.scope) if args.scope else Audience.operator()
    kbs = {id(b): KnowledgeBase(b.index) for b in (small, large)}
    for b in (small, large):
        t = time.perf_counter()
        kbs[id(b)].ask("warm-up question about the handbook", audience)
        b.numbers["first answer after the build, ms"] = (time.perf_counter() - t) * 1000
    import torch

    import bot.answering.lead

    leads = [None] if args.lead is None else [10**9 if v == "all" else int(v) for v in args.lead.split(",")]
    stored_vectors = bot.answering.lead.stored_vectors
    settings = [(int(n) or torch.get_num_threads(), cap, where) for n in args.threads.split(",") for cap in leads
                for where in args.lead_vectors.split(",")]
    for r in range(args.repeat * len(settings)):  # settings alternate round by round
        threads, cap, where = settings[r % len(settings)]
        torch.set_num_threads(threads)
        if cap is not None:
            bot.answering.lead.EMBEDDED_SENTENCES = cap
        bot.answering.lead.stored_vectors = stored_vectors if where == "stored" else (lambda *a: {})
        for n, q in enumerate(questions):
            order = (small, large) if (n + r // len(settings)) % 2 == 0 else (large, small)
            for b in order:
                if args.cold_lead or where == "question-time":
                    bot.answering.lead.SENTENCE_VECTORS = bot.answering.lead.SentenceVectors()
                threads_key = (threads, cap, where)
                t = time.perf_counter()
                answer = kbs[id(b)].ask(q["question"], audience)
                b.totals.setdefault(threads_key, []).append((time.perf_counter() - t) * 1000)
                for stage in STAGES:
                    b.stages.setdefault(threads_key, {}).setdefault(stage, []).append(answer.timings_ms.get(stage, 0.0))
                if r == 0:
                    if q.get("kind") == "not_found":
                        b.refusals.append(not answer.found)
                    else:
                        b.hits.append(any(s.path in q["expected_sources"] for s in answer.sources[:5]))
    query_peak = peak_mb()
    load_queries = os.getloadavg()[0]
    for b in (small, large):
        b.numbers["Postgres PSS after queries, MB"] = postgres_pss_mb(b.home / "pgdata")
    if not args.no_reindex:
        for b in (small, large):
            reindex_hnsw(b)
    load_after = os.getloadavg()

    # -- report ---------------------------------------------------------------------------
    from rich.console import Console
    from rich.table import Table

    def fmt(v) -> str:
        return f"{v:,.1f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)

    t = Table(title=f"Query latency at scale: retrieval + extractive answer, model loaded "
                    f"({len(questions)} eval questions × {args.repeat} per thread setting, alternating)")
    for col in ("measure", "baseline", "scale", "scale / baseline"):
        t.add_column(col, justify="left" if col == "measure" else "right")

    def row(name, a, b, ratio=True):
        r = f"{b / a:.2f}" if ratio and isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else ""
        t.add_row(name, fmt(a), fmt(b), r)

    row("child chunks", small.chunks, large.chunks)
    row("documents (real + synthetic)", small.docs, large.docs)
    for threads in dict.fromkeys(settings):
        a, z = small.stages[threads], large.stages[threads]
        n, cap, where = threads
        label = f"{n} torch thread{'s' if n > 1 else ''}"
        label += "" if cap is None else f", lead embeds {'all' if cap >= 10**9 else cap}"
        label += f", lead vectors {where}"
        row(f"[{label}] answer p50, ms", pct(small.totals[threads], 50), pct(large.totals[threads], 50))
        row("  answer p95, ms", pct(small.totals[threads], 95), pct(large.totals[threads], 95))
        row("  answer max, ms", max(small.totals[threads]), max(large.totals[threads]))
        for b in (small, large):  # everything but embedding the question: the part that depends on the index
            b.stages[threads]["all but embed"] = [t - e for t, e in zip(b.totals[threads], b.stages[threads]["embed"])]
        row("  answer minus question embedding p50, ms", pct(a["all but embed"], 50), pct(z["all but embed"], 50))
        row("  answer minus question embedding p95, ms", pct(a["all but embed"], 95), pct(z["all but embed"], 95))
        for stage in STAGES:
            for p in (50, 95):
                row(f"    {stage} p{p}, ms", pct(a[stage], p), pct(z[stage], p))
    row("hit@5 (answerable, first round)", f"{sum(small.hits)}/{len(small.hits)}", f"{sum(large.hits)}/{len(large.hits)}", False)
    row("not-found refused (first round)", f"{sum(small.refusals)}/{len(small.refusals)}",
        f"{sum(large.refusals)}/{len(large.refusals)}", False)
    for name in small.numbers:
        row(name, small.numbers[name], large.numbers[name],
            ratio=name not in ("texts that reached the model", "failed documents"))
    Console(width=140).print(t)

    rows = [
        ("real chunks / pages", f"{len(corpus.real):,} / {len(corpus.real_docs)}"),
        ("real chunks embedded this run",
         f"{embedded_now:,}" + (f" ({embedded_now / embed_s:.1f}/s)" if embedded_now else " (all from the disk cache)")),
        ("chunking the real pages, s", f"{chunk_real_s:.1f}"),
        ("generating + chunking the synthetic pages, s", f"{generate_s:.1f}"),
        ("process RSS with the model loaded, MB", f"{model_rss:,.0f}"),
        ("… and with the synthetic corpus generated (held until its build), MB", f"{generated_rss:,.0f}"),
        ("peak RSS while answering (both indexes open), MB", f"{query_peak:,.0f}"),
        ("peak RSS of the whole run, MB", f"{max(_PEAKS + [peak_mb()]):,.0f}"),
        ("load average (1 min): start / after queries / end", f"{load_start[0]:.2f} / {load_queries:.2f} / {load_after[0]:.2f}"),
        ("whole run, min", f"{(time.perf_counter() - run_started) / 60:.1f}"),
    ]
    t2 = Table(title="Run")
    t2.add_column("measure")
    t2.add_column("value", justify="right")
    for name, value in rows:
        t2.add_row(name, value)
    Console(width=140).print(t2)
    if args.keep:
        print(f"kept: {small.home} {large.home}")
    for b in (small, large):
        b.index.close()


if __name__ == "__main__":
    main()
