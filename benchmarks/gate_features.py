"""Candidate gate signals, each 1–3 of them combined by a logistic regression fitted leave-one-corpus-out.

    python -m benchmarks.gate_features collect --homes '/tmp/i14/kb-{corpus}'   # the five public sets
    python -m benchmarks.gate_features search [--max-refused 0.03] [--top 15]

Issue 14 asks whether signals other than the best cosine separate the handbooks' unanswerable
questions from the answerable ones. `collect` asks each corpus's index the same questions as
`benchmarks.gate_calibration` (public, casual rewrites, foreign) and keeps, per question, the
IDF of its keyword terms and which of them the top sections, their best chunk and each of their
candidate lead sentences hold (`benchmarks/out/features-<corpus>.jsonl`: ids, terms and numbers).
`search` computes the features below for every row and, for every combination of one to three of
them, fits a logistic regression (answerable vs unanswerable, each corpus × label weighted
equally) plus the gate's two thresholds (`bot.gate_fit` rule: ≤ `--max-refused` of answerable
refused, ≤ 25 % of own and of foreign unanswerable answered) on four corpora, and scores the fifth.
English questions only (the Chinese gate is a single signal). Printed: the best combinations by
the handbooks' unanswerable questions refused, with the worst answerable refusal of any corpus.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np

from benchmarks._common import REPO

OUT = REPO / "benchmarks" / "out"
HANDBOOKS = ("sample", "clef", "sg")
FEATURES = ("cos", "agree", "top_cov", "known_cov", "child_cov", "sent_cov", "sent_cov3", "miss_max", "rare_cov", "cov2")


def collect(corpus: str, home: Path) -> Path:
    from benchmarks.gate_questions import question_sets
    from bot.lead import _searched_text
    from bot.sentences import sentences
    from indexing import bm25
    from indexing.config import IndexConfig
    from indexing.index import Index
    from indexing.retrieval import retrieve

    index = Index(IndexConfig(home=home))
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"features-{corpus}.jsonl"
    lines = []
    try:
        visible = index.bm25._current().doc_freq(set(), None)[1]
        for set_name, questions in question_sets(corpus).items():
            for q in questions:
                r = retrieve(index, q["question"])
                terms = sorted(set(bm25.tokens(bm25.question_text(q["question"]))))
                idf, known = index.bm25.idf(set(terms), None) if terms else ({}, set())
                hits = []
                for h in r.hits[:3]:
                    mine = set(terms)
                    hits.append({"sec": sorted(set(bm25.tokens(f"{h.title} {h.heading} {h.text}")) & mine),
                                 "child": sorted(set(bm25.tokens(h.matched[0])) & mine) if h.matched else [],
                                 "sents": [sorted(set(bm25.tokens(s.text)) & mine) for s in sentences(_searched_text(h), 40)]})
                lines.append(json.dumps({"corpus": corpus, "set": set_name, "id": q["id"], "kind": q.get("kind", "fact"),
                                         "signals": r.signals.to_json(), "visible": visible, "hits": hits,
                                         "terms": {t: [idf.get(t, 0.0), t in known] for t in terms}}))
    finally:
        index.close()
    target.write_text("".join(line + "\n" for line in lines))
    return target


def features(row: dict) -> dict[str, float]:
    """The candidate signals of one collected row."""
    s, terms = row["signals"], row["terms"]
    top_idf = math.log(1 + (row["visible"] + 0.5) / 0.5)  # the IDF of a term no visible chunk holds
    w = {t: v[0] for t, v in terms.items()}
    known = {t for t, v in terms.items() if v[1]}
    total, total2 = sum(w.values()) or 1.0, sum(x * x for x in w.values()) or 1.0
    best = row["hits"][0] if row["hits"] else {"sec": [], "child": [], "sents": []}
    share = lambda held: sum(w[t] for t in held) / total  # noqa: E731
    rare = [t for t in known if w[t] >= 0.5 * top_idf]
    return {
        "cos": s["best_cosine"], "agree": float(s["legs_agree"]), "top_cov": s["top_coverage"],
        "known_cov": s["top_known_coverage"],
        "child_cov": share(best["child"]),  # ... in the best chunk alone
        "sent_cov": max((share(x) for x in best["sents"]), default=0.0),  # ... in one sentence of the best section
        "sent_cov3": max((share(x) for h in row["hits"] for x in h["sents"]), default=0.0),
        "miss_max": max((w[t] for t in known if t not in best["sec"]), default=0.0) / top_idf,  # rarest known word missing
        "rare_cov": sum(1 for t in rare if t in best["sec"]) / len(rare) if rare else 1.0,
        "cov2": sum(w[t] ** 2 for t in best["sec"]) / total2,  # IDF² weighting: the rarest words count most
    }


def _logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Weighted, lightly regularised logistic regression by Newton steps; last coefficient = intercept."""
    x = np.c_[x, np.ones(len(x))]
    b = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ b))
        grad = x.T @ (weight * (p - y)) + l2 * np.r_[b[:-1], 0]
        hess = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(b))
        b -= np.linalg.solve(hess, grad)
    return b


