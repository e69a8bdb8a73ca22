"""A million chunks on one Postgres: the index built in the background, resumably, then measured.

    .venv/bin/python -m benchmarks.million build --home DIR [--chunks 1000000] [--batch-pages 1000]
    .venv/bin/python -m benchmarks.million measure --home DIR [--repeat 2] [--parts all]

`build` makes the index the way `benchmarks.scale` makes 100,000 chunks — real handbook chunks
embedded once with the real model, synthetic pages recombined from them with mixed vectors, all
written through the unmodified `indexing.ingest.sync.sync_documents` with the vectors prefilled
in the embedding cache (the model is never called for a synthetic text) — but in batches of
`--batch-pages` pages, each batch one `sync_documents(prune=False)` call, as a first sync of a
large source killed and resumed would run. After every batch `DIR/million.json` records the pages
done and the two random generators' states, so a killed build resumes at the batch it was in (the
pages of that batch already written are unchanged by content hash and cost one lookup each).

Two things differ from one long `kb sync`, both stated in the report:

- **The HNSW index is built once at the end**, not kept up to date row by row: the load runs with
  an empty placeholder index under the HNSW index's name (so the store's `CREATE INDEX IF NOT
  EXISTS` on every open does not build it over a half-loaded table), then the real index is built
  with `CREATE INDEX` and `maintenance_work_mem` large enough for the graph — the number that
  answers "how long does an HNSW build take at 1M". Per-row insertion cost with the index in
  place is measured by `measure` (a page edited at 1M).
- **The keyword leg is published once at the end** (`Bm25Index.rebuild`, which a single sync
  calls once), instead of after every batch: publishing saves a whole keyword base, O(index).

`measure` opens the finished index as a serving replica would and reports, each in its own part
(`--parts`, comma-separated, default all): `sizes` (Postgres on disk, tables, HNSW), `answers`
(question p50/p95 with and without the built-in reader, per stage), `edit` (one page edited →
searchable), `replica` (a fresh `kb ask` process: RSS and time to the first answer), `recall`
(HNSW recall@10 against exact search, per ef_search), `resync` (an unchanged re-sync of the whole
source). See docs/scaling.md for the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import scale
from benchmarks._common import eval_questions

PLACEHOLDER = "WHERE false"  # the placeholder index's predicate: it indexes no row
HNSW_MEMORY = "6GB"  # maintenance_work_mem for the one HNSW build: the 1M-row graph fits (~2.5 GB)


@dataclass
class Progress:
    """What `DIR/million.json` holds between runs of `build`."""

    target: int
    seed: int
    noise: float
    pages_done: int = 0  # synthetic pages written (the next page is pages_done + 1)
    chunks: int = 0
    real_written: bool = False
    rng_state: list | None = None  # random.Random.getstate(), as JSON lists
    nrng_state: dict | None = None  # numpy Generator.bit_generator.state
    batches: list[dict] = field(default_factory=list)  # per batch: pages, chunks, seconds
    finished: dict = field(default_factory=dict)  # the final steps' timings, once done

    @classmethod
    def load(cls, path: Path) -> Progress | None:
        return cls(**json.loads(path.read_text())) if path.exists() else None

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(path)


def _tuple(x):
    return tuple(_tuple(v) for v in x) if isinstance(x, list) else x


def open_index(home: Path, embedder, rerank: str = "off"):
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    return Index(IndexConfig(rerank=RerankConfig(backend=rerank), home=home), embedder=embedder)


def _hnsw_name(index) -> str:
    return f"{index.store.table.__tablename__}_embedding_idx"


def _hnsw_is_placeholder(index) -> bool:
    from sqlalchemy import text

    with index.engine.connect() as conn:
        definition = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"),
                                  {"n": _hnsw_name(index)}).scalar_one_or_none()
    return definition is not None and "hnsw" not in definition.lower()


def _use_placeholder(index) -> None:
    """Swap the (empty) HNSW index for a placeholder of the same name that indexes nothing."""
    from sqlalchemy import text

    name, table = _hnsw_name(index), index.store.table.__tablename__
    with index.engine.begin() as conn:
        conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
        conn.execute(text(f"CREATE INDEX {name} ON {table} (id) {PLACEHOLDER}"))


def build_hnsw(index) -> float:
    """The real HNSW index over the whole table, built once; returns seconds."""
    from sqlalchemy import text

    from indexing.vectors.store import HNSW

    name, table = _hnsw_name(index), index.store.table.__tablename__
    started = time.perf_counter()
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"SET maintenance_work_mem = '{HNSW_MEMORY}'"))
        conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
        conn.execute(text(f"CREATE INDEX {name} ON {table} USING hnsw (embedding {HNSW['hnsw_dist_method']}) "
                          f"WITH (m = {HNSW['hnsw_m']}, ef_construction = {HNSW['hnsw_ef_construction']})"))
    return time.perf_counter() - started


def prefill(index, embedder_name: str, vectors: dict[str, np.ndarray]) -> None:
    from sqlalchemy.dialects.postgresql import insert

    from indexing.storage.index_tables import EmbeddingCache
    from indexing.vectors.embedding import cache_key

    rows = [{"key": cache_key(embedder_name, t), "vector": v.tobytes()} for t, v in vectors.items()]
    with index.engine.begin() as conn:
        for start in range(0, len(rows), 5000):
            conn.execute(insert(EmbeddingCache.__table__).on_conflict_do_nothing(), rows[start : start + 5000])


def write(index, docs: list, vectors: dict[str, np.ndarray]):
    from indexing.ingest.sync import sync_documents

    prefill(index, index.embedder.name, vectors)
    report = sync_documents(index, iter(docs), "handbook", prune=False, trigger="benchmark")
    if report.embedded:
        raise SystemExit(f"{report.embedded} texts reached the model (the cache prefill missed them)")
    if report.failed:
        raise SystemExit(f"{report.failed} documents failed: {report.errors[:3]}")
    return report


def build(args) -> None:
    from indexing.vectors.embedding import TorchEmbedder

    home: Path = args.home
    home.mkdir(parents=True, exist_ok=True)
    path = home / "million.json"
    progress = Progress.load(path) or Progress(target=args.chunks, seed=args.seed, noise=args.noise)
    if progress.finished:
        print(f"already built: {progress.chunks:,} chunks ({path})")
        return
    run_started = time.perf_counter()
    embedder = TorchEmbedder()
    embedder.embed_query("load the model before anything is timed")
    corpus = scale.real_corpus(args.real, eval_questions())
    corpus.vectors, _, _ = scale.real_vectors(embedder, [c.embed_text for c in corpus.real], args.cache_dir)
    real_sentences = scale.real_sentence_texts(corpus)
    sentence_vecs, _, _ = scale.real_vectors(embedder, real_sentences, args.cache_dir)

    index = open_index(home, embedder)
    publish = index.bm25.rebuild
    index.bm25.rebuild = lambda: "deferred"  # published once at the end (see the module's docstring)
    if not progress.real_written:
        _use_placeholder(index)
        real = dict(zip((c.embed_text for c in corpus.real), corpus.vectors))
        real.update(zip(real_sentences, sentence_vecs))
        report = write(index, list(corpus.real_docs), real)
        progress.real_written, progress.chunks = True, report.chunks
        progress.save(path)
        print(f"real pages: {report.added} pages, {report.chunks:,} chunks", flush=True)
    elif not _hnsw_is_placeholder(index):
        raise SystemExit("the HNSW index is real but the build is not finished: delete DIR and start again")

    rng, nrng = random.Random(progress.seed), np.random.default_rng(progress.seed)
    if progress.rng_state is not None:
        rng.setstate(_tuple(progress.rng_state))
        nrng.bit_generator.state = progress.nrng_state
    stream = scale.synthetic_pages(corpus, progress.seed, progress.noise, rng=rng, nrng=nrng,
                                   first=progress.pages_done + 1)
    while progress.chunks < progress.target:
        started = time.perf_counter()
        docs, vectors, chunks = [], {}, 0
        while len(docs) < args.batch_pages and progress.chunks + chunks < progress.target:
            doc, children, said = next(stream)
            docs.append(doc)
            vectors.update(children)
            vectors.update(said)
            chunks += len(children)
        generated = time.perf_counter() - started
        report = write(index, docs, vectors)
        progress.pages_done += len(docs)
        progress.chunks += chunks
        progress.rng_state, progress.nrng_state = list(rng.getstate()), nrng.bit_generator.state
        seconds = time.perf_counter() - started
        progress.batches.append({"pages": len(docs), "chunks": chunks, "written": report.chunks,
                                 "skipped_unchanged": report.unchanged, "generate_s": round(generated, 1),
                                 "seconds": round(seconds, 1), "rss_mb": round(scale.rss_mb())})
        progress.save(path)
        print(f"{progress.chunks:,} / {progress.target:,} chunks ({progress.pages_done:,} pages): batch "
              f"{chunks:,} chunks in {seconds:.0f} s ({generated:.0f} s generating), {chunks / seconds:.0f}/s, "
              f"RSS {scale.rss_mb():,.0f} MB", flush=True)

    print("building the HNSW index …", flush=True)
    finished = {"HNSW build, s": build_hnsw(index)}
    index.store.analyze(index.engine)
    print(f"HNSW built in {finished['HNSW build, s']:.0f} s; publishing the keyword leg …", flush=True)
    scale.reset_peak()
    started = time.perf_counter()
    index.bm25.rebuild = publish
    publish()
    finished["keyword publish + base save, s"] = time.perf_counter() - started
    finished["keyword publish peak RSS, MB"] = scale.peak_mb()
    finished["chunks"] = index.chunk_count()
    finished["this run, min"] = (time.perf_counter() - run_started) / 60
    progress.finished = finished
    progress.save(path)
    print(json.dumps(finished, indent=1))
    index.close()


# -- measuring the finished index -----------------------------------------------------------

STAGES = ("spelling", "embed", "vector", "bm25", "fuse", "rerank", "lead", "answer")
PARTS = ("sizes", "keyword", "answers", "edit", "replica", "recall", "resync")  # "halfvec" only when asked: it builds an index


def sizes(index) -> list[tuple[str, str]]:
    from sqlalchemy import text

    table = index.store.table.__tablename__
    mb = lambda sql: f"{conn.execute(text(sql)).scalar_one() / 2**20:,.0f} MB"  # noqa: E731
    with index.engine.connect() as conn:
        return [
            ("child chunks", f"{index.chunk_count():,}"),
            ("database on disk (pg_database_size)", mb("SELECT pg_database_size(current_database())")),
            ("chunk table with its indexes", mb(f"SELECT pg_total_relation_size('{table}')")),
            ("… of which the HNSW index", mb(f"SELECT pg_relation_size('{table}_embedding_idx')")),
            ("sentence vectors (the lead's), with indexes", mb("SELECT pg_total_relation_size('sentence_vectors')")),
            ("embedding cache", mb("SELECT pg_total_relation_size('embedding_cache')")),
            ("saved keyword base (newest)", mb("SELECT coalesce(max(length(payload)), 0) FROM keyword_bases")),
            ("shared_buffers / effective_cache_size",
             f"{conn.execute(text('SHOW shared_buffers')).scalar_one()} / "
             f"{conn.execute(text('SHOW effective_cache_size')).scalar_one()}"),
        ]


def answers(index, questions: list[dict], repeat: int) -> list[tuple[str, str]]:
    """Every eval question asked with and without the built-in reader, alternating, scope public."""
    from bot.knowledge import KnowledgeBase
    from sources import Audience

    kb, audience, reader = KnowledgeBase(index), Audience.limited(["public"]), index.rerank
    totals: dict[str, list[float]] = {"reader": [], "no reader": []}
    stages: dict[str, dict[str, list[float]]] = {k: {s: [] for s in STAGES} for k in totals}
    first = time.perf_counter()
    kb.ask("warm-up question about the handbook", audience)
    first_ms = (time.perf_counter() - first) * 1000
    for r in range(repeat):
        for n, q in enumerate(questions):
            for setting in (("reader", "no reader") if (n + r) % 2 == 0 else ("no reader", "reader")):
                index.rerank = reader if setting == "reader" else None
                t = time.perf_counter()
                answer = kb.ask(q["question"], audience)
                totals[setting].append((time.perf_counter() - t) * 1000)
                for stage in STAGES:
                    stages[setting][stage].append(answer.timings_ms.get(stage, 0.0))
    index.rerank = reader
    rows = [("first answer after opening, ms", f"{first_ms:,.0f}")]
    for setting in totals:
        rows.append((f"answer p50 / p95, {setting}, ms",
                     f"{scale.pct(totals[setting], 50):.1f} / {scale.pct(totals[setting], 95):.1f}"))
        for stage in STAGES:
            values = stages[setting][stage]
            if any(values):
                rows.append((f"  {stage} p50 / p95 (share of the mean answer)",
                             f"{scale.pct(values, 50):.1f} / {scale.pct(values, 95):.1f} ms "
                             f"({sum(values) / sum(totals[setting]):.0%})"))
    return rows


def selection_before(kw, query_terms: list[str], scopes: list[str] | None, k: int) -> list[tuple[str, float]]:
    """`KeywordIndex.search` as it chose its hits before (commit 4460868): the scores of every
    visible row side by side, bm25s's selection over them (one argpartition, zeros included), the
    scopes' rows found anew per question. The scoring loop is today's (unchanged)."""
    import math

    from bm25s.selection import _topk_numpy

    from indexing.keyword.keyword_segments import B, K1

    codes = np.array([kw.scopes[s] for s in scopes if s in kw.scopes], dtype=np.int32) if scopes else None
    visible = [s.alive if codes is None else s.alive & np.isin(s.access, codes) for s in kw.segments]
    n = sum(int(v.sum()) for v in visible)
    length = sum(int(s.lengths[v].sum()) for s, v in zip(kw.segments, visible))
    ids = [kw.vocab[t] for t in query_terms if t in kw.vocab]
    avg_len = np.float64(length) / np.float64(n)
    scores = [np.zeros(s.size, dtype=np.float32) for s in kw.segments]
    for term in ids:
        postings = [s.postings(term, v) for s, v in zip(kw.segments, visible)]
        df = sum(len(rows) for rows, _ in postings)
        if not df:
            continue
        idf = np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))
        for s, (rows, tf), into in zip(kw.segments, postings, scores):
            into[rows] += (idf * (tf / (K1 * ((1 - B) + B * s.lengths[rows] / avg_len) + tf))).astype(np.float32)
    kept = [np.flatnonzero(v) for v in visible]
    flat = np.concatenate([sc[i] for sc, i in zip(scores, kept)])
    values, top = _topk_numpy(flat, min(k, len(flat)), sorted=True)
    starts = np.cumsum([0] + [len(i) for i in kept])
    hits = []
    for i, v in zip(top.tolist(), values.tolist()):
        if v > 0:
            seg = int(np.searchsorted(starts, i, side="right") - 1)
            hits.append((kw.segments[seg].node_ids[kept[seg][i - starts[seg]]].decode(), v))
    return hits


def keyword(index, questions: list[dict], repeat: int) -> list[tuple[str, str]]:
    """The keyword leg alone, in memory, today's search against the selection it had before, same
    process, alternating; the scores and hit sets compared."""
    from indexing.keyword.bm25 import question_text, tokens

    kw = index.bm25._current()
    if len(kw.segments) > 1:
        kw = kw.merged()
    terms = [tokens(question_text(q["question"])) for q in questions]
    times: dict[tuple[str, str], list[float]] = {}
    same = tied = 0
    for r in range(repeat):
        for n, qt in enumerate(terms):
            for scopes in (None, ["public"]):
                label = "all scopes" if scopes is None else "public"
                for which in (("now", "before") if (n + r) % 2 == 0 else ("before", "now")):
                    t = time.perf_counter()
                    hits = (kw.search(qt, scopes, 100) if which == "now" else selection_before(kw, qt, scopes, 100))
                    times.setdefault((label, which), []).append((time.perf_counter() - t) * 1000)
                    if r == 0 and which == "now":
                        now = sorted((row.node_id, score) for row, score in hits)
                    elif r == 0:
                        before = sorted(hits)
                if r == 0:
                    last = min((score for _, score in before), default=None)  # the 100th place's score
                    same += now == before
                    tied += (now != before and sorted(s for _, s in now) == sorted(s for _, s in before)
                             and [h for h in now if h[1] != last] == [h for h in before if h[1] != last])
    rows = [(f"keyword leg {label}, {which}: p50 / p95, ms",
             f"{scale.pct(v, 50):.1f} / {scale.pct(v, 95):.1f}") for (label, which), v in sorted(times.items())]
    rows.append(("… questions (× 2 audiences) with the same 100 hits and scores now and before / differing only "
                 "in which rows of a tie at the 100th place are kept", f"{same} / {tied} of {2 * len(terms)}"))
    return rows


def edit(index, rounds: int) -> list[tuple[str, str]]:
    """A real page edited with a new made-up term, synced alone (the model embeds the changed chunk,
    the HNSW index takes it row by row, the keyword leg publishes); then asked for by that term
    until the page is the first source. Times: the sync, and the sync to the first finding answer."""
    import dataclasses

    from bot.knowledge import KnowledgeBase
    from indexing.ingest.sync import sync_documents

    kb = KnowledgeBase(index)
    page = scale.real_corpus(50, eval_questions()).real_docs[0]
    kb.ask("warm-up", )
    syncs, found, asks = [], [], []
    for r in range(rounds):
        term = f"zorblatt{r}quux"
        text = page.text + f"\n\n## Review code\n\nThe quarterly review code is {term}, kept by the handbook team.\n"
        started = time.perf_counter()
        report = sync_documents(index, iter([dataclasses.replace(page, text=text)]), "handbook", prune=False,
                                trigger="benchmark")
        synced = time.perf_counter() - started
        while True:
            t = time.perf_counter()
            answer = kb.ask(f"what is the quarterly review code {term}")
            asks.append((time.perf_counter() - t) * 1000)
            if answer.sources and answer.sources[0].path == page.path:
                break
            if time.perf_counter() - started > 30:
                raise SystemExit(f"the edited page was not found 30 s after its sync ({report})")
        syncs.append(synced * 1000)
        found.append((time.perf_counter() - started) * 1000)
    return [("one-page edit: sync p50 / max, ms", f"{scale.pct(syncs, 50):,.0f} / {max(syncs):,.0f}"),
            ("… saved → found by the next question, p50 / max, ms", f"{scale.pct(found, 50):,.0f} / {max(found):,.0f}"),
            ("… that question, p50 / max, ms", f"{scale.pct(asks, 50):,.0f} / {max(asks):,.0f}")]


REPLICA = r"""
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from bot.knowledge import KnowledgeBase
try:
    from sources import Audience
