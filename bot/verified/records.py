"""A verified answer: what people answered once, verified, and given again to the same question.

Three tables, made by the bot's own migrations (`bot.migrations`):
- `verified_answers`: the answer's text (Markdown, broadcasts made inert when it is stored), who
  verified it and when, the access scopes it may be shown in (like a page's, at least one; it is
  visible to an asker who sees any of them), the pages it cites with the content hash each had
  when it was verified (a later edit makes the answer *due for review*), its review-by date, and
  whether — and by whom — it was retired. `revision` changes on every write.
- `verified_questions`: the questions it answers (one or more ways of asking), each with its
  vector by the index's embedder.
- `verified_suggestions`: questions asked in a channel that took a verified answer when Docent
  offered it (their wording was not close enough to be given it), for a verifier to add as one
  more of its questions or dismiss.

`VerifiedAnswer` is the value the rest of the bot passes around; the table classes stay here and
in `bot.verified.store`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import JSON, BigInteger, Column, Date, ForeignKey, Index, Integer, LargeBinary, String, Text, func, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlmodel import Field, SQLModel

from indexing.storage import timestamptz, utcnow


class VerifiedAnswerRow(SQLModel, table=True):
    __tablename__ = "verified_answers"

    id: int | None = Field(default=None, primary_key=True)
    answer: str = Field(sa_column=Column(Text, nullable=False))
    verified_by: str
    verified_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    scopes: list[str] = Field(sa_column=Column(ARRAY(String), nullable=False))
    cites: list[dict[str, str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    review_by: date = Field(sa_column=Column(Date, nullable=False, index=True))
    retired_at: datetime | None = Field(default=None, sa_column=timestamptz())
    retired_by: str | None = None
    updated_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    channel_id: str | None = None
    message_ts: str | None = None
    revision: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))  # nextval('verified_revision')


class VerifiedQuestionRow(SQLModel, table=True):
    __tablename__ = "verified_questions"

    id: int | None = Field(default=None, primary_key=True)
    answer_id: int = Field(sa_column=Column(Integer, ForeignKey("verified_answers.id", ondelete="CASCADE"),
                                            nullable=False, index=True))
    position: int
    question: str = Field(sa_column=Column(Text, nullable=False))
    model: str
    dim: int
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class VerifiedSuggestionRow(SQLModel, table=True):
    """A question that took a verified answer when it was offered (`bot.verified.suggestions`)."""

    __tablename__ = "verified_suggestions"
    __table_args__ = (Index("ux_verified_suggestions_wording", "answer_id", func.lower(text("question")), unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    answer_id: int = Field(sa_column=Column(Integer, ForeignKey("verified_answers.id", ondelete="CASCADE"),
                                            nullable=False, index=True))
    question: str = Field(sa_column=Column(Text, nullable=False))
    asked_by: str
    channel_id: str | None = None
    asked_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    status: str = "open"  # "open", "added" (one of the answer's questions now) or "dismissed"
    resolved_by: str | None = None
    resolved_at: datetime | None = Field(default=None, sa_column=timestamptz())


@dataclass(frozen=True)
class Citation:
    """A page a verified answer cites: its document id, and its content hash when verified
    ("" when the page was not indexed then: it is due for review once it is)."""

    doc_id: str
    content_hash: str = ""


@dataclass(frozen=True)
class VerifiedAnswer:
    """One verified answer as people see it. `due_since`: the day it became due for review (its
    review-by date passed, or a page it cites changed or went), None while it is current."""

    id: int
    questions: list[str]
    answer: str
    verified_by: str
    verified_at: datetime
    scopes: list[str]
    cites: list[Citation]
    review_by: date
    retired_at: datetime | None = None
    retired_by: str | None = None
    channel_id: str | None = None
    message_ts: str | None = None
    due_since: date | None = None
    due_why: str = ""  # "its review date passed" / "people/leave.md changed" — said beside due_since

    @property
    def retired(self) -> bool:
        return self.retired_at is not None

    def to_json(self) -> dict[str, object]:
        """`kb ask --json`'s and `kb eval --json`'s `verified`, and `kb answers list --json`'s rows."""
        return {
            "id": self.id,
            "answer": self.answer,
            "by": self.verified_by,
            "at": self.verified_at.isoformat(),
            "scope": list(self.scopes),
            "review_by": self.review_by.isoformat(),
            "cites": [c.doc_id for c in self.cites],
        }

    def listing_json(self) -> dict[str, object]:
        """`kb answers list --json`'s and `show --json`'s row: the above, its questions, and its state."""
        return {**self.to_json(), "questions": list(self.questions),
                "retired_at": self.retired_at.isoformat() if self.retired_at else None, "retired_by": self.retired_by,
                "due_since": self.due_since.isoformat() if self.due_since else None, "due_why": self.due_why or None}
