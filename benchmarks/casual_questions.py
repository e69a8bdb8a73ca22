"""Casual rewrites keep their outcome? Typo repair on and off, in one process (issue 14).

    python -m benchmarks.casual_questions --homes '/tmp/kb-{corpus}' [--corpora sample,clef,sg,mszh,squad]

Each public question and its casual rewrite (`training.question_sets.casual`: lower case, no
punctuation or apostrophes, chat spellings, one pair of letters swapped in a long word) are asked
of the corpus's own index with `KB_TYPO_REPAIR` off and on, the two settings alternating per
question. Printed per corpus: the expected page first (hit@1) for the public questions and the
rewrites, the share of rewrites whose outcome (with the shipped thresholds) equals their
original's, how many questions the repair changed, and what the repair costs per question.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path

CORPORA = ("sample", "clef", "sg", "mszh", "squad")


def _rank(retrieval, expected: list[str]) -> int | None:
    paths = list(dict.fromkeys(h.path for h in retrieval.hits))
    return next((i + 1 for i, p in enumerate(paths) if p in expected), None)


def measure(corpus: str, home: Path) -> dict:
    from training.question_sets import question_sets
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.retrieval import retrieve
    from indexing.search.spelling import english_words

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    on_config, off_config = index.config, replace(index.config, typo_repair=False)
    sets = question_sets(corpus)
    rows = {"off": [], "on": []}
    repair_ms, changed = [], {"public": 0, "casual": 0}
    try:
        english_words()
        retrieve(index, "warm up the model and the keyword index")
        for original, casual in zip(sets["public"], sets["casual"]):
            for setting, config in (("off", off_config), ("on", on_config)):
                index.config = config
                pair = [retrieve(index, q["question"], top_k=10) for q in (original, casual)]
                rows[setting].append((original, pair))
                if setting == "on":
                    repair_ms += [r.timings_ms["spelling"] for r in pair]
                    changed["public"] += bool(pair[0].repair.corrections)
                    changed["casual"] += bool(pair[1].repair.corrections)
    finally:
        index.config = on_config
        index.close()
    report = {"corpus": corpus, "n": len(sets["public"]), "changed": changed,
              "repair_ms_p50": statistics.median(repair_ms), "repair_ms_p95": statistics.quantiles(repair_ms, n=20)[-1]}
    for setting, pairs in rows.items():
        answerable = [(q, p) for q, p in pairs if q.get("kind") != "not_found"]
        report[setting] = {
            "public_hit1": sum(_rank(p[0], q["expected_sources"]) == 1 for q, p in answerable) / len(answerable),
            "casual_hit1": sum(_rank(p[1], q["expected_sources"]) == 1 for q, p in answerable) / len(answerable),
            "outcome_kept": sum(p[0].outcome == p[1].outcome for _, p in pairs) / len(pairs),
            "casual_answered": sum(p[1].outcome == "answered" for _, p in answerable) / len(answerable),
            "public_answered": sum(p[0].outcome == "answered" for _, p in answerable) / len(answerable),
        }
    return report


def table(reports: list[dict]) -> str:
    lines = ["| corpus | n | repaired public / casual | public hit@1 off → on | casual hit@1 off → on "
             "| casual answered off → on (public) | outcome kept off → on | repair ms p50 / p95 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in reports:
        off, on = r["off"], r["on"]
        lines.append(
            f"| {r['corpus']} | {r['n']} | {r['changed']['public']} / {r['changed']['casual']} "
            f"| {off['public_hit1']:.3f} → {on['public_hit1']:.3f} | {off['casual_hit1']:.3f} → {on['casual_hit1']:.3f} "
            f"| {off['casual_answered']:.2f} → {on['casual_answered']:.2f} ({on['public_answered']:.2f}) "
            f"| {off['outcome_kept']:.2f} → {on['outcome_kept']:.2f} | {r['repair_ms_p50']:.1f} / {r['repair_ms_p95']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--homes", required=True, help="KB home of each corpus, with {corpus} in it")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    args = parser.parse_args(argv)
    reports = [measure(c, Path(args.homes.format(corpus=c))) for c in args.corpora.split(",")]
    print(table(reports))


if __name__ == "__main__":
    main()
