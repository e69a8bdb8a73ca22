"""The syncs the index recorded (the `sync_runs` table), read for the rooms above it: each source's
last run, and how many runs by result. Runs are handed out as the `SyncRun` rows `IndexStatus`
carries too; no module outside indexing builds a query on the table (tests/test_layering.py).

Each function takes the session its caller chose and changes nothing."""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from indexing.storage.index_tables import RunResult, SyncRun


def last_runs(session: Session) -> dict[str, SyncRun]:
    """The last run of every source that has one, by source."""
    return _last(session, select(func.max(SyncRun.id)))


def last_refused(session: Session) -> dict[str, SyncRun]:
    """The last run the deletion guard refused, of every source that has one, by source."""
    return _last(session, select(func.max(SyncRun.id)).where(SyncRun.result == RunResult.REFUSED.value))


def _last(session: Session, latest: SelectOfScalar[int | None]) -> dict[str, SyncRun]:
    """The runs whose id is `latest` (a max of ids) per source, by source."""
    runs = session.exec(select(SyncRun).where(col(SyncRun.id).in_(latest.group_by(SyncRun.source))))
    return {run.source: run for run in runs}


def count_by_source_and_result(session: Session) -> list[tuple[str, str, int]]:
    """(source, result, runs) for every source and result recorded."""
    rows = session.exec(select(SyncRun.source, SyncRun.result, func.count()).group_by(SyncRun.source, SyncRun.result))
    return [(source, result, n) for source, result, n in rows]
