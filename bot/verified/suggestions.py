"""Questions that took a verified answer when Docent offered it: one more way of asking, for a
verifier to add.

The matcher gives a verified answer only to a question that agrees with it word for word where
it matters (`bot.verified.matching`); a question worded otherwise — "visitor" for "guest", a
rewording the model does not place close — is *offered* it instead: the asker sees the verified
question beside the wiki's answer and may take it (Slack's "Show it" button). Each one taken in
a channel is recorded here. A verifier adds it as one more of the answer's questions — from then
on that wording is *given* the answer — or dismisses it (a near miss someone took anyway).
Nothing is added without a verifier: an asker who takes the Lisbon answer for a Portland
question must not teach Docent that Portland is Lisbon. Questions from direct messages and
private conversations are not recorded: a verifier would read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session, col, select

from bot.verified import store
from bot.verified.records import VerifiedAnswerRow, VerifiedSuggestionRow
from bot.verified.store import Change, VerifiedError
from indexing.storage import utcnow
from indexing.vectors import Embedder

MAX_QUESTION_CHARS = 500  # a longer question is no wording to add


@dataclass(frozen=True)
class Suggestion:
    id: int
    answer_id: int
    verified_question: str  # the answer's first question, to tell which answer it is
    question: str  # as the asker wrote it
    asked_by: str
    channel_id: str | None
    asked_at: datetime
    status: str  # "open", "added" or "dismissed"

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "answer_id": self.answer_id, "verified_question": self.verified_question,
                "question": self.question, "asked_by": self.asked_by, "channel": self.channel_id,
                "asked_at": self.asked_at.isoformat(), "status": self.status}


def suggest(session: Session, answer_id: int, question: str, asked_by: str, channel_id: str | None) -> int | None:
    """Record that `question` took verified answer `answer_id` when offered; its id, or None when
    there is nothing to suggest: the answer is gone or retired, the wording is already one of its
    questions, or was suggested before (then it is not suggested again, whatever became of it).
    The caller commits."""
    question = " ".join(question.split())[:MAX_QUESTION_CHARS]
    answer = session.get(VerifiedAnswerRow, answer_id)
    if not question or answer is None or answer.retired_at is not None:
        return None
    if question.casefold() in {q.casefold() for q in store.questions(session, [answer_id]).get(answer_id, [])}:
        return None
    row = session.execute(insert(VerifiedSuggestionRow).values(
        answer_id=answer_id, question=question, asked_by=asked_by, channel_id=channel_id, asked_at=utcnow(),
        status="open").on_conflict_do_nothing().returning(col(VerifiedSuggestionRow.id))).first()
    return None if row is None else int(row[0])


def listing(session: Session, *, status: str | None = "open", answer_ids: Sequence[int] | None = None,
            limit: int = 200) -> list[Suggestion]:
    """Suggestions, oldest first: open ones (or all with `status=None`) of live answers."""
    S, A = VerifiedSuggestionRow, VerifiedAnswerRow
    query = (select(S).join(A, col(A.id) == col(S.answer_id)).where(col(A.retired_at).is_(None))
             .order_by(col(S.id)).limit(limit))
    if status is not None:
        query = query.where(S.status == status)
    if answer_ids is not None:
        query = query.where(col(S.answer_id).in_(list(answer_ids)))
    rows = list(session.exec(query).all())
    return [_value(r, first) for r, first in zip(rows, _first_questions(session, [r.answer_id for r in rows]))]


def get(session: Session, suggestion_id: int) -> Suggestion | None:
    row = session.get(VerifiedSuggestionRow, suggestion_id)
    return None if row is None else _value(row, _first_questions(session, [row.answer_id])[0])


def accept(session: Session, embedder: Embedder, suggestion_id: int, change: Change) -> Suggestion:
    """Add the suggestion's wording to its answer's questions (given from now on, in every process:
    the answer's revision moves) and mark it added. The caller commits."""
    row = _open_row(session, suggestion_id)
    store.add_questions(session, embedder, row.answer_id, [row.question])
    return _resolve(session, row, "added", change)


def dismiss(session: Session, suggestion_id: int, change: Change) -> Suggestion:
    """Leave the answer as it is; the wording is not suggested again. The caller commits."""
    return _resolve(session, _open_row(session, suggestion_id), "dismissed", change)


def _open_row(session: Session, suggestion_id: int) -> VerifiedSuggestionRow:
    row = session.get(VerifiedSuggestionRow, suggestion_id)
    if row is None:
        raise VerifiedError(f"no suggested question {suggestion_id}")
    if row.status != "open":
        raise VerifiedError(f"suggested question {suggestion_id} was {row.status} already")
    answer = session.get(VerifiedAnswerRow, row.answer_id)
    if answer is None or answer.retired_at is not None:
        raise VerifiedError(f"verified answer {row.answer_id} is retired")
    return row


def _resolve(session: Session, row: VerifiedSuggestionRow, status: str, change: Change) -> Suggestion:
    row.status, row.resolved_by, row.resolved_at = status, change.actor, utcnow()
    session.add(row)
    session.flush()
    return _value(row, _first_questions(session, [row.answer_id])[0])


def _first_questions(session: Session, answer_ids: list[int]) -> list[str]:
    """Each answer's first question, in the order of `answer_ids`."""
    found = store.questions(session, answer_ids)
    return [found[a][0] if found.get(a) else "" for a in answer_ids]


def _value(row: VerifiedSuggestionRow, verified_question: str) -> Suggestion:
    assert row.id is not None
    return Suggestion(row.id, row.answer_id, verified_question, row.question, row.asked_by, row.channel_id,
                      row.asked_at, row.status)
