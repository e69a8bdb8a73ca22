"""The built-in reader (`KB_RERANK=builtin`, `indexing.search.reader`): the shipped ONNX model, run by the
real rerank stage on a small handbook of our own (`test_rerank`'s), gating and never reordering."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError
from test_answer_and_cli import _kb
from test_rerank import VACATION, handbook, reranking  # noqa: F401 — handbook is a fixture

from bot.quality.gate_fit import fit_floor, fit_rerank
from bot.settings import Settings
from indexing.config import IndexConfig, RerankConfig
from indexing.search.gate import GateSignals, Outcome, RerankGate, gate_outcome, gate_score, reader_gate_score
from indexing.search.reader import (FLOOR, GATE_WEIGHT, MODEL, THRESHOLDS, TOP_N, BuiltinReader, OnnxReader,
                             answer_window, passage)
from indexing.search.rerank import make_reranker
from indexing.search.retrieval import retrieve

ANNUAL_LEAVE = passage("Leave policy", "Annual leave",
                       "Full-time employees get 25 days of paid annual leave per calendar year.")
HOTELS = passage("Expenses", "Hotels", "Hotel stays are reimbursed up to $200 per night.")
DENTAL = passage("Benefits", "Dental", "Dental insurance is provided through our insurer for you and your dependants.")


def test_the_shipped_model_is_one_small_file_that_prefers_the_passage_that_answers():
    assert MODEL.is_file() and MODEL.stat().st_size <= 30 * 1024 * 1024
    reader = OnnxReader(MODEL, threads=1)
    answers, unrelated = reader.score("how many days of annual leave do I get?", [ANNUAL_LEAVE, HOTELS])
    assert 0.0 <= unrelated < answers <= 1.0
    # the near-topic passage that does not say whether braces are covered scores below the one that answers
    near_topic = reader.score("does the dental plan cover braces?", [DENTAL])[0]
    assert near_topic < answers


def test_builtin_reads_the_fused_top_section_and_never_reorders(index, handbook):  # noqa: F811
    scopes = [f"{handbook}-all"]
    fused = retrieve(index, VACATION, scopes=scopes)
    with reranking(index, RerankConfig(backend="builtin")) as stage:
        read = retrieve(index, VACATION, scopes=scopes)
    assert stage.name == "builtin:reader" and stage.gate.weight == GATE_WEIGHT and stage.gate.thresholds == THRESHOLDS
    assert stage.gate.floor == FLOOR and stage.gate == RerankGate(THRESHOLDS, GATE_WEIGHT, FLOOR)
    assert [h.parent_id for h in read.hits] == [h.parent_id for h in fused.hits]  # the order is fusion's
    assert read.rerank is not None and read.rerank.outcome == "ok" and read.rerank.pairs == TOP_N == 1
    assert read.hits[0].rerank is not None and all(h.rerank is None for h in read.hits[1:])
    assert read.signals.rerank_best == read.hits[0].rerank
    # what it read: the section's place, then the window of its best chunk around the best sentence
    top = read.hits[0]
    assert BuiltinReader.text_of(VACATION, top, 1500) == passage(top.title, top.heading,
                                                                  answer_window(VACATION, top.matched[0]))


def test_the_reader_vetoes_a_confident_answer_and_never_adds_confidence():
    cfg = IndexConfig(home=Path("/nonexistent"))
    refuse, answer = cfg.gate_refuse_below, cfg.gate_answer_from
    confident = GateSignals(best_cosine=answer + 0.01, best_bm25=3.0)
    unsure = GateSignals(best_cosine=(refuse + answer) / 2, best_bm25=3.0)
    weak = GateSignals(best_cosine=refuse - 0.05, best_bm25=3.0)
    veto = RerankGate((0.0, confident.best_cosine + GATE_WEIGHT * 0.5), GATE_WEIGHT)  # the sum must reach [1]

    def decide(signals: GateSignals, reader: float | None) -> Outcome:
        return gate_outcome(replace(signals, rerank_best=reader), cfg, veto)

    assert decide(confident, 0.9) is Outcome.ANSWERED
    assert decide(confident, 0.1) is Outcome.UNCERTAIN  # read, and it does not answer: not confident
    assert decide(confident, None) is Outcome.ANSWERED  # not read (fell back): today's gate
    assert decide(unsure, 1.0) is Outcome.UNCERTAIN and decide(weak, 1.0) is Outcome.NOT_FOUND
    assert decide(replace(confident, cjk=True, cjk_coverage=0.9), 0.0) is Outcome.ANSWERED  # the CJK gate's


def test_below_the_floor_the_reader_alone_takes_confidence_away():
    cfg = IndexConfig(home=Path("/nonexistent"))
    very_sure = GateSignals(best_cosine=cfg.gate_answer_from + 0.3, best_bm25=3.0)  # the sum passes whatever it reads
    sum_thresholds = (0.0, cfg.gate_answer_from + 0.1)

    def decide(reader: float, floor: float) -> Outcome:
        return gate_outcome(replace(very_sure, rerank_best=reader), cfg, RerankGate(sum_thresholds, GATE_WEIGHT, floor))

    assert decide(0.03, 0.0) is Outcome.ANSWERED  # no floor: the sum alone, and it passes
    assert decide(0.03, 0.05) is Outcome.UNCERTAIN  # read as not answering at all
    assert decide(0.05, 0.05) is Outcome.ANSWERED and decide(0.6, 0.05) is Outcome.ANSWERED
    assert gate_outcome(very_sure, cfg, RerankGate(sum_thresholds, GATE_WEIGHT, 0.05)) is Outcome.ANSWERED  # not read


def test_the_floor_is_the_readers_unless_the_setting_gives_one(index, handbook, monkeypatch):  # noqa: F811
    with reranking(index, RerankConfig(backend="builtin", floor=0.2)) as stage:
        assert stage.gate.floor == 0.2
    monkeypatch.setenv("KB_RERANK_FLOOR", "0.12")
    assert Settings().index_config().rerank.floor == 0.12
    monkeypatch.setenv("KB_RERANK_FLOOR", "1.5")
    with pytest.raises(ValidationError, match="KB_RERANK_FLOOR|kb_rerank_floor"):
        Settings()


def test_the_floor_fit_vetoes_at_most_two_percent_of_confident_right_answers():
    def row(corpus: str, i: int, kind: str, cosine: float) -> dict:
        return {"corpus": corpus, "set": "public", "id": f"{corpus}{i}", "kind": kind,
                "signals": {"best_cosine": cosine, "legs_agree": False}}

    # per corpus 50 answerable rows today answers (reader 0.01, 0.02, … 0.50), one it does not
    # answer (reader 0.0), one unanswerable one (reader 0.0): only the 50 count
    rows, reader = [], {}
    for corpus in ("a", "b"):
        for i in range(50):
            r = row(corpus, i, "fact", 0.6)
            rows.append(r)
            reader[id(r)] = round(0.01 * (i + 1), 2)
        for r in (row(corpus, 50, "fact", 0.3), row(corpus, 51, "not_found", 0.6)):
            rows.append(r)
            reader[id(r)] = 0.0
    # a floor of 0.02 takes one of each corpus's 50 (0.01 < 0.02): 2%; 0.025 would take two
    assert fit_floor(rows, reader, answer_from=0.5) == 0.02
    # nothing answered confidently to fit on: no floor, rather than one that vetoes every answer
    assert fit_floor(rows, reader, answer_from=0.9) == 0.0


def test_on_a_real_index_the_veto_takes_confidence_only_where_the_sum_falls_short(index, handbook):  # noqa: F811
    scopes = [f"{handbook}-all"]
    leave, hotel = "how many days of annual leave do I get?", "what is the hotel limit in London?"
    today = {q: retrieve(index, q, scopes=scopes) for q in (leave, hotel)}
    assert all(r.outcome is Outcome.ANSWERED for r in today.values())
    with reranking(index, RerankConfig(backend="builtin")):  # the shipped thresholds
        shipped = {q: retrieve(index, q, scopes=scopes) for q in (leave, hotel)}
    for q, r in shipped.items():
        assert r.signals.rerank_best > 0.5 and r.outcome is Outcome.ANSWERED, q  # both sections answer
    # a stricter answer_from for the sum (as `kb eval --calibrate` could fit): the section whose sum
    # falls short is no longer confident; the other stays
    sums = {q: reader_gate_score(r.signals, GATE_WEIGHT) for q, r in shipped.items()}
    cut = (min(sums.values()) + max(sums.values())) / 2
    with reranking(index, RerankConfig(backend="builtin", refuse_below=0.0, answer_from=cut)):
        strict = {q: retrieve(index, q, scopes=scopes).outcome for q in (leave, hotel)}
    assert sorted(strict.values()) == [Outcome.ANSWERED, Outcome.UNCERTAIN]
    assert all((o is Outcome.ANSWERED) == (sums[q] >= cut) for q, o in strict.items())


def test_a_chinese_question_is_not_read_and_keeps_the_cjk_gate(index, handbook):  # noqa: F811
    scopes = [f"{handbook}-all"]
    question = "每年有多少天年假？"
    fused = retrieve(index, question, scopes=scopes)
    with reranking(index, RerankConfig(backend="builtin")):
        read = retrieve(index, question, scopes=scopes)
    assert read.signals.cjk and read.rerank is None and read.signals.rerank_best is None
    assert read.outcome == fused.outcome and all(h.rerank is None for h in read.hits)


def test_past_its_budget_the_gate_is_todays(index, handbook, caplog):  # noqa: F811
    scopes = [f"{handbook}-noleave"]
    fused = retrieve(index, VACATION, scopes=scopes)
    reader = BuiltinReader()
    reader.load()
    with reranking(index, RerankConfig(backend="builtin", timeout_ms=0.001), reader):
        with caplog.at_level(logging.WARNING, logger="indexing.search.rerank"):
            late = retrieve(index, VACATION, scopes=scopes)
    assert late.rerank.outcome == "timeout" and late.signals.rerank_best is None
    assert late.outcome == fused.outcome
    assert [h.parent_id for h in late.hits] == [h.parent_id for h in fused.hits]
    assert any("budget" in r.getMessage() for r in caplog.records if r.name == "indexing.search.rerank")


def test_calibrating_the_builtin_fits_its_combined_score():
    rows = [{"corpus": c, "set": "public", "id": f"{c}{i}", "kind": kind,
             "signals": {"best_cosine": cos, "legs_agree": False, "rerank_best": reader}}
            for c in ("a", "b") for i, (kind, cos, reader) in enumerate(
                [("fact", 0.50, 0.9), ("fact", 0.45, 0.8), ("fact", 0.40, 0.7), ("not_found", 0.50, 0.1)])]
    # alone, the reader's scores are cut (answerable 0.7 … 0.9); with a weight, cosine + 0.5 · reader
    # (answerable 0.75 … 0.95, the unanswerable one 0.55): no answerable question refused, none below answered
    assert fit_rerank(rows) == (0.7, 0.7)
    assert fit_rerank(rows, 0.5) == (0.75, 0.75)


def test_eval_calibrate_with_the_builtin_fits_and_writes_its_floor(kb_home, handbook, tmp_path):  # noqa: F811
    questions = tmp_path / "questions.jsonl"
    rows = [("q1", VACATION, ["leave.md"], "fact"), ("q2", "how many days of annual leave do I get?", ["leave.md"], "fact"),
            ("q3", "what is the hotel limit per night?", ["expenses.md"], "fact"),
            ("q4", "can I bring my dog to the office?", [], "not_found")]
    questions.write_text("".join(json.dumps({"id": i, "question": q, "expected_sources": e, "answer_keywords": [],
                                             "kind": k}) + "\n" for i, q, e, k in rows))
    env_file = tmp_path / ".env"
    result = _kb("eval", str(questions), "--scope", f"{handbook}-all", "--calibrate", "--json", "--write-env",
                 str(env_file), env={"KB_HOME": str(kb_home), "KB_RERANK": "builtin"}, timeout=600)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    fitted, gate = out["calibration"]["rerank"], out["calibration"]["gate"]["en"]
    # the floor: the highest (on a 0.005 grid) that takes no confidently answered answerable
    # question's confidence (2% of at most three is none)
    read = [r["signals"]["rerank_best"] for r in out["questions"] if r["kind"] != "not_found"
            and gate_score(GateSignals.from_json(r["signals"])) >= gate["answer_from"]]
    assert read, "the handbook's answerable questions are answered confidently"
    assert fitted["floor"] == max(t for t in (round(0.005 * i, 3) for i in range(201)) if all(x >= t for x in read))
    assert f"KB_RERANK_FLOOR={fitted['floor']}" in env_file.read_text().splitlines()


def test_the_setting_chooses_the_builtin_and_kb_ask_answers_with_it(kb_home, handbook):  # noqa: F811
    assert isinstance(make_reranker(RerankConfig(backend="builtin")), BuiltinReader)
    result = _kb("ask", "--json", VACATION,
                 env={"KB_HOME": str(kb_home), "KB_RERANK": "builtin"}, timeout=600)
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["sources"][0]["rerank"] is not None
    assert all(s["rerank"] is None for s in reply["sources"][1:])
    assert reply["outcome"] in {o.value for o in Outcome}


def test_an_over_long_question_is_cut_and_read_not_skipped(index, handbook, caplog):  # noqa: F811
    """Over 128 word-pieces the tokenizer refused the pair ("Truncation error"), the stage fell
    back and the reader's veto was skipped. Now the question is cut to its first 48 word-pieces."""
    long_question = VACATION + " " + " ".join(["please tell me about the policy in detail"] * 30)
    reader = OnnxReader(MODEL, threads=1)
    [score] = reader.score(long_question, [ANNUAL_LEAVE])
    assert 0.0 <= score <= 1.0
    with reranking(index, RerankConfig(backend="builtin", timeout_ms=20_000)):
        with caplog.at_level(logging.WARNING, logger="indexing.search.rerank"):
            read = retrieve(index, long_question, scopes=[f"{handbook}-all"])
    assert read.rerank.outcome == "ok" and read.signals.rerank_best is not None
    assert not [r for r in caplog.records if r.name == "indexing.search.rerank"]
