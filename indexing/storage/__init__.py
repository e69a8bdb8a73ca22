"""Postgres as the one truth: the connection, the schema and its migrations, the index's tables
and the queries others read them with, locks, cross-process notices, a hot standby, and the index's
status as a value."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from indexing.storage import document_queries, sync_run_queries
    from indexing.storage.database import (DatabaseUnavailable, affected, disk_full_error, is_unreachable, revive_embedded,
                                           short_error)
    from indexing.storage.index_tables import DocumentRecord, RunResult, Status, SyncRun, timestamptz, utcnow
    from indexing.storage.migrations import Migration, MigrationFailed, migrate, registry, run_sql
    from indexing.storage.notify import Listener, notify_now
    from indexing.storage.document_queries import DocumentRow
    from indexing.storage.status import IndexStatus, KeywordState

__all__ = ["DatabaseUnavailable", "DocumentRecord", "DocumentRow", "IndexStatus", "KeywordState", "Listener", "Migration",
           "MigrationFailed", "RunResult", "Status", "SyncRun", "affected", "disk_full_error", "document_queries",
           "is_unreachable", "migrate", "notify_now", "registry", "revive_embedded", "run_sql", "short_error",
           "sync_run_queries", "timestamptz", "utcnow"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
