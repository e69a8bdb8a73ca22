"""Verified answers as a YAML file: `kb answers export FILE` writes it, `kb answers import FILE`
reads it back — so a team can keep its verified answers in Git and review changes as diffs.

    - id: 3                       # kept on export; an import replaces the answer with this id
      questions: ["what's the guest wifi password in the Lisbon office?"]
      answer: "It is on the card at reception; it changes every Monday."
      scopes: [public]
      verified_by: U012ABCDEF
      verified_at: 2026-12-02T10:15:00+00:00
      review_by: 2027-05-31
      cites: ["sample:it/security.md"]
      retired: false

Read with `yaml.safe_load` (no tags, no objects); every entry is checked for shape, and a
mistake names the entry and the key.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timezone
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlmodel import Session

from bot.verified import store
from bot.verified.records import VerifiedAnswer
from indexing.vectors import Embedder

MAX_FILE_BYTES = 20_000_000


class ExchangeError(ValueError):
    """The file cannot be imported; one line naming the entry and the key."""


class Entry(BaseModel):
    """One verified answer as the file holds it."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    questions: list[str] = Field(min_length=1)
    answer: str
    scopes: list[str] = Field(default_factory=lambda: ["public"], min_length=1)
    verified_by: str
    verified_at: datetime | None = None
    review_by: date | None = None
    cites: list[str] = Field(default_factory=list)
    retired: bool = False


def write(path: Path, answers: Sequence[VerifiedAnswer]) -> None:
    entries = [{"id": a.id, "questions": list(a.questions), "answer": a.answer, "scopes": list(a.scopes),
                "verified_by": a.verified_by, "verified_at": a.verified_at.isoformat(),
                "review_by": a.review_by.isoformat(), "cites": [c.doc_id for c in a.cites], "retired": a.retired}
               for a in answers]
    path.write_text(yaml.safe_dump(entries, allow_unicode=True, sort_keys=False, width=120), encoding="utf-8")


def read(path: Path) -> list[Entry]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ExchangeError(f"{path}: larger than {MAX_FILE_BYTES // 1_000_000} MB")
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ExchangeError(f"{path}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise ExchangeError(f"{path}: expected a list of verified answers (as `kb answers export` writes)")
    entries = []
    for n, item in enumerate(data, start=1):
        try:
            entries.append(Entry.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "entry"
            raise ExchangeError(f"{path}: entry {n}, {where}: {first['msg']}") from None
    return entries


def apply(session: Session, embedder: Embedder, entries: Sequence[Entry], actor: str, review_days: int) -> tuple[int, int]:
    """Add or replace each entry (by id); returns (added, replaced). The caller commits: the whole
    file or nothing."""
    added = replaced = 0
    for e in entries:
        review = e.review_by or store.default_review_by(review_days)
        existing = store.get(session, e.id) if e.id is not None else None
        if existing is not None:
            store.edit(session, embedder, existing.id, questions=e.questions, answer=e.answer, scopes=e.scopes,
                       review_by=review, cites=e.cites)
            if e.retired and not existing.retired:
                store.retire(session, existing.id, store.Change(actor))
            replaced += 1
            continue
        answer_id = store.add(session, embedder, store.Change(actor), questions=e.questions, answer=e.answer,
                              scopes=e.scopes, review_by=review, cites=e.cites, verified_by=e.verified_by,
                              verified_at=_aware(e.verified_at) if e.verified_at else None)
        if e.retired:
            store.retire(session, answer_id, store.Change(actor))
        added += 1
    return added, replaced


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
