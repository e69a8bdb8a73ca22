"""From a question to an answer with numbered, checkable sources.

Three outcomes (`indexing.search.retrieval.Retrieval.outcome`): *answered*; *uncertain* — the wiki may
have it, so the best passage is shown under a plain "I'm not sure this answers it — check [1]";
*not found* — said plainly, with the nearest pages.

Extractive by default: the lead (the few sentences that answer, `bot.answering.lead`) with their
`[n]`, then the best passages, quoted and cited. With an LLM configured, a written answer
grounded in the same sources (see `bot.answering.llm`); if the model fails, or its answer states
what its pages do not (`bot.answering.grounding`), the extractive answer is returned, with the
gate's own outcome and a note saying why.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from typing_extensions import TypeIs

from bot import messages
from bot.answering.lead import LeadSentence, choose_lead, render_lead
from bot.metrics import LLM_CALLS, LLM_SET_ASIDE, observe_rerank
from connectors.commonmark import strip_headings
from bot.answering.grounding import Ungrounded
from bot.answering.llm import LanguageModel, NotAChatReply, says_not_found
from indexing.index import Index
from indexing.ingest import HeadingPath
from indexing.search import Hit, Outcome, retrieve

if TYPE_CHECKING:
    from bot.verified import Given, Offered, VerifiedAnswer

    # (question, its vector if known) → the verified answer given, or one offered, or None
    FindVerified = Callable[[str, list[float] | None], Given | Offered | None]

MAX_QUESTION_CHARS = 2000  # searched; the rest of a longer question is dropped
MAX_RAW_QUESTION_CHARS = 100_000  # looked at, at all
QUOTE_CHARS = 500
QUOTED_PASSAGES = 2

log = logging.getLogger(__name__)


class EmptyQuestion(ValueError):
    pass


@dataclass
class Source:
    n: int
    doc_id: str
    source: str
    path: str
    title: str
    heading_path: HeadingPath
    url: str
    score: float
    updated_at: datetime | None
    rerank: float | None = None  # the rerank stage's score of the cited section (None: not reranked)

    def __post_init__(self) -> None:
        self.heading_path = HeadingPath(self.heading_path)  # a list as well

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["heading_path"] = str(self.heading_path)
        data["updated_at"] = self.updated_at.isoformat() if self.updated_at else None
        return data


@dataclass
class Answer:
    question: str
    text: str
    sources: list[Source]
    timings_ms: dict[str, float]
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    llm_used: bool = False
    note: str | None = None  # e.g. "the language model did not answer; showing passages"
    signals: dict[str, float | bool | str | None] = field(default_factory=dict)  # the gate's (GateSignals.to_json)
    outcome: Outcome = Outcome.ANSWERED
    lead: str = ""  # the lead sentences with their [n], as at the top of an extractive answer
    searched: str | None = None  # the question as searched when typos were repaired or synonyms added, else None
    answer_span: str | None = None  # the words a span reader points at, shown in bold in the lead (None: none)
    verified: VerifiedAnswer | None = None  # the verified answer given (bot.verified), None: the wiki's answer
    verified_offer: Offered | None = None  # a verified answer the question may be asking for, shown by its question

    def __post_init__(self) -> None:
        self.outcome = Outcome(self.outcome)  # "answered" as well as Outcome.ANSWERED

    @property
    def found(self) -> bool:
        """Answered or uncertain: the JSON's and the query log's `found`, from the outcome."""
        return self.outcome.found

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "outcome": self.outcome.value,
            "found": self.found,
            "lead": self.lead,
            "answer": self.text,
            "sources": [s.to_json() for s in self.sources],
            "timings_ms": self.timings_ms,
            "llm_used": self.llm_used,
            "note": self.note,
            "signals": self.signals,
            "searched": self.searched,
            "answer_span": self.answer_span,
            "verified": self.verified.to_json() if self.verified else None,
            "verified_offer": self.verified_offer.to_json() if self.verified_offer else None,
        }


_UNSEARCHABLE = re.compile(
    r"<!(?:channel|here|everyone|subteam\^)[^>]{0,200}>"  # Slack broadcasts: never searched, never echoed
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]",  # control characters, lone surrogates (no text column takes NUL)
    re.IGNORECASE,
)


def clean_question(question: str) -> str:
    """Broadcast mentions and control characters dropped, whitespace collapsed, length capped;
    an empty question (nothing left) is an error the user sees."""
    question = " ".join((question or "")[:MAX_RAW_QUESTION_CHARS].split())  # Slack sends at most 40,000
    question = " ".join(_UNSEARCHABLE.sub(" ", question).split())
    if not question:
        raise EmptyQuestion(messages.EMPTY_QUESTION)
    return question[:MAX_QUESTION_CHARS]


def answer_question(
    index: Index, question: str, scopes: list[str] | None = None, llm: LanguageModel | None = None,
    mode: str = "hybrid", verified: FindVerified | None = None,
) -> Answer:
    """Retrieve, gate, and answer. `llm` is a `bot.answering.llm.LLMClient` or None for extractive answers;
    `mode` ("hybrid", "vector", "bm25") exists so `kb eval --compare` can score one leg alone.
    `scopes`: the access scopes the asker may see (None: all); an empty list sees nothing.
    `verified`: finds the verified answer people gave to this question (`bot.verified.Lookup`):
    when there is one it is the answer, verbatim (no lead, no model), its cited pages first among
    the sources and then the wiki's."""
    question = clean_question(question)
    started = time.perf_counter()
    if scopes is not None and not scopes:  # nothing visible: nothing to search, no nearest pages
        return Answer(question=question, text=messages.NOT_FOUND_REPLY, sources=[], outcome=Outcome.NOT_FOUND,
                      timings_ms={"total": round((time.perf_counter() - started) * 1000, 2)})
    retrieval = retrieve(index, question, scopes=scopes, mode=mode)
    if retrieval.rerank is not None:
        observe_rerank(retrieval.rerank)
    sources, numbers = _sources(retrieval.hits)
    timings = dict(retrieval.timings_ms)
    clock = time.perf_counter()
    answer = Answer(question=question, text="", sources=sources,
                    timings_ms=timings, signals=retrieval.signals.to_json(), outcome=retrieval.outcome,
                    searched=retrieval.searched_for)
    if answer.searched:  # logged with the question (query_log.signals), and shown again on a re-render
        answer.signals["searched"] = answer.searched
    found = verified(question, retrieval.question_vector if retrieval.searched == question else None) if verified else None
    timings["verified"] = round((time.perf_counter() - clock) * 1000, 2)
    if _given(found):
        _give_verified(index, answer, found, scopes)
        timings["total"] = round((time.perf_counter() - started) * 1000, 2)
        return answer
    if found is not None:  # offered beside the wiki's answer; logged with it, for a re-render and the review
        answer.verified_offer = found
        answer.signals = {**answer.signals, "verified_offer_id": found.answer_id,
                          "verified_offer_question": found.question, "verified_offer_similarity": found.similarity}
    lead: list[LeadSentence] = []
    if answer.found:
        lead = choose_lead(retrieval.searched, retrieval.hits, numbers, index.embedder, retrieval.terms.searched_idf(),
                           question_vector=retrieval.question_vector, index=index)
        answer.lead = render_lead(lead)
        answer.answer_span = next((s.span for s in lead if s.span), None)
        timings["lead"] = round((time.perf_counter() - clock) * 1000, 2)
    if answer.found and llm is not None:
        try:
            answer.text = llm.answer(question, retrieval.hits, numbers, lead=lead, outcome=answer.outcome)
            answer.llm_used = True
            LLM_CALLS.labels(result="ok").inc()
        except Ungrounded as exc:  # the model answered, but not only what its pages say: the gate's answer serves
            LLM_CALLS.labels(result="set_aside").inc()
            LLM_SET_ASIDE.labels(reason=exc.reason).inc()
            log.warning("the language model's answer was set aside (%s); the extractive answer serves", exc.reason)
            answer.note = messages.model_set_aside(exc.detail)
            answer.signals = {**answer.signals, "llm_set_aside": exc.reason}
        except Exception as exc:  # any model failure falls back, with a note, never silence
            LLM_CALLS.labels(result="failed").inc()
            reason = _reason(exc)
            log.warning("the language model did not answer (%s); the extractive answer serves", reason)
            answer.note = messages.model_failed(reason)
        if answer.llm_used and says_not_found(answer.text):
            answer.outcome = Outcome.NOT_FOUND  # the passages were near, but the model found no answer in them
            answer.signals = {**answer.signals, "llm_not_found": True}
    if not answer.found:
        answer.text = messages.not_found(bool(sources))
        answer.lead = ""
        answer.answer_span = None
    elif not answer.text:
        answer.text = extractive_text(retrieval.hits, numbers, lead)
    if answer.outcome == Outcome.UNCERTAIN:
        first = lead[0].n if lead else sources[0].n
        answer.text = messages.uncertain_line(first) + "\n\n" + answer.text
    timings["answer"] = round((time.perf_counter() - clock) * 1000, 2)
    timings["total"] = round((time.perf_counter() - started) * 1000, 2)
    return answer


