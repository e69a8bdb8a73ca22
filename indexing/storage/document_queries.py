"""The pages the index holds (the `documents` table), read for the rooms above it: by id, by path,
their titles, how many by status. A page is handed out as a `DocumentRow` value, so no module
outside indexing builds a query on indexing's tables (tests/test_layering.py).

Each function takes the session its caller chose — the primary's (`Index.session`), or the
server questions read from (`Index.read_session`) — and neither commits nor changes anything."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func
from sqlmodel import Session, col, select

from indexing.storage.index_tables import DocumentRecord, Status


@dataclass(frozen=True)
class DocumentRow:
    """One row of `documents` as a value: a page of a source, its access scope, how it was indexed."""

    id: str  # "source:relative/path.md"
    source: str
    path: str
    title: str
    url: str
    access: str
    content_hash: str  # of the version indexed ("" if none yet)
    status: Status
    error: str | None
    chunk_count: int
    updated_at: datetime | None  # when the page itself last changed
    indexed_at: datetime | None  # when this version was committed to the index


def _row(record: DocumentRecord) -> DocumentRow:
    return DocumentRow(id=record.id, source=record.source, path=record.path, title=record.title, url=record.url,
                       access=record.access, content_hash=record.content_hash, status=Status(record.status),
                       error=record.error, chunk_count=record.chunk_count, updated_at=record.updated_at,
                       indexed_at=record.indexed_at)


def by_id(session: Session, ids: Iterable[str], *, indexed_only: bool = False) -> dict[str, DocumentRow]:
    """The pages with these ids that the index has, by id; `indexed_only`: only those indexed
    successfully (a failed or skipped page may have no text to show)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    query = select(DocumentRecord).where(col(DocumentRecord.id).in_(wanted))
    if indexed_only:
        query = query.where(DocumentRecord.status == Status.SUCCESS)
    return {d.id: _row(d) for d in session.exec(query).all()}


def every_page(session: Session) -> dict[str, DocumentRow]:
    """Every page the index has, whatever its status, by id."""
    return {d.id: _row(d) for d in session.exec(select(DocumentRecord)).all()}


def at_path(session: Session, path: str) -> list[DocumentRow]:
    """The pages at this path within their source (one per source that has it)."""
    return [_row(d) for d in session.exec(select(DocumentRecord).where(DocumentRecord.path == path)).all()]


def access_of(session: Session, ids: Sequence[str]) -> dict[str, str]:
    """The access scope of each of these pages that the index has, by id."""
    if not ids:
        return {}
    rows = session.exec(select(DocumentRecord.id, DocumentRecord.access).where(col(DocumentRecord.id).in_(list(ids))))
    return {doc_id: access for doc_id, access in rows}


def recent_titles(session: Session, scopes: Collection[str], limit: int) -> list[str]:
    """Titles of up to `limit` indexed pages in `scopes`, the most recently changed first (pages
    without a title left out; a title shared by several pages may come more than once)."""
    D = DocumentRecord
    return list(session.exec(select(D.title).where(col(D.access).in_(sorted(scopes)), D.status == Status.SUCCESS,
                                                   D.title != "").order_by(col(D.updated_at).desc().nulls_last())
                             .limit(limit)).all())


def count_by_status(session: Session) -> list[tuple[str, int]]:
    """(status, pages) for every status some page has."""
    rows = session.exec(select(DocumentRecord.status, func.count()).group_by(DocumentRecord.status)).all()
    return [(_status(status), n) for status, n in rows]


def count_by_source_and_status(session: Session, sources: Sequence[str]) -> list[tuple[str, str, int]]:
    """(source, status, pages) for these sources."""
    D = DocumentRecord
    rows = session.exec(select(D.source, D.status, func.count()).where(col(D.source).in_(list(sources)))
                        .group_by(D.source, D.status)).all()
    return [(source, _status(status), n) for source, status, n in rows]


def failed_or_skipped(session: Session, sources: Sequence[str]) -> list[DocumentRow]:
    """These sources' pages that failed or were skipped (`error` says why), by id."""
    D = DocumentRecord
    return [_row(d) for d in session.exec(select(D).where(col(D.source).in_(list(sources)),
                                                          col(D.status).in_([Status.FAILED, Status.SKIPPED]))
                                          .order_by(D.id)).all()]


def _status(status: Status | str) -> str:
    """A status as its name ("SUCCESS"), whether the driver gave back the enum or its text."""
    return getattr(status, "value", str(status))