except ImportError:  # a checkout from before sources/ (`--code`)
    from connectors.access import Audience
from indexing.config import IndexConfig
from indexing.index import Index
index = Index(IndexConfig(home=Path(sys.argv[1]), embed_backend=sys.argv[4]))
opened = time.perf_counter() - t0
from bot.serve import warm_up
warm_up(index)  # what kb serve does before it takes questions
ready = time.perf_counter() - t0
kb = KnowledgeBase(index)
first = kb.ask(sys.argv[2], Audience.limited(["public"]))
first_s = time.perf_counter() - t0
rss_first = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")][0] / 1024
for q in json.loads(sys.argv[3]):
    kb.ask(q, Audience.limited(["public"]))
status = {l.split(":")[0]: int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith(("VmRSS", "VmHWM"))}
print(json.dumps({"open_s": opened, "ready_s": ready, "first_answer_s": first_s, "rss_first_mb": rss_first,
                  "rss_mb": status["VmRSS"], "peak_mb": status["VmHWM"], "load": index.bm25.last_load}))
index.close()
"""


def replica(home: Path, questions: list[dict], rounds: int, code: Path, backend: str = "onnx") -> list[tuple[str, str]]:
    """A fresh process, as `kb serve` starts: open, warm up (`bot.serve.warm_up`: the model, the
    reader and, since this issue, the keyword leg's saved base), the first answer, then every eval
    question; its memory. `code`: the
    checkout it runs (another commit's, for a before/after on the same index)."""
    import subprocess
    import sys

    runs = []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", REPLICA, str(home), questions[0]["question"],
                              json.dumps([q["question"] for q in questions]), backend],
                             capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(code)}, cwd="/")
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    worst = lambda key: max(r[key] for r in runs)  # noqa: E731
    return [("cold replica, as kb serve starts: open / warmed up / first answer (worst of runs), s",
             f"{worst('open_s'):.1f} / {worst('ready_s'):.1f} / {worst('first_answer_s'):.1f}"),
            ("… RSS after the first answer / after 40 questions / peak, MB",
             f"{worst('rss_first_mb'):,.0f} / {worst('rss_mb'):,.0f} / {worst('peak_mb'):,.0f}"),
            ("… keyword leg loaded from", runs[0]["load"])]


