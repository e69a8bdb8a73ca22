"""The built-in reader's cost per question for N = 1 / 5 / 10 / 20 sections, on real dumped sections.

    python -m benchmarks.reader_latency --corpus sg --questions 40   # the shipped model; --model another export
    python -m benchmarks.reader_latency --corpus sg --questions 40 --span   # and the span reader (KB_RERANK=span)

Reads `benchmarks/out/reader-<corpus>.jsonl` (`training.reader_eval collect`), scores each
question's top N sections with an int8 export (`indexing.search.reader`) — reading each section the
way the shipped reader does, the window of its best chunk around the best sentence, with the
window's cost inside the timing — and prints
p50 / p95 per N beside the baseline measured in the same process: embedding the question with
the bundled model (today's only model call per question, int8 ONNX as well).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from training.reader_eval import OUT, load_rows, passage


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="clef")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, help="an int8 export (training.reader_export); default: the shipped one")
    parser.add_argument("--span", action="store_true", help="also the span reader, reading sections as KB_RERANK=span does")
    args = parser.parse_args(argv)
    from indexing.vectors.onnx_embedding import OnnxEmbedder
    from indexing.search.reader import MODEL
    from indexing.search.reader import OnnxReader as Reader

    rows = [r for r in load_rows((args.corpus,)) if len(r["hits"]) >= 20][: args.questions]
    reader = Reader(args.model or MODEL, threads=args.threads)
    embedder = OnnxEmbedder(OUT / "latency-home", quantized=True)
    reader.score("warm up", ["warm up"])
    embedder.embed_query("warm up")
    span_reader = None
    if args.span:
        from indexing.search.span_reader import MODEL as SPAN_MODEL
        from indexing.search.span_reader import TOP_N as SPAN_TOP_N
        from indexing.search.span_reader import SpanReader

        span_reader = SpanReader(SPAN_MODEL, threads=args.threads)
        span_reader.read("warm up", ["warm up"])
    timings: dict[str, list[float]] = {"embed question (baseline)": []}
    for row in rows:
        start = time.perf_counter()
        embedder.embed_query(row["searched"])
        timings["embed question (baseline)"].append((time.perf_counter() - start) * 1000)
        for n in (1, 5, 10, 20):
            start = time.perf_counter()
            texts = [passage(h, row["searched"]) for h in row["hits"][:n]]
            reader.score(row["searched"], texts)
            timings.setdefault(f"reader, N={n}", []).append((time.perf_counter() - start) * 1000)
        for n in sorted({1, SPAN_TOP_N, 5}) if span_reader else ():  # the span stage reads the top SPAN_TOP_N
            start = time.perf_counter()
            span_reader.read(row["searched"], [passage(h) for h in row["hits"][:n]])
            timings.setdefault(f"span reader, N={n}", []).append((time.perf_counter() - start) * 1000)
    base = statistics.median(timings["embed question (baseline)"])
    print(f"{len(rows)} questions of {args.corpus}, {args.threads} threads")
    print("| what | p50 ms | p95 ms | p50 / baseline |")
    print("|---|---|---|---|")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {percentile(values, 95):.1f} | {median / base:.1f}x |")


if __name__ == "__main__":
    main()
