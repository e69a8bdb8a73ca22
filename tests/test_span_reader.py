"""The span reader (`KB_RERANK=span`, `indexing.search.span_reader`; not the default — its measurements:
`docs/tuning.md`, *The span reader*): the shipped ONNX model points at the words that answer or
abstains; the real rerank stage gates on it and orders by it; what the stage hands it of a section;
the answer's lead starts with the sentence holding its span, the span in bold — on a small handbook
of our own (`test_rerank`'s: one scope with the leave policy, one without) and the sample wiki.
Without the model file (a slimmed install), `KB_RERANK=span` stops `kb` at start in one line."""

from __future__ import annotations

from datetime import datetime

import json

import pytest
from test_answer_and_cli import _kb
from test_rerank import handbook, reranking  # noqa: F401 — handbook is a fixture

from bot.answering.lead import LeadSentence, _span_first, render_lead
from indexing.config import RerankConfig
from indexing.values.sentences import plain_sentences
from indexing.search.gate import Outcome
from indexing.values.hits import Hit
from indexing.search.rerank import make_reranker
from indexing.search.retrieval import retrieve
from indexing.search.span_reader import MODEL, THRESHOLDS, TOP_N, SpanBackend, SpanReader

LEAVE_QUESTION = "how many days of annual leave do full-time employees get?"
ANNUAL_LEAVE = "Leave policy › Annual leave\nFull-time employees get 25 days of paid annual leave per calendar year."
HOTELS = "Expenses › Hotels\nThe hotel limit is $200 per night, $300 in London and New York."
DENTAL = "Benefits › Dental\nDental insurance is provided through our insurer for you and your dependants."


def test_the_shipped_model_is_one_small_file_that_points_at_the_answer():
    assert MODEL.is_file() and MODEL.stat().st_size <= 30 * 1024 * 1024
    reader = SpanReader(MODEL, threads=1)
    leave, hotels = reader.read(LEAVE_QUESTION, [ANNUAL_LEAVE, HOTELS])
    assert "25" in leave.text and ANNUAL_LEAVE[leave.start : leave.end] == leave.text
    assert leave.score > hotels.score
    assert leave.confidence >= THRESHOLDS[1] > hotels.confidence  # answers, where the other passage does not


def test_it_abstains_where_a_near_topic_passage_does_not_say():
    reader = SpanReader(MODEL, threads=1)
    braces = reader.read("does the dental plan cover braces for kids?", [DENTAL])[0]
    limit = reader.read("what is the hotel limit per night in London?", [HOTELS])[0]
    assert braces.confidence < THRESHOLDS[1] <= limit.confidence


@pytest.mark.xfail(strict=True, reason="known shortfall of the shipped model (r3, docs/tuning.md): asked for London's "
                   "hotel limit it points at the general $200, not London's $300")
def test_it_points_at_the_words_that_answer_the_question_asked():
    limit = SpanReader(MODEL, threads=1).read("what is the hotel limit per night in London?", [HOTELS])[0]
    assert "$300" in limit.text


def test_a_long_section_is_read_in_windows_and_a_long_question_is_clipped():
    reader = SpanReader(MODEL, threads=1)
    filler = " ".join(f"Paragraph {k} of the travel policy describes booking rules for trains." for k in range(25))
    far = f"Travel › Hotels\n{filler} The hotel limit is $200 per night."
    span = reader.read("what is the hotel limit per night?", [far])[0]
    assert "$200" in span.text and far[span.start : span.end] == span.text  # past the first window
    wall = "what is the hotel limit per night " + "please tell me " * 400
    assert reader.read(wall, [HOTELS])[0].text  # 6,000 characters of question: read, not an error


def test_the_stage_orders_by_span_gates_on_it_and_marks_the_span(index, handbook):  # noqa: F811
    with reranking(index, RerankConfig(backend="span")) as stage:
        found = retrieve(index, LEAVE_QUESTION, scopes=[f"{handbook}-all"])
        missing = retrieve(index, LEAVE_QUESTION, scopes=[f"{handbook}-noleave"])
    assert stage.name == "builtin:span" and stage.gate.thresholds == THRESHOLDS and stage.gate.weight is None
    assert found.rerank is not None and found.rerank.outcome == "ok" and found.rerank.pairs <= TOP_N
    assert found.hits[0].path == "leave.md" and "25" in (found.hits[0].answer_span or "")
    assert found.signals.rerank_best == found.hits[0].rerank
    assert found.outcome is not Outcome.NOT_FOUND
    # the wiki without the leave policy: no confident answer, and a lower best span than where it is
    assert missing.outcome is not Outcome.ANSWERED and missing.signals.rerank_best is not None
    assert found.signals.rerank_best is not None and missing.signals.rerank_best < found.signals.rerank_best


@pytest.mark.xfail(strict=True, reason="known shortfall of the shipped model (r3, docs/tuning.md): on the wiki without "
                   "the leave policy its best span still scores above the refusal threshold (uncertain, not not-found)")
