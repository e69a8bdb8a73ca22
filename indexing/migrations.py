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
    # 2: the answer's outcome (answered / uncertain / not_found); `found` stays for older readers.
    # query_log is created by bot.records, possibly after this runs: only alter it if it exists.
    "DO $$ BEGIN IF to_regclass('query_log') IS NOT NULL THEN "
    "ALTER TABLE query_log ADD COLUMN IF NOT EXISTS outcome VARCHAR NOT NULL DEFAULT ''; END IF; END $$",
]


def migrate(engine: Engine) -> None:
    with engine.begin() as conn:
        for statement in MIGRATIONS:
            conn.execute(text(statement))
