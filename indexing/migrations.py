"""Schema changes after a table first shipped, applied in order at start-up (idempotent SQL).

`SQLModel.metadata.create_all` creates missing tables but never alters existing ones; a column
added to a model later gets a numbered entry here, so older data directories keep working.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

MIGRATIONS: list[str] = [
    # 1: which process ran a sync (host:pid), for multi-process deployments
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS runner VARCHAR NOT NULL DEFAULT ''",
    # 2-4: the keyword leg in Postgres (indexing.keyword_versions): which documents changed at
    # which generation, the published versions, and saved bases readers start from.
    "CREATE TABLE IF NOT EXISTS keyword_changes (generation BIGINT NOT NULL, doc_id VARCHAR NOT NULL)",
    "CREATE INDEX IF NOT EXISTS keyword_changes_generation_idx ON keyword_changes (generation)",
    "CREATE TABLE IF NOT EXISTS keyword_versions (generation BIGINT PRIMARY KEY, "
    "published_at TIMESTAMPTZ NOT NULL DEFAULT now(), runner VARCHAR NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS keyword_bases (generation BIGINT PRIMARY KEY, terms_version VARCHAR NOT NULL, "
    "chunks INTEGER NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), payload BYTEA NOT NULL)",
]


def migrate(engine: Engine) -> None:
    """Apply every migration, one process at a time: replicas starting together would otherwise
    race on CREATE TABLE IF NOT EXISTS (a duplicate-key error from Postgres' catalog)."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(7317710012)"))
        for statement in MIGRATIONS:
            conn.execute(text(statement))
