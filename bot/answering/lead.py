"""The one to three sentences that answer the question, chosen from the sections an answer cites.

The ranking finds the right page; the reader wants the fact. Every sentence of the best-matching
chunks of the top sections is scored by how much of the question's rare vocabulary it holds
(IDF-weighted share of the keyword leg's terms) and by how close it is in meaning to the question
(the bundled model's cosine). Only the `EMBEDDED_SENTENCES` lexically best candidates are scored
by the model (docs/benchmarks.md: the same leads on all five public sets, a fraction of the time).
Their vectors were computed when the section was synced (`indexing.vectors.sentence_vectors`: one query
for the candidates, cosine with the question vector retrieval already computed); a sentence
without a stored vector (a section indexed before they existed) is embedded now, as it always
was, and kept in this process (`SENTENCE_VECTORS`). For mostly-CJK questions the English model's
cosine says little, so the terms carry most of the weight, as in ranking. A short sentence is
scored with its section's heading in front ("Q. Does it match my 401k?: Not at this time.").

A question that asks for a time, a share or a number ("when", "what %", "how many", "多少")
prefers sentences holding one (`bot.answering.answer_types`): the oldest cue in question answering.

A sentence that cannot stand alone keeps its neighbour: one that introduces a list (ends with
":") gets the next one, a very short one or one that opens with a back-reference ("This",
"It", "They" …) gets the one before it. Sentences that score almost as well as the best are
added, up to `MAX_SENTENCES` and `MAX_CHARS`, so an answer spread over two sections shows both;
one repeating a sentence already chosen (pages copy paragraphs) is skipped. Each further
sentence is chosen for the question terms not yet shown (`COVERAGE`, the idea of maximal
marginal relevance): "when is the postmortem due and when do we go over it?" wants the
sentence about the due date after one about the meeting, not a second one about the meeting.

Sentences come from every section the answer cites (`SECTIONS`): the right page's answering
section is often not among its first three (docs/tuning.md, "The lead, third round").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from cachetools import LRUCache

from bot.answering.answer_types import asked_type, has_digits, holds
from indexing.ingest import SHORT_WORDS, Sentence, in_context, plain_sentences, word_count
from indexing.keyword import bm25
from indexing.search import Hit, is_cjk
from indexing.vectors import Embedder, stored_vectors

if TYPE_CHECKING:
    from indexing.index import Index

SECTIONS = 5  # sentences are taken from this many top sections (the sections an answer cites, kb_top_k = 5)
MATCHED_CHILDREN = 2  # sentences come from a section's best-matching chunks (the whole section if none)
SENTENCES_PER_SECTION = 40
# The "one to three sentences", chosen for their score; each may bring the neighbour it needs (MAX_CHARS bounds
# the length).
MAX_SENTENCES = 3
MAX_CHARS = 600
COSINE_WEIGHT = 0.5  # score = w · cosine + (1 − w) · rare-term share − rank penalty
COSINE_WEIGHT_CJK = 0.2
RANK_PENALTY = 0.03  # per section rank: a tie goes to the better-ranked section
NEAR_BEST = 0.15  # further sentences must score within this of the best
# A question term a chosen sentence already shows adds less to the next: (1 − w − 0.4) · its share (English: a fifth,
# Chinese: half).
COVERAGE = 0.4
# A question asking for a time, share, number, amount or address prefers sentences holding one (bot.answering.answer_types).
NUMBER_BONUS = 0.1
NEAR_DUPLICATE = 0.8  # word-set overlap (Jaccard) at which a sentence repeats one already shown
EMBEDDED_SENTENCES = 8  # only the lexically best candidates are embedded (docs/benchmarks.md: same leads, a third of the cost)
# Sentence vectors embedded at question time kept in this process (~30 MB at 384 float32s), most recent first.
CACHED_SENTENCES = 20_000
_BACK_REFERENCE = re.compile(r"^(this|these|that|those|it|its|they|their|such|he|she|there|however|also|but|so)\b",
                             re.IGNORECASE)


@dataclass
class LeadSentence:
    text: str
    n: int  # the source number to cite
    rank: int  # 0-based rank of the section it comes from
    score: float
    span: str = ""  # the words a span reader points at in it, shown in bold ("" : none)


def choose_lead(question: str, hits: list[Hit], numbers: dict[str, int], embedder: Embedder, idf: dict[str, float], *,
                question_vector: list[float] | None = None, index: Index | None = None) -> list[LeadSentence]:
    """The sentences to put first, in the order they should be read; [] when there are none.

    `idf` maps the question's terms (`bm25.tokens` of its keyword text) to their IDF in the
    visible wiki. `question_vector`: the question's vector as retrieval computed it (None: embedded
    here). `index`: where the sections' sentence vectors were stored at sync time (None: every
    sentence is embedded here)."""
    by_rank = _candidates(hits)
    flat = [(rank, i, s) for rank, found in by_rank.items() for i, s in enumerate(found)]
    if not flat:
        return []
    scores = _scores(question, hits, flat, embedder, idf, question_vector, index)
    chosen = _select(flat, scores, by_rank, idf)
    ranks_in_order = sorted({r for r, _ in chosen}, key=lambda r: -max(v for (rr, _), v in chosen.items() if rr == r))
    lead = []
    for rank in ranks_in_order:
        hit = hits[rank]
        for r, j in sorted(key for key in chosen if key[0] == rank):
            lead.append(LeadSentence(text=by_rank[r][j].text, n=numbers[hit.doc_id], rank=rank, score=round(chosen[(r, j)], 4)))
    return _span_first(lead, hits, by_rank, numbers)


def _span_first(lead: list[LeadSentence], hits: list[Hit], by_rank: dict[int, list[Sentence]],
                numbers: dict[str, int]) -> list[LeadSentence]:
    """With a span reader (`KB_RERANK=span`), the sentence holding the words it points at — in the
    section it scored best — leads, the span marked; the other chosen sentences follow while they
    fit. Without one (or when no candidate sentence holds the span) the lead is as chosen."""
    read = [(rank, hit) for rank, hit in enumerate(hits[:SECTIONS]) if hit.answer_span and hit.rerank is not None]
    if not read:
        return lead
    rank, hit = max(read, key=lambda item: (item[1].rerank or 0.0, -item[0]))
    span = hit.answer_span or ""
    found = by_rank.get(rank, [])
    holding = next((i for i, s in enumerate(found) if span in s.text), None)
    if holding is None:
        return lead
    first = [LeadSentence(text=found[j].text, n=numbers[hit.doc_id], rank=rank, score=1.0,
                          span=span if j == holding else "") for j in _with_context(found, holding)]
    shown = {s.text for s in first}
    rest = [s for s in lead if s.text not in shown and not _repeats(s.text, shown)]
    chars = sum(len(s.text) + 1 for s in first)
    for sentence in rest:
        if len(first) >= MAX_SENTENCES + 1 or chars + len(sentence.text) > MAX_CHARS:
            break
        first.append(sentence)
        chars += len(sentence.text) + 1
    return first


def _candidates(hits: list[Hit]) -> dict[int, list[Sentence]]:
    """The sentences of the top sections that could answer, by section rank: three words or more,
    or holding a number."""
    out: dict[int, list[Sentence]] = {}
    for rank, hit in enumerate(hits[:SECTIONS]):
        found = _unique(s for s in plain_sentences(_searched_text(hit), SENTENCES_PER_SECTION)
                        if word_count(s.text) >= 3 or has_digits(s.text))
        if found:
            out[rank] = found
    return out


def _scores(question: str, hits: list[Hit], flat: list[tuple[int, int, Sentence]], embedder: Embedder,
            idf: dict[str, float], question_vector: list[float] | None, index: Index | None) -> list[float]:
    """Each candidate's score: w · cosine + (1 − w) · rare-term share + answer-type bonus − rank
    penalty; −inf for those the lexical pre-filter kept from the model."""
    total = sum(idf.values())
    weight = COSINE_WEIGHT_CJK if is_cjk(question) else COSINE_WEIGHT
    asked = asked_type(question)
    scored = [_in_context(hits[rank], s) for rank, _, s in flat]
    lexical = []
    for (rank, _, s), terms in zip(flat, bm25.tokens_of_each(scored)):
        words = set(terms)
        share = sum(w for t, w in idf.items() if t in words) / total if total else 0.0
        bonus = NUMBER_BONUS if holds(s.text, asked) else 0.0
        lexical.append((1 - weight) * share + bonus - RANK_PENALTY * rank)
    # Only the lexically most promising sentences go through the model (its cost is the lead's cost).
    embedded = sorted(range(len(flat)), key=lambda k: lexical[k], reverse=True)[:EMBEDDED_SENTENCES]
    vectors = _vectors(question, question_vector, [scored[k] for k in embedded],
                       [hits[flat[k][0]].parent_id for k in embedded], embedder, index).astype(float)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-9)
    scores = [float("-inf")] * len(flat)
    for k, cosine in zip(embedded, vectors[1:] @ vectors[0]):
        scores[k] = weight * float(cosine) + lexical[k]
    return scores


def _select(flat: list[tuple[int, int, Sentence]], scores: list[float],
            by_rank: dict[int, list[Sentence]], idf: dict[str, float]) -> dict[tuple[int, int], float]:
    """The best sentences, each with the neighbour it needs: (rank, index) -> score. Greedy: the
    next seed is the one scoring best once the question terms already shown count less
    (`COVERAGE`); all must score within `NEAR_BEST` of the best."""
    order = sorted(range(len(flat)), key=lambda k: scores[k], reverse=True)
    chosen: dict[tuple[int, int], float] = {}
    seen_texts: set[str] = set()
    seeds = chars = 0
    total = sum(idf.values()) or 1.0
    held = [set(idf).intersection(terms) for terms in bm25.tokens_of_each([s.text for _, _, s in flat])]
    covered: set[str] = set()
    pool = list(order)
    while pool:
        k = max(pool, key=lambda k: scores[k] - COVERAGE * sum(idf[t] for t in held[k] & covered) / total)
        pool.remove(k)
        if scores[k] < scores[order[0]] - NEAR_BEST or seeds >= MAX_SENTENCES:
            break
        rank, i, sentence = flat[k]
        if (rank, i) in chosen or sentence.text in seen_texts or _repeats(sentence.text, seen_texts):
            continue
        group = [(rank, j) for j in _with_context(by_rank[rank], i) if (rank, j) not in chosen]
        size = sum(len(by_rank[r][j].text) + 1 for r, j in group)
        if chosen and chars + size > MAX_CHARS:
            continue
        covered |= held[k]
        for key in group:
            chosen[key] = scores[k]
            seen_texts.add(by_rank[key[0]][key[1]].text)
        seeds += 1
        chars += size
    return chosen


def _vectors(question: str, question_vector: list[float] | None, texts: list[str], parent_ids: list[str],
             embedder: Embedder, index: Index | None) -> np.ndarray:
    """The question's vector, then each text's (float32, as stored): stored at sync time where its
    section has it (one query), else embedded now through `SENTENCE_VECTORS`. Only vectors of the
    embedder that embedded the question, at its dimension, are read."""
    if question_vector is None:
        question_vector = SENTENCE_VECTORS.vectors(embedder, [question])[0]
    asked = np.asarray(question_vector, dtype=np.float32)
    stored: dict[str, np.ndarray] = {}
    if index is not None and texts:
        with index.read_session() as s:
            stored = stored_vectors(s, embedder.name, len(asked), parent_ids, texts)
    missing = [t for t in texts if t not in stored]
    if missing:
        stored.update(zip(missing, SENTENCE_VECTORS.vectors(embedder, missing)))
    return np.stack([asked, *(stored[t] for t in texts)])


class SentenceVectors:
    """Vectors of recently scored sentences that had none stored, kept in this process only
    (answering writes nothing to the database): a section asked about again is scored without the
    model. Least recently used out first."""

    def __init__(self, size: int = CACHED_SENTENCES) -> None:
        self.size = size
        self._items: LRUCache[tuple[str, str], np.ndarray] = LRUCache(maxsize=size)
        self._lock = threading.Lock()

    def vectors(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                key = (embedder.name, text)
                vector = self._items.get(key)  # a hit is the most recently used now
                if vector is not None:
                    found[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = np.asarray(embedder.embed_unindexed(missing), dtype=np.float32)
            with self._lock:
                for text, vector in zip(missing, fresh):
                    found[text] = self._items[(embedder.name, text)] = vector  # the least recently used out
        return np.stack([found[t] for t in texts])


SENTENCE_VECTORS = SentenceVectors()


def _searched_text(hit: Hit) -> str:
    """The part of a section whose sentences are scored: its best-matching chunks, where the
    answer nearly always is. Embedding every sentence of a long section cost up to a second per
    answer on two cores (docs/history.md, tuning log §8)."""
    return "\n\n".join(hit.matched[:MATCHED_CHILDREN]) or hit.text


def _in_context(hit: Hit, sentence: Sentence) -> str:
    """The text a sentence is scored as (`indexing.values.sentences.in_context`, which the sync embeds)."""
    return in_context(hit.heading_path[-1] if hit.heading_path else hit.title, sentence.text)


def _repeats(text: str, shown: set[str]) -> bool:
    """Whether a sentence says what a shown one already says: pages copy paragraphs from each
    other ("We offer a $5,000 referral bonus…" / "We also offer a $5,000 referral bonus…"), and a
    repeat takes the place of a sentence that could hold the answer."""
    words = set(bm25.tokens(text))
    for other in shown:
        theirs = set(bm25.tokens(other))
        if words and theirs and len(words & theirs) / len(words | theirs) >= NEAR_DUPLICATE:
            return True
    return False


def _unique(found: Iterable[Sentence]) -> list[Sentence]:
    """Sentences in order, each text once (neighbouring chunks overlap), renumbered."""
    out: list[Sentence] = []
    seen: set[str] = set()
    for s in found:
        if s.text not in seen:
            seen.add(s.text)
            out.append(Sentence(text=s.text, paragraph=s.paragraph, position=len(out)))
    return out


def _with_context(found: list[Sentence], i: int) -> list[int]:
    """Sentence i, with the neighbour it needs to make sense on its own."""
    sentence = found[i]
    if sentence.text.rstrip().endswith(":") and i + 1 < len(found):
        return [i, i + 1]
    needs_before = word_count(sentence.text) < SHORT_WORDS or _BACK_REFERENCE.match(sentence.text)
    if needs_before and i > 0 and found[i - 1].paragraph == sentence.paragraph:
        return [i - 1, i]
    if word_count(sentence.text) < SHORT_WORDS and i + 1 < len(found) and found[i + 1].paragraph == sentence.paragraph:
        return [i, i + 1]
    return [i]


def render_lead(lead: list[LeadSentence]) -> str:
    """The lead as one paragraph: each source's sentences, then its [n]."""
    parts: list[str] = []
    for k, sentence in enumerate(lead):
        last_of_source = k + 1 == len(lead) or lead[k + 1].n != sentence.n
        text = sentence.text.replace(sentence.span, f"**{sentence.span}**", 1) if sentence.span.strip() else sentence.text
        parts.append(text + (f" [{sentence.n}]" if last_of_source else ""))
    return " ".join(parts)


def question_idf(index: Index, question: str, scopes: list[str] | None) -> dict[str, float]:
    """IDF in the visible wiki of each term the keyword leg searches for this question (answering
    takes it from its `Retrieval.terms`, looked up once; this is for a lead chosen on its own)."""
    from indexing.search import question_terms

    return question_terms(index, question, scopes).searched_idf()
