"""The not-found gate: the evidence that the wiki covers a question, and the three outcomes it gives.

Fused ranking scores are relative to one question, so the gate reads raw signals that compare
across questions (`GateSignals`): how close in meaning the best chunk is (MiniLM cosine), whether
both legs put the same page first, and how much of the question's rare vocabulary (IDF-weighted)
the best section holds. One score per question (`gate_score`) is cut by two thresholds fitted
leave-one-corpus-out (`bot/quality/gate_fit.py`): below the first → not found; from the second →
answered; between → uncertain ("I'm not sure this answers it — check [1]").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from indexing.keyword import bm25 as bm25_module
from indexing.search.cjk_coverage import cjk_coverage

if TYPE_CHECKING:
    from indexing.config import IndexConfig
    from indexing.keyword.bm25 import Bm25Index
    from indexing.values.hits import ChunkHit, Hit


class Outcome(StrEnum):
    """What the gate made of a question, and so what its answer is. A `str`: its value ("answered",
    "uncertain", "not_found") is what JSON, logs, metrics and the query log's `outcome` column hold."""

    ANSWERED = "answered"
    UNCERTAIN = "uncertain"  # the wiki may have it: "I'm not sure this answers it — check [1]"
    NOT_FOUND = "not_found"

    @property
    def found(self) -> bool:
        """Whether the reply gives an answer (answered or uncertain): the `found` of `kb ask --json`,
        `kb eval --json` and the query log, derived here and nowhere else."""
        return self is not Outcome.NOT_FOUND

    @classmethod
    def logged(cls, outcome: str | None, found: bool) -> Outcome:
        """The outcome of a logged answer (a query-log row, a `kb eval --json` row); rows written
        before outcomes were logged hold only `found`."""
        return cls(outcome) if outcome else (cls.ANSWERED if found else cls.NOT_FOUND)


COVERAGE_SECTIONS = 3  # term coverage is measured over the top sections together
AGREE_BONUS = 0.05  # the first gate's "legs agree" rule (cos ≥ 0.47, or agree and cos ≥ 0.42), as one score
_CJK = bm25_module.CJK


@dataclass(frozen=True)
class GateSignals:
    """Raw evidence, comparable across questions, that the visible wiki covers a question."""

    best_cosine: float = 0.0  # the closest child's cosine similarity to the question
    term_coverage: float = 0.0  # IDF share of the question's terms found in the top 3 sections
    top_coverage: float = 0.0  # IDF share of the keyword leg's terms (function words out) in the best section
    top_known_coverage: float = 0.0  # ... of those the visible wiki uses at all
    unknown_terms: float = 0.0  # IDF share of question terms the visible wiki never uses
    legs_agree: bool = False  # vector and keyword legs put the same page first
    best_bm25: float = 0.0  # the keyword leg's best score (0: none of the question's words is in the wiki)
    # IDF share of the keyword leg's terms in the top 3 sections, unused bigrams out (indexing.search.cjk_coverage).
    cjk_coverage: float = 0.0
    cjk: bool = False  # the question is mostly Chinese/Japanese/Korean
    rerank_best: float | None = None  # the rerank stage's best score (indexing.search.rerank; None: off or fell back)
    rerank_outcome: str | None = None  # ok, error or timeout (None: no rerank stage)

    def to_json(self) -> dict[str, float | bool | str | None]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateSignals:
        """From `to_json()`'s dict (query log, `kb eval --json`); unknown keys ignored, missing
        ones at their defaults, so older logs still load."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def cjk_share(text: str) -> float:
    """The share of a text's letters that are Chinese/Japanese/Korean characters (0 without letters)."""
    letters = [c for c in text if c.isalpha()]
    return sum(1 for c in letters if _CJK.match(c)) / len(letters) if letters else 0.0


def is_cjk(text: str) -> bool:
    """Whether a question is mostly Chinese/Japanese/Korean: then the English embedding model's
    cosine says little (unrelated Chinese text scores 0.5–0.9) and keywords carry the gate."""
    return cjk_share(text) >= 0.3


