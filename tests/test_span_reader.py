"""The span reader's seams (`KB_RERANK=span`, `indexing.search.span_reader`): what the rerank stage
hands it of a section, the answer's lead with the span first and in bold — and, while no trained
model ships (its measurements: `docs/tuning.md`, *The span reader*), a clear refusal at start
rather than a fallback on every question."""

from __future__ import annotations

from datetime import datetime

import pytest
from test_answer_and_cli import _kb

from bot.answering.lead import LeadSentence, _span_first, render_lead
from indexing.config import RerankConfig
from indexing.ingest.sentences import plain_sentences
from indexing.search.hits import Hit
from indexing.search.rerank import make_reranker
from indexing.search.span_reader import MODEL, SpanBackend

LEAVE_QUESTION = "how many days of annual leave do full-time employees get?"


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


@pytest.mark.skipif(MODEL.is_file(), reason="a trained span reader is in indexing/models: it is used, not refused")
def test_without_a_shipped_model_kb_rerank_span_stops_kb_with_one_error_line(tmp_path):
    with pytest.raises(ValueError, match="the span reader is not shipped in this version"):
        make_reranker(RerankConfig(backend="span"))
    result = _kb("ask", LEAVE_QUESTION, env={"KB_HOME": str(tmp_path), "KB_RERANK": "span"}, timeout=300)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: KB_RERANK=span: the span reader is not shipped"), result.stderr


def _hit(title: str, heading: list[str], text: str, matched: list[str], rerank: float | None = None,
         span: str | None = None) -> Hit:
    return Hit(parent_id=f"p-{title}", doc_id=f"d-{title}", source="s", path=f"{title}.md", title=title,
               heading_path=heading, url=f"https://wiki.example/{title}", text=text, matched=matched,
               updated_at=datetime(2026, 1, 1), score=1.0, cosine=0.5, bm25=1.0, rerank=rerank, answer_span=span)
