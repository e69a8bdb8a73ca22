"""Query latency: retrieval + extractive answer over the handbook's eval questions, model loaded.

    .venv/bin/python -m benchmarks.query_latency [--home KB_HOME_WITH_HANDBOOK] [--repeat 3] [--scope S]
        [--lead-vectors stored,question-time] [--rerank off,builtin]

Without `--home`, syncs the 821-page handbook into a fresh index first (slow: embedding).
The baseline in the same process is embedding the question alone, the floor for any answer.
`--scope` (repeatable) searches only those access scopes, as every Slack question does; without
it, all scopes (as `kb ask` on the command line). The two take different query plans in Postgres.

`--lead-vectors stored,question-time` compares, in the same process and round by round, the lead
reading its sentence vectors from the index (`indexing.vectors.sentence_vectors`, stored at sync time)
with embedding them when asked, as before they were stored: in `question-time` rounds the lookup
finds nothing (`bot.answering.lead.stored_vectors` answers {}) and the process's sentence cache is emptied
before every answer, so each answer embeds its sentences as a question about sections nobody
asked recently does. (Its question vector still comes from retrieval; before, the lead embedded
the question a second time, ~5-20 ms more.) Rounds of each setting alternate.

`--rerank off,builtin` compares, the same way, answers without a rerank stage and with the given
`KB_RERANK` backend (`builtin`: the shipped reader, `indexing.search.reader`), lead vectors stored.
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
    parser.add_argument("--lead-vectors", default="stored",
                        help="where the lead's sentence vectors come from, alternating round by round: "
                             "'stored' (the index), 'question-time' (embedded per answer, cold), or both: 'stored,question-time'")
    parser.add_argument("--rerank", default=None,
                        help="KB_RERANK values to alternate round by round, e.g. 'off,builtin' (lead vectors stored)")
    args = parser.parse_args()
    import bot.answering.lead

    settings = args.lead_vectors.split(",")
    reranks = args.rerank.split(",") if args.rerank else []
    if reranks and len(settings) > 1:
        parser.error("--rerank compares with lead vectors stored: give one or the other")
    if reranks:
        settings = [f"rerank {r}" for r in reranks]
    stored_vectors = bot.answering.lead.stored_vectors

    from bot.knowledge import KnowledgeBase
    from sources import Audience
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.sync import sync_documents

    questions = [q["question"] for q in eval_questions()]
    index = fresh_index(args.home)
    if not index.chunk_count():
        folder = MarkdownFolder(HANDBOOK, source="handbook", exclude=CORPUS_EXCLUDES)
        sync_documents(index, folder.documents(), "handbook")
    index.embedder.embed_query("warm-up")
    from indexing.config import RerankConfig
    from indexing.search.rerank import open_stage

    stages_of = {f"rerank {r}": open_stage(RerankConfig(backend=r)) for r in reranks}
    for stage in stages_of.values():
        if stage is not None:
            stage.warm()
    kb = KnowledgeBase(index)
    audience = Audience.limited(args.scope) if args.scope else Audience.operator()
    kb.ask("warm-up question about the handbook", audience)

    embed_only, total, stages = [], {s: [] for s in settings}, {s: {} for s in settings}
    leads: dict[str, list[str]] = {s: [] for s in settings}
    embedded_when_stored = 0  # sentences the lead still had to embed in 'stored' rounds (none stored for them)
    for r in range(args.repeat * len(settings)):
        setting = settings[r % len(settings)]
        if reranks:
            index.rerank = stages_of[setting]
        bot.answering.lead.stored_vectors = stored_vectors if setting != "question-time" else (lambda *a: {})
        bot.answering.lead.SENTENCE_VECTORS = bot.answering.lead.SentenceVectors()
        for q in questions:
            started = time.perf_counter()
            index.embedder.embed_query(q)
            embed_only.append((time.perf_counter() - started) * 1000)
            if setting == "question-time":
                bot.answering.lead.SENTENCE_VECTORS = bot.answering.lead.SentenceVectors()
            started = time.perf_counter()
            answer = kb.ask(q, audience)
            total[setting].append((time.perf_counter() - started) * 1000)
            for stage in ("embed", "vector", "bm25", "fuse", "rerank", "lead", "answer"):
                stages[setting].setdefault(stage, []).append(answer.timings_ms.get(stage, 0.0))
            if r < len(settings):
                leads[setting].append(answer.lead)
        if setting == "stored":
            embedded_when_stored += len(bot.answering.lead.SENTENCE_VECTORS._items)
    bot.answering.lead.stored_vectors = stored_vectors
    rows = [("questions × repeats (per setting)", len(total[settings[0]])), ("chunks in index", index.chunk_count()),
            ("scopes searched", ", ".join(args.scope) if args.scope else "all"),
            ("embed question only p50, ms", pct(embed_only, 50))]
    for setting in settings:
        rows += [(f"{setting if reranks else 'lead vectors ' + setting}: answer p50, ms", pct(total[setting], 50)),
                 ("  answer p95, ms", pct(total[setting], 95)),
                 ("  answer p95 / embed-only p50", pct(total[setting], 95) / pct(embed_only, 50))]
        rows += [(f"  {stage} p50 / p95, ms", f"{pct(v, 50):.1f} / {pct(v, 95):.1f}") for stage, v in stages[setting].items()]
    if "stored" in settings:
        rows.append(("sentences embedded at question time in 'stored' rounds", embedded_when_stored))
    if len(settings) > 1:
        same = sum(a == b for a, b in zip(*(leads[s] for s in settings)))
        rows.append((f"same lead text, {' vs '.join(settings)}", f"{same} / {len(questions)}"))
    rows.append(("peak RSS, MB", peak_rss_mb()))
    table("Query latency (retrieval + extractive answer, warm)", rows)


if __name__ == "__main__":
    main()
