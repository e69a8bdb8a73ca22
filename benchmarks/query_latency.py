"""Query latency: retrieval + extractive answer over the handbook's eval questions, model loaded.

    .venv/bin/python -m benchmarks.query_latency [--home KB_HOME_WITH_HANDBOOK] [--repeat 3] [--scope S]

Without `--home`, syncs the 821-page handbook into a fresh index first (slow: embedding).
The baseline in the same process is embedding the question alone, the floor for any answer.
`--scope` (repeatable) searches only those access scopes, as every Slack question does; without
it, all scopes (as `kb ask` on the command line). The two take different query plans in Postgres.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks._common import CORPUS_EXCLUDES, HANDBOOK, eval_questions, fresh_index, peak_rss_mb, pct, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, help="a data directory that already holds the handbook")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scope", action="append", default=None, help="access scope to search (repeatable; default: all)")
    args = parser.parse_args()

    from bot.knowledge import KnowledgeBase
    from connectors.access import Audience
    from connectors.markdown import MarkdownFolder
    from indexing.sync import sync_documents

    questions = [q["question"] for q in eval_questions()]
    index = fresh_index(args.home)
    if not index.chunk_count():
        folder = MarkdownFolder(HANDBOOK, source="handbook", exclude=CORPUS_EXCLUDES)
        sync_documents(index, folder.documents(), "handbook")
    index.embedder.embed_query("warm-up")
    kb = KnowledgeBase(index)
    audience = Audience.limited(args.scope) if args.scope else Audience.operator()
    kb.ask("warm-up question about the handbook", audience)

    embed_only, total, stages = [], [], {}
    for _ in range(args.repeat):
        for q in questions:
            started = time.perf_counter()
            index.embedder.embed_query(q)
            embed_only.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            answer = kb.ask(q, audience)
            total.append((time.perf_counter() - started) * 1000)
            for stage in ("embed", "vector", "bm25", "fuse", "answer"):
                stages.setdefault(stage, []).append(answer.timings_ms.get(stage, 0.0))
    rows = [("questions × repeats", len(total)), ("chunks in index", index.chunk_count()),
            ("scopes searched", ", ".join(args.scope) if args.scope else "all"),
            ("embed question only p50, ms", pct(embed_only, 50)),
            ("answer p50, ms", pct(total, 50)), ("answer p95, ms", pct(total, 95)),
            ("answer p95 / embed-only p50", pct(total, 95) / pct(embed_only, 50))]
    rows += [(f"{stage} p50 / p95, ms", f"{pct(v, 50):.1f} / {pct(v, 95):.1f}") for stage, v in stages.items()]
    rows.append(("peak RSS, MB", peak_rss_mb()))
    table("Query latency (retrieval + extractive answer, warm)", rows)


if __name__ == "__main__":
    main()
