"""How long the gaps report takes (`bot.records.gaps.gaps_report`: what `kb gaps`, the admins' App Home
and the weekly digest compute), cold (every question wording embedded) and warm (the wordings
already embedded in this process), for a week of 100, 1,000 and 5,000 logged questions.

Questions are logged with the real recording code (`question_log.log_query`); a third are answered,
the rest not found, in wordings built from templates so that many are near-duplicates. The
baseline in the same process is the warm run: the ratio is what embedding the wordings costs.

    .venv/bin/python -m benchmarks.gaps_report
"""

from __future__ import annotations

import itertools
import random
import time

from benchmarks._common import fresh_index, table

TOPICS = ["my dog", "a bike", "my kids", "a guest", "my own laptop", "a standing desk", "a monitor", "my partner",
          "a plant", "a coffee machine", "a friend", "my cat", "a drone", "a 3d printer", "my parents", "a heater"]
TEMPLATES = ["can I bring {t} to the office?", "is {t} allowed in the office", "are we allowed to bring {t} to work",
             "office policy on {t}", "can {t} come to the office with me", "where can I keep {t} at work"]
WHERE = ["", " in Lisbon", " in Portland", " on Fridays", " during the offsite", " after 6pm"]


def wordings(n: int, rng: random.Random) -> list[str]:
    every = [tpl.format(t=t) + w for tpl, t, w in itertools.product(TEMPLATES, TOPICS, WHERE)]
    return [rng.choice(every) for _ in range(n)]


def main() -> None:
    from bot.records import question_log
    from bot.answering.answer import Answer
    from bot.records.gaps import _vectors, gaps_report
    from bot.answering.llm import NOT_FOUND_REPLY
    from indexing.search.gate import Outcome

    index = fresh_index()
    index.embedder.embed_unindexed(["warm up the model"])
    rng = random.Random(18)
    rows = []
    logged = 0
    for total in (100, 1000, 5000):
        for question in wordings(total - logged, rng):
            outcome = Outcome.ANSWERED if rng.random() < 1 / 3 else Outcome.NOT_FOUND
            answer = Answer(question=question, text=NOT_FOUND_REPLY, sources=[], timings_ms={}, outcome=outcome)
            question_log.log_query(index, surface="mention", user_id=f"U{rng.randrange(200)}", question=question,
                              answer=answer, channel_id="C1")
        logged = total
        _vectors.clear()
        started = time.perf_counter()
        report = gaps_report(index, 7)
        cold = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        gaps_report(index, 7)
        warm = (time.perf_counter() - started) * 1000
        groups = sum(1 for _ in report.unanswered)
        rows += [(f"{total:,} questions: not found", report.current.not_found),
                 (f"{total:,} questions: cold ms (wordings embedded)", round(cold, 1)),
                 (f"{total:,} questions: warm ms (baseline)", round(warm, 1)),
                 (f"{total:,} questions: cold / warm", round(cold / warm, 2)),
                 (f"{total:,} questions: top groups shown", groups)]
    table("gaps report, one week of questions (2 cores, model loaded)", rows)
    index.close()


if __name__ == "__main__":
    main()