def test_without_the_page_the_stage_says_not_found(index, handbook):  # noqa: F811
    with reranking(index, RerankConfig(backend="span")):
        missing = retrieve(index, LEAVE_QUESTION, scopes=[f"{handbook}-noleave"])
    assert missing.outcome is Outcome.NOT_FOUND


def test_another_span_export_is_read_under_its_own_name(tmp_path, caplog):
    """`KB_RERANK_MODEL` with `KB_RERANK=span`: a team's own export (training.span_export) replaces
    the shipped file; the stage names it, and warns that it reads with the shipped thresholds."""
    import shutil

    export = tmp_path / "span-next.onnx"
    shutil.copyfile(MODEL, export)
    with caplog.at_level("WARNING", logger="indexing.search.rerank"):
        backend = make_reranker(RerankConfig(backend="span", model=str(export)))
    assert isinstance(backend, SpanBackend) and backend.name == "span:span-next.onnx" and backend.path == export
    assert "read with the shipped span reader's thresholds" in caplog.text
    assert "25" in backend.read(LEAVE_QUESTION, [ANNUAL_LEAVE])[0].text
    caplog.clear()
    with caplog.at_level("WARNING", logger="indexing.search.rerank"):
        fitted = make_reranker(RerankConfig(backend="span", model=str(export), refuse_below=0.3, answer_from=0.6))
    assert isinstance(fitted, SpanBackend) and "thresholds" not in caplog.text  # fitted for it: no warning
    shipped = make_reranker(RerankConfig(backend="span"))
    assert isinstance(shipped, SpanBackend) and shipped.name == "builtin:span" and shipped.path == MODEL


def test_what_the_stage_reads_of_a_section_is_its_place_and_best_chunk():
    hit = _hit("Leave policy", ["Annual leave"], "Whole section text.", ["Full-time employees get 25 days."])
    assert SpanBackend.text_of(LEAVE_QUESTION, hit, 1500) == "Leave policy › Annual leave\nFull-time employees get 25 days."


def test_the_sentence_holding_the_span_leads_in_bold():
    text = ("Annual leave is booked in the HR portal. Full-time employees get 25 days of paid annual leave per "
            "calendar year. Unused days expire in March.")
    hit = _hit("Leave policy", ["Annual leave"], text, [text], rerank=0.9, span="25 days")
    other = _hit("Holidays", [], "Public holidays follow each office.", ["Public holidays follow each office."])
    chosen = [LeadSentence("Public holidays follow each office.", n=2, rank=1, score=0.4)]
    by_rank = {0: plain_sentences(text), 1: plain_sentences(other.text)}
    lead = _span_first(chosen, [hit, other], by_rank, {hit.doc_id: 1, other.doc_id: 2})
    assert [s.text for s in lead][0].startswith("Full-time employees get 25 days")
    assert lead[0].span == "25 days" and lead[-1].text == "Public holidays follow each office."
    assert render_lead(lead).startswith("Full-time employees get **25 days** of paid annual leave")
    # no span reader: the lead is as chosen
    plain = _hit("Leave policy", ["Annual leave"], text, [text])
    assert _span_first(chosen, [plain, other], by_rank, {plain.doc_id: 1, other.doc_id: 2}) == chosen


def test_a_span_model_that_is_not_there_stops_kb_with_one_error_line(tmp_path):
    """The shipped file is there, so the refusal is shown with `KB_RERANK_MODEL` naming a missing
    export (the same check a slimmed install without the shipped file meets)."""
    missing = tmp_path / "span-next.onnx"
    with pytest.raises(ValueError, match=f"the span reader's model is missing \\(KB_RERANK_MODEL={missing} is not a file"):
        make_reranker(RerankConfig(backend="span", model=str(missing)))
    env = {"KB_HOME": str(tmp_path), "KB_RERANK": "span", "KB_RERANK_MODEL": str(missing)}
    result = _kb("ask", LEAVE_QUESTION, env=env, timeout=300)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: KB_RERANK=span: the span reader's model is missing"), result.stderr


def test_kb_ask_json_gives_the_span_and_the_reply_shows_it_bold(kb_home, sample_synced):
    env = {"KB_HOME": str(kb_home), "KB_RERANK": "span", "KB_RERANK_TIMEOUT_MS": "5000"}
    result = _kb("ask", "--json", "How many days of annual leave do full-time employees get?", env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["outcome"] != "not_found" and "25" in answer["answer_span"]
    assert f"**{answer['answer_span']}**" in answer["lead"] and answer["lead"] in answer["answer"]
    assert answer["sources"][0]["title"] == "Leave policy"


def _hit(title: str, heading: list[str], text: str, matched: list[str], rerank: float | None = None,
         span: str | None = None) -> Hit:
    return Hit(parent_id=f"p-{title}", doc_id=f"d-{title}", source="s", path=f"{title}.md", title=title,
               heading_path=heading, url=f"https://wiki.example/{title}", text=text, matched=matched,
               updated_at=datetime(2026, 1, 1), score=1.0, cosine=0.5, bm25=1.0, rerank=rerank, answer_span=span)
