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
    "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_type WHERE typname = 'status') THEN "
    "ALTER TYPE status ADD VALUE IF NOT EXISTS 'SKIPPED'; END IF; END $$",
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS skipped INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS result VARCHAR NOT NULL DEFAULT 'ok'",
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS reason TEXT",
    # 6: every timestamp column is timestamptz. Older tables stored UTC wall times without a zone
    # (the embedded server runs in UTC), so they are read as UTC. Only columns still without a zone
    # change, so this is a no-op once done; the advisory lock makes a second process starting at
    # the same moment wait, then find nothing left to change (re-reading a timestamptz "AT TIME
    # ZONE 'UTC'" would shift it by the session's offset). Tables created later (the bot's) are
    # made with timestamptz from the start and skipped while they do not exist.
    """
    DO $$
    DECLARE col record;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('docent:migration:timestamptz'));
        FOR col IN
            SELECT table_name::text AS tab, column_name::text AS name FROM information_schema.columns
            WHERE table_schema = current_schema() AND data_type = 'timestamp without time zone'
              AND (table_name::text, column_name::text) IN (
                  ('documents', 'updated_at'), ('documents', 'indexed_at'),
                  ('sync_runs', 'started_at'), ('sync_runs', 'finished_at'),
                  ('query_log', 'created_at'), ('feedback', 'created_at'), ('feedback', 'updated_at'),
                  ('admin_actions', 'created_at'), ('admin_actions', 'finished_at'),
                  ('slack_deliveries', 'seen_at'))
        LOOP
            EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE timestamptz USING %I AT TIME ZONE ''UTC''',
                           col.tab, col.name, col.name);
        END LOOP;
    END $$
    """,
    # 7: the answer's outcome (answered / uncertain / not_found); `found` stays for older readers.
    # query_log is created by bot.records, possibly after this runs: only alter it if it exists.
    "DO $$ BEGIN IF to_regclass('query_log') IS NOT NULL THEN "
    "ALTER TABLE query_log ADD COLUMN IF NOT EXISTS outcome VARCHAR NOT NULL DEFAULT ''; END IF; END $$",
    # 8-11: the keyword leg in Postgres (indexing.keyword_versions): which documents changed at
    # which generation, the published versions, and saved bases readers start from.
    "CREATE TABLE IF NOT EXISTS keyword_changes (generation BIGINT NOT NULL, doc_id VARCHAR NOT NULL)",
    "CREATE INDEX IF NOT EXISTS keyword_changes_generation_idx ON keyword_changes (generation)",
    "CREATE TABLE IF NOT EXISTS keyword_versions (generation BIGINT PRIMARY KEY, "
    "published_at TIMESTAMPTZ NOT NULL DEFAULT now(), runner VARCHAR NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS keyword_bases (generation BIGINT PRIMARY KEY, terms_version VARCHAR NOT NULL, "
    "chunks INTEGER NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), payload BYTEA NOT NULL)",
    # 12: the deletion guard counts deletions over a rolling hour, across processes: each run's
    # deletions that count (not --allow-deletes); summed per source (sync_runs.source is indexed).
    "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS guarded_deletes INTEGER NOT NULL DEFAULT 0",
    # 13: where a question was asked (bot.records.ChannelKind); older rows get '' (unknown), which
    # never counts as a public channel, so they never become App Home examples.
    "DO $$ BEGIN IF to_regclass('query_log') IS NOT NULL THEN "
    "ALTER TABLE query_log ADD COLUMN IF NOT EXISTS channel_kind VARCHAR NOT NULL DEFAULT ''; END IF; END $$",
    # 14-15: the lead's sentence vectors, embedded at sync time (indexing.sentence_vectors); the
    # lead reads them by section, the sync deletes and backfills them by document.
    "CREATE TABLE IF NOT EXISTS sentence_vectors (parent_id VARCHAR NOT NULL, model VARCHAR NOT NULL, "
    "dim INTEGER NOT NULL, position INTEGER NOT NULL, doc_id VARCHAR NOT NULL, text_md5 VARCHAR(32) NOT NULL, "
    "vector BYTEA NOT NULL, PRIMARY KEY (parent_id, model, dim, position))",
    "CREATE INDEX IF NOT EXISTS sentence_vectors_doc_idx ON sentence_vectors (doc_id, model)",
    # 16-17: hand-overs in help channels (bot.slack.handover): one per thread, counted per channel per hour
    "CREATE TABLE IF NOT EXISTS handovers (channel VARCHAR NOT NULL, thread_ts VARCHAR NOT NULL, "
    "question TEXT NOT NULL DEFAULT '', created_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (channel, thread_ts))",
    "CREATE INDEX IF NOT EXISTS handovers_channel_created_idx ON handovers (channel, created_at)",
]


def migrate(engine: Engine) -> None:
    """Apply every migration, one process at a time: replicas starting together would otherwise
    race on CREATE TABLE IF NOT EXISTS (a duplicate-key error from Postgres' catalog)."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(7317710012)"))
        for statement in MIGRATIONS:
            conn.execute(text(statement))