def recall(index, questions: list[dict], ef_values: list[int]) -> list[tuple[str, str]]:
    """HNSW against exact search on the eval questions' vectors, whole index, per ef_search: the
    top 10 and top 100 as the vector leg gets them (its 100 candidates in the connection's relaxed
    iterative-scan order, then sorted by distance), and the raw top 10 in strict order."""
    from sqlalchemy import text

    table = index.store.table.__tablename__
    sql = text(f"SELECT id, embedding <=> CAST(:v AS vector) AS d FROM {table} ORDER BY d LIMIT :k")
    vectors = [str(list(map(float, index.embedder.embed_query(q["question"])))) for q in questions]
    exact = []
    with index.engine.connect() as conn:
        for v in vectors:
            conn.execute(text("SET LOCAL enable_indexscan = off"))
            exact.append([r[0] for r in conn.execute(sql, {"v": v, "k": 100})])
            conn.commit()
        rows = []
        for ef in ef_values:
            r10, r100, strict10, ms = [], [], [], []
            for v, truth in zip(vectors, exact):
                conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
                t = time.perf_counter()
                got = [r[0] for r in sorted(conn.execute(sql, {"v": v, "k": 100}), key=lambda r: r[1])]
                ms.append((time.perf_counter() - t) * 1000)
                conn.commit()
                conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
                conn.execute(text("SET LOCAL hnsw.iterative_scan = off"))
                strict = [r[0] for r in conn.execute(sql, {"v": v, "k": 10})]
                conn.commit()
                r10.append(len(set(got[:10]) & set(truth[:10])) / 10)
                r100.append(len(set(got) & set(truth)) / 100)
                strict10.append(len(set(strict) & set(truth[:10])) / 10)
            rows.append((f"ef_search {ef}: recall@10 / @100 as the vector leg gets them; strict top 10; "
                         "100 candidates p50 / p95 ms",
                         f"{np.mean(r10):.3f} / {np.mean(r100):.3f}; {np.mean(strict10):.3f}; "
                         f"{scale.pct(ms, 50):.1f} / {scale.pct(ms, 95):.1f}"))
    return rows


