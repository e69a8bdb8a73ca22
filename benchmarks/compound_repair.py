"""What searching a word as the wiki hyphenates it costs a question (`indexing.search.spelling.hyphenated`).

    python -m benchmarks.compound_repair --homes '/work/kb/homes/kb-{corpus}' [--corpora sample,clef,sg,squad] [--rounds 3]

Each public question and its casual rewrite (`training.question_sets`) goes through
`repair_question` with and without the hyphen split, alternating per question in one process
(these machines are noisy); printed per corpus: p50 / p95 of each, and which words were split.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

CORPORA = ("sample", "clef", "sg", "squad")


def measure(corpus: str, home: Path, rounds: int) -> dict:
    from training.question_sets import question_sets
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.spelling import english_words, repair_question

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    english_words()  # loaded once per process, as `kb serve` does at start
    sets = question_sets(corpus)
    questions = [q["question"] for name in ("public", "casual") for q in sets.get(name, [])]
    times: dict[bool, list[float]] = {True: [], False: []}
    split: set[tuple[str, str]] = set()
    try:
        repair_question(index, questions[0], None)  # the keyword index loads outside the timing
        for _ in range(rounds):
            for question in questions:
                for compounds in (False, True):
                    started = time.perf_counter()
                    repair = repair_question(index, question, None, compounds=compounds)
                    times[compounds].append((time.perf_counter() - started) * 1000)
                    split |= {c for c in repair.corrections if ("-" in c[1]) != ("-" in c[0])}
    finally:
        index.close()

    def p95(values: list[float]) -> float:
        return statistics.quantiles(values, n=20)[-1]

    return {"corpus": corpus, "n": len(questions), "split": sorted(split),
            "off": (statistics.median(times[False]), p95(times[False])),
            "on": (statistics.median(times[True]), p95(times[True]))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--homes", required=True, help="a KB_HOME per corpus, '{corpus}' in it")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print("| corpus | questions | repair ms p50 / p95, typos only | with compounds | words split or joined |")
    print("|---|---|---|---|---|")
    for corpus in args.corpora.split(","):
        r = measure(corpus, Path(args.homes.format(corpus=corpus)), args.rounds)
        words = ", ".join(f"{a} → {b}" for a, b in r["split"]) or "—"
        print(f"| {corpus} | {r['n']} | {r['off'][0]:.1f} / {r['off'][1]:.1f} | {r['on'][0]:.1f} / {r['on'][1]:.1f} | {words} |",
              flush=True)


if __name__ == "__main__":
    main()
