"""What any threshold can reach on a score: `python -m training.gate_oracle [SPAN_NAME ...]`.

Issue 34's targets are shares of outcomes (unanswerable questions said "not found" ≥ 0.5 with
answerable ones refused ≤ 0.03; answerable answered ≥ 0.85 with unanswerable answered ≤ 0.15).
Before fitting thresholds some other way — per wiki, at sync time — it is worth knowing whether
*any* thresholds could meet them. This fits them on each set's own questions (an oracle: no
adaptation can do better) and prints, per English set, the two best shares and the AUC, for
today's gate score, each named span reader's best score over the top 5 sections
(`training.span_eval score`) and each named cross-encoder's sigmoid on the top section
(`training.reader_eval score`, `--ce`: the shipped reader is `v4`) alone, and today's plus w times it.

Last, what no reader can beat: **a perfect reader of the top N** sections — 1 when an expected page
is among them, 0 otherwise (every unanswerable question 0) — alone and added to today's score. A
gate that reads only what retrieval hands it refuses each answerable question whose page retrieval
missed, so where the top N miss more than 3% of answerable questions, even this reader says "not
found" to nothing without refusing more than 3% of them: the ceiling is retrieval's, not the reader's.
`--noise σ …` adds readers between r3 and that one: the perfect reader plus Gaussian noise of
standard deviation σ (each question's draw fixed by its id and the seed; shares and AUC the mean of
`SEEDS` draws), to see how good a reader must be — its AUC alone — before the targets come in reach.

The rows are `training.reader_eval collect`'s dumps, as `training.span_eval` scores them: answerable
= public + casual; unanswerable = public + casual + hand-written; SQuAD only its public
evaluation questions.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from training.reader_eval import auc

REFUSED_AT_MOST = 0.03  # answerable questions refused
ANSWERED_AT_MOST = 0.15  # unanswerable questions answered
WEIGHTS = (0.1, 0.2, 0.3)
SETS = ("sample", "clef", "sg", "squad")
SEEDS = 20


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


def split(rows: list[dict], corpus: str) -> tuple[list[dict], list[dict]]:
    """A set's answerable questions (public + casual) and its unanswerable ones (public + casual +
    hand-written), as every score is bounded on them."""
    mine = [r for r in rows if r["corpus"] == corpus]
    return ([r for r in mine if r["kind"] != "not_found" and r["set"] in ("public", "casual")],
            [r for r in mine if r["kind"] == "not_found" and r["set"] in ("public", "casual", "unanswerable")])


def main() -> None:
    from bot.quality.gate_fit import score_of
    from indexing.search.reader import sigmoid
    from training.reader_eval import hit_rank, load_logits
    from training.span_eval import TOP_N, best, evaluation_rows, load_spans

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spans", nargs="*", help="span readers scored by `training.span_eval score --name`")
    parser.add_argument("--ce", action="append", default=[], help="a cross-encoder scored by `training.reader_eval score`")
    parser.add_argument("--top-n", type=int, default=TOP_N, help="a span reader's best of the fused top N sections")
    parser.add_argument("--noise", type=float, nargs="*", default=[], help="σ of readers between r3 and a perfect one")
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
    def perfect(row: dict) -> float:
        return float(row["kind"] != "not_found" and hit_rank(row, None, args.top_n) is not None)

    variants[f"a perfect reader of the top {args.top_n}"] = perfect
    for w in WEIGHTS:
        variants[f"today + {w}·perfect"] = lambda r, w=w: score_of(r) + w * perfect(r)
    noisy: dict[str, list[Callable[[dict], float]]] = {}
    for sigma in args.noise:
        draws = [lambda r, seed=seed, sigma=sigma: perfect(r) + random.Random(f"{seed}:{r['corpus']}:{r['id']}").gauss(0, sigma)
                 for seed in range(SEEDS)]
        noisy[f"perfect + noise σ {sigma}"] = draws
        for w in WEIGHTS:
            noisy[f"today + {w}·(perfect + noise σ {sigma})"] = [lambda r, d=d, w=w: score_of(r) + w * d(r) for d in draws]
    groups = [split(rows, corpus) for corpus in SETS]
    print("| score | " + " | ".join(SETS) + " |\n|---|" + "---|" * len(SETS))
    for label, scores in [*((k, [v]) for k, v in variants.items()), *noisy.items()]:
        cells = []
        for answerable, unanswerable in groups:
            bounds = [bound([score(r) for r in answerable], [score(r) for r in unanswerable]) for score in scores]
            cells.append(" / ".join(f"{statistics.mean(getattr(b, f) for b in bounds):.{d}f}"
                                    for f, d in (("not_found", 2), ("answered", 2), ("auc", 3))))
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
