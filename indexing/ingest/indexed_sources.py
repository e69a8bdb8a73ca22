"""The sources in the index: what each one is, where it is read from, and how it last went.

A source is named once and owns its pages (`source:path` document ids): a sync only adds,
changes or deletes its own. The `sources` table remembers each source as it was last synced, so

- `kb sources` can list every source in the index, configured or not, with its pages, failures,
  skipped pages and last sync;
- `kb sync PATH` gives the same folder the same name every time (and re-reads it with the
  settings it was first synced with), and never the name of a source read from elsewhere;
- a source removed from the sources file is reported, and keeps answering until `kb forget`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import func
from sqlmodel import Session, col, select

from sources import SourceConfig
from indexing.storage.index_tables import DocumentRecord, SourceRecord, Status, SyncRun, utcnow

if TYPE_CHECKING:
    from indexing.index import Index

ADHOC = "adhoc"  # synced with `kb sync PATH`
CONFIG = "config"  # from the sources file or KB_WIKI
_ADHOC_SETTINGS = ("kind", "include", "exclude", "url_template", "base_url", "access")


@dataclass
class SourceSummary:
    """One row of `kb sources`."""

    name: str
    kind: str
    location: str
    origin: str  # "config", "adhoc", or "" for pages synced before sources were recorded
    configured: bool  # in the current sources file / KB_WIKI
    pages: int
    failed: int
    skipped: int
    schedule: str | None
    last_run: SyncRun | None

    @property
    def state(self) -> str:
        """"configured", "ad hoc" (kb sync PATH) or "not configured" (gone from the sources file)."""
        if self.configured:
            return "configured"
        return "ad hoc" if self.origin == ADHOC else "not configured"


def remember(session: Session, source: SourceConfig, kind: str, origin: str) -> None:
    """Record (or refresh) a source as it is being synced, in the caller's transaction."""
    row = session.get(SourceRecord, source.name) or SourceRecord(name=source.name, first_synced_at=utcnow())
    row.kind = kind
    row.location = source.place
    row.origin = origin
    row.settings = {key: getattr(source, key) for key in _ADHOC_SETTINGS} if origin == ADHOC else {}
    row.last_synced_at = utcnow()
    session.add(row)


def records(session: Session) -> dict[str, SourceRecord]:
    return {r.name: r for r in session.exec(select(SourceRecord))}


def adhoc_source(record: SourceRecord) -> SourceConfig:
    """An ad-hoc source as it was last synced, to sync it again the same way."""
    settings = record.settings or {}
    return SourceConfig(
        name=record.name, location=Path(record.location), kind=settings.get("kind") or record.kind or None,
        include=list(settings.get("include") or []), exclude=list(settings.get("exclude") or []),
        url_template=settings.get("url_template"), base_url=settings.get("base_url"),
        access=settings.get("access") or "public", adhoc=True,
    )


def summaries(session: Session, configured: list[SourceConfig]) -> list[SourceSummary]:
    """Every source that is configured or has pages or a record in the index, by name."""
    known = records(session)
    counts: dict[str, dict[str, int]] = {}
    for source, status, n in session.exec(
        select(DocumentRecord.source, DocumentRecord.status, func.count()).group_by(DocumentRecord.source, DocumentRecord.status)
    ):
        counts.setdefault(source, {})[status.value if hasattr(status, "value") else str(status)] = n
    by_config = {s.name: s for s in configured}
    rows = []
    for name in sorted({*by_config, *known, *counts}):
        record, config, pages = known.get(name), by_config.get(name), counts.get(name, {})
        rows.append(SourceSummary(
            name=name,
            kind=(config.kind if config and config.kind else None) or (record.kind if record else "") or "",
            location=config.place if config else (record.location if record else ""),
            origin=record.origin if record else (CONFIG if config else ""),
            configured=config is not None,
            pages=sum(pages.values()),
            failed=pages.get(Status.FAILED.value, 0),
            skipped=pages.get(Status.SKIPPED.value, 0),
            schedule=str(config.schedule) if config and config.schedule else None,
            last_run=session.exec(
                select(SyncRun).where(SyncRun.source == name).order_by(col(SyncRun.id).desc()).limit(1)).first(),
        ))
    return rows


def unconfigured(session: Session, configured: list[SourceConfig]) -> list[SourceSummary]:
    """Sources with pages in the index that the configuration no longer names (ad-hoc ones aside):
    they keep answering until `kb forget NAME`."""
    return [s for s in summaries(session, configured) if not s.configured and s.origin != ADHOC and s.pages]


def scopes_of(session: Session, name: str) -> set[str]:
    """The access scopes a source's pages carry now."""
    return set(session.exec(select(DocumentRecord.access).where(DocumentRecord.source == name).distinct()))


def forget(index: Index, name: str) -> int:
    """Remove every page of one source from every store, and its record; returns the pages removed.

    Under the source's sync lock, so a sync of it cannot run at the same time; each page goes in
    its own transaction (a killed `kb forget` leaves whole pages, and running it again finishes).
    """
    from indexing.storage.locks import advisory_lock
    from indexing.ingest.sync import delete_documents

    with advisory_lock(index.engine, f"sync:{name}"):
        with index.session() as s:
            ids = list(s.exec(select(DocumentRecord.id).where(DocumentRecord.source == name)))
        delete_documents(index, ids)
        with index.session() as s, s.begin():
            record = s.get(SourceRecord, name)
            if record is not None:
                s.delete(record)
        if ids or index.bm25.stale():
            index.bm25.rebuild()
    return len(ids)