def _rate(rows: list[dict], predicate) -> float:
    by: dict[str, list[bool]] = {}
    for r in rows:
        by.setdefault(r["corpus"], []).append(predicate(r))
    return float(np.mean([np.mean(v) for v in by.values()])) if by else 0.0


def fit_and_score(train: list[dict], test: list[dict], names: tuple[str, ...], max_refused: float) -> dict:
    x = np.array([[r["f"][n] for n in names] for r in train])
    y = np.array([r["kind"] != "not_found" for r in train], dtype=float)
    groups = [(r["corpus"], y[i]) for i, r in enumerate(train)]
    counts = {g: groups.count(g) for g in set(groups)}
    weight = np.array([1 / counts[g] for g in groups])
    b = _logistic(x, y, weight * len(weight) / weight.sum())
    scores = {id(r): float(np.dot(b[:-1], [r["f"][n] for n in names]) + b[-1]) for r in [*train, *test]}
    score = lambda r: scores[id(r)]  # noqa: E731
    grid = np.round(np.arange(-6, 6.001, 0.02), 3)
    answerable = [r for r in train if r["kind"] != "not_found"]
    own = [r for r in train if r["kind"] == "not_found" and r["set"] != "foreign" and r["corpus"] != "squad"]
    foreign = [r for r in train if r["set"] == "foreign"]
    refuse = max([t for t in grid if _rate(answerable, lambda r: score(r) < t) <= max_refused] or [grid[0]])
    answer = next((t for t in grid if t >= refuse and _rate(own, lambda r: score(r) >= t) <= 0.25
                   and _rate(foreign, lambda r: score(r) >= t) <= 0.25), grid[-1])

    def shares(group):
        if not group:
            return None
        return {"answered": float(np.mean([score(r) >= answer for r in group])),
                "not_found": float(np.mean([score(r) < refuse for r in group])), "n": len(group)}

    public = [r for r in test if r["set"] == "public"]
    return {"answerable": shares([r for r in public if r["kind"] != "not_found"]),
            "unanswerable": shares([r for r in public if r["kind"] == "not_found"]),
            "casual_answerable": shares([r for r in test if r["set"] == "casual" and r["kind"] != "not_found"])}


def search(max_refused: float, top: int) -> None:
    rows = [json.loads(line) for f in sorted(OUT.glob("features-*.jsonl")) for line in f.read_text().splitlines()]
    rows = [r for r in rows if not r["signals"].get("cjk")]
    if not rows:
        sys.exit(f"nothing collected in {OUT}: run `collect` first")
    for r in rows:
        r["f"] = features(r)
    corpora = sorted({r["corpus"] for r in rows})
    results = []
    for k in (1, 2, 3):
        for names in itertools.combinations(FEATURES, k):
            per = {c: fit_and_score([r for r in rows if r["corpus"] != c], [r for r in rows if r["corpus"] == c], names, max_refused)
                   for c in corpora}
            books = [per[c] for c in HANDBOOKS if c in per and per[c]["unanswerable"]]
            refused = float(np.mean([p["unanswerable"]["not_found"] for p in books]))
            answered = float(np.mean([p["unanswerable"]["answered"] for p in books]))
            worst = max(p["answerable"]["not_found"] for p in per.values() if p["answerable"])
            casual = max(p["casual_answerable"]["not_found"] for p in per.values() if p["casual_answerable"])
            results.append((worst <= 0.05 + 1e-9, refused, -answered, names, worst, casual, answered))
    results.sort(reverse=True)
    print(f"English rows, leave-one-corpus-out over {', '.join(corpora)}; fit: ≤ {max_refused:.0%} answerable refused\n")
    print("| features | handbook unanswerable refused | … answered | worst answerable refused (public) | worst casual refused |")
    print("|---|---|---|---|---|")
    for ok, refused, _, names, worst, casual, answered in results[:top]:
        print(f"| {' + '.join(names)} | {refused:.2f} | {answered:.2f} | {worst:.2f} | {casual:.2f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--homes", required=True, help="KB home of each corpus, with {corpus} in it")
    s = sub.add_parser("search")
    s.add_argument("--max-refused", type=float, default=0.03)
    s.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    if args.command == "collect":
        from benchmarks.gate_questions import CORPORA

        for corpus in CORPORA:
            print(collect(corpus, Path(args.homes.format(corpus=corpus))))
    else:
        search(args.max_refused, args.top)


if __name__ == "__main__":
    main()