def halfvec(index, questions: list[dict], ef_values: list[int]) -> list[tuple[str, str]]:
    """What `halfvec` storage would give: a second HNSW index over the vectors cast to 16-bit
    floats (an expression index; the column stays), its build time and size, and its recall@10
    against exact float32 search. Dropped afterwards."""
    from sqlalchemy import text

    from indexing.vectors.store import HNSW

    table, dim = index.store.table.__tablename__, 384
    started = time.perf_counter()
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"SET maintenance_work_mem = '{HNSW_MEMORY}'"))
        conn.execute(text(f"CREATE INDEX IF NOT EXISTS million_halfvec_idx ON {table} USING hnsw "
                          f"((embedding::halfvec({dim})) halfvec_cosine_ops) "
                          f"WITH (m = {HNSW['hnsw_m']}, ef_construction = {HNSW['hnsw_ef_construction']})"))
    built = time.perf_counter() - started
    exact_sql = text(f"SELECT id FROM {table} ORDER BY embedding <=> CAST(:v AS vector) LIMIT 10")
    half_sql = text(f"SELECT id FROM {table} ORDER BY embedding::halfvec({dim}) <=> CAST(:v AS halfvec({dim})) LIMIT 10")
    vectors = [str(list(map(float, index.embedder.embed_query(q["question"])))) for q in questions]
    rows = [("halfvec HNSW: build, s", f"{built:.0f}")]
    with index.engine.connect() as conn:
        size = conn.execute(text("SELECT pg_relation_size('million_halfvec_idx')")).scalar_one() / 2**20
        rows.append(("halfvec HNSW: size, MB", f"{size:,.0f}"))
        truth = []
        for v in vectors:
            conn.execute(text("SET LOCAL enable_indexscan = off"))
            truth.append([r[0] for r in conn.execute(exact_sql, {"v": v})])
            conn.commit()
        for ef in ef_values:
            got, ms = [], []
            for v in vectors:
                conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
                t = time.perf_counter()
                got.append([r[0] for r in conn.execute(half_sql, {"v": v})])
                ms.append((time.perf_counter() - t) * 1000)
                conn.commit()
            r10 = np.mean([len(set(g) & set(t)) / 10 for g, t in zip(got, truth)])
            rows.append((f"halfvec ef_search {ef}: recall@10 vs exact float32, query p50 / p95 ms",
                         f"{r10:.3f}, {scale.pct(ms, 50):.1f} / {scale.pct(ms, 95):.1f}"))
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("DROP INDEX IF EXISTS million_halfvec_idx"))
    return rows


