"""Synonyms: how much an added term should weigh, and whether the vector leg should see them too.

    python -m benchmarks.synonyms --homes '/tmp/kb-{corpus}' [--corpora sample,clef,sg]

The sample wiki's own `[synonyms]` (sample-wiki/docent.toml) are applied to each corpus's own
index, and every question of its public set, its casual rewrites (`training.question_sets`)
and its foreign (unanswerable) questions that holds a key is asked — for the sample wiki also
`benchmarks/synonym_questions.jsonl`, eight questions in the vocabulary the synonyms cover (written
for them: a demonstration, not an independent test). A question holding no key is searched
exactly as without synonyms (tests/test_synonyms.py), so it is left out. Variants, in one
process on the same index: no synonyms; the keyword leg with added terms weighed 0.25, 0.5, 1.0;
0.5 with the vector leg also embedding the question followed by its synonyms' phrases.
Printed per corpus and variant: rank of the expected page (hit@1, MRR over the top 10), outcomes
(answerable answered / uncertain / not found, unanswerable answered), then each question whose
rank or outcome differs from no synonyms.

    python -m benchmarks.synonyms --homes '/tmp/kb-{corpus}' --timing sg

What the added terms cost the keyword leg: every public question of the corpus searched by BM25
as asked and with the sample's `vacation` → "annual leave", `PTO` → "annual leave" terms added
(three terms at weight 0.5), alternating, `ROUNDS` rounds, in one process: p50 / p95 ms and ratios.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOCABULARY = REPO / "benchmarks" / "synonym_questions.jsonl"
VARIANTS = (("none", None, False), ("kw 0.25", 0.25, False), ("kw 0.5", 0.5, False), ("kw 1.0", 1.0, False),
            ("kw 0.5 + vector", 0.5, True))


def _rank(retrieval, expected: list[str]) -> int | None:
    paths = list(dict.fromkeys(h.path for h in retrieval.hits))
    return next((i + 1 for i, p in enumerate(paths) if p in expected), None)


def questions(corpus: str) -> list[dict]:
    from training.question_sets import question_sets

    sets = question_sets(corpus)
    rows = [*sets["public"], *sets["casual"], *sets["foreign"]]
    if corpus == "sample":
        rows += [json.loads(line) for line in VOCABULARY.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def measure(corpus: str, home: Path) -> dict:
    from bot.settings import SAMPLE_SOURCES
    from sources import load_synonyms
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.retrieval import retrieve
    from indexing.keyword.synonyms import Synonyms

    synonyms = Synonyms.from_table(load_synonyms(SAMPLE_SOURCES))
    asked = [q for q in questions(corpus) if synonyms.expand(q["question"])]
    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    base = index.config
    results: dict[str, list] = {}
    try:
        retrieve(index, "warm up the model and the keyword index")
        for name, weight, vector in VARIANTS:
            rows = []
            for q in asked:
                if weight is None:
                    index.config = replace(base, synonyms=None)
                else:
                    # the benchmark's own weight: a Synonyms whose expand uses it
                    index.config = replace(base, synonyms=_Weighted(synonyms, weight), synonyms_in_vector=vector)
                r = retrieve(index, q["question"], top_k=10)
                rows.append((q, _rank(r, q["expected_sources"]), r.outcome, r.signals.best_cosine))
            results[name] = rows
    finally:
        index.config = base
        index.close()
    return {"corpus": corpus, "n": len(asked), "results": results}


class _Weighted:
    """The same synonyms, expanding with another weight (what `EXPANSION_WEIGHT` would be)."""

    def __init__(self, synonyms, weight: float) -> None:
        self.synonyms, self.weight = synonyms, weight

    def __bool__(self) -> bool:
        return bool(self.synonyms)

    def expand(self, question: str):
        return self.synonyms.expand(question, weight=self.weight)


def summary(rows: list) -> dict:
    answerable = [r for r in rows if r[0].get("kind") != "not_found"]
    unanswerable = [r for r in rows if r[0].get("kind") == "not_found"]
    share = lambda rs, pred: sum(map(pred, rs)) / len(rs) if rs else float("nan")  # noqa: E731
    return {
        "answerable": len(answerable), "unanswerable": len(unanswerable),
        "hit1": share(answerable, lambda r: r[1] == 1),
        "mrr": share(answerable, lambda r: 1 / r[1] if r[1] else 0.0),
        "answered": share(answerable, lambda r: r[2] == "answered"),
        "uncertain": share(answerable, lambda r: r[2] == "uncertain"),
        "not_found": share(answerable, lambda r: r[2] == "not_found"),
        "unanswerable_answered": share(unanswerable, lambda r: r[2] == "answered"),
    }


def table(reports: list[dict]) -> str:
    lines = ["| corpus | questions with a key (answerable / not) | variant | hit@1 | MRR@10 | answered / uncertain / "
             "not found | unanswerable answered |", "|---|---|---|---|---|---|---|"]
    for report in reports:
        for name, rows in report["results"].items():
            s = summary(rows)
            lines.append(f"| {report['corpus']} | {s['answerable']} / {s['unanswerable']} | {name} | {s['hit1']:.2f} "
                         f"| {s['mrr']:.2f} | {s['answered']:.2f} / {s['uncertain']:.2f} / {s['not_found']:.2f} "
                         f"| {s['unanswerable_answered']:.2f} |")
    return "\n".join(lines)


def changes(reports: list[dict]) -> str:
    lines = []
    for report in reports:
        base = report["results"]["none"]
        for name, rows in report["results"].items():
            for (q, rank, outcome, cos), (_, rank0, outcome0, cos0) in zip(rows, base):
                if name != "none" and (rank, outcome) != (rank0, outcome0):
                    lines.append(f"{report['corpus']:6} {name:16} {q['id']:18} rank {rank0} → {rank}, {outcome0} → "
                                 f"{outcome} (cos {cos0:.3f} → {cos:.3f})  {q['question'][:70]}")
    return "\n".join(lines) or "(no question changed)"


ROUNDS = 5


def timing(corpus: str, home: Path) -> str:
    import statistics
    import time

    from training.question_sets import question_sets
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index

    added = {"annual": 0.5, "leav": 0.5, "pto": 0.5}
    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    ms: dict[str, list[float]] = {"as asked": [], "3 terms added": []}
    try:
        asked = [q["question"] for q in question_sets(corpus)["public"]]
        index.bm25.search(asked[0], None, 100)  # load the keyword index
        for round_ in range(ROUNDS):
            for i, question in enumerate(asked):
                order = [None, added] if (round_ + i) % 2 == 0 else [added, None]
                for extra in order:
                    started = time.perf_counter()
                    index.bm25.search(question, None, 100, extra)
                    ms["3 terms added" if extra else "as asked"].append((time.perf_counter() - started) * 1000)
    finally:
        index.close()
    p = {name: (statistics.median(v), statistics.quantiles(v, n=20)[-1]) for name, v in ms.items()}
    base = p["as asked"]
    lines = ["| corpus | keyword search | p50 ms | p95 ms | ratio p50 / p95 |", "|---|---|---|---|---|"]
    for name, (p50, p95) in p.items():
        lines.append(f"| {corpus} ({len(asked)} questions × {ROUNDS}) | {name} "
                     f"| {p50:.2f} | {p95:.2f} | {p50 / base[0]:.2f} / {p95 / base[1]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--homes", required=True, help="KB home of each corpus, with {corpus} in it")
    parser.add_argument("--corpora", default="sample,clef,sg")
    parser.add_argument("--timing", metavar="CORPUS", help="only time the keyword leg with and without added terms")
    args = parser.parse_args(argv)
    if args.timing:
        print(timing(args.timing, Path(args.homes.format(corpus=args.timing))))
        return
    reports = [measure(c, Path(args.homes.format(corpus=c))) for c in args.corpora.split(",")]
    print(table(reports))
    print()
    print(changes(reports))


if __name__ == "__main__":
    main()
