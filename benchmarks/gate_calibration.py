"""Leave-one-corpus-out calibration of the not-found gate (issue 14), printed as tables.

    # 1. per corpus, against its own persistent index (synced once with `kb sync`):
    python -m benchmarks.gate_calibration collect sg --home /tmp/kb-sg
    # 2. once all five are collected:
    python -m benchmarks.gate_calibration fit
    # or both steps for the five public sets in one command ({corpus}: sample clef sg mszh squad):
    python -m benchmarks.gate_calibration all --homes '/tmp/i14/kb-{corpus}'

`collect` asks the corpus's index its public questions, their casual rewrites and foreign
questions (`training.question_sets`) and writes each question's gate signals and the rank of
its expected page to `benchmarks/out/gate-<corpus>.jsonl` (ignored by git; nothing from the
corpus but ids and numbers). `fit` then scores every corpus with thresholds fitted on the
*other* corpora only (`bot.quality.gate_fit`), and prints outcome shares per corpus and question set.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.corpora import REPO

OUT = REPO / "benchmarks" / "out"


def collect(corpus: str, home: Path) -> Path:
    from training.question_sets import question_sets
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.retrieval import retrieve

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"gate-{corpus}.jsonl"
    rows = []
    try:
        for set_name, questions in question_sets(corpus).items():
            for q in questions:
                r = retrieve(index, q["question"], top_k=10)
                paths = list(dict.fromkeys(h.path for h in r.hits))
                rank = next((i + 1 for i, p in enumerate(paths) if p in q.get("expected_sources", [])), None)
                rows.append({"corpus": corpus, "set": set_name, "id": q["id"], "kind": q.get("kind", "fact"),
                             "hit_rank": rank, "signals": r.signals.to_json()})
    finally:
        index.close()
    target.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("corpus")
    c.add_argument("--home", type=Path, required=True)
    sub.add_parser("fit")
    a = sub.add_parser("all", help="collect every public set from its own index, then fit")
    a.add_argument("--homes", required=True, help="KB home of each corpus, with {corpus} in it")
    args = parser.parse_args(argv)
    if args.command == "collect":
        print(collect(args.corpus, args.home))
        return
    if args.command == "all":
        from training.question_sets import CORPORA

        for corpus in CORPORA:
            print(collect(corpus, Path(args.homes.format(corpus=corpus))), file=sys.stderr)
    from bot.quality.gate_fit import loco_report

    rows = [json.loads(line) for f in sorted(OUT.glob("gate-*.jsonl")) for line in f.read_text().splitlines()]
    if not rows:
        sys.exit(f"nothing collected in {OUT}: run `collect` first")
    print(loco_report(rows))


if __name__ == "__main__":
    main()