def resync(index, args) -> list[tuple[str, str]]:
    """Every page of the source synced again unchanged (`prune`, as `kb sync` does): what a
    scheduled re-sync of a 1M-chunk source costs once its pages are read."""
    from indexing.ingest.sync import sync_documents

    progress = Progress.load(args.home / "million.json")
    assert progress is not None
    corpus = scale.real_corpus(args.real, eval_questions())
    corpus.vectors = np.zeros((len(corpus.real), 384), dtype=np.float32)  # only the texts are re-made
    stream = scale.synthetic_pages(corpus, progress.seed, progress.noise)
    docs = list(corpus.real_docs) + [next(stream)[0] for _ in range(progress.pages_done)]
    scale.reset_peak()
    started = time.perf_counter()
    report = sync_documents(index, iter(docs), "handbook", trigger="benchmark")
    seconds = time.perf_counter() - started
    return [(f"unchanged re-sync of {len(docs):,} pages: s (unchanged / changed)",
             f"{seconds:.1f} ({report.unchanged:,} / {report.added + report.updated:,})"),
            ("… peak RSS, MB", f"{scale.peak_mb():,.0f}")]


def measure(args) -> None:
    from indexing.vectors.embedding import TorchEmbedder

    progress = Progress.load(args.home / "million.json")
    if progress is None or not progress.finished:
        raise SystemExit(f"{args.home} holds no finished build: run `build` first")
    parts = PARTS if args.parts == "all" else tuple(args.parts.split(","))
    questions = eval_questions()
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    rows: list[tuple[str, str]] = [(k, f"{v:,.1f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v))
                                   for k, v in progress.finished.items()]
    if "replica" in parts:  # first: nothing of the index is in this process yet
        rows += replica(args.home, questions, args.rounds, args.code, args.embed_backend)
    embedder = TorchEmbedder()
    index = open_index(args.home, embedder, rerank="builtin")
    for part in parts:
        started = time.perf_counter()
        if part == "sizes":
            rows += sizes(index)
        elif part == "keyword":
            rows += keyword(index, questions, args.repeat)
        elif part == "answers":
            rows += answers(index, questions, args.repeat)
        elif part == "edit":
            rows += edit(index, args.rounds)
        elif part == "recall":
            rows += recall(index, questions, [int(v) for v in args.ef.split(",")])
        elif part == "halfvec":
            rows += halfvec(index, questions, [int(v) for v in args.ef.split(",")])
        elif part == "resync":
            rows += resync(index, args)
        print(f"{part}: {time.perf_counter() - started:.0f} s", flush=True)
    rows.append(("load average at the end", f"{os.getloadavg()[0]:.2f}"))
    from benchmarks._common import table

    table(f"{progress.finished.get('chunks', progress.chunks):,} chunks on one Postgres", rows)
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build (or resume building) the index in --home")
    b.add_argument("--home", type=Path, required=True)
    b.add_argument("--chunks", type=int, default=1_000_000)
    b.add_argument("--batch-pages", type=int, default=1_000)
    b.add_argument("--real", type=int, default=3_000, help="real handbook chunks embedded with the model")
    b.add_argument("--noise", type=float, default=0.1)
    b.add_argument("--seed", type=int, default=5)
    b.add_argument("--cache-dir", type=Path,
                   default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "docent-benchmarks")
    m = sub.add_parser("measure", help="measure the finished index in --home")
    m.add_argument("--home", type=Path, required=True)
    m.add_argument("--parts", default="all", help=f"comma-separated, of: {', '.join(PARTS)}")
    m.add_argument("--repeat", type=int, default=2, help="rounds over the eval questions (answers)")
    m.add_argument("--rounds", type=int, default=3, help="edits / replica starts")
    m.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values (recall)")
    m.add_argument("--embed-backend", default="onnx", help="the replica's KB_EMBED_BACKEND (replica part; onnx: the default)")
    m.add_argument("--code", type=Path, default=Path.cwd(),
                   help="the checkout the replica part runs (e.g. an older commit's worktree, for before/after)")
    m.add_argument("--real", type=int, default=3_000, help="as given to build (resync re-makes the pages)")
    args = parser.parse_args()
    if args.command == "build":
        build(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
