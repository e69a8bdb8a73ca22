"""Fitting the gate's two thresholds on labelled questions, and scoring it leave-one-corpus-out.

The gate turns one score per question (`indexing.search.gate.gate_score`) into three outcomes:
below `refuse_below` → not found; from there to `answer_from` → uncertain; above → answered.
The fit is deliberately simple, so that it can hold on questions nobody tuned for:

- `refuse_below`: the highest threshold that refuses at most `MAX_REFUSED` of the answerable
  questions (public ones and their casual rewrites) of every fit corpus on average;
- `answer_from`: the lowest threshold at which at most `MAX_CONFIDENT` of the corpora's own
  unanswerable questions (with their rewrites) are answered confidently, and at most that share
  of the foreign questions, each averaged over the fit corpora; never below `refuse_below`.
  (Foreign questions are easy to refuse; pooled with the corpora's own, near-topic unanswerable
  questions they would hide those.)

Each corpus counts equally, whatever its number of questions. English and CJK questions get
thresholds of their own (their scores are different signals). SQuAD's unanswerable questions
are edits of answerable ones about a paragraph that is in the corpus: they are scored, not fitted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Required, TypedDict

from bot.quality.evaluation import Row
from indexing.search import GateSignals, Outcome, gate_score, outcome_for, reader_gate_score

MAX_VETOED = 0.02  # the reader's floor may take confidence from this share of confident right answers
MAX_REFUSED = 0.03  # target ≤ 0.05 out of corpus: a margin for the step from fit to held-out
MAX_CONFIDENT = 0.25  # target ≤ 0.30
NOT_FITTED_UNANSWERABLE = {"squad"}  # see the module docstring
GRID = [round(0.0 + 0.005 * i, 3) for i in range(241)]  # 0.00 … 1.20

Thresholds = dict[str, tuple[float, float]]  # language ("en", "cjk") → (refuse_below, answer_from)
Shares = dict[str, float | int | None]  # "n", then each outcome's share (None: no row)


class HeldOut(TypedDict, total=False):
    """One corpus in `loco`: the thresholds fitted without it, and its sets' shares under them."""

    thresholds: Required[Thresholds]
    public: dict[str, Shares]  # "answerable", "unanswerable"
    casual: dict[str, Shares]
    foreign: dict[str, Shares]


def signals_of(row: Row) -> GateSignals:
    """A collected row's signals (rows are JSON: `kb eval --json`, `benchmarks/out/gate-*.jsonl`)."""
    return GateSignals.from_json(row["signals"])


def score_of(row: Row) -> float:
    return gate_score(signals_of(row))


def language(row: Row) -> str:
    return "cjk" if row["signals"].get("cjk") else "en"


def _mean_rate(rows: list[Row], predicate: Callable[[Row], bool]) -> float | None:
    """The share of rows meeting `predicate`, per corpus, averaged over corpora."""
    by_corpus: defaultdict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_corpus[r["corpus"]].append(r)
    rates = [sum(1 for r in group if predicate(r)) / len(group) for group in by_corpus.values() if group]
    return sum(rates) / len(rates) if rates else None


def fit(rows: list[Row]) -> Thresholds:
    """{language: (refuse_below, answer_from)} fitted on `rows` (collected gate rows)."""
    fitted = {}
    score = {id(r): score_of(r) for r in rows}  # once per row, not once per threshold tried
    for lang in ("en", "cjk"):
        fitted[lang] = _fit_scores([r for r in rows if language(r) == lang], score, GRID)
    return fitted


def fit_rerank(rows: list[Row], weight: float | None = None) -> tuple[float, float] | None:
    """(refuse_below, answer_from) for the rerank stage's best score (`KB_RERANK_REFUSE_BELOW` /
    `KB_RERANK_ANSWER_FROM`), by the same rules as `fit`, over every language (a cross-encoder
    reads question and section together); None when no row was reranked. A reranker's scores are
    on its own scale, so the thresholds tried are the scores it gave; rows where the stage fell
    back are left out. With `weight` (the built-in reader's) the score cut is today's plus that
    weight times the reader's (`indexing.search.gate.reader_gate_score`)."""
    scored = [r for r in rows if r["signals"].get("rerank_best") is not None]
    if not scored:
        return None
    if weight is None:
        score = {id(r): float(r["signals"]["rerank_best"]) for r in scored}
    else:
        score = {id(r): reader_gate_score(signals_of(r), weight) for r in scored}
    values = sorted(set(score.values()))
    return _fit_scores(scored, score, [*values, values[-1] + 1e-6])


