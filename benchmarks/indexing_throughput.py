"""Indexing throughput: the 821-page handbook synced end to end, vs. the raw embedding rate.

    .venv/bin/python -m benchmarks.indexing_throughput [--limit N]

Syncs into a fresh data directory (empty embedding cache; the sync embeds the children and the
lead's sentences, `indexing.vectors.sentence_vectors`), and embeds the very same child
texts directly with the same model in the same process, once before and once after the sync
(the machines are shared: bracketing the sync evens out load drift; the raw rate is their mean):
the ratio of the two rates is the pipeline's overhead (reading, chunking, Postgres writes,
BM25, and embedding in sync batches instead of one call). The time the sync spent inside the
model is reported too: the rest is the pipeline's own work. Then edits one page and re-syncs:
the incremental cost against the full sync.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, fresh_index, peak_rss_mb, require, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages (0: all)")
    args = parser.parse_args()

    from connectors.markdown import MarkdownFolder
    from indexing.ingest.chunking import chunk_document
    from indexing.ingest.sync import sync_documents

    # A private copy: the incremental step edits a page, and the shared corpus must never change.
    copy = Path(tempfile.mkdtemp(prefix="docent-throughput-")) / "handbook"
    shutil.copytree(require(HANDBOOK), copy)
    folder = MarkdownFolder(copy, source="handbook", exclude=CORPUS_EXCLUDES)
    paths = list(folder.paths())[: args.limit or None]
    index = fresh_index()
    index.embedder.embed_query("load the model before the clock starts")
    texts = [c.embed_text for p in paths for d in [folder.read(p)] if not d.error
             for parent in chunk_document(d) for c in parent.children]

    def raw_run() -> float:
        started = time.perf_counter()
        index.embedder.embed_texts(texts)
        return time.perf_counter() - started

    raw_before = raw_run()
    embed_texts, in_model = index.embedder.embed_texts, []

    def timed_embed(batch):
        started = time.perf_counter()
        try:
            return embed_texts(batch)
        finally:
            in_model.append(time.perf_counter() - started)

    index.embedder.embed_texts = timed_embed
    started = time.perf_counter()
    report = sync_documents(index, (folder.read(p) for p in paths), "handbook", prune=False)
    full = time.perf_counter() - started
    index.embedder.embed_texts = embed_texts
    raw_after = raw_run()
    raw = (raw_before + raw_after) / 2

    # One page edited: only its changed chunks should reach the model.
    victim = folder.root / paths[len(paths) // 2]
    victim.write_text(victim.read_text() + "\n\nA sentence added by the incremental benchmark.\n")
    before = index.embedder.texts_embedded
    started = time.perf_counter()
    one = sync_documents(index, (folder.read(p) for p in paths), "handbook", prune=False)
    incremental = time.perf_counter() - started
    calls = index.embedder.texts_embedded - before
    shutil.rmtree(copy.parent, ignore_errors=True)

    table("Indexing throughput (same process, same model)", [
        ("pages synced", report.added), ("pages failed", report.failed), ("child chunks", report.chunks),
        ("the lead's sentence vectors written", report.sentences), ("texts embedded (children + sentences)", report.embedded),
        ("full sync, s", full), ("pages/s", report.added / full), ("chunks/s end to end", report.chunks / full),
        ("raw embedding before / after the sync, chunks/s", f"{len(texts) / raw_before:.2f} / {len(texts) / raw_after:.2f}"),
        ("raw embedding, chunks/s (mean time)", len(texts) / raw),
        ("pipeline / raw rate", (report.chunks / full) / (len(texts) / raw)),
        ("sync time inside the model, s", sum(in_model)), ("sync time outside the model", f"{1 - sum(in_model) / full:.1%}"),
        ("peak RSS, MB", peak_rss_mb()),
        ("incremental: 1 page edited, s", incremental), ("incremental: texts embedded", calls),
        ("incremental: pages re-indexed", one.updated), ("incremental / full time", f"{incremental / full:.4f}"),
    ])


if __name__ == "__main__":
    main()
