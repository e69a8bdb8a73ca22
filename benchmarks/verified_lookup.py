"""What the verified-answer lookup adds to a question, with 10,000 verified answers.

    python -m benchmarks.verified_lookup [--answers 10000] [--rounds 5]

A throwaway index of the sample wiki, then `--answers` verified answers of three questions each
(the labelled set's real answers, embedded by the real model, plus filler answers whose vectors
are random unit vectors: the lookup's cost is one matrix product over every question and the
matcher over the nearest ten, whatever the vectors say). Each round asks the sample's 20
questions and the labelled set's paraphrases twice, interleaved in one process: once through
`KnowledgeBase.ask` with the lookup, once with it off (a `KnowledgeBase` whose lookup finds
nothing), and prints p50/p95 of each and of the
difference; then the lookup alone (`Lookup.find` with the question's vector given) and the cost
of reloading the snapshot after a change (once per write, per process).

The lookup reads no chunk: its cost does not depend on the index's size (12k chunks or 20 pages).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks._common import fresh_index, pct, peak_rss_mb, table

REPO = Path(__file__).resolve().parents[1]
LABELLED = REPO / "benchmarks" / "verified" / "answers.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from sqlalchemy import insert

    from bot.knowledge import KnowledgeBase
    from bot.verified import Change, Lookup, store
    from bot.verified.records import VerifiedAnswerRow, VerifiedQuestionRow
    from benchmarks._slack import sync_sample

    index = fresh_index()
    sync_sample(index)
    kb = KnowledgeBase(index)
    labelled = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    with index.session() as s:
        for item in labelled:
            store.add(s, index.embedder, Change("bench"), questions=item["variants"], answer=item["answer"],
                      scopes=["public"], review_by=store.default_review_by(180))
        s.commit()
    filler = max(0, args.answers - len(labelled))
    rng = np.random.default_rng(7)
    dim = len(index.embedder.embed_query("dimension"))
    started = time.perf_counter()
    now = datetime.now(timezone.utc)
    with index.session() as s:
        for first in range(0, filler, 1000):
            n = min(1000, filler - first)
            ids = s.execute(insert(VerifiedAnswerRow).returning(VerifiedAnswerRow.id), [
                {"answer": f"filler answer {first + i}", "verified_by": "bench", "verified_at": now, "updated_at": now,
                 "scopes": ["public"], "cites": [], "review_by": store.default_review_by(180), "revision": 0}
                for i in range(n)]).scalars().all()
            vectors = rng.standard_normal((n * 3, dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            s.execute(insert(VerifiedQuestionRow), [
                {"answer_id": aid, "position": p, "question": f"filler question {aid} {p}", "model": index.embedder.name,
                 "dim": dim, "vector": vectors[j * 3 + p].tobytes()} for j, aid in enumerate(ids) for p in range(3)])
        s.commit()
    print(f"{len(labelled)} labelled + {filler} filler answers stored in {time.perf_counter() - started:.1f} s")

    questions = [q["question"] for q in map(json.loads, (REPO / "sample-wiki" / "QUESTIONS.jsonl").read_text().splitlines())]
    questions += [p for item in labelled for p in item["paraphrases"]]
    off = KnowledgeBase(index)
    off.verified = _Off()  # type: ignore[assignment]
    lookup = Lookup()
    reload_started = time.perf_counter()
    lookup.find(index, index.embedder, "warm-up question", None)
    reload_ms = (time.perf_counter() - reload_started) * 1000
    with_ms: list[float] = []
    without_ms: list[float] = []
    added: list[float] = []
    alone: list[float] = []
    given = 0
    for _ in range(args.rounds):
        for q in questions:
            t0 = time.perf_counter()
            a = kb.ask(q)
            t1 = time.perf_counter()
            off.ask(q)
            t2 = time.perf_counter()
            with_ms.append((t1 - t0) * 1000)
            without_ms.append((t2 - t1) * 1000)
            added.append(a.timings_ms.get("verified", 0.0))
            given += a.verified is not None
            vector = index.embedder.embed_query(q)
            t3 = time.perf_counter()
            lookup.find(index, index.embedder, q, None, vector=vector)
            alone.append((time.perf_counter() - t3) * 1000)
    n = len(with_ms)
    table(f"verified lookup, {args.answers} answers ({3 * args.answers} questions), {n} questions asked", [
        ("ask p50 / p95, with the lookup (ms)", f"{pct(with_ms, 50):.1f} / {pct(with_ms, 95):.1f}"),
        ("ask p50 / p95, without (ms)", f"{pct(without_ms, 50):.1f} / {pct(without_ms, 95):.1f}"),
        ("the lookup inside ask, p50 / p95 (ms)", f"{pct(added, 50):.2f} / {pct(added, 95):.2f}"),
        ("Lookup.find alone, vector given, p50 / p95 (ms)", f"{pct(alone, 50):.2f} / {pct(alone, 95):.2f}"),
        ("first lookup after a change (reload), ms", f"{reload_ms:.0f}"),
        ("questions given a verified answer", f"{given} of {n}"),
        ("peak RSS (MB)", f"{peak_rss_mb():.0f}"),
    ])
    index.close()


class _Off:
    def find(self, *args: object, **kwargs: object) -> None:
        return None


if __name__ == "__main__":
    main()
