"""The span reader measured offline, leave-one-corpus-out, beside today's gate and the shipped reader.

    # 1. per corpus, today's retrieval dumped once (training.reader_eval collect; sections, signals)
    python -m training.reader_eval collect sg --home /work/kb/idx/sg          # … every corpus
    # 2. the span reader's verdict on the top-N sections of every English question, cached by name
    python -m training.span_eval score /work/kb/span/r1-int8.onnx --name r1
    # 3. the tables: every variant, thresholds fitted without the held-out corpus
    python -m training.span_eval report --span r1 --veto v4

What the reader reads of a section is what `indexing.search.span_reader` is given in the product: the
section's place (title › heading path) and its best-matching chunk. A question's span score is
the best over its top N sections; `span_reader.squash` puts it on the gate's 0–1 grid, so the
shipped fitting rule (`bot.quality.gate_fit`) fits its thresholds unchanged. Variants:

- `today`: today's gate (fused order);
- `veto`: the shipped built-in reader as a veto (`training.reader_eval.loco_veto`);
- `span`: the span score alone cuts (no section with a span above `refuse_below` → not found);
- `span+today`: today's score plus w · the span score, w fitted out of corpus (best mean AUC);
each also with the top N put in the span reader's order (hit@1, MRR).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from indexing.search.span_reader import passage as section_passage
from indexing.search.span_reader import squash  # the product's scale: sigmoid(score / span_reader.SCALE)

from training.reader_eval import ENGLISH, OUT, Candidate, evaluate, load_rows, loco_combined, loco_veto, load_logits

TOP_N = 5  # sections scored per question (the product reads `span_reader.TOP_N` of them; report --top-n)


def passage(hit: dict, whole: bool = False) -> str:
    """What the product hands the reader of a section (its best chunk), or with `whole` the section
    itself as the dump keeps it (its first 4,000 characters; read in windows)."""
    return section_passage(hit["title"], hit["heading"], hit["text"] if whole else hit["chunk"])


def score(model: Path, name: str, top_n: int = TOP_N, threads: int = 2, whole: bool = False) -> Path:
    from indexing.search.span_reader import SpanReader

    reader = SpanReader(model, threads=threads)
    target = OUT / f"span-{name}.jsonl"
    with target.open("w") as out:
        for row in load_rows(ENGLISH):
            if row["signals"].get("cjk"):
                continue
            spans = reader.read(row["searched"], [passage(h, whole) for h in row["hits"][:top_n]])
            out.write(json.dumps({"corpus": row["corpus"], "id": row["id"], "scores": [s.score for s in spans],
                                  "spans": [s.text for s in spans]}, ensure_ascii=False) + "\n")
    return target


def load_spans(name: str) -> dict[tuple[str, str], dict]:
    path = OUT / f"span-{name}.jsonl"
    return {(r["corpus"], r["id"]): r for r in map(json.loads, path.read_text().splitlines())}


def best(row: dict, spans: dict, top_n: int = TOP_N) -> float:
    got = spans.get((row["corpus"], row["id"]))
    return squash(max(got["scores"][:top_n])) if got and got["scores"] else 0.0


def order(row: dict, spans: dict, top_n: int = TOP_N) -> list[float]:
    got = spans.get((row["corpus"], row["id"]))
    return got["scores"][:top_n] if got else []


def _cell(s: dict) -> str:
    return f"{s['answered']:.2f}/{s['uncertain']:.2f}/{s['not_found']:.2f}" if s.get("n") else "—"


def evaluation_rows() -> list[dict]:
    """The English rows every variant is scored on. SQuAD keeps only the public questions of its
    evaluation articles (`public_eval_ids.txt`, with their casual rewrites) and the foreign ones:
    the span reader was trained on the other articles' questions (`squad2-dev/SOURCE.md`)."""
    from training.span_data import SQUAD2_DEV

    public = set((SQUAD2_DEV / "public_eval_ids.txt").read_text().split())
    return [r for r in load_rows(ENGLISH)
            if r["corpus"] != "squad" or r["set"] == "foreign" or r["id"].removesuffix("~casual") in public]


def handwritten(rows: list[dict], report: dict, gate_for) -> dict:
    """Outcome shares of each corpus's hand-written near-topic unanswerable questions
    (`benchmarks/unanswerable/`) under the thresholds fitted without that corpus."""
    from indexing.search.gate import outcome_for

    for corpus, r in report.items():
        mine = [x for x in rows if x["corpus"] == corpus and x["set"] == "unanswerable"]
        gate = gate_for(r)
        got = [outcome_for(gate(x), *r["thresholds"]).value for x in mine]
        r["handwritten"] = {"n": len(got), **{o: got.count(o) / len(got) if got else 0.0
                                              for o in ("answered", "uncertain", "not_found")}}
    return report


