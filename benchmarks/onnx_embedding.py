"""The bundled model under torch, ONNX Runtime and ONNX Runtime int8: handbook chunks per second,
interleaved in one process, and (with --sync) one full `kb sync` of the handbook per backend.

    .venv/bin/python -m benchmarks.onnx_embedding [--chunks 1800] [--rounds 6]
    .venv/bin/python -m benchmarks.onnx_embedding --sync [--together] [--backends onnx-int8,torch] [--homes /tmp/s7/onnx-sync-]

Embedding only: every k-th child chunk of the Sourcegraph handbook (so the sample has the whole
handbook's mix of lengths), split into `--rounds` slices; each round every backend embeds the same
slice, in a rotating order, so a neighbour's burst of CPU on this shared machine falls on all
three alike. Vectors are compared with torch's on every text (cosine: mean and worst).

--sync: `kb sync` of the handbook in a fresh KB_HOME per backend, in subprocesses (each with its
own embedded Postgres; the export to ONNX happens inside the timed sync, as on a first start), one
after another — or with --together all at once, so they share the cores and any neighbour's load
alike. Reports wall time, chunks/s and each process's peak RSS.
The load average is printed with every measurement: compare ratios, not absolute rates.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, require, table
from training.corpora import REPO

BACKENDS = ("torch", "onnx", "onnx-int8")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def handbook_chunks() -> list[str]:
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.chunking import chunk_document

    texts: list[str] = []
    for doc in MarkdownFolder(require(HANDBOOK), source="handbook", exclude=CORPUS_EXCLUDES).documents():
        if not (doc.error or doc.skipped):
            texts += [c.embed_text for p in chunk_document(doc) for c in p.children]
    return texts


def embedders(home: Path) -> dict:
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import make_embedder

    made = {b: make_embedder(IndexConfig(rerank=RerankConfig(backend="off"), home=home, embed_backend=b)) for b in BACKENDS}
    for embedder in made.values():
        embedder.embed_query("load the model before the clock starts")
    return made


def embedding_only(args) -> None:
    import numpy as np

    every = handbook_chunks()
    step = max(1, len(every) // args.chunks)
    texts = every[::step][: args.chunks]
    home = Path(tempfile.mkdtemp(prefix="docent-onnx-bench-"))
    started_load = load()
    models = embedders(home)
    seconds = dict.fromkeys(BACKENDS, 0.0)
    vectors = {b: [] for b in BACKENDS}
    slices = [texts[i :: args.rounds] for i in range(args.rounds)]
    for r, part in enumerate(slices):
        order = BACKENDS[r % 3:] + BACKENDS[: r % 3]
        for backend in order:
            t0 = time.perf_counter()
            vectors[backend] += models[backend].embed_texts(part)
            seconds[backend] += time.perf_counter() - t0
    rows = []
    torch_rate = len(texts) / seconds["torch"]
    reference = np.array(vectors["torch"], dtype=np.float32)
    for backend in BACKENDS:
        rate = len(texts) / seconds[backend]
        cosine = (np.array(vectors[backend], dtype=np.float32) * reference).sum(axis=1)
        rows.append((f"{backend}: chunks/s", rate))
        rows.append((f"{backend}: × torch", rate / torch_rate))
        if backend != "torch":
            rows.append((f"{backend}: cosine to torch, mean / worst", f"{cosine.mean():.5f} / {cosine.min():.5f}"))
    rows += [(f"texts (every {step}th of {len(every)} handbook chunks)", len(texts)),
             ("rounds (rotating order)", args.rounds), ("load before / after", f"{started_load} / {load()}")]
    table(f"embedding {len(texts)} handbook chunks: torch vs ONNX Runtime (same process, interleaved)", rows)


def start_sync(backend: str, home: Path) -> tuple[subprocess.Popen, float]:
    """`kb sync` of the handbook into a fresh KB_HOME, started; with the time it started."""
    if home.exists():
        raise SystemExit(f"{home} exists: the sync must start from an empty KB_HOME")
    env = {**os.environ, "KB_HOME": str(home), "KB_EMBED_BACKEND": backend}
    command = [sys.executable, "-m", "bot.cli", "sync", str(require(HANDBOOK)), "--source", "sg"]
    for pattern in CORPUS_EXCLUDES:
        command += ["--exclude", pattern]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return process, time.perf_counter()


def wait_sync(process: subprocess.Popen, started: float) -> tuple[str, int, float, float]:
    """Output, exit status, wall seconds (to the process's own end) and peak RSS (MB) of one sync."""
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    return output, status, time.perf_counter() - started, usage.ru_maxrss / 1024


def finish_sync(backend: str, home: Path, waited: tuple, before: str) -> list[tuple]:
    """One sync's rows: wall time, chunks/s, the process's peak RSS, the load."""
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    output, status, seconds, rss = waited
    if status != 0:
        raise SystemExit(f"kb sync with {backend} failed:\n{output[-2000:]}")
    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home, embed_backend=backend))
    chunks = index.chunk_count()
    index.close()
    return [(f"{backend}: wall", f"{seconds / 60:.1f} min"), (f"{backend}: chunks/s", chunks / seconds),
            (f"{backend}: peak RSS of kb sync", f"{rss:,.0f} MB"),
            (f"{backend}: load before / after", f"{before} / {load()}"), (f"{backend}: chunks", chunks)]


def full_syncs(args) -> None:
    """One after another, or (--together) all at once: then they share the cores and whatever
    else runs on them alike, and their times compare even on a busy machine."""
    backends = args.backends.split(",")
    homes = {b: Path(f"{args.homes}{b}") for b in backends}
    rows = []
    if args.together:
        from concurrent.futures import ThreadPoolExecutor

        before = load()
        running = {b: start_sync(b, homes[b]) for b in backends}
        with ThreadPoolExecutor(len(backends)) as pool:  # each timed to its own end, not to when it is reaped
            waited = {b: pool.submit(wait_sync, *running[b]) for b in backends}
            for b in backends:
                rows += finish_sync(b, homes[b], waited[b].result(), before)
    else:
        for b in backends:
            before = load()
            rows += finish_sync(b, homes[b], wait_sync(*start_sync(b, homes[b])), before)
    how = "at the same time" if args.together else "one after another"
    table(f"kb sync of the Sourcegraph handbook, one fresh KB_HOME per backend, {how}", rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=1800)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--sync", action="store_true", help="full kb syncs instead of embedding only")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="--sync: which backends, in this order")
    parser.add_argument("--together", action="store_true", help="--sync: run the syncs at the same time")
    parser.add_argument("--homes", default=tempfile.gettempdir() + "/docent-onnx-sync-",
                        help="KB_HOME prefix for --sync (the backend's name is appended); kept for kb eval")
    args = parser.parse_args()
    full_syncs(args) if args.sync else embedding_only(args)


if __name__ == "__main__":
    main()
