"""The keyword leg at 12k, 100k and 300k chunks, same run: a one-page edit, replicas, memory.

    .venv/bin/python -m benchmarks.keyword_scale [--sizes 12000,100000,300000] [--rounds 10]
        [--end-to-end 100000] [--before /path/to/older/checkout]

For each size, a throwaway index (its own KB home and embedded Postgres, deleted at exit) is
filled with the handbook's real pages plus synthetic pages made from them (`benchmarks.scale`'s
generator, with random vectors: the keyword leg never reads them). Setup writes the children
straight into the chunk table without vectors and with the HNSW index dropped, so that 300,000
rows take minutes, not an hour; every edit below goes through the store's own write
(`ChunkStore.replace_document`, vectors and change log included). Then, timed:

- **first publish**: `bm25.rebuild()` on an index nobody has loaded — the from-scratch build
  (tokenise every chunk) and saving the first base to Postgres;
- **one-page update** (`--rounds` times): a random page gets a new sentence with a unique word,
  written as a sync writes it (one transaction), then `bm25.rebuild()` in the writing process
  (publish + its own catch-up), then a second in-process reader's next search (its catch-up +
  the search), which must find the page by the new word; p50/p95 of each part and of the sum;
- **fresh replica**: a new process with an empty data directory, reaching the same Postgres
  through `DATABASE_URL`, asks one question: time to its first keyword answer, its peak RSS
  (VmHWM) and RSS after; the model is not loaded (only the keyword leg is measured);
- **question p50/p95** of the keyword leg alone over the handbook's eval questions.

With `--end-to-end N`, at that size a watcher runs over a one-page source folder next to the big
index, with the real model: the time from saving the page to a *second process*-style reader
finding it by its new word (debounce, chunking, embedding, commit, publish, catch-up).

With `--before DIR` (an older checkout, e.g. `git worktree add /tmp/before <commit>`), the same
database is also served by that code in subprocesses: its rebuild after a one-page edit, and its
replica's first question with the files on its disk and without them.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from training.corpora import REPO
from benchmarks._common import eval_questions, pct

REPLICA = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
from pathlib import Path
from indexing.config import IndexConfig, RerankConfig
from indexing.index import Index
def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return float(line.split()[1]) / 1024
index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=Path(sys.argv[1]), database_url=sys.argv[2]))
mode = sys.argv[3]
started = time.perf_counter()
if mode == "rebuild":
    index.bm25.rebuild()
else:
    hits = index.bm25.search(sys.argv[4], None, 10)
print(json.dumps({"seconds": time.perf_counter() - started, "peak_mb": status("VmHWM"), "rss_mb": status("VmRSS")}))
"""


