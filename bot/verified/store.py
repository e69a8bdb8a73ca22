"""Verified answers kept: add, read, list, edit, retire — every change an admin action in the log.

Every query of `verified_answers` and `verified_questions` is here (`bot.verified.lookup` reads
the question vectors through `vectors_since`). Changes take a `Change` (who made it, and where
they asked from) so the admin log says who did what; whether they may is the caller's to decide
(`bot.verified.verifiers`) before calling.

A question's vector is embedded when it is stored, by the index's embedder; a verified answer's
questions are short, so adding one costs a few milliseconds with the model loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import numpy as np
from sqlalchemy import func, update
from sqlmodel import Session, col, select

from bot.slack.mrkdwn import SPECIAL_MENTION
from bot.verified.records import Citation, VerifiedAnswer, VerifiedAnswerRow, VerifiedQuestionRow
from indexing.storage import DocumentRow, document_queries, utcnow
from indexing.vectors import Embedder

MAX_QUESTIONS = 20  # ways of asking one answer; more is a list pasted in the wrong field
MAX_QUESTION_CHARS = 500
MAX_ANSWER_CHARS = 4000  # about a Slack section's limit; a longer answer belongs in the wiki


class VerifiedError(ValueError):
    """A verified answer that cannot be stored as asked; the message is one line for the person."""


@dataclass(frozen=True)
class Change:
    """Who changes a verified answer: a Slack user id or, from `kb answers`, a name."""

    actor: str


def clean_answer(text: str) -> str:
    """The answer as stored: trimmed, capped, and with Slack's broadcast markup (`<!here>`,
    `<!channel>`, user-group pings) reduced to inert words — a verified answer is shown to every
    asker for months, so it must never ping anyone. Shown in Slack it is escaped again as all
    text Docent did not write is (`bot.slack.mrkdwn`)."""
    text = SPECIAL_MENTION.sub(lambda m: "@" + m.group(1).split("^")[0].lower(), (text or "").strip())
    if not text:
        raise VerifiedError("the answer is empty")
    if len(text) > MAX_ANSWER_CHARS:
        raise VerifiedError(f"the answer is {len(text)} characters; at most {MAX_ANSWER_CHARS} (link a wiki page instead)")
    return text


def clean_questions(questions: Sequence[str]) -> list[str]:
    out: list[str] = []
    for q in questions:
        q = " ".join((q or "").split())
        if not q:
            continue
        if len(q) > MAX_QUESTION_CHARS:
            raise VerifiedError(f"a question of {len(q)} characters; at most {MAX_QUESTION_CHARS}")
        if q.casefold() not in {o.casefold() for o in out}:
            out.append(q)
    if not out:
        raise VerifiedError("a verified answer needs at least one question")
    if len(out) > MAX_QUESTIONS:
        raise VerifiedError(f"{len(out)} questions; at most {MAX_QUESTIONS}")
    return out


def clean_scopes(scopes: Sequence[str]) -> list[str]:
    out = sorted({s.strip() for s in scopes if s and s.strip()})
    if not out:
        raise VerifiedError("a verified answer needs at least one access scope")
    return out


def citations(db: Session, cites: Sequence[str]) -> list[Citation]:
    """`--cites` values as indexed pages: a document id (`source:path`) or a path within one
    source; each with its content hash now. An unknown or ambiguous page is an error."""
    out: list[Citation] = []
    for cite in cites:
        cite = cite.strip()
        row = document_queries.by_id(db, [cite]).get(cite)
        if row is None:
            rows = document_queries.at_path(db, cite.lstrip("./"))
            if len(rows) > 1:
                raise VerifiedError(f"{cite!r} is a page of several sources ({', '.join(sorted(r.source for r in rows))}): "
                                    f"name it as source:path")
            row = rows[0] if rows else None
        if row is None:
            raise VerifiedError(f"{cite!r} is not an indexed page (give its path, as `kb status` lists pages, or source:path)")
        if row.id not in {c.doc_id for c in out}:
            out.append(Citation(row.id, row.content_hash))
    return out


def default_review_by(days: int, today: date | None = None) -> date:
    return (today or utcnow().date()) + timedelta(days=days)


def add(session: Session, embedder: Embedder, change: Change, *, questions: Sequence[str], answer: str,
        scopes: Sequence[str], review_by: date, cites: Sequence[str] = (), verified_by: str | None = None,
        verified_at: datetime | None = None, channel_id: str | None = None, message_ts: str | None = None) -> int:
    """Store a new verified answer; returns its id. `verified_at`: now, unless it was verified
    before (an imported file). A Slack message verified again while its answer is live updates that
    answer — its questions gain the new ones, the rest is as verified now — rather than giving
    people two answers to choose from. The caller commits."""
    if channel_id and message_ts:
        again = session.exec(select(VerifiedAnswerRow).where(
            VerifiedAnswerRow.channel_id == channel_id, VerifiedAnswerRow.message_ts == message_ts,
            col(VerifiedAnswerRow.retired_at).is_(None))).first()
        if again is not None:
            assert again.id is not None
            add_questions(session, embedder, again.id, questions)
            edit(session, embedder, again.id, answer=answer, scopes=scopes, review_by=review_by,
                 reverify_by=(verified_by or change.actor).strip())
            return again.id
    row = VerifiedAnswerRow(answer=clean_answer(answer), verified_by=(verified_by or change.actor).strip(),
                            verified_at=verified_at or utcnow(), revision=_next_revision(session),
                            scopes=clean_scopes(scopes), cites=[_cite_json(c) for c in citations(session, cites)],
                            review_by=review_by, channel_id=channel_id, message_ts=message_ts)
    if not row.verified_by:
        raise VerifiedError("who verified it? (--by)")
    session.add(row)
    session.flush()
    assert row.id is not None
    _store_questions(session, embedder, row.id, clean_questions(questions))
    return row.id


def edit(session: Session, embedder: Embedder, answer_id: int, *, questions: Sequence[str] | None = None,
         answer: str | None = None, scopes: Sequence[str] | None = None, review_by: date | None = None,
         cites: Sequence[str] | None = None, reverify_by: str | None = None) -> None:
    """Change what is given; `reverify_by`: the answer is verified again now by them (a review)."""
    row = _row(session, answer_id)
    if answer is not None:
        row.answer = clean_answer(answer)
    if scopes is not None:
        row.scopes = clean_scopes(scopes)
    if review_by is not None:
        row.review_by = review_by
    if cites is not None:
        row.cites = [_cite_json(c) for c in citations(session, cites)]
    if reverify_by:
        row.verified_by, row.verified_at = reverify_by, utcnow()
        row.cites = [_cite_json(c) for c in citations(session, [c["doc"] for c in row.cites])]
    row.updated_at = utcnow()
    session.add(row)
    if questions is not None:
        session.execute(VerifiedQuestionRow.__table__.delete().where(  # type: ignore[attr-defined]
            VerifiedQuestionRow.answer_id == answer_id))
        _store_questions(session, embedder, answer_id, clean_questions(questions))
    session.flush()
    _bump(session, answer_id)


def add_questions(session: Session, embedder: Embedder, answer_id: int, wordings: Sequence[str]) -> list[str]:
    """Add to an answer the wordings it does not have yet (in any case), after its own; only those
    are embedded. Returns them (none: nothing changed)."""
    known = questions(session, [answer_id]).get(answer_id, [])
    seen = {q.casefold() for q in known}
    new = [q for q in clean_questions(wordings) if q.casefold() not in seen]
    if not new:
        return []
    clean_questions([*known, *new])  # at most MAX_QUESTIONS in all
    _store_questions(session, embedder, answer_id, new, first=len(known))
    session.flush()
    _bump(session, answer_id)
    return new


def questions(session: Session, answer_ids: Sequence[int]) -> dict[int, list[str]]:
    """Each of these answers' questions, in their order."""
    Q = VerifiedQuestionRow
    found: dict[int, list[str]] = {}
    if answer_ids:
        for answer_id, question in session.exec(select(col(Q.answer_id), col(Q.question)).where(
                col(Q.answer_id).in_(list(answer_ids))).order_by(col(Q.answer_id), col(Q.position))).all():
            found.setdefault(answer_id, []).append(question)
    return found


