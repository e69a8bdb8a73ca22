"""Offline evaluation of reader candidates (issue 24 item 3): retrieval once, any scorer after.

    # 1. per corpus, on a *copy* of its persistent index: today's retrieval, dumped once
    python -m training.reader_eval collect sg --home /work/kb/reader/kb-sg
    # 2. a cross-encoder's score of every (question, top-N section) pair, cached per model
    python -m training.reader_eval score /work/kb/reader/runs/v1/final --name ce-v1
    # 3. every variant beside today's gate, leave-one-corpus-out (training.reader_candidates)
    python -m training.reader_candidates --ce ce-v1

`collect` asks each corpus's index its public questions, their casual rewrites and foreign
questions (`training.question_sets`), as `benchmarks.gate_calibration collect` does, and keeps
per question: its label (kind, expected sources), today's gate signals, and the top `TOP_N`
sections in fused order with their title, heading path, best-matching chunk, cosine and BM25.
The dump (`benchmarks/out/reader-<corpus>.jsonl`) holds corpus text, so it stays out of git.

The report (`training.reader_candidates`) scores every candidate the same way:

- ranking: hit@1 and MRR (page level, answerable questions) when the top N sections are put
  in the candidate's order, against the fused order;
- the gate: the candidate's per-question score is cut by two thresholds fitted leave-one-corpus-
  out with `bot.quality.gate_fit`'s rule (the fit is handed rows whose cosine slot holds the candidate's
  score, so the rule is the shipped one, unchanged); outcome shares per corpus for answerable
  and unanswerable (public + casual), and the AUC of answerable against the corpus's own
  unanswerable questions. Chinese questions keep today's CJK gate (MiniLM reads Chinese poorly).
  Weights of a combined score are fitted out of corpus too (mean AUC of the other corpora).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from training.corpora import REPO

OUT = REPO / "benchmarks" / "out"
TOP_N = 20  # sections kept per question: enough to measure N = 5 / 10 / 20
ENGLISH = ("sample", "clef", "sg", "squad")
CHINESE = ("mszh", "zhh")


def collect(corpus: str, home: Path) -> Path:
    from training.question_sets import question_sets
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.retrieval import retrieve

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"reader-{corpus}.jsonl"
    rows = []
    try:
        for set_name, questions in question_sets(corpus).items():
            for q in questions:
                r = retrieve(index, q["question"], top_k=TOP_N)
                rows.append({
                    "corpus": corpus, "set": set_name, "id": q["id"], "kind": q.get("kind", "fact"),
                    "question": q["question"], "searched": r.searched, "outcome": r.outcome,
                    "expected": q.get("expected_sources", []), "signals": r.signals.to_json(),
                    "hits": [{"path": h.path, "title": h.title, "heading": h.heading,
                              "chunk": h.matched[0] if h.matched else h.text[:1500], "text": h.text[:4000],
                              "score": h.score, "cosine": h.cosine, "bm25": h.bm25} for h in r.hits],
                })
    finally:
        index.close()
    target.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return target


def load_rows(corpora=ENGLISH + CHINESE) -> list[dict]:
    rows = []
    for corpus in corpora:
        path = OUT / f"reader-{corpus}.jsonl"
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


def passage(hit: dict, question: str | None = None, within: str = "chunk") -> str:
    """What a reader reads of a section (`indexing.search.reader.passage`): its place, then its best
    chunk — or, given the question, the window around the section's sentence sharing most of its
    words (`indexing.search.reader.answer_window`)."""
    from indexing.search.reader import answer_window
    from indexing.search.reader import passage as text

    return text(hit["title"], hit["heading"], answer_window(question, hit[within]) if question else hit["chunk"])


# ---------------------------------------------------------------- scoring with a cross-encoder

def score(model: Path, name: str, top_n: int = 10, threads: int = 2, corpora=ENGLISH, window: str | None = None) -> Path:
    """Logits of `model` (a Hugging Face folder or a trainer's `state.pt`, run by torch, or a
    `.onnx` file run by `indexing.search.reader`) for every (searched question, top-N section)
    pair of the English corpora (Chinese questions keep today's CJK gate); cached by `name`."""
    rows = load_rows(corpora)
    target = OUT / f"ce-{name}.jsonl"
    if str(model).endswith(".onnx"):
        from indexing.search.reader import OnnxReader as Reader

        reader = Reader(Path(model), threads=threads)
        run = reader.logits
    else:
        run = _torch_scorer(model, threads)
    with target.open("w") as out:
        for row in rows:
            texts = [passage(h, row["searched"] if window else None, window or "chunk") for h in row["hits"][:top_n]]
            logits = run(row["searched"], texts) if texts else []
            out.write(json.dumps({"corpus": row["corpus"], "id": row["id"],
                                  "logits": [round(float(x), 4) for x in logits]}) + "\n")
    return target


def load_checkpoint(model: Path):
    """A trained reader in torch: a Hugging Face folder, or the trainer's resumable `state.pt`
    (so a run still going can be measured at its last checkpoint)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from indexing.vectors.onnx_embedding import bundled_model_path

    if model.suffix == ".pt":
        net = AutoModelForSequenceClassification.from_pretrained(bundled_model_path(), num_labels=1)
        net.load_state_dict(torch.load(model, weights_only=False)["model"])
        return net.eval()
    return AutoModelForSequenceClassification.from_pretrained(model).eval()


def _torch_scorer(model: Path, threads: int) -> Callable[[str, list[str]], list[float]]:
    import torch
    from transformers import AutoTokenizer

    from indexing.vectors.onnx_embedding import bundled_model_path

    torch.set_num_threads(threads)
    net = load_checkpoint(model)
    tokenizer = AutoTokenizer.from_pretrained(bundled_model_path())

    def run(query: str, texts: list[str]) -> list[float]:
        with torch.inference_mode():
            enc = tokenizer([query] * len(texts), texts, truncation="only_second", max_length=128,
                            padding=True, return_tensors="pt")
            return net(**enc).logits[:, 0].tolist()

    return run


def load_logits(name: str) -> dict[tuple[str, str], list[float]]:
    path = OUT / f"ce-{name}.jsonl"
    return {(r["corpus"], r["id"]): r["logits"] for r in map(json.loads, path.read_text().splitlines())}


# ---------------------------------------------------------------- candidates and metrics

WEIGHTS = [round(0.02 * i, 2) for i in range(0, 26)]  # 0 … 0.5: a combined score's weights, fitted out of corpus

@dataclass(frozen=True)
class Candidate:
    """A way to score questions: `gate(row) -> score`, and optionally `order(row) -> per-hit scores`."""

    name: str
    gate: Callable[[dict], float]
    order: Callable[[dict], list[float]] | None = None


def today(row: dict) -> float:
    from bot.quality.gate_fit import score_of

    return score_of(row)


def hit_rank(row: dict, scores: list[float] | None, top_n: int) -> int | None:
    """The page rank of the first expected source with the top N in the order of `scores` (fused
    order without scores; a question a scorer did not score keeps the fused order)."""
    hits = row["hits"][: min(top_n, len(scores))] if scores else row["hits"][:top_n]
    order = range(len(hits)) if not scores else sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    pages = list(dict.fromkeys(hits[i]["path"] for i in order))
    return next((k + 1 for k, p in enumerate(pages) if p in row["expected"]), None)


def auc(positives: list[float], negatives: list[float]) -> float | None:
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def _is_answerable(row: dict) -> bool:
    return row["kind"] != "not_found"


def effective(row: dict, gate: Callable[[dict], float]) -> float:
    """The score the gate cuts for this row: the candidate's, or today's for a Chinese question."""
    return today(row) if row["signals"].get("cjk") else gate(row)


def corpus_auc(rows: list[dict], gate: Callable[[dict], float]) -> float | None:
    own = [r for r in rows if r["set"] in ("public", "casual")]
    return auc([effective(r, gate) for r in own if _is_answerable(r)],
               [effective(r, gate) for r in own if not _is_answerable(r)])


def as_gate_rows(rows: list[dict], gate: Callable[[dict], float]) -> list[dict]:
    """Rows for `bot.quality.gate_fit` whose gate score is the candidate's: English rows carry the score in
    the cosine slot (no agreement bonus); Chinese rows keep their own signals (today's CJK gate)."""
    out = []
    for r in rows:
        signals = r["signals"] if r["signals"].get("cjk") else {"best_cosine": effective(r, gate), "cjk": False}
        out.append({"corpus": r["corpus"], "set": r["set"], "kind": r["kind"], "id": r["id"], "signals": signals})
    return out


def evaluate(rows: list[dict], candidate: Candidate, top_n: int) -> dict:
    """Per corpus, LOCO: outcome shares, AUC, hit@1 and MRR (fused and candidate order)."""
    from bot.quality.gate_fit import fit, shares

    gate_rows = as_gate_rows(rows, candidate.gate)
    corpora = sorted({r["corpus"] for r in rows})
    report = {}
    for held in corpora:
        thresholds = fit([g for g in gate_rows if g["corpus"] != held])
        mine = [g for g in gate_rows if g["corpus"] == held]
        own = [g for g in mine if g["set"] in ("public", "casual")]
        answerable = [r for r in rows if r["corpus"] == held and _is_answerable(r) and r["expected"]]
        ranks = [hit_rank(r, candidate.order(r) if candidate.order else None, top_n) for r in answerable]
        report[held] = {
            "thresholds": thresholds["en"], "own": shares(own, thresholds),
            "foreign": shares([g for g in mine if g["set"] == "foreign"], thresholds)["unanswerable"],
            "auc": corpus_auc([r for r in rows if r["corpus"] == held], candidate.gate),
            "hit1": sum(k == 1 for k in ranks) / len(ranks) if ranks else None,
            "mrr": sum(1 / k for k in ranks if k) / len(ranks) if ranks else None,
        }
    return report


def fit_weight(rows: list[dict], held: str, make: Callable[[float], Callable[[dict], float]], grid: list[float]) -> float:
    """The weight whose gate has the best mean AUC over the English corpora other than `held`."""
    fit_corpora = [c for c in ENGLISH if c != held and any(r["corpus"] == c for r in rows)]

    def mean_auc(w: float) -> float:
        gate = make(w)
        values = [corpus_auc([r for r in rows if r["corpus"] == c], gate) for c in fit_corpora]
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else 0.0

    return max(grid, key=lambda w: (round(mean_auc(w), 4), -w))


def loco_combined(rows: list[dict], name: str, make, grid, order_make=None, top_n: int = 10) -> dict:
    """A combined score whose weight is fitted without the held-out corpus, then evaluated on it
    (thresholds also fitted without it)."""
    report = {}
    for held in sorted({r["corpus"] for r in rows}):
        w = fit_weight(rows, held, make, grid)
        cand = Candidate(f"{name} w={w}", make(w), order_make(w) if order_make else None)
        report[held] = {**evaluate(rows, cand, top_n)[held], "weight": w}
    return report


def reader_scores(rows: list[dict], logits: dict[tuple[str, str], list[float]]) -> dict[int, float]:
    """{id(row): sigmoid of the reader's top-1 logit} for the rows the reader read (English questions)."""
    return {id(r): top1(r, logits) for r in rows if r["corpus"] in ENGLISH and not r["signals"].get("cjk")}


def reader_sum(logits: dict[tuple[str, str], list[float]]) -> Callable[[float], Callable[[dict], float]]:
    """w → the gate's score of a row plus w·σ(the reader's top-1 logit): what the veto cuts
    (`indexing.search.gate.reader_gate_score` on the harness's rows)."""
    def make(w: float) -> Callable[[dict], float]:
        return lambda r: today(r) + w * top1(r, logits)

    return make


def loco_veto(rows: list[dict], logits: dict[tuple[str, str], list[float]], grid: list[float], top_n: int = 10,
              with_floor: bool = True) -> dict:
    """The reader as a veto, leave-one-corpus-out: today's gate decides, and an English question it
    answers is answered only if `today + w·reader(top 1)` also reaches that sum's `answer_from`
    and the reader's own score reaches the floor (else uncertain) — the reader can take confidence
    away, never add it. w, both pairs of thresholds and the floor are fitted without the held-out
    corpus (`bot.quality.gate_fit`'s rules, unchanged; `fit_floor` for the floor)."""
    from bot.quality.gate_fit import fit, fit_floor
    from indexing.search.gate import Outcome, outcome_for

    make = reader_sum(logits)
    report = {}
    for held in sorted({r["corpus"] for r in rows}):
        rest = [r for r in rows if r["corpus"] != held]
        w = fit_weight(rows, held, make, grid)
        combined = make(w)
        plain, summed = fit(as_gate_rows(rest, today)), fit(as_gate_rows(rest, combined))["en"]
        floor = fit_floor(rest, reader_scores(rest, logits), plain["en"][1]) if with_floor else 0.0

        def outcome(r: dict, plain=plain, combined=combined, summed=summed, floor=floor) -> Outcome:
            lang = "cjk" if r["signals"].get("cjk") else "en"
            base = outcome_for(today(r), *plain[lang])
            vetoed = lang == "en" and base is Outcome.ANSWERED and (combined(r) < summed[1] or top1(r, logits) < floor)
            return Outcome.UNCERTAIN if vetoed else base

        def share(group: list[dict]) -> dict:
            got = [outcome(r) for r in group]
            return {"n": len(group), **{o.value: round(got.count(o) / len(group), 3) if group else None for o in Outcome}}

        mine = [r for r in rows if r["corpus"] == held]
        own = [r for r in mine if r["set"] in ("public", "casual")]
        answerable = [r for r in mine if _is_answerable(r) and r["expected"]]
        ranks = [hit_rank(r, None, top_n) for r in answerable]
        report[held] = {
            "thresholds": summed, "weight": w, "floor": floor,
            "own": {"answerable": share([r for r in own if _is_answerable(r)]),
                    "unanswerable": share([r for r in own if not _is_answerable(r)])},
            "foreign": share([r for r in mine if r["set"] == "foreign"]),
            "auc": corpus_auc(mine, combined),
            "hit1": sum(k == 1 for k in ranks) / len(ranks) if ranks else None,
            "mrr": sum(1 / k for k in ranks if k) / len(ranks) if ranks else None,
        }
    return report


def shipped_gate(rows: list[dict], name: str, grid: list[float]) -> tuple[float, tuple[float, float], float]:
    """What would ship for a scored reader read on the fused top section: the weight of
    `today + w·sigmoid(CE of the top 1)` fitted on every English corpus (best mean AUC), the
    thresholds `bot.quality.gate_fit` fits for that score on every corpus, and the veto floor
    (`bot.quality.gate_fit.fit_floor` under today's shipped `answer_from`): `indexing.search.reader`'s constants."""
    from bot.quality.gate_fit import fit, fit_floor

    logits = load_logits(name)

    make = reader_sum(logits)
    weight = fit_weight(rows, "", make, grid)
    floor = fit_floor(rows, reader_scores(rows, logits), fit(as_gate_rows(rows, today))["en"][1])
    return weight, fit(as_gate_rows(rows, make(weight)))["en"], floor


def top1(row: dict, logits: dict[tuple[str, str], list[float]]) -> float:
    """sigmoid(the reader's logit for the fused top section), 0 when it read none (as the gate's `rerank_best or 0`)."""
    from indexing.search.reader import sigmoid

    values = logits.get((row["corpus"], row["id"]), [])
    return round(sigmoid(values[0]), 6) if values else 0.0


# ---------------------------------------------------------------- printing

def _share(s: dict) -> str:
    return f"{s['answered']:.2f}/{s['uncertain']:.2f}/{s['not_found']:.2f}" if s["n"] else "—"


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def table(name: str, report: dict) -> str:
    lines = [f"#### {name}", "",
             "| corpus | t1 / t2 | w | answerable a/u/nf | unanswerable a/u/nf | foreign answered | AUC | hit@1 | MRR |",
             "|---|---|---|---|---|---|---|---|---|"]
    for corpus, e in report.items():
        t, own, f = e["thresholds"], e["own"], e["foreign"]
        foreign = f"{f['answered']:.2f}" if f["n"] else "—"
        w = f"{e.get('weight', '')}" + (f", floor {e['floor']}" if e.get("floor") else "")
        lines.append(f"| {corpus} | {t[0]:.3f} / {t[1]:.3f} | {w} "
                     f"| {_share(own['answerable'])} (n={own['answerable']['n']}) "
                     f"| {_share(own['unanswerable'])} (n={own['unanswerable']['n']}) | {foreign} "
                     f"| {_num(e['auc'])} | {_num(e['hit1'])} | {_num(e['mrr'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("corpus")
    c.add_argument("--home", type=Path, required=True)
    s = sub.add_parser("score")
    s.add_argument("model", type=Path)
    s.add_argument("--name", required=True)
    s.add_argument("--top-n", type=int, default=10)
    s.add_argument("--window", choices=["chunk", "text"],
                   help="read the window around the best sentence of the best chunk or of the section, not the chunk's head")
    g = sub.add_parser("ship", help="the weight and thresholds a scored reader would ship with (fitted on every corpus)")
    g.add_argument("--ce", required=True)
    args = parser.parse_args(argv)
    if args.command == "collect":
        print(collect(args.corpus, args.home))
    elif args.command == "score":
        print(score(args.model, args.name, args.top_n, window=args.window))
    else:
        weight, (refuse, answer), floor = shipped_gate(load_rows(), args.ce, WEIGHTS)
        print(f"GATE_WEIGHT = {weight}\nTHRESHOLDS = ({refuse}, {answer})\nFLOOR = {floor}")

if __name__ == "__main__":
    main()
