"""`kb eval` metrics: hand-checked arithmetic, and a real run over the sample wiki."""

from __future__ import annotations

from bot.quality.evaluation import Question, load_questions, run_eval, score
from tests.support.corpora import SAMPLE_WIKI


def _row(kind, found, rank):
    return {"kind": kind, "found": found, "hit_rank": rank, "keywords": [1, 2], "latency_ms": 10.0,
            "timings_ms": {}, "sources": []}


def test_score_arithmetic():
    rows = [
        _row("fact", True, 1),
        _row("fact", True, 4),
        _row("paraphrase", False, None),  # wrongly refused, and missed
        _row("not_found", False, None),  # rightly refused
        _row("not_found", True, None),  # wrongly answered
    ]
    m = score(rows)
    assert (m["hit@1"], m["hit@3"], m["hit@5"]) == (round(1 / 3, 4), round(1 / 3, 4), round(2 / 3, 4))
    assert m["mrr@10"] == round((1 + 1 / 4) / 3, 4)
    assert m["not_found_precision"] == 0.5 and m["not_found_recall"] == 0.5 and m["not_found_f1"] == 0.5
    assert m["keyword_coverage"] == 0.5


def test_eval_over_the_sample_wiki(index, sample_synced):
    questions = load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl")
    assert all(isinstance(q, Question) for q in questions) and len(questions) >= 15
    result = run_eval(index, questions, scopes=["sample"])
    overall = result["metrics"]["overall"]
    assert overall["hit@5"] >= 0.9 and overall["questions"] == len(questions)
    assert {"kind:fact", "kind:not_found"} <= set(result["metrics"])
    row = result["questions"][0]
    assert {"id", "kind", "found", "sources", "hit_rank", "latency_ms"} <= set(row)
    assert index.config.top_k == 5  # the eval's deeper ranking does not leak into later answers


def test_eval_with_an_llm_counts_its_not_found_as_a_refusal(index, sample_synced):
    """`kb eval --llm`: the model answers what the gate lets through, and its "not found" is scored
    as a refusal (here it says so every time)."""
    from bot.answering.llm import LLMClient
    from bot.messages import NOT_FOUND_REPLY
    from tests.support.openai_server import FakeOpenAI

    questions = load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl")
    extractive = run_eval(index, questions, scopes=["sample"])
    server = FakeOpenAI().start()
    try:
        server.reply(NOT_FOUND_REPLY)
        with_llm = run_eval(index, questions, scopes=["sample"], llm=LLMClient(server.base_url, "local", timeout=5))
    finally:
        server.stop()
    passed_gate = [r["id"] for r in extractive["questions"] if r["found"]]
    assert passed_gate and len(server.requests) == len(passed_gate)
    assert [r["id"] for r in with_llm["questions"] if r["llm_used"]] == passed_gate
    assert not any(r["found"] for r in with_llm["questions"])
    assert {r["outcome"] for r in with_llm["questions"]} == {"not_found"}
    assert with_llm["metrics"]["overall"]["answerable_not_found"] == 1.0  # the same outcome table as without --llm
    assert with_llm["metrics"]["overall"]["not_found_recall"] == 1.0
    assert with_llm["metrics"]["overall"]["hit@1"] == extractive["metrics"]["overall"]["hit@1"]  # ranking unchanged


def test_outcome_shares_and_lead_coverage_arithmetic():
    rows = [
        {**_row("fact", True, 1), "outcome": "answered", "lead_keywords": [2, 2]},
        {**_row("fact", True, 2), "outcome": "uncertain", "lead_keywords": [0, 2]},
        {**_row("fact", False, 4), "outcome": "not_found", "lead_keywords": [0, 2]},  # right page only at 4
        {**_row("fact", True, None), "outcome": "answered", "lead_keywords": [1, 2]},
        {**_row("not_found", True, None), "outcome": "uncertain", "lead_keywords": [0, 0]},
        {**_row("not_found", False, None)},  # a row from before outcomes: found False → not_found
    ]
    m = score(rows)
    assert (m["answerable_answered"], m["answerable_uncertain"], m["answerable_not_found"]) == (0.5, 0.25, 0.25)
    assert (m["unanswerable_answered"], m["unanswerable_uncertain"], m["unanswerable_not_found"]) == (0.0, 0.5, 0.5)
    assert m["lead_keyword_coverage"] == round((1 + 0 + 0 + 0.5) / 4, 4) and m["keyword_coverage"] == 0.5
    assert m["lead_shows_fact@3"] == 0.5 and m["reply_shows_fact@3"] == 1.0  # over the two ranked in the top 3


def test_eval_rows_carry_the_outcome_and_lead_coverage(index, sample_synced):
    questions = [q for q in load_questions(SAMPLE_WIKI / "QUESTIONS.jsonl") if q.id in ("sample-01", "sample-03")]
    result = run_eval(index, questions, scopes=["sample"])
    for row in result["questions"]:
        assert row["outcome"] in ("answered", "uncertain", "not_found") and row["found"] == (row["outcome"] != "not_found")
        assert len(row["lead_keywords"]) == 2 and row["lead_keywords"][0] <= row["keywords"][0]
    # the lead text itself, so two runs can be compared question by question
    assert result["questions"][0]["lead"].startswith("Full-time employees get 25 days")
    assert "lead_shows_fact@3" in result["metrics"]["overall"]
