"""Indexing throughput through an embedding service (`KB_EMBED_URL`) with 1, 4 and 8 requests in
flight, against the bundled model in this process, on the same handbook chunks in the same run.

    .venv/bin/python -m benchmarks.embedding_service [--chunks 1500] [--batch 64]

The service is `tests/support/embeddings_server.py` in a process of its own, speaking the real
`/v1/embeddings` wire format and computing with the bundled model — on this same 2-core machine.
So this measures the client's overhead and what requests in flight buy when the service shares
the CPU; a service on its own hardware (a GPU box running TEI or vLLM) is where in-flight
requests pay. Each configuration embeds the same texts once (no cache involved).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, require, table
from training.corpora import REPO


def handbook_chunks(limit: int) -> list[str]:
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.chunking import chunk_document

    texts: list[str] = []
    for doc in MarkdownFolder(require(HANDBOOK), source="handbook", exclude=CORPUS_EXCLUDES).documents():
        if doc.error or doc.skipped:
            continue
        texts += [c.embed_text for p in chunk_document(doc) for c in p.children]
        if len(texts) >= limit:
            return texts[:limit]
    return texts


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=64, help="texts per request")
    args = parser.parse_args()

    from indexing.vectors.embedding import EMBED_DIM, TorchEmbedder
    from indexing.vectors.embedding_service import ServiceEmbedder

    texts = handbook_chunks(args.chunks)
    port = free_port()
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "embeddings_server.py"), str(port)],
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert server.stdout.readline().strip() == "ready"
        local = TorchEmbedder()
        local.embed_query("load the model before the clock starts")
        rows, rates = [], {}

        def timed(name: str, embed) -> None:
            started = time.perf_counter()
            embed(texts)
            rates[name] = len(texts) / (time.perf_counter() - started)
            rows.append((f"{name}: chunks/s", rates[name]))

        timed("bundled model, in process", local.embed_texts)
        for in_flight in (1, 4, 8):
            service = ServiceEmbedder(f"http://127.0.0.1:{port}/v1", "all-MiniLM-L6-v2", dimensions=EMBED_DIM,
                                      batch_size=args.batch, in_flight=in_flight)
            service.embed_query("connect")
            timed(f"service, {in_flight} in flight", service.embed_texts)
            service.close()
        timed("bundled model, in process (again)", local.embed_texts)
        baseline = (rates["bundled model, in process"] + rates["bundled model, in process (again)"]) / 2
        for in_flight in (1, 4, 8):
            rows.append((f"service {in_flight} in flight / in process", rates[f"service, {in_flight} in flight"] / baseline))
        rows.append(("texts", len(texts)))
        table(f"embedding {len(texts)} handbook chunks, {args.batch} per request", rows)
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
