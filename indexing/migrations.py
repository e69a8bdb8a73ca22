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
    # 2-5: empty pages are SKIPPED, not FAILED; a sync run says whether it was refused, and why
    "ALTER TYPE status ADD VALUE IF NOT EXISTS 'SKIPPED'",
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS skipped INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS result VARCHAR NOT NULL DEFAULT 'ok'",
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS reason TEXT",
]


def migrate(engine: Engine) -> None:
    with engine.begin() as conn:
        for statement in MIGRATIONS:
            conn.execute(text(statement))