def _given(found: Given | Offered | None) -> TypeIs[Given]:
    """Whether the lookup gave a verified answer (rather than offered one, or found none)."""
    from bot.verified import Given

    return isinstance(found, Given)


def _give_verified(index: Index, answer: Answer, given: Given, scopes: list[str] | None) -> None:
    """`answer` becomes the verified one: its text with who verified it and when, the pages it
    cites that the asker may see first among the sources, then the wiki's own when the wiki had
    any (the nearest pages of a question it found nothing for are no sources of this answer)."""
    from bot.verified import verified_text

    first = cited_sources(index, given.answer, scopes)
    shown = {s.doc_id for s in first}
    wiki = answer.sources if answer.found else []  # the wiki's own outcome, before it is the verified one's
    answer.sources = [*first, *(s for s in wiki if s.doc_id not in shown)]
    for n, source in enumerate(answer.sources, start=1):
        source.n = n
    answer.verified = given.answer
    answer.text = verified_text(given.answer)
    answer.outcome, answer.lead, answer.answer_span = Outcome.ANSWERED, "", None
    answer.signals = {**answer.signals, "verified_id": given.answer.id, "verified_similarity": given.similarity,
                      "verified_question": given.question}


def cited_sources(index: Index, verified: VerifiedAnswer, scopes: list[str] | None) -> list[Source]:
    """The pages a verified answer cites that are indexed and visible in `scopes` (None: all), as
    sources in the order it cites them, numbered from 1 — wherever a verified answer is given
    (asked, or taken when offered: `bot.slack.listeners.verified_offer`)."""
    from indexing.storage import document_queries

    cited = [c.doc_id for c in verified.cites]
    with index.read_session() as s:
        rows = document_queries.by_id(s, cited, indexed_only=True)
    pages = [rows[c] for c in cited if c in rows and (scopes is None or rows[c].access in scopes)]
    return [Source(n=n, doc_id=d.id, source=d.source, path=d.path, title=d.title or d.path, heading_path=HeadingPath([]),
                   url=d.url, score=0.0, updated_at=d.updated_at) for n, d in enumerate(pages, start=1)]


