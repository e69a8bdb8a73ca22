"""The gaps report: what the wiki could not answer, what was voted down, what is cited but old.

Pure computation over the query log, the votes and the document registry — no Slack, no
rendering — so `kb gaps`, the admin's App Home and the weekly digest show the same numbers:

- this period against the one before (by default the last 7 days and the 7 before): questions,
  answered / uncertain / not found / failed, 👍 / 👎;
- the top unanswered questions (not found or uncertain) grouped by meaning: wordings that are the
  same once case and spacing are ignored are one question; the rest are clustered on their
  embeddings with the bundled model (cosine ≥ `SAME_QUESTION`, greedy, most asked first), so
  near-duplicates count together and each group shows one example;
- the most down-voted answers, with the reasons given in the 👎 form;
- pages cited often in the period whose page has not changed for `STALE_DAYS`;
- synonym candidates: words of questions that were not answered or voted 👎 which the visible
  wiki never uses but the dictionary knows (so typo repair leaves them alone) — "vacation" where
  the wiki says "annual leave" — counted, with the questions they came from: what a wiki owner
  adds to the sources file's `[synonyms]` (`indexing.keyword.synonyms`), or to a page;
- answered by people, missing from the wiki: questions Docent handed over that a person then
  answered in the thread, added with "Add to the wiki's gaps" (`bot.slack.listeners.answered_gaps`,
  `bot.records.question_log.AnsweredGap`) — the question, the answer as said in that channel, who answered,
  the thread link; `kb gaps --drafts DIR` writes each as a draft page (`bot.records.gap_drafts`).

`scopes` limits the page titles to documents of those access scopes (the digest passes the scopes
visible in its channel); `listing` (`bot.records.gap_listing`) decides whose questions and answers by people
are listed where the report is shown — none of a private channel's unless the operator opts in,
none of a channel that sees more than the readers do (the App Home applies it to the answers by
people, `GapsReport.answers_visible_in`). Counts are counts of every question.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from cachetools import LRUCache

from bot.records.gap_listing import Listing
from indexing.vectors import Embedder
from indexing.search import Outcome
from indexing.index import Index
from indexing.storage import utcnow

if TYPE_CHECKING:
    from bot.records.question_log import Feedback, QueryLog
    from indexing.storage import DocumentRow

SAME_QUESTION = 0.8  # cosine of two wordings of one question (MiniLM); a starting point, not fitted
STALE_DAYS = 180
MAX_CLUSTERED = 1000  # the most recent unanswered questions of a period that are clustered
VECTORS_KEPT = 20_000  # question vectors remembered in this process (never stored: questions are personal)
TOP = 10
MIN_WORD = 3  # shorter words are too often abbreviations or fragments to suggest as synonyms
COMMON_WORDS = 300  # pyspellchecker's most frequent words ("many", "take", "home") are never candidates
EXAMPLES = 3  # questions shown per synonym candidate
_WORD = re.compile(r"(?<![A-Za-z0-9_'’])[A-Za-z]+(?![A-Za-z0-9_'’])")  # a whole word, as typo repair reads one


@dataclass
class Period:
    """Counts for one stretch of time, [start, end)."""

    start: datetime
    end: datetime
    questions: int = 0
    answered: int = 0
    uncertain: int = 0
    not_found: int = 0
    failed: int = 0  # the bot apologised (an error reference) instead of answering
    up: int = 0
    down: int = 0


@dataclass
class QuestionGroup:
    """Questions that ask the same thing: one example wording and how often it was asked."""

    example: str
    count: int
    askers: int
    not_found: int
    uncertain: int
    last_asked: datetime
    wordings: int  # distinct wordings counted together


@dataclass
class DownVoted:
    """An answer voted down, with the question it answered and the reasons people gave."""

    answer_id: str
    question: str
    down: int
    up: int
    reasons: list[str]
    outcome: str
    cited: list[str]  # titles of the pages it cited (only those in the report's scopes)


@dataclass
class StalePage:
    """A page answers often but has not changed in a long time: worth a look by its owner."""

    doc_id: str
    title: str
    url: str
    citations: int
    updated_at: datetime | None
    age_days: int | None


@dataclass
class SynonymCandidate:
    """A word people ask with that the visible wiki never uses, in questions it failed."""

    word: str
    questions: int  # unanswered or 👎 questions holding it
    askers: int
    not_found: int
    uncertain: int
    down_voted: int
    examples: list[str]  # up to `EXAMPLES` of those questions, most recent first


@dataclass
class AnsweredByPeople:
    """A question the wiki had no answer to, answered by a person in a handed-over thread: only
    what was said in that channel, and where."""

    question: str
    answer: str
    answered_by: str  # Slack user ids
    asked_by: str
    added_by: str
    channel: str
    thread_ts: str
    permalink: str
    answered_at: datetime
    added_at: datetime
    scopes: list[str]  # visible in that channel when it was added: it is shown only where all are
    channel_kind: str = ""  # public / private (`bot.records.question_log.ChannelKind`); "": added before kinds were kept


@dataclass
class GapsReport:
    generated_at: datetime
    days: int
    stale_days: int
    current: Period
    previous: Period
    unanswered: list[QuestionGroup] = field(default_factory=list)
    down_voted: list[DownVoted] = field(default_factory=list)
    stale_pages: list[StalePage] = field(default_factory=list)
    synonym_candidates: list[SynonymCandidate] = field(default_factory=list)
    answered_by_people: list[AnsweredByPeople] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {key: _jsonable(value) for key, value in asdict(self).items()}

    def answers_visible_in(self, scopes: Iterable[str] | None, include_private: bool = False) -> GapsReport:
        """The report with only the answers by people `Listing` allows where `scopes` are visible."""
        from dataclasses import replace

        listing = Listing(None if scopes is None else frozenset(scopes), include_private)
        return replace(self, answered_by_people=[a for a in self.answered_by_people
                                                 if listing.answer(a.scopes, a.channel_kind)])


def gaps_report(index: Index, days: int = 7, *, now: datetime | None = None, scopes: list[str] | None = None,
                top: int = TOP, stale_days: int = STALE_DAYS, listing: Listing | None = None) -> GapsReport:
    """The report for the last `days` days (and the `days` before, for comparison). `listing`:
    whose questions and answers may be listed (None: as `scopes` says, kinds by `Listing`'s default)."""
    if days < 1:
        raise ValueError("days must be at least 1")
    now = now or utcnow()
    start = now - timedelta(days=days)
    before = start - timedelta(days=days)
    rows = _questions(index, before, now)
    current_rows = [r for r in rows if r.created_at >= start]
    votes = _votes(index, before, now)
    access = _documents(index)
    visible = (lambda doc_id: doc_id in access) if scopes is None else (
        lambda doc_id: doc_id in access and access[doc_id].access in scopes)
    listing = listing or (Listing.everything() if scopes is None else Listing(frozenset(scopes)))
    listed = [r for r in current_rows if listing.question(r.channel_id, r.channel_kind)]
    return GapsReport(
        generated_at=now, days=days, stale_days=stale_days,
        current=_period(start, now, current_rows, votes),
        previous=_period(before, start, [r for r in rows if r.created_at < start], votes),
        unanswered=group_unanswered(index, listed)[:top],
        down_voted=_down_voted(index, votes, start, access, visible, listing)[:top],
        stale_pages=_stale(current_rows, access, visible, now, stale_days)[:top],
        synonym_candidates=synonym_candidates(index, listed, votes, start, scopes)[:top],
        answered_by_people=[a for a in answered_by_people(index, start, now) if listing.answer(a.scopes, a.channel_kind)],
    )


def answered_by_people(index: Index, since: datetime, until: datetime) -> list[AnsweredByPeople]:
    """The gaps people answered, added in [since, until), newest first (`kb gaps --drafts` too)."""
    from bot.records.question_log import answered_gaps

    return [AnsweredByPeople(question=g.question, answer=g.answer, answered_by=g.answered_by, asked_by=g.asked_by,
                             added_by=g.added_by, channel=g.channel_id, thread_ts=g.thread_ts, permalink=g.permalink,
                             answered_at=g.answered_at, added_at=g.added_at, scopes=list(g.scopes or []),
                             channel_kind=g.channel_kind or "")
            for g in answered_gaps(index, since, until)]


# -- reading ----------------------------------------------------------------------------------


def _questions(index: Index, since: datetime, until: datetime) -> list[QueryLog]:
    from sqlmodel import col, select

    from bot.records.question_log import QueryLog

    with index.session() as s:
        return list(s.exec(select(QueryLog).where(QueryLog.created_at >= since, QueryLog.created_at < until)
                           .order_by(col(QueryLog.created_at).desc())))


def _votes(index: Index, since: datetime, until: datetime) -> list[Feedback]:
    from sqlmodel import select

    from bot.records.question_log import Feedback

    with index.session() as s:
        return list(s.exec(select(Feedback).where(Feedback.updated_at >= since, Feedback.updated_at < until)))


def _documents(index: Index) -> dict[str, DocumentRow]:
    from indexing.storage import document_queries

    with index.session() as s:
        return document_queries.every_page(s)


# -- computing --------------------------------------------------------------------------------


def _period(start: datetime, end: datetime, rows: list[QueryLog], votes: list[Feedback]) -> Period:
    period = Period(start=start, end=end, questions=len(rows))
    for row in rows:
        if row.answer_id is None:
            period.failed += 1
        elif Outcome.logged(row.outcome, row.found) == Outcome.UNCERTAIN:
            period.uncertain += 1
        elif Outcome.logged(row.outcome, row.found) == Outcome.NOT_FOUND:
            period.not_found += 1
        else:
            period.answered += 1
    for vote in votes:
        if start <= vote.updated_at < end:
            period.up += vote.vote == "up"
            period.down += vote.vote == "down"
    return period


def unanswered(row: QueryLog) -> bool:
    return row.answer_id is not None and Outcome.logged(row.outcome, row.found) != Outcome.ANSWERED


def normalised(question: str) -> str:
    return " ".join(question.casefold().replace("?", " ").split())


def group_unanswered(index: Index, rows: list[QueryLog]) -> list[QuestionGroup]:
    """Unanswered questions grouped by meaning, most asked first (see the module docstring)."""
    by_wording: dict[str, list[QueryLog]] = defaultdict(list)
    for row in [r for r in rows if unanswered(r)][:MAX_CLUSTERED]:
        by_wording[normalised(row.question)].append(row)
    wordings = sorted(by_wording, key=lambda w: (-len(by_wording[w]), w))
    clusters = cluster(wordings, question_vectors(index.embedder, wordings) if len(wordings) > 1 else [[1.0]] * len(wordings))
    groups = []
    for members in clusters:
        asked = [row for w in members for row in by_wording[w]]
        example = Counter(row.question for row in by_wording[members[0]]).most_common(1)[0][0]  # ties: the latest
        groups.append(QuestionGroup(
            example=example, count=len(asked), askers=len({r.user_id for r in asked}),
            not_found=sum(r.outcome != Outcome.UNCERTAIN for r in asked),
            uncertain=sum(r.outcome == Outcome.UNCERTAIN for r in asked),
            last_asked=max(r.created_at for r in asked), wordings=len(members)))
    return sorted(groups, key=lambda g: (-g.count, -g.askers, g.example))


_vectors: LRUCache[tuple[str, str], list[float]] = LRUCache(maxsize=VECTORS_KEPT)
_vectors_lock = threading.Lock()


def question_vectors(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """Embeddings of question wordings; a wording seen before in this process is not embedded again
    (the App Home and the digest recompute the report often; the model is the slow part)."""
    name = getattr(embedder, "name", "")
    with _vectors_lock:
        missing = [t for t in texts if (name, t) not in _vectors]
    fresh = dict(zip(missing, embedder.embed_unindexed(missing))) if missing else {}
    with _vectors_lock:
        for text, vector in fresh.items():
            _vectors[(name, text)] = vector  # the least recently used out
        return [fresh.get(t) or _vectors[(name, t)] for t in texts]  # read: the most recently used


def cluster(texts: list[str], vectors: list[list[float]], threshold: float = SAME_QUESTION) -> list[list[str]]:
    """Greedy clustering, in the order given (most asked first): each text joins the first group
    whose first member it is at least `threshold` similar to, else starts a group. The first
    member, the most asked wording, is the group's example."""
    import numpy as np

    if not texts:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    heads: list[int] = []
    groups: list[list[str]] = []
    for i, text in enumerate(texts):
        if heads:
            similarity = matrix[heads] @ matrix[i]
            best = int(np.argmax(similarity))
            if similarity[best] >= threshold:
                groups[best].append(text)
                continue
        heads.append(i)
        groups.append([text])
    return groups


def _down_voted(index: Index, votes: list[Feedback], start: datetime, access: dict[str, DocumentRow],
                visible: Callable[[str], bool], listing: Listing) -> list[DownVoted]:
    from bot.records.question_log import find_answer

    by_answer: dict[str, list[Feedback]] = defaultdict(list)
    for vote in votes:
        by_answer[vote.answer_id].append(vote)
    downs = {a: v for a, v in by_answer.items() if any(x.vote == "down" and x.updated_at >= start for x in v)}
    result = []
    for answer_id, answer_votes in downs.items():
        row = find_answer(index, answer_id)
        if row is not None and not listing.question(row.channel_id, row.channel_kind):
            continue
        result.append(DownVoted(
            answer_id=answer_id, question=row.question if row else "(no longer in the query log)",
            down=sum(v.vote == "down" for v in answer_votes), up=sum(v.vote == "up" for v in answer_votes),
            reasons=[v.reason for v in answer_votes if v.vote == "down" and v.reason],
            outcome=(row.outcome if row else "") or "",
            cited=[access[d].title or d for d in (row.doc_ids if row else []) if visible(d)]))
    return sorted(result, key=lambda d: (-d.down, d.up, d.question))


def _stale(rows: list[QueryLog], access: dict[str, DocumentRow], visible: Callable[[str], bool], now: datetime,
           stale_days: int) -> list[StalePage]:
    cited = Counter(d for row in rows if row.answer_id and row.outcome in (Outcome.ANSWERED, Outcome.UNCERTAIN)
                    for d in row.doc_ids)
    pages = []
    for doc_id, citations in cited.items():
        doc = access.get(doc_id)
        if doc is None or not visible(doc_id):
            continue
        age = (now - doc.updated_at).days if doc.updated_at else None
        if age is not None and age < stale_days:
            continue
        pages.append(StalePage(doc_id=doc_id, title=doc.title or doc.path, url=doc.url, citations=citations,
                               updated_at=doc.updated_at, age_days=age))
    return sorted(pages, key=lambda p: (-p.citations, -(p.age_days or 0), p.doc_id))


def synonym_candidates(index: Index, rows: list[QueryLog], votes: list[Feedback], start: datetime,
                       scopes: list[str] | None = None) -> list[SynonymCandidate]:
    """Words of the failed questions (not found, uncertain, or voted 👎 since `start`) that no
    page in `scopes` uses, counted by the keyword leg's stem ("vacation" and "vacations" are one
    word, shown as it was typed most). A word counts when pyspellchecker's English list knows it
    (a typo or a name is not a synonym to add) but not among its `COMMON_WORDS` most frequent
    ("many", "take", "bring": no wiki owner maps those), when it is no function word, and when it
    is not a `[synonyms]` key already. Most asked first."""
    from indexing.keyword import bm25

    down = {v.answer_id for v in votes if v.vote == "down" and v.updated_at >= start}
    failed = [r for r in rows if unanswered(r) or (r.answer_id is not None and r.answer_id in down)]
    if not failed:
        return []
    dictionary, common = _dictionary()
    typed = [[w.lower() for w in _WORD.findall(r.question)] for r in failed]
    words = sorted({w for ws in typed for w in ws if len(w) >= MIN_WORD and w in dictionary
                    and w not in common and w not in bm25.QUESTION_WORDS})
    stem_of = {w: t[0] for w, t in zip(words, bm25.tokens_of_each(words)) if len(t) == 1}  # stop words: no stem
    synonyms = index.config.synonyms
    keys = synonyms.keys() if synonyms else set()
    used = index.bm25.doc_freq(set(stem_of.values()), scopes)
    unused = {w: stem for w, stem in stem_of.items() if not used[stem] and stem not in keys}
    asked: dict[str, list[QueryLog]] = defaultdict(list)  # stem → failed rows holding it, most recent first
    spellings: dict[str, Counter[str]] = defaultdict(Counter)
    for row, words_typed in zip(failed, typed):
        stems = {}
        for word in words_typed:
            if word in unused:
                stems[unused[word]] = word
                spellings[unused[word]][word] += 1
        for stem in stems:
            asked[stem].append(row)
    candidates = [SynonymCandidate(
        word=min(spellings[stem], key=lambda w: (-spellings[stem][w], len(w), w)),
        questions=len(rows_), askers=len({r.user_id for r in rows_}),
        not_found=sum(Outcome.logged(r.outcome, r.found) == Outcome.NOT_FOUND for r in rows_),
        uncertain=sum(r.outcome == Outcome.UNCERTAIN for r in rows_),
        down_voted=sum(r.answer_id in down for r in rows_),
        examples=list(dict.fromkeys(r.question for r in rows_))[:EXAMPLES]) for stem, rows_ in asked.items()]
    return sorted(candidates, key=lambda c: (-c.questions, -c.askers, c.word))


@lru_cache(maxsize=1)
def _dictionary() -> tuple[frozenset[str], frozenset[str]]:
    """Typo repair's English word list, and its `COMMON_WORDS` most frequent words."""
    from spellchecker import SpellChecker

    from indexing.search import english_words

    frequency = SpellChecker(language="en").word_frequency.dictionary
    return english_words(), frozenset(sorted(frequency, key=lambda w: (-frequency[w], w))[:COMMON_WORDS])


def _jsonable(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