@dataclass(frozen=True)
class QuestionTerms:
    """The question's terms and their IDF among the chunks the asker may see — looked up once per
    question: the gate weighs coverage with them, and the lead scores sentences with them."""

    words: frozenset[str] = frozenset()  # every analysed word of the question
    searched: frozenset[str] = frozenset()  # what the keyword leg searches (stop words dropped)
    idf: dict[str, float] = field(default_factory=dict)  # of both
    known: frozenset[str] = frozenset()  # those that occur in the visible wiki at all

    def searched_idf(self) -> dict[str, float]:
        """IDF of each term the keyword leg searches (`bot.answering.lead`'s rare-term share)."""
        return {t: self.idf[t] for t in self.searched}



class KeywordIndexed(Protocol):
    """What the gate reads of an `Index`: its keyword leg (named so, not as `Index`, because the
    Index is above search: it opens the rerank stage, which uses this module)."""

    @property
    def bm25(self) -> Bm25Index: ...


def question_terms(index: KeywordIndexed, question: str, scopes: list[str] | None) -> QuestionTerms:
    words = frozenset(bm25_module.tokens(question))
    searched = frozenset(bm25_module.tokens(bm25_module.question_text(question)))
    if not (words or searched):
        return QuestionTerms()
    idf, known = index.bm25.idf(set(words | searched), scopes)
    return QuestionTerms(words, searched, idf, frozenset(known))


def gate_signals(
    question: str, asked: QuestionTerms, dense: list[ChunkHit], keyword: list[ChunkHit], hits: list[Hit]
) -> GateSignals:
    """The signals for one question, from both legs' candidates and the top sections.

    For Chinese questions the keyword terms are characters and bigrams, and `cjk_coverage` is the
    signal the gate uses for them: MiniLM's cosine is high for unrelated Chinese text.
    """
    best_cosine = max((h.score for h in dense), default=0.0)
    coverage = unknown = top = top_known = cjk = 0.0
    terms, keyword_terms, weights, known = asked.words, asked.searched, asked.idf, asked.known
    if terms or keyword_terms:
        total = sum(weights[t] for t in terms) or 1.0
        unknown = sum(weights[t] for t in terms if t not in known) / total
        if hits:
            text = " ".join(f"{h.title} {h.heading} {h.text}" for h in hits[:COVERAGE_SECTIONS])
            present = set(bm25_module.tokens(text))
            coverage = sum(weights[t] for t in terms if t in present) / total
            cjk = cjk_coverage(keyword_terms, weights, known, present)
            best = set(bm25_module.tokens(f"{hits[0].title} {hits[0].heading} {hits[0].text}"))
            top = sum(weights[t] for t in keyword_terms if t in best) / (sum(weights[t] for t in keyword_terms) or 1.0)
            seen = [t for t in keyword_terms if t in known]
            top_known = sum(weights[t] for t in seen if t in best) / (sum(weights[t] for t in seen) or 1.0)
    top_vector = dense[0].metadata["doc_id"] if dense else None
    top_keyword = keyword[0].metadata["doc_id"] if keyword else None
    return GateSignals(
        best_cosine=round(best_cosine, 4),
        term_coverage=round(coverage, 4),
        top_coverage=round(top, 4),
        top_known_coverage=round(top_known, 4),
        unknown_terms=round(unknown, 4),
        legs_agree=top_vector is not None and top_vector == top_keyword,
        best_bm25=round(keyword[0].score, 4) if keyword else 0.0,
        cjk_coverage=round(cjk, 4),
        cjk=is_cjk(question),
    )


def is_found(signals: GateSignals, min_cosine: float, agree_min_cosine: float = 0.42) -> bool:
    """The first not-found gate, kept for `kb eval --calibrate`'s single-threshold sweep: found
    when some chunk is close in meaning to the question, or when both legs put the same page
    first and it is at least loosely related."""
    cosine = signals.best_cosine
    return cosine >= min_cosine or (signals.legs_agree and cosine >= min(agree_min_cosine, min_cosine))