def _sources(hits: list[Hit]) -> tuple[list[Source], dict[str, int]]:
    """One numbered source per document, in rank order, citing its best section."""
    sources: list[Source] = []
    numbers: dict[str, int] = {}
    for hit in hits:
        if hit.doc_id in numbers:
            continue
        numbers[hit.doc_id] = len(sources) + 1
        sources.append(
            Source(n=len(sources) + 1, doc_id=hit.doc_id, source=hit.source, path=hit.path, title=hit.title,
                   heading_path=hit.heading_path, url=hit.url, score=hit.score, updated_at=hit.updated_at,
                   rerank=hit.rerank)
        )
    return sources, numbers


def extractive_text(hits: list[Hit], numbers: dict[str, int], lead: list[LeadSentence] | None = None) -> str:
    """The lead sentences with their [n] (when there are any), then the best passages, quoted,
    each followed by its source number."""
    parts = [render_lead(lead)] if lead else []
    for hit in hits[:QUOTED_PASSAGES]:
        passage = trim(strip_headings(hit.matched[0] if hit.matched else hit.text), QUOTE_CHARS)
        where = f"{hit.title} › {hit.heading}" if hit.heading else hit.title
        parts.append(f"*{where}* [{numbers[hit.doc_id]}]\n> " + passage.replace("\n", "\n> "))
    return "\n\n".join(parts)


def trim(text: str, limit: int) -> str:
    """Cut at a sentence or word boundary near `limit`, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    stop = max(cut.rfind(". "), cut.rfind("。"), cut.rfind("\n"))
    if stop > limit * 0.6:
        return cut[: stop + 1].rstrip() + " …"
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.6 else cut).rstrip() + " …"


def _reason(exc: Exception) -> str:
    """What the fallback note and the log say of a model failure: "timed out", our own words for a
    reply that is not a chat completion, else the exception's type (its text can hold the reply's
    body or the endpoint's URL, so neither the asker nor the log gets it)."""
    name = type(exc).__name__
    if isinstance(exc, NotAChatReply):
        return str(exc)
    return "timed out" if "timeout" in name.lower() or "timed out" in str(exc).lower() else name
