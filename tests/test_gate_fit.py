"""The gate's score, its three outcomes, and the leave-one-corpus-out fit (hand-made rows)."""

from __future__ import annotations

from bot.quality.gate_fit import fit, loco, outcome, score_of
from indexing.search.gate import GateSignals, gate_score, outcome_for


def _row(corpus, kind, cosine, set_name="public", cjk=False, coverage=0.0, agree=False):
    signals = {"best_cosine": cosine, "legs_agree": agree, "cjk": cjk, "top_coverage": coverage, "cjk_coverage": coverage}
    return {"corpus": corpus, "set": set_name, "kind": kind, "signals": signals}


def test_gate_score_is_the_cosine_for_english_and_keyword_coverage_for_chinese():
    assert gate_score(GateSignals(best_cosine=0.5, legs_agree=False)) == 0.5
    assert round(gate_score(GateSignals(best_cosine=0.5, legs_agree=True)), 4) == 0.55
    assert gate_score(GateSignals(best_cosine=0.9, legs_agree=True, cjk=True, top_coverage=0.3, cjk_coverage=0.12)) == 0.12


def test_signals_round_trip_through_json_and_old_rows_still_load():
    signals = GateSignals(best_cosine=0.61, top_coverage=0.4, legs_agree=True, best_bm25=3.2)
    assert GateSignals.from_json(signals.to_json()) == signals
    # a query-log row from before a signal existed, with a key that is no longer a signal
    assert GateSignals.from_json({"best_cosine": 0.5, "llm_not_found": True}) == GateSignals(best_cosine=0.5)


def test_outcome_boundaries():
    assert outcome_for(0.29, 0.3, 0.45) == "not_found"
    assert outcome_for(0.30, 0.3, 0.45) == "uncertain"
    assert outcome_for(0.45, 0.3, 0.45) == "answered"
    assert outcome_for(0.5, 0.5, 0.5) == "answered"


def _corpus(name, answerable, unanswerable):
    return [_row(name, "fact", c) for c in answerable] + [_row(name, "not_found", c) for c in unanswerable]


def test_fit_refuses_almost_no_answerable_question_and_answers_few_unanswerable_ones():
    rows = _corpus("a", [0.2 + 0.01 * i for i in range(40)], [0.1, 0.15, 0.3, 0.35])
    refuse, answer = fit(rows)["en"]
    below = sum(1 for r in rows if r["kind"] == "fact" and score_of(r) < refuse)
    assert below / 40 <= 0.03 and refuse > 0.15
    confident = sum(1 for r in rows if r["kind"] == "not_found" and score_of(r) >= answer)
    assert confident / 4 <= 0.25 and answer >= refuse


def test_each_corpus_is_scored_with_thresholds_fitted_on_the_others_only():
    rows = _corpus("high", [0.6, 0.7, 0.8], [0.5]) + _corpus("low", [0.3, 0.35, 0.4], [0.2]) + _corpus(
        "mid", [0.45, 0.5, 0.55], [0.3])
    report = loco(rows)
    assert report["high"]["thresholds"] == fit([r for r in rows if r["corpus"] != "high"])
    assert report["low"]["thresholds"] != report["high"]["thresholds"]
    low = report["low"]["public"]
    assert low["answerable"]["n"] == 3 and low["unanswerable"]["n"] == 1
    assert low["answerable"]["not_found"] == round(sum(
        outcome(r, report["low"]["thresholds"]) == "not_found"
        for r in rows if r["corpus"] == "low" and r["kind"] == "fact") / 3, 3)


def test_chinese_questions_get_thresholds_of_their_own():
    rows = _corpus("en", [0.5, 0.6], [0.2]) + [_row("zh", "fact", 0.9, cjk=True, coverage=c) for c in (0.2, 0.3)] + [
        _row("zh", "not_found", 0.9, cjk=True, coverage=0.05)]
    thresholds = fit(rows)
    assert thresholds["cjk"] != thresholds["en"] and thresholds["cjk"][0] <= 0.2
