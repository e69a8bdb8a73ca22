"""Hybrid retrieval: vector ∥ BM25 over child chunks → fused per parent section → top sections.

Both legs filter by the asker's access scopes inside the search (SQL filter; BM25 mask), and no
score a question is given counts a page the asker may not see: a cosine depends on the question
and the chunk alone; BM25's statistics (chunk count, average length, document frequencies), the
IDF weights of the gate and the lead, and typo repair's word counts are all taken over the
visible chunks only (`indexing.keyword.keyword_segments`). So a restricted page is never returned, none
of its words can change the repaired question, a score or the not-found gate's signals, and none
can be learnt from a reply (tests/test_keyword_audience.py).

It can still touch the ranking in one way: the HNSW graph links every chunk, restricted ones
included, so on a large index the filtered approximate search may reach slightly different
visible neighbours than it would without them. That moves the vector leg's recall (which visible
chunks it returns, and through them the ranking, the gate's outcome and the reply), never the
score of a chunk returned, and carries none of the page's words.

A scope change is recorded for both legs in the transaction that makes it
(`ChunkStore.set_access` relabels the chunks, which the vector leg filters on from then on, and
logs a keyword change). The keyword leg takes it when the keyword version carrying it is
published (right after the sync writes that batch, or at the sync's end; every search first
catches up with the published version); until then it still counts and ranks the page under its
old scope. So every section is checked against its document's *current* scope (the registry
row, read in the same query as the section) before it is returned: a keyword index from before a
scope change can rank a page, but never show it where it is no longer visible.

Fusion is a weighted sum of each parent's best cosine and its best BM25 score (normalised by
the question's top BM25 score); reciprocal-rank fusion (k=60) remains as the `hybrid-rrf` mode
for comparison. Fused scores are relative to one question, so the not-found gate
(`indexing.search.gate`) reads raw signals instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlmodel import col, select

from indexing.values.heading_path import HeadingPath
from indexing.values.hits import Hit
from indexing.search.gate import (
    GateSignals,
    Outcome,
    QuestionTerms,
    gate_outcome,
    gate_signals,
    is_cjk,
    question_terms,
)
from indexing.search.searched_index import SearchedIndex
from indexing.storage.index_tables import DocumentRecord, ParentSection
from indexing.search.rerank import RerankRun
from indexing.search.spelling import Repair, repair_question
from indexing.values.hits import ChunkHit
from indexing.keyword.synonyms import Expansion

MODES = ("hybrid", "hybrid-rrf", "vector", "bm25")


@dataclass
class Retrieval:
    question: str
    hits: list[Hit]
    signals: GateSignals = field(default_factory=GateSignals)  # the gate's raw inputs
    terms: QuestionTerms = field(default_factory=QuestionTerms)  # the question's terms and their IDF here
    timings_ms: dict[str, float] = field(default_factory=dict)
    outcome: Outcome = Outcome.ANSWERED  # uncertain: the wiki may have it
    repair: Repair | None = None  # the question as searched, typos repaired (`indexing.search.spelling`)
    # `searched` as the vector leg embedded it (None: no vector leg); the lead's cosines reuse it
    question_vector: list[float] | None = None
    expansion: Expansion = field(default_factory=Expansion)  # synonyms the keyword leg added (`indexing.keyword.synonyms`)
    rerank: RerankRun | None = None  # what the rerank stage did (None: off, or nothing to rerank)

    @property
    def found(self) -> bool:
        return self.outcome.found

    @property
    def searched(self) -> str:
        """The question as both legs, the gate and the lead read it."""
        return self.repair.text if self.repair else self.question

    @property
    def searched_for(self) -> str | None:
        """What the reply's "Searched for …" shows: the repaired question and the synonyms added;
        None when the question was searched as asked."""
        if not self.expansion:
            return self.searched if self.searched != self.question else None
        return f"{self.searched} (synonyms: {self.expansion.describe()})"


def retrieve(
    index: SearchedIndex,
    question: str,
    scopes: list[str] | None = None,
    top_k: int | None = None,
    mode: str = "hybrid",
) -> Retrieval:
    """Find the sections that answer `question`, among the scopes the asker may see (None: all)."""
    cfg = index.config
    top_k = top_k or cfg.top_k
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round((now - clock) * 1000, 2)
        clock = now

    repair = repair_question(index, question, scopes) if cfg.typo_repair else Repair(question)
    searched = repair.text  # the question as both legs, the gate and the lead read it
    expansion = cfg.synonyms.expand(searched) if cfg.synonyms else Expansion()  # after repair: keys match repaired words
    expansion = expansion.visible(lambda terms: index.bm25.doc_freq(terms, scopes))  # never a hidden page's words
    lap("spelling")
    dense: list[ChunkHit] = []
    keyword: list[ChunkHit] = []
    embedding: list[float] | None = None
    if mode != "bm25":
        embedding = index.embedder.embed_query(expansion.vector_text(searched) if cfg.synonyms_in_vector else searched)
        lap("embed")
        dense = index.store.dense_search(embedding, scopes, cfg.vector_candidates)
        lap("vector")
    if mode != "vector":
        keyword = index.bm25.search(searched, scopes, cfg.bm25_candidates, expansion.terms)
        lap("bm25")

    if mode == "hybrid-rrf":
        parent_score, by_parent = rrf_parents(dense, keyword, cfg.rrf_k)
    else:
        alpha = {"vector": 1.0, "bm25": 0.0}.get(mode, cfg.vector_weight_cjk if is_cjk(searched) else cfg.vector_weight)
        parent_score, by_parent = score_parents(dense, keyword, alpha)
    stage = index.rerank  # indexing.search.rerank: None when KB_RERANK is off
    hits = _parents(index, parent_score, by_parent, dense, keyword, max(top_k, stage.top_n) if stage else top_k, scopes)
    terms = question_terms(index, searched, scopes)
    signals = gate_signals(searched, terms, dense, keyword, hits)  # of the fused order: the gate a fallback keeps
    lap("fuse")
    run = None
    if stage is not None and hits:
        hits, signals, run = stage.rerank(searched, hits, signals)
        lap("rerank")
    hits = hits[:top_k]
    outcome = gate_outcome(signals, cfg, stage.gate if stage else None) if hits else Outcome.NOT_FOUND
    timings["retrieval_total"] = round(sum(timings.values()), 2)
    return Retrieval(question=question, hits=hits, signals=signals,
                     terms=terms, timings_ms=timings, outcome=outcome, repair=repair, question_vector=embedding,
                     expansion=expansion, rerank=run)


def score_parents(dense: list[ChunkHit], keyword: list[ChunkHit], alpha: float) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Score fusion at the parent level: α · best cosine + (1 − α)/2 · best BM25 / top BM25.

    A parent the vector leg did not return gets the lowest cosine that leg did return (its true
    cosine is lower still). Measured against reciprocal-rank fusion on four labelled sets, this
    ranks better everywhere (docs/tuning.md): RRF throws away how *much* better the best match
    is, which matters when one leg is clearly right.
    """
    cosine = _best_per_parent(dense)
    top_bm25 = max((h.score for h in keyword), default=0.0) or 1.0
    bm25 = {pid: score / top_bm25 for pid, score in _best_per_parent(keyword).items()}
    floor = min(cosine.values(), default=0.0)
    scores = {pid: alpha * cosine.get(pid, floor) + (1 - alpha) / 2 * bm25.get(pid, 0.0) for pid in {*cosine, *bm25}}
    child_cos = {h.node_id: h.score for h in dense}
    child_bm25 = {h.node_id: h.score / top_bm25 for h in keyword}
    child_floor = min(child_cos.values(), default=0.0)
    child = {c: alpha * child_cos.get(c, child_floor) + (1 - alpha) / 2 * child_bm25.get(c, 0.0)
             for c in {*child_cos, *child_bm25}}
    return scores, _children_by_parent(child, dense, keyword)