def fit_floor(rows: list[Row], reader: dict[int, float], answer_from: float) -> float:
    """The built-in reader's veto floor (`KB_RERANK_FLOOR`): the highest reader score below which
    at most `MAX_VETOED` of the answerable questions today's gate answers (score ≥ `answer_from`)
    would lose their confidence, averaged over the fit corpora. `reader` holds each read row's
    score by row id; rows it did not read (Chinese questions) are left out. A floor this low takes
    confidence only where the reader reads the top section as not answering at all. With no such
    question to fit on, there is no floor (0.0), not one that would take every answer's confidence."""
    answered = [r for r in rows if id(r) in reader and r["kind"] != "not_found" and r["set"] != "foreign"
                and score_of(r) >= answer_from]
    if not answered:
        return 0.0
    return max((t for t in GRID if t <= 1.0 and _share_below(answered, reader, t) <= MAX_VETOED), default=0.0)


def _fit_scores(rows: list[Row], score: dict[int, float], grid: list[float]) -> tuple[float, float]:
    """The module docstring's two rules, for one score per row (`score`, by row id), over `grid`."""
    answerable = [r for r in rows if r["kind"] != "not_found"]
    unanswerable = [r for r in rows if r["kind"] == "not_found"
                    and not (r["corpus"] in NOT_FITTED_UNANSWERABLE and r["set"] != "foreign")]
    if not answerable:
        return (0.0, 0.0)
    refuse = max((t for t in grid if _share_below(answerable, score, t) <= MAX_REFUSED), default=grid[0])
    own = [r for r in unanswerable if r["set"] != "foreign"]
    foreign = [r for r in unanswerable if r["set"] == "foreign"]
    answer = next((t for t in grid if t >= refuse and all(
        _share_from(group, score, t) <= MAX_CONFIDENT for group in (own, foreign))), grid[-1])
    return refuse, answer


def _share_below(rows: list[Row], score: dict[int, float], t: float) -> float:
    """The share of `rows` whose score (by row id) is below `t`, averaged over corpora (0: no rows)."""
    return _mean_rate(rows, lambda r: score[id(r)] < t) or 0


def _share_from(rows: list[Row], score: dict[int, float], t: float) -> float:
    """The share of `rows` whose score (by row id) is `t` or more, averaged over corpora (0: no rows)."""
    return _mean_rate(rows, lambda r: score[id(r)] >= t) or 0


def outcome(row: Row, thresholds: Thresholds) -> Outcome:
    refuse, answer = thresholds[language(row)]
    return outcome_for(score_of(row), refuse, answer)


def shares(rows: list[Row], thresholds: Thresholds) -> dict[str, Shares]:
    """Outcome shares of answerable and unanswerable rows."""
    out = {}
    for label, group in (("answerable", [r for r in rows if r["kind"] != "not_found"]),
                         ("unanswerable", [r for r in rows if r["kind"] == "not_found"])):
        outcomes = [outcome(r, thresholds) for r in group]
        out[label] = {"n": len(group), **{o.value: round(outcomes.count(o) / len(group), 3) if group else None
                                          for o in Outcome}}
    return out


def loco(rows: list[Row]) -> dict[str, HeldOut]:
    """Each corpus scored with thresholds fitted on the other corpora only."""
    corpora = sorted({r["corpus"] for r in rows})
    report: dict[str, HeldOut] = {}
    for held_out in corpora:
        thresholds = fit([r for r in rows if r["corpus"] != held_out])
        mine = [r for r in rows if r["corpus"] == held_out]
        report[held_out] = {"thresholds": thresholds,
                            "public": shares([r for r in mine if r["set"] == "public"], thresholds),
                            "casual": shares([r for r in mine if r["set"] == "casual"], thresholds),
                            "foreign": shares([r for r in mine if r["set"] == "foreign"], thresholds)}
    report["all (shipped)"] = {"thresholds": fit(rows)}
    return report


def _cell(share: Shares) -> str:
    if not share["n"]:
        return "—"
    return f"{share[Outcome.ANSWERED]:.2f} / {share[Outcome.UNCERTAIN]:.2f} / {share[Outcome.NOT_FOUND]:.2f} (n={share['n']})"


def loco_report(rows: list[Row]) -> str:
    """The leave-one-corpus-out table as Markdown."""
    report = loco(rows)
    lines = ["Outcome shares answered / uncertain / not found, each corpus scored with thresholds fitted on the others.",
             "",
             "| corpus | thresholds en (refuse < t1, answer ≥ t2) | cjk | public answerable | public unanswerable "
             "| casual answerable | casual unanswerable | foreign (unanswerable) |",
             "|---|---|---|---|---|---|---|---|"]
    for corpus, entry in report.items():
        t = entry["thresholds"]
        th = [f"{t[lang][0]:.3f} / {t[lang][1]:.3f}" for lang in ("en", "cjk")]
        if "public" not in entry:
            lines.append(f"| {corpus} | {th[0]} | {th[1]} | | | | | |")
            continue
        cells = [_cell(entry["public"]["answerable"]), _cell(entry["public"]["unanswerable"]),
                 _cell(entry["casual"]["answerable"]), _cell(entry["casual"]["unanswerable"]),
                 _cell(entry["foreign"]["unanswerable"])]
        lines.append(f"| {corpus} | {th[0]} | {th[1]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
