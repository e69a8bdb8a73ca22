"""What any threshold can reach on a score: `python -m training.gate_oracle [SPAN_NAME ...]`.

Issue 34's targets are shares of outcomes (unanswerable questions said "not found" ≥ 0.5 with
answerable ones refused ≤ 0.03; answerable answered ≥ 0.85 with unanswerable answered ≤ 0.15).
Before fitting thresholds some other way — per wiki, at sync time — it is worth knowing whether
*any* thresholds could meet them. This fits them on each set's own questions (an oracle: no
adaptation can do better) and prints, per English set, the two best shares and the AUC, for
today's gate score, each named span reader's best score over the top 5 sections
(`training.span_eval score`) and each named cross-encoder's sigmoid on the top section
(`training.reader_eval score`, `--ce`: the shipped reader is `v4`) alone, and today's plus w times it.

The rows are `training.reader_eval collect`'s dumps, as `training.span_eval` scores them: answerable
= public + casual; unanswerable = public + casual + hand-written; SQuAD only its public
evaluation questions.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from training.reader_eval import auc

REFUSED_AT_MOST = 0.03  # answerable questions refused
ANSWERED_AT_MOST = 0.15  # unanswerable questions answered
WEIGHTS = (0.1, 0.2, 0.3)
SETS = ("sample", "clef", "sg", "squad")


@dataclass(frozen=True)
class Bound:
    not_found: float  # the most unanswerable said "not found" with ≤ 3% of answerable refused
    answered: float  # the most answerable answered with ≤ 15% of unanswerable answered
    auc: float | None


def bound(answerable: list[float], unanswerable: list[float]) -> Bound:
    """The oracle's best shares: every score seen (and one above all) is tried as each threshold."""
    cuts = sorted(set(answerable) | set(unanswerable)) + [float("inf")]
    refuse_below = max(t for t in cuts if below(answerable, t) <= REFUSED_AT_MOST * len(answerable))
    answer_from = min(t for t in cuts if len(unanswerable) - below(unanswerable, t) <= ANSWERED_AT_MOST * len(unanswerable))
    return Bound(below(unanswerable, refuse_below) / len(unanswerable),
                 1 - below(answerable, answer_from) / len(answerable), auc(answerable, unanswerable))


def below(scores: list[float], threshold: float) -> int:
    """How many `scores` are under `threshold` (refused, when it is the refusal threshold); counted,
    not shared, so that 15% of 20 questions is 3, not a float a hair above it."""
    return sum(1 for s in scores if s < threshold)


def main() -> None:
    from bot.quality.gate_fit import score_of
    from indexing.search.reader import sigmoid
    from training.reader_eval import load_logits
    from training.span_eval import TOP_N, best, evaluation_rows, load_spans

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spans", nargs="*", help="span readers scored by `training.span_eval score --name`")
    parser.add_argument("--ce", action="append", default=[], help="a cross-encoder scored by `training.reader_eval score`")
    parser.add_argument("--top-n", type=int, default=TOP_N, help="a span reader's best of the fused top N sections")
    args = parser.parse_args()
    rows = [r for r in evaluation_rows() if not r["signals"].get("cjk")]
    variants: dict[str, Callable[[dict], float]] = {"today's gate score": score_of}
    for name in args.spans:
        spans = load_spans(name)
        variants[f"{name} alone"] = lambda r, s=spans: best(r, s, args.top_n)
        for w in WEIGHTS:
            variants[f"today + {w}·{name}"] = lambda r, s=spans, w=w: score_of(r) + w * best(r, s, args.top_n)
    for name in args.ce:
        logits = load_logits(name)

        def top(row: dict, logits: dict = logits) -> float:
            got = logits.get((row["corpus"], row["id"]))
            return sigmoid(got[0]) if got else 0.0

        variants[f"{name} on the top section"] = top
        for w in WEIGHTS:
            variants[f"today + {w}·{name}"] = lambda r, top=top, w=w: score_of(r) + w * top(r)
    print("| score | " + " | ".join(SETS) + " |\n|---|" + "---|" * len(SETS))
    for label, score in variants.items():
        cells = []
        for corpus in SETS:
            mine = [r for r in rows if r["corpus"] == corpus]
            b = bound([score(r) for r in mine if r["kind"] != "not_found" and r["set"] in ("public", "casual")],
                      [score(r) for r in mine if r["kind"] == "not_found" and r["set"] in ("public", "casual", "unanswerable")])
            cells.append(f"{b.not_found:.2f} / {b.answered:.2f} / {b.auc:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