def gate_score(signals: GateSignals) -> float:
    """One number per question that the gate's thresholds cut (comparable across questions).

    English: the best child's cosine, plus a little when both legs put the same page first.
    Mostly-CJK questions: how much of the question's vocabulary (IDF-weighted, bigrams no page
    uses left out) the top sections hold — MiniLM's cosine is 0.5–0.9 for unrelated Chinese text
    (`indexing.search.cjk_coverage`; docs/tuning.md, "Chinese: characters with bigrams").
    """
    if signals.cjk:
        return signals.cjk_coverage
    return signals.best_cosine + AGREE_BONUS * signals.legs_agree


def outcome_for(score: float, refuse_below: float, answer_from: float) -> Outcome:
    if score < refuse_below:
        return Outcome.NOT_FOUND
    return Outcome.ANSWERED if score >= answer_from else Outcome.UNCERTAIN


def reader_gate_score(signals: GateSignals, weight: float) -> float:
    """Today's score plus `weight` times the reader's (the built-in reader, `indexing.search.reader`): the
    two together separate answerable from unanswerable questions better than either alone."""
    return round(gate_score(signals) + weight * (signals.rerank_best or 0.0), 6)


@dataclass(frozen=True)
class RerankGate:
    """How the gate reads a rerank score (`indexing.search.rerank.RerankStage.gate`).

    Without a `weight` (a company's cross-encoder or rerank service) the score is cut by
    `thresholds` — (refuse_below, answer_from) fitted for that backend — in place of today's gate.
    With a `weight` (the built-in reader) the score is a veto instead: today's gate decides, and a
    question it answers stays answered only if today's score plus `weight` times the reader's
    reaches `thresholds[1]` (fitted for that sum) and the reader's own score reaches `floor`."""

    thresholds: tuple[float, float] | None = None  # None: a backend nobody fitted — the order only
    weight: float | None = None
    floor: float = 0.0

    def vetoes(self, signals: GateSignals) -> bool:
        """Whether the reader takes the confidence of an answer today's gate gives."""
        if self.weight is None or self.thresholds is None or signals.rerank_best is None:
            return False
        return reader_gate_score(signals, self.weight) < self.thresholds[1] or signals.rerank_best < self.floor


def gate_outcome(signals: GateSignals, cfg: IndexConfig, rerank: RerankGate | None = None) -> Outcome:
    """Answered, uncertain or not found, from the signals and the configured thresholds
    (fitted leave-one-corpus-out by `benchmarks/gate_calibration.py`). With a `rerank` gate that
    cuts (a fitted cross-encoder) and a rerank score, that score is cut instead, in every
    language: a cross-encoder reads the question and the section together. With a reader's veto
    (the built-in) today's gate decides and the reader can take confidence away, never add it
    (`RerankGate`; docs/tuning.md, *A built-in reader*).

    A question none of whose words occurs anywhere in the visible wiki (the keyword leg found
    nothing: "xxxx…", emoji alone, another language's words) is not found whatever its cosine:
    nothing in the wiki can ground an answer. Of the 590 public questions, one (unanswerable) has
    no keyword hit."""
    if not signals.best_bm25:
        return Outcome.NOT_FOUND
    if rerank is not None and rerank.weight is None and rerank.thresholds is not None and signals.rerank_best is not None:
        return outcome_for(signals.rerank_best, *rerank.thresholds)
    if signals.cjk:
        return outcome_for(gate_score(signals), cfg.gate_refuse_below_cjk, cfg.gate_answer_from_cjk)
    outcome = outcome_for(gate_score(signals), cfg.gate_refuse_below, cfg.gate_answer_from)
    if outcome is Outcome.ANSWERED and rerank is not None and rerank.vetoes(signals):
        return Outcome.UNCERTAIN
    return outcome