def retire(session: Session, answer_id: int, change: Change) -> bool:
    """Retire it now (never given again, in any process: `lookup` reads the revision on every
    question); False when it already was."""
    row = _row(session, answer_id)
    if row.retired_at is not None:
        return False
    row.retired_at, row.retired_by, row.updated_at = utcnow(), change.actor, utcnow()
    session.add(row)
    session.flush()
    _bump(session, answer_id)
    return True


def get(session: Session, answer_id: int, today: date | None = None, *,
        questions: list[str] | None = None) -> VerifiedAnswer | None:
    """One verified answer; `questions`: its questions when the caller holds them (the lookup's
    snapshot, current by revision), which saves reading them again."""
    row = session.get(VerifiedAnswerRow, answer_id)
    if row is None:
        return None
    return _values(session, [row], today, {answer_id: questions} if questions is not None else None)[0]


def listing(session: Session, *, due: bool = False, retired: bool = False, today: date | None = None,
            ids: Sequence[int] | None = None) -> list[VerifiedAnswer]:
    """Verified answers, oldest first: live ones (and retired ones too with `retired`); only
    those due for review with `due`; only `ids` when given."""
    query = select(VerifiedAnswerRow).order_by(col(VerifiedAnswerRow.id))
    if not retired:
        query = query.where(col(VerifiedAnswerRow.retired_at).is_(None))
    if ids is not None:
        query = query.where(col(VerifiedAnswerRow.id).in_(list(ids)))
    answers = _values(session, list(session.exec(query).all()), today)
    return [a for a in answers if a.due_since is not None] if due else answers


def revision(session: Session) -> int:
    """The newest write's revision (0: none yet): unchanged means nothing changed."""
    return int(session.exec(select(func.coalesce(func.max(VerifiedAnswerRow.revision), 0))).one())