def table(name: str, report: dict) -> str:
    lines = [f"### {name}", "", "| set | thresholds | answerable a/u/n | unanswerable a/u/n | hand-written unanswerable a/u/n "
             "| AUC | hit@1 | MRR |", "|---|---|---|---|---|---|---|---|"]
    for corpus, r in report.items():
        t = r.get("thresholds")
        hw = r.get("handwritten", {})
        w = f" w={r['weight']}" if "weight" in r else ""
        own = r["own"]
        lines.append(f"| {corpus} | {t[0]:.3f} / {t[1]:.3f}{w} | {_cell(own['answerable'])} ({own['answerable']['n']}) | "
                     f"{_cell(r['own']['unanswerable'])} ({r['own']['unanswerable']['n']}) | "
                     f"{_cell(hw)} ({hw.get('n', 0)}) | "
                     f"{r['auc'] if r['auc'] is None else round(r['auc'], 3)} | "
                     f"{r['hit1'] if r['hit1'] is None else round(r['hit1'], 2)} | "
                     f"{r['mrr'] if r['mrr'] is None else round(r['mrr'], 3)} |")
    return "\n".join(lines)


def report(span_name: str, veto_name: str | None, top_n: int = TOP_N) -> str:
    from training.reader_eval import today

    rows = evaluation_rows()
    spans = load_spans(span_name)
    plain = evaluate(rows, Candidate("today", today), top_n)
    out = [table("today (fused order, today's gate)", handwritten(rows, plain, lambda _: today))]
    if veto_name:
        out.append(table(f"shipped reader as a veto ({veto_name})", loco_veto(rows, load_logits(veto_name),
                                                                                [round(0.04 * i, 2) for i in range(16)])))
    alone = Candidate("span", lambda r: best(r, spans, top_n), lambda r: order(r, spans, top_n))
    out.append(table("span alone, span order", handwritten(rows, evaluate(rows, alone, top_n), lambda _: alone.gate)))
    out.append(f"Fitted on every set (what `span_reader.THRESHOLDS` ships for these top {top_n}): "
               f"{shipped_thresholds(rows, alone.gate)}")

    def make(w: float):
        return lambda r: today(r) + w * best(r, spans, top_n)

    summed = loco_combined(rows, "sum", make, [round(0.1 * i, 1) for i in range(1, 16)], lambda w: alone.order, top_n)
    out.append(table("today + w·span (w fitted out of corpus), span order",
                     handwritten(rows, summed, lambda r: make(r["weight"]))))
    out.append(blend_table(rows, spans, top_n))
    return "\n\n".join(out)


def shipped_thresholds(rows: list[dict], gate) -> tuple[float, float]:
    """(refuse_below, answer_from) `bot.quality.gate_fit` fits for a span score on every English set."""
    from bot.quality.gate_fit import fit
    from training.reader_eval import as_gate_rows

    return fit(as_gate_rows(rows, gate))["en"]


BLENDS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)  # λ tried for the blended order


def blended(row: dict, spans: dict, weight: float, top_n: int = TOP_N) -> list[float] | None:
    """The top N sections' fused scores plus `weight` times their squashed best-span scores: the
    order "the section holding the best span first" softened, so a clear fusion lead can hold."""
    got = spans.get((row["corpus"], row["id"]))
    if not got:
        return None
    return [h["score"] + (weight * squash(got["scores"][i]) if i < len(got["scores"]) else -9.0)
            for i, h in enumerate(row["hits"][:top_n])]


def blend_table(rows: list[dict], spans: dict, top_n: int = TOP_N) -> str:
    """hit@1 per set (answerable public + casual questions) in the blended order, λ chosen on the
    other sets' mean hit@1 (leave-one-corpus-out), beside the fused order's."""
    from training.reader_eval import hit_rank

    answerable = [r for r in rows if r["kind"] != "not_found" and r["set"] in ("public", "casual")
                  and not r["signals"].get("cjk")]
    corpora = sorted({r["corpus"] for r in answerable})

    def hit1(corpus: str, weight: float) -> float:
        mine = [r for r in answerable if r["corpus"] == corpus]
        return sum(hit_rank(r, blended(r, spans, weight, top_n), top_n) == 1 for r in mine) / len(mine)

    lines = ["### fused + λ·span order (λ fitted out of corpus on hit@1)", "", "| set | λ | hit@1 fused | hit@1 blended |",
             "|---|---|---|---|"]
    for held in corpora:
        others = [c for c in corpora if c != held]
        weight = max(BLENDS, key=lambda w: (sum(hit1(c, w) for c in others), -w))
        lines.append(f"| {held} | {weight} | {hit1(held, 0.0):.3f} | {hit1(held, weight):.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score")
    s.add_argument("model", type=Path)
    s.add_argument("--name", required=True)
    s.add_argument("--top-n", type=int, default=TOP_N)
    s.add_argument("--whole", action="store_true", help="read each section whole, not its best chunk")
    r = sub.add_parser("report")
    r.add_argument("--span", required=True)
    r.add_argument("--veto", help="the shipped reader's cached logits (training.reader_eval score … --name)")
    r.add_argument("--top-n", type=int, default=TOP_N)
    args = parser.parse_args(argv)
    if args.command == "score":
        print(score(args.model, args.name, args.top_n, whole=args.whole))
    else:
        print(report(args.span, args.veto, args.top_n))


if __name__ == "__main__":
    main()