def replica(code: Path, home: Path, url: str, mode: str, question: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", REPLICA, str(home), url, mode, question], cwd=code,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(code)}, timeout=1800)
    if out.returncode:
        raise SystemExit(f"replica failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fill(index, docs: list) -> float:
    """Write the pages' children straight into the chunk table, 2,000 rows per statement, with
    the metadata the store writes and no vector (the keyword leg never reads one): setup only,
    the edits below go through the store's own write. One change is logged at the end, so the
    first publish has a generation to publish (it builds from every chunk, log or not)."""
    from sqlalchemy import insert

    from indexing.ingest.chunking import chunk_document

    table = index.store.table.__table__
    started = time.perf_counter()
    batch: list[dict] = []

    def flush():
        with index.engine.begin() as conn:
            conn.execute(insert(table), batch)
        batch.clear()

    for doc in docs:
        for parent in chunk_document(doc):
            for child in parent.children:
                batch.append({"node_id": child.id, "text": child.text, "metadata_": {
                    "ref_doc_id": doc.doc_id, "doc_id": doc.doc_id, "parent_id": parent.id, "source": doc.source,
                    "path": doc.path, "title": doc.title, "heading_path": parent.heading, "access": doc.access}})
                if len(batch) >= 2000:
                    flush()
    if batch:
        flush()
    with index.session() as s, s.begin():
        index.store.log_change(s, docs[0].doc_id)
    return time.perf_counter() - started


def edit(index, doc, word: str):
    """A page with one new sentence, written as a sync writes it: one transaction."""
    import dataclasses

    from indexing.ingest.chunking import chunk_document

    new = dataclasses.replace(doc, text=doc.text + f"\n\nThe relay for this team is called {word}.\n")
    parents = chunk_document(new)
    n = sum(len(p.children) for p in parents)
    with index.session() as s, s.begin():
        index.store.replace_document(s, new, parents, [[0.1] * 384 for _ in range(n)])
    return new


def one_size(size: int, args, questions: list[str], corpus) -> dict:
    from benchmarks.scale import synthetic_pages
    from indexing.keyword.bm25 import Bm25Index
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from sqlalchemy import text

    home = Path(tempfile.mkdtemp(prefix=f"docent-kw-{size}-"))
    atexit.register(shutil.rmtree, home, True)
    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    with index.engine.begin() as conn:
        conn.execute(text(f"DROP INDEX IF EXISTS {index.store.table.__tablename__}_embedding_idx"))
    docs, count = list(corpus.real_docs), len(corpus.real)
    stream = synthetic_pages(corpus, 5, 0.1)
    while count < size:
        doc, children = next(stream)
        docs.append(doc)
        count += len(children)
    r = {"size": size, "fill_s": fill(index, docs), "chunks": index.chunk_count()}
    print(f"{size:,}: {r['chunks']:,} chunks written in {r['fill_s']:.0f} s", flush=True)

    started = time.perf_counter()
    index.bm25.rebuild()  # nobody holds it: builds from the chunks, saves the first base
    r["first_publish_s"] = time.perf_counter() - started
    with index.engine.connect() as conn:
        r["base_mb"] = conn.execute(text("SELECT max(length(payload)) FROM keyword_bases")).scalar_one() / 2**20
    url = index.url.render_as_string(hide_password=False)

    fresh = replica(REPO, Path(tempfile.mkdtemp(prefix="docent-kw-replica-")), url, "search", questions[0])
    r["replica_first_s"], r["replica_peak_mb"], r["replica_rss_mb"] = fresh["seconds"], fresh["peak_mb"], fresh["rss_mb"]

    reader = Bm25Index(home / "reader", index.engine, index.store)
    reader.search("warm", None, 10)
    index.bm25.search("warm", None, 10)
    rng = random.Random(size)
    writes, publishes, catchups = [], [], []
    for n in range(args.rounds):
        word = f"zq{size}x{n}relay"
        doc = rng.choice(docs)
        t0 = time.perf_counter()
        docs[docs.index(doc)] = edit(index, doc, word)
        t1 = time.perf_counter()
        index.bm25.rebuild()
        t2 = time.perf_counter()
        hits = reader.search(word, None, 3)
        t3 = time.perf_counter()
        if not hits or hits[0].metadata["doc_id"] != doc.doc_id:
            raise SystemExit(f"{size}: the edited page was not found by its new word")
        writes.append((t1 - t0) * 1000)
        publishes.append((t2 - t1) * 1000)
        catchups.append((t3 - t2) * 1000)
    r["write_ms"], r["publish_ms"], r["reader_ms"] = writes, publishes, catchups
    r["update_ms"] = [a + b + c for a, b, c in zip(writes, publishes, catchups)]

    times = []
    for _ in range(3):
        for q in questions:
            t = time.perf_counter()
            reader.search(q, ["public"], 100)
            times.append((time.perf_counter() - t) * 1000)
    r["question_ms"] = times

    if args.before:
        old_home = Path(tempfile.mkdtemp(prefix="docent-kw-old-"))
        atexit.register(shutil.rmtree, old_home, True)
        r["old_first_rebuild_s"] = replica(args.before, old_home, url, "rebuild")["seconds"]
        edit(index, rng.choice(docs), f"zq{size}old")
        r["old_edit_rebuild_s"] = replica(args.before, old_home, url, "rebuild")["seconds"]
        warm = replica(args.before, old_home, url, "search", questions[0])
        r["old_replica_files_s"], r["old_replica_peak_mb"] = warm["seconds"], warm["peak_mb"]
        cold = replica(args.before, Path(tempfile.mkdtemp(prefix="docent-kw-old-cold-")), url, "search", questions[0])
        r["old_replica_cold_s"], r["old_replica_cold_peak_mb"] = cold["seconds"], cold["peak_mb"]
        index.bm25.rebuild()

    if args.end_to_end == size:
        r["end_to_end_s"] = end_to_end(index, home, args.rounds)
    index.close()
    return r


def end_to_end(index, home: Path, rounds: int) -> list[float]:
    """Saved page → found by another reader's keyword leg, with the watcher and the real model."""
    from sources import SourceConfig
    from indexing.keyword.bm25 import Bm25Index
    from indexing.ingest.runner import SyncRunner
    from indexing.ingest.watcher import Watcher

    folder = home / "fresh-wiki"
    folder.mkdir()
    page = folder / "relay.md"
    page.write_text("# Relays\n\nThe relays are listed here.\n")
    source = SourceConfig(name="fresh", location=folder, kind="markdown", access="public")
    runner = SyncRunner(index, [source])
    runner.sync("fresh")
    index.embedder.embed_query("warm-up")
    reader = Bm25Index(home / "reader2", index.engine, index.store)
    reader.search("warm", None, 3)
    watcher = Watcher(runner, [source]).start()
    time.sleep(0.5)
    seconds = []
    try:
        for n in range(rounds):
            word = f"qx{n}endrelay"
            started = time.perf_counter()
            page.write_text(page.read_text() + f"\n\nRelay {word} is the newest.\n")
            while not any(h.metadata["doc_id"] == "fresh:relay.md" for h in reader.search(word, ["public"], 3)):
                if time.perf_counter() - started > 30:
                    raise SystemExit("end to end: not searchable after 30 s")
                time.sleep(0.02)
            seconds.append(time.perf_counter() - started)
    finally:
        watcher.stop()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="12000,100000,300000")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--end-to-end", type=int, default=100_000, help="size to run the watcher round trip at (0: none)")
    parser.add_argument("--before", type=Path, default=None, help="an older checkout to compare with, same database")
    args = parser.parse_args()

    from benchmarks.scale import real_corpus

    questions = [q["question"] for q in eval_questions()]
    corpus = real_corpus(3000, eval_questions())
    vectors = np.random.default_rng(2).standard_normal((len(corpus.real), 384)).astype(np.float32)
    corpus.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    results = [one_size(int(s), args, questions, corpus) for s in args.sizes.split(",")]

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"Keyword leg: one-page updates ({args.rounds} rounds), replicas and questions, same run")
    t.add_column("measure")
    for r in results:
        t.add_column(f"{r['chunks']:,} chunks", justify="right")
    t.add_column(f"{results[-1]['chunks'] // 1000}k / {results[0]['chunks'] // 1000}k", justify="right")

    def row(name, values, fmt="{:,.1f}"):
        cells = [fmt.format(v) if isinstance(v, (int, float)) else str(v) for v in values]
        ratio = f"{values[-1] / values[0]:.2f}" if all(isinstance(v, (int, float)) for v in values) and values[0] else ""
        t.add_row(name, *cells, ratio)

    get = lambda key, f=lambda v: v: [f(r[key]) if key in r else "" for r in results]  # noqa: E731
    row("writing the chunks (setup, bulk), s", get("fill_s"))
    row("first publish: build from the chunks + save the base, s", get("first_publish_s"))
    row("saved base in Postgres, MB", get("base_mb"))
    for key, name in (("update_ms", "one-page update, write → found by a reader"), ("write_ms", "  write (one transaction)"),
                      ("publish_ms", "  publish + writer's catch-up"), ("reader_ms", "  reader's catch-up + search")):
        row(f"{name} p50, ms", get(key, lambda v: pct(v, 50)))
        row(f"{name} p95, ms", get(key, lambda v: pct(v, 95)))
    row("keyword question p50 (scoped, k=100), ms", get("question_ms", lambda v: pct(v, 50)))
    row("keyword question p95 (scoped, k=100), ms", get("question_ms", lambda v: pct(v, 95)))
    row("fresh replica (no local files): first keyword answer, s", get("replica_first_s"), "{:,.2f}")
    row("fresh replica: peak RSS, MB", get("replica_peak_mb"))
    row("fresh replica: RSS after, MB", get("replica_rss_mb"))
    if args.before:
        row("before: first rebuild, s", get("old_first_rebuild_s"))
        row("before: rebuild after a one-page edit, s", get("old_edit_rebuild_s"))
        row("before: replica with the files on its disk: first answer, s", get("old_replica_files_s"), "{:,.2f}")
        row("before: that replica's peak RSS, MB", get("old_replica_peak_mb"))
        row("before: replica without the files (rebuilds, publishes): first answer, s", get("old_replica_cold_s"), "{:,.2f}")
        row("before: that replica's peak RSS, MB", get("old_replica_cold_peak_mb"))
    for r in results:
        if "end_to_end_s" in r:
            e = r["end_to_end_s"]
            print(f"end to end at {r['chunks']:,} chunks (watcher, model, another reader): "
                  f"p50 {pct(e, 50):.2f} s, p95 {pct(e, 95):.2f} s, max {max(e):.2f} s over {len(e)} saves (target ≤ 2 s)")
    Console(width=160).print(t)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
