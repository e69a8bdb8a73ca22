"""Schema migrations on a real Postgres: an older data directory's tables are brought up to date.

Each test makes its own database on the session's server, builds the tables as an older Docent
made them, and runs `migrate` on them, so nothing touches the shared index's tables.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import create_engine, text

from indexing.migrations import migrate

from conftest import scratch_database

OLD_TABLES = [  # as the first releases created them: timestamps without a zone
    "CREATE TABLE documents (id VARCHAR PRIMARY KEY, updated_at TIMESTAMP, indexed_at TIMESTAMP)",
    "CREATE TABLE sync_runs (id SERIAL PRIMARY KEY, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP)",
]


@pytest.fixture
def old_database(index):
    with scratch_database(index, "docent_migrate") as url:
        engine = create_engine(url)
        with engine.begin() as conn:
            for statement in OLD_TABLES:
                conn.execute(text(statement))
            conn.execute(text("INSERT INTO documents VALUES ('wiki:a.md', '2024-03-01 10:00:00', '2024-03-02 11:30:00')"))
            conn.execute(text("INSERT INTO sync_runs (started_at, finished_at) VALUES ('2024-03-02 11:29:00', NULL)"))
        engine.dispose()
        yield url


def column_types(engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
            "WHERE table_name IN ('documents', 'sync_runs') AND column_name LIKE '%\\_at'"))
        return dict(rows.all())


def test_timestamp_columns_become_timestamptz_read_as_utc_and_a_second_run_changes_nothing(old_database):
    # A session in another zone: the stored wall times are UTC whatever the session says, and
    # running the migration again (a second process starting) must not shift them.
    engine = create_engine(old_database, connect_args={"options": "-c timezone=Asia/Tokyo"})
    try:
        migrate(engine)
        assert set(column_types(engine).values()) == {"timestamp with time zone"}
        migrate(engine)
        with engine.connect() as conn:
            updated, indexed = conn.execute(text("SELECT updated_at, indexed_at FROM documents")).one()
            started = conn.execute(text("SELECT started_at FROM sync_runs")).scalar_one()
        assert updated == datetime(2024, 3, 1, 10, 0, tzinfo=timezone.utc)
        assert indexed == datetime(2024, 3, 2, 11, 30, tzinfo=timezone.utc)
        assert started == datetime(2024, 3, 2, 11, 29, tzinfo=timezone.utc)
    finally:
        engine.dispose()


def test_the_current_models_create_timestamptz_columns(index):
    assert set(column_types(index.engine).values()) == {"timestamp with time zone"}


def test_an_older_registry_learns_skipped_pages_and_refused_runs(old_database):
    engine = create_engine(old_database)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TYPE status AS ENUM ('PENDING', 'PROCESSING', 'SUCCESS', 'FAILED')"))
            conn.execute(text("ALTER TABLE documents ADD COLUMN status status NOT NULL DEFAULT 'SUCCESS'"))
        migrate(engine)
        migrate(engine)  # a second process starting: nothing left to do
        with engine.begin() as conn:
            conn.execute(text("UPDATE documents SET status = 'SKIPPED'"))
            run = conn.execute(text("SELECT skipped, result, reason, guarded_deletes FROM sync_runs")).one()
        assert tuple(run) == (0, "ok", None, 0)  # runs recorded before the guard existed read as ok, counting nothing
    finally:
        engine.dispose()
