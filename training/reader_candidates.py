"""The reader candidates measured beside today's gate: `python -m training.reader_candidates --ce NAME`.

Cheap ones first (no model): an answer-type check (`bot.answering.answer_types`: a question asking for a
time, share, number, amount or address whose top sections' best chunks hold none is less likely
answered) and other combinations of today's signals. Then, per scored cross-encoder: its best
score over the top N alone, and the cosine plus w·sigmoid(best score) — weights always fitted
out of corpus (`reader_eval.loco_combined`).
"""

from __future__ import annotations

import argparse
import sys

from indexing.search.reader import sigmoid
from training.reader_eval import (
    OUT,
    WEIGHTS,
    Candidate,
    evaluate,
    load_logits,
    load_rows,
    loco_combined,
    loco_veto,
    table,
    today,
)

TYPED_SECTIONS = 3  # the answer-type check reads the best chunks of this many top sections


def typed_miss(row: dict) -> float:
    """1 when the question asks for a type of fact that none of the top sections' chunks holds."""
    from bot.answering.answer_types import asked_type, holds

    kind = asked_type(row["searched"])
    if not kind:
        return 0.0
    return 0.0 if any(holds(h["chunk"], kind) for h in row["hits"][:TYPED_SECTIONS]) else 1.0


def candidates(rows: list[dict], ce_names: list[str], top_n: int):
    """(name, LOCO report) for every candidate, today's gate first."""
    yield "today's gate (cosine + 0.05·legs agree), fused order", evaluate(rows, Candidate("today", today), top_n)
    yield "answer-type check: today − w·(asked type missing from top-3 chunks)", loco_combined(
        rows, "typed", lambda w: lambda r: today(r) - w * typed_miss(r), WEIGHTS)
    yield "today + w·top_known_coverage", loco_combined(
        rows, "cov", lambda w: lambda r: today(r) + w * r["signals"].get("top_known_coverage", 0.0), WEIGHTS)
    yield "today − w·unknown_terms", loco_combined(
        rows, "unknown", lambda w: lambda r: today(r) - w * r["signals"].get("unknown_terms", 0.0), WEIGHTS)
    for name in ce_names:
        logits = load_logits(name)

        def best(r, n=top_n, logits=logits):
            values = logits.get((r["corpus"], r["id"]), [])[:n]
            return sigmoid(max(values)) if values else 0.0

        def per_hit(r, logits=logits):
            return logits.get((r["corpus"], r["id"]), [])[:top_n]

        yield f"{name}: sigmoid(best CE of top {top_n}) alone, CE order", evaluate(rows, Candidate(name, best, per_hit), top_n)
        yield f"{name}: today + w·sigmoid(best CE of top {top_n}), fused order", loco_combined(
            rows, name, lambda w: lambda r: today(r) + w * best(r), WEIGHTS)
        yield f"{name}: today + w·sigmoid(CE of the fused top-1), fused order", loco_combined(
            rows, name, lambda w: lambda r: today(r) + w * best(r, 1), WEIGHTS)
        yield (f"{name}: veto — today's gate, an answered question kept only if today + w·sigmoid(CE of the top 1) "
               "reaches that sum's fitted answer_from (else uncertain)"), loco_veto(rows, logits, WEIGHTS, top_n,
                                                                        with_floor=False)
        yield (f"{name}: veto with a floor — as above, and also uncertain when sigmoid(CE of the top 1) is below "
               "the fitted floor"), loco_veto(rows, logits, WEIGHTS, top_n)
        yield f"{name}: today + w·sigmoid(best CE) − 0.1·typed miss", loco_combined(
            rows, name, lambda w: lambda r: today(r) + w * best(r) - 0.1 * typed_miss(r), WEIGHTS)


def main(argv: list[str] | None = None) -> None:
    """Every candidate's leave-one-corpus-out report, on what `training.reader_eval collect` dumped."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ce", action="append", default=[], help="name of a scored cross-encoder (repeatable)")
    parser.add_argument("--top-n", type=int, default=10)
    parser.add_argument("--max-confident", type=float,
                        help="the fit's share of unanswerable questions it may answer confidently "
                             "(bot.quality.gate_fit.MAX_CONFIDENT, 0.25 shipped): another operating point, "
                             "for every candidate alike")
    args = parser.parse_args(argv)
    if args.max_confident is not None:
        import bot.quality.gate_fit

        bot.quality.gate_fit.MAX_CONFIDENT = args.max_confident
    rows = load_rows()
    if not rows:
        sys.exit(f"nothing collected in {OUT}: run `python -m training.reader_eval collect` first")
    for name, report in candidates(rows, args.ce, args.top_n):
        print(table(name, report), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
