"""Finding the verified answer a question asks for, among those the asker may see.

Every live answer's questions and their vectors are held in memory per process, as one matrix;
each lookup first reads the table's revision (one indexed `max()` on the primary), so an answer
retired or edited in any process or replica is never given again from a stale copy. The nearest
`CANDIDATES` questions the asker may see (cosine, over the matrix) go to the matcher
(`bot.verified.matching`), which gives one only when the question means the same *and* agrees on
its key terms — never its near miss.

Memory: 384 float32 per question (1.5 kB); 10,000 answers of three questions each are ~46 MB.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from bot.verified import store
from bot.verified.matching import Candidate, decide
from bot.verified.records import VerifiedAnswer
from indexing.index import Index
from indexing.vectors import Embedder

CANDIDATES = 10
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Given:
    """A verified answer given to a question: which, by which of its questions, how close."""

    answer: VerifiedAnswer
    question: str
    similarity: float


@dataclass(frozen=True)
class Offered:
    """A verified answer the question may be asking for (`matching.decide`): refused only for its
    wording, so the asker is shown its verified question — not its text — and takes it or not."""

    answer_id: int
    question: str  # the verified question it is offered by
    similarity: float

    def to_json(self) -> dict[str, object]:
        return {"id": self.answer_id, "question": self.question}


@dataclass
class _Snapshot:
    revision: int = -1
    model: str = ""
    answer_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    questions: list[str] = field(default_factory=list)
    scopes: list[frozenset[str]] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))  # unit rows
    by_answer: dict[int, list[str]] = field(default_factory=dict)  # answer id → its questions, in order
    masks: dict[frozenset[str], np.ndarray] = field(default_factory=dict)  # visible scopes → which rows

    def visible(self, scopes: frozenset[str]) -> np.ndarray:
        """Which questions an asker seeing `scopes` may be given (an answer is visible when any of its
        scopes is), computed once per set of scopes and snapshot: askers come from few channels."""
        mask = self.masks.get(scopes)
        if mask is None:
            mask = np.fromiter((bool(s & scopes) for s in self.scopes), dtype=bool, count=len(self.scopes))
            if len(self.masks) < 1024:  # a bound: each distinct set of scopes is one bool per question
                self.masks[scopes] = mask
        return mask


class Lookup:
    """One per process (held by `KnowledgeBase`): the snapshot of live questions, reloaded when
    the revision moves."""

    def __init__(self) -> None:
        self._snapshot = _Snapshot()
        self._lock = threading.Lock()

    def find(self, db: Index, embedder: Embedder, question: str, scopes: Sequence[str] | None, *,
             vector: Sequence[float] | None = None, synonyms: Mapping[str, Sequence[str]] | None = None,
             today: date | None = None) -> Given | Offered | None:
        """The verified answer for `question` visible in `scopes` (None: every scope), else one it
        may be asking for (offered), or None.
        `vector`: the question's vector when the caller has it (retrieval embedded it already).

        Read where questions read the index (`read_session`: a hot standby when one is configured,
        so a stopped primary stops no answer). A lookup that fails gives nothing — the wiki's own
        answer serves — and says why in the log: no verified answer is ever given from a copy that
        could not be checked against the table's revision."""
        try:
            return self._find(db, embedder, question, scopes, vector, synonyms or {}, today)
        except SQLAlchemyError as exc:
            log.warning("verified answers could not be read (%s): the wiki's answer serves", type(exc).__name__)
            return None

    def _find(self, db: Index, embedder: Embedder, question: str, scopes: Sequence[str] | None,
              vector: Sequence[float] | None, synonyms: Mapping[str, Sequence[str]],
              today: date | None) -> Given | Offered | None:
        with db.read_session() as session:
            snap = self._current(db, session, embedder)
            if not snap.questions:
                return None
            query = np.asarray(vector if vector is not None else embedder.embed_query(question), dtype=np.float32)
            norm = float(np.linalg.norm(query))
            if norm == 0.0 or query.shape[0] != snap.matrix.shape[1]:
                return None
            sims = snap.matrix @ (query / norm)
            if scopes is not None:
                sims = np.where(snap.visible(frozenset(scopes)), sims, -np.inf)
            top = np.argpartition(-sims, CANDIDATES)[:CANDIDATES] if len(sims) > CANDIDATES else np.arange(len(sims))
            top = top[np.argsort(-sims[top])]
            candidates = [Candidate(int(snap.answer_ids[i]), snap.questions[i], float(sims[i]))
                          for i in top if np.isfinite(sims[i])]
            decision = decide(question, candidates, synonyms)
            match = decision.given or decision.offered
            if match is None:
                return None
            answer = store.get(session, match.answer_id, today,
                               questions=snap.by_answer.get(match.answer_id, []))
            if answer is None or answer.retired:  # retired between the snapshot and now
                return None
            if decision.given is None:
                return Offered(answer_id=answer.id, question=match.variant, similarity=round(match.similarity, 4))
            return Given(answer=answer, question=match.variant, similarity=round(match.similarity, 4))

    def _current(self, db: Index, session: Session, embedder: Embedder) -> _Snapshot:
        revision = store.revision(session)
        with self._lock:
            snap = self._snapshot
            if snap.revision == revision and snap.model == embedder.name:
                return snap
            if store.stale_questions(session, embedder.name):  # the configured model changed since they were stored
                _reembed(db, embedder)
                session.rollback()  # a new snapshot of the read server
                revision = store.revision(session)
            rows = store.live_questions(session, embedder.name)
            matrix = np.vstack([v for *_, v in rows]).astype(np.float32) if rows else np.zeros((0, 0), dtype=np.float32)
            if rows:
                matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
            self._snapshot = _Snapshot(revision=revision, model=embedder.name,
                                       answer_ids=np.asarray([a for a, *_ in rows], dtype=np.int64),
                                       questions=[q for _, q, _, _ in rows],
                                       scopes=[frozenset(s) for _, _, s, _ in rows], matrix=matrix)
            for answer_id, question, _, _ in rows:
                self._snapshot.by_answer.setdefault(answer_id, []).append(question)
            log.debug("verified answers: %d questions at revision %d", len(rows), revision)
            return self._snapshot


def _reembed(db: Index, embedder: Embedder) -> None:
    """Embed again, on the primary, the questions another model embedded; a failure (the primary
    away) leaves them out of this snapshot, to be tried at the next change."""
    try:
        with db.session() as primary:
            if store.reembed(primary, embedder):
                primary.commit()
    except SQLAlchemyError as exc:
        log.warning("verified questions of another model could not be embedded again (%s)", type(exc).__name__)