def live_questions(session: Session, model: str) -> list[tuple[int, str, list[str], np.ndarray]]:
    """(answer id, question, the answer's scopes, vector) of every live answer's questions, for
    `model` (the embedder's name); rows embedded by another model are left out (`reembed`)."""
    A, Q = VerifiedAnswerRow, VerifiedQuestionRow
    rows = session.exec(select(col(Q.answer_id), col(Q.question), col(A.scopes), col(Q.vector))
                        .join(A, col(A.id) == col(Q.answer_id))
                        .where(col(A.retired_at).is_(None), col(Q.model) == model)
                        .order_by(col(Q.answer_id), col(Q.position))).all()
    return [(aid, q, list(scopes), np.frombuffer(vec, dtype=np.float32)) for aid, q, scopes, vec in rows]


def stale_questions(session: Session, model: str) -> bool:
    """Whether any question was embedded by another model than `model`."""
    Q = VerifiedQuestionRow
    return session.exec(select(col(Q.id)).where(col(Q.model) != model).limit(1)).first() is not None


def reembed(session: Session, embedder: Embedder) -> int:
    """Embed again the questions another model embedded (the configured embedder changed); returns
    how many."""
    stale = session.exec(select(VerifiedQuestionRow).where(VerifiedQuestionRow.model != embedder.name)).all()
    if not stale:
        return 0
    vectors = embedder.embed_unindexed([q.question for q in stale])
    for row, vector in zip(stale, vectors):
        row.model, row.dim, row.vector = embedder.name, len(vector), np.asarray(vector, dtype=np.float32).tobytes()
        session.add(row)
    session.flush()
    for answer_id in {row.answer_id for row in stale}:
        _bump(session, answer_id)
    return len(stale)


# -- inside ---------------------------------------------------------------------------------------


def _row(session: Session, answer_id: int) -> VerifiedAnswerRow:
    row = session.get(VerifiedAnswerRow, answer_id)
    if row is None:
        raise VerifiedError(f"no verified answer {answer_id}")
    return row


def _next_revision(session: Session) -> int:
    return int(session.exec(select(func.nextval("verified_revision"))).one())


def _bump(session: Session, answer_id: int) -> None:
    """A new revision for a changed answer: every process's `Lookup` reloads on its next question."""
    session.execute(update(VerifiedAnswerRow).where(col(VerifiedAnswerRow.id) == answer_id)
                    .values(revision=_next_revision(session)))


def _store_questions(session: Session, embedder: Embedder, answer_id: int, wordings: list[str], first: int = 0) -> None:
    vectors = embedder.embed_unindexed(wordings)
    for position, (question, vector) in enumerate(zip(wordings, vectors), start=first):
        session.add(VerifiedQuestionRow(answer_id=answer_id, position=position, question=question, model=embedder.name,
                                        dim=len(vector), vector=np.asarray(vector, dtype=np.float32).tobytes()))


def _cite_json(c: Citation) -> dict[str, str]:
    return {"doc": c.doc_id, "hash": c.content_hash}


def _values(session: Session, rows: list[VerifiedAnswerRow], today: date | None,
            known: dict[int, list[str]] | None = None) -> list[VerifiedAnswer]:
    """The rows as values, with their questions (read, unless `known`) and whether each is due for
    review today."""
    if not rows:
        return []
    ids = [r.id for r in rows if r.id is not None]
    read = dict(known or {})
    read.update(questions(session, [i for i in ids if i not in read]))
    cited = sorted({c["doc"] for r in rows for c in r.cites})
    pages = document_queries.by_id(session, cited)
    today = today or utcnow().date()
    out = []
    for r in rows:
        assert r.id is not None
        due_since, why = _due(r, pages, today)
        out.append(VerifiedAnswer(
            id=r.id, questions=read.get(r.id, []), answer=r.answer, verified_by=r.verified_by,
            verified_at=r.verified_at, scopes=list(r.scopes),  # timestamptz: read back with its zone
            cites=[Citation(c["doc"], c.get("hash", "")) for c in r.cites],
            review_by=r.review_by, retired_at=r.retired_at, retired_by=r.retired_by, channel_id=r.channel_id,
            message_ts=r.message_ts, due_since=due_since, due_why=why))
    return out


def _due(row: VerifiedAnswerRow, pages: dict[str, DocumentRow], today: date) -> tuple[date | None, str]:
    """Since when, and why, it is due for review: its review-by date passed, or a page it cites
    changed after it was verified (its content hash differs: the day it was indexed) or is gone."""
    reasons: list[tuple[date, str]] = []
    if row.review_by <= today:
        reasons.append((row.review_by, "its review date passed"))
    for cite in row.cites:
        page = pages.get(cite["doc"])
        if page is None:
            reasons.append((today, f"{cite['doc']} is no longer in the wiki"))
        elif page.content_hash != cite.get("hash", ""):
            when = (page.indexed_at or utcnow()).date()
            reasons.append((when, f"{page.path} changed"))
    if not reasons:
        return None, ""
    since = min(d for d, _ in reasons)
    return since, "; ".join(why for _, why in reasons)