def rrf_parents(dense: list[ChunkHit], keyword: list[ChunkHit], k: int) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Reciprocal-rank fusion of children (Σ 1 / (k + rank)); a parent scores as its best child.

    Kept as the `hybrid-rrf` mode so `kb eval --compare` measures score fusion against it.
    """
    child: dict[str, float] = {}
    for leg in (dense, keyword):
        for rank, hit in enumerate(leg, start=1):
            child[hit.node_id] = child.get(hit.node_id, 0.0) + 1.0 / (k + rank)
    by_parent = _children_by_parent(child, dense, keyword)
    return {pid: child[kids[0]] for pid, kids in by_parent.items()}, by_parent


def _best_per_parent(hits: list[ChunkHit]) -> dict[str, float]:
    best: dict[str, float] = {}
    for h in hits:
        pid = h.metadata["parent_id"]
        best[pid] = max(best.get(pid, float("-inf")), h.score)
    return best


def _children_by_parent(child: dict[str, float], dense: list[ChunkHit], keyword: list[ChunkHit]) -> dict[str, list[str]]:
    """Each parent's matching children, best child score first (the passage an answer quotes)."""
    parent_of = {h.node_id: h.metadata["parent_id"] for h in [*dense, *keyword]}
    kids: dict[str, list[str]] = {}
    for node_id in sorted(child, key=lambda c: (-child[c], c)):  # ties by id: the same order in every process
        kids.setdefault(parent_of[node_id], []).append(node_id)
    return kids


def _parents(
    index: SearchedIndex, parent_score: dict[str, float], by_parent: dict[str, list[str]],
    dense: list[ChunkHit], keyword: list[ChunkHit], top_k: int, scopes: list[str] | None = None,
) -> list[Hit]:
    """The top parents with their text, document details and raw signals — only of documents whose
    current access scope is among `scopes` (None: all)."""
    cosine = {h.node_id: h.score for h in dense}
    bm25 = {h.node_id: h.score for h in keyword}
    best = sorted(parent_score, key=lambda p: (-parent_score[p], p))[:top_k]  # ties by id, not by set order
    if not best:
        return []
    with index.read_session() as s:
        sections = {p.id: p for p in s.exec(select(ParentSection).where(col(ParentSection.id).in_(best)))}
        doc_ids = {p.doc_id for p in sections.values()}
        docs = {d.id: d for d in s.exec(select(DocumentRecord).where(col(DocumentRecord.id).in_(doc_ids)))}
        texts = index.store.texts(s, [c for pid in best for c in by_parent[pid]])
    hits = []
    for pid in best:
        section, kids = sections.get(pid), by_parent[pid]
        if section is None or section.doc_id not in docs:
            continue  # deleted between the search and now
        doc = docs[section.doc_id]
        if scopes is not None and doc.access not in scopes:
            continue  # its scope changed since a leg's index was built: not visible here any more
        hits.append(
            Hit(
                parent_id=pid,
                doc_id=doc.id,
                source=doc.source,
                path=doc.path,
                title=doc.title,
                heading_path=HeadingPath(section.heading_path or ()),
                url=section.url or doc.url,
                text=section.text,
                matched=[texts[c] for c in kids if c in texts],
                updated_at=doc.updated_at,
                score=round(parent_score[pid], 6),
                cosine=max((cosine[c] for c in kids if c in cosine), default=None),
                bm25=max((bm25[c] for c in kids if c in bm25), default=None),
            )
        )
    return hits
