"""Docent's schema: every table it keeps, made by one ordered list of named migrations.

Every table Docent keeps in Postgres — the index's (`documents`, `parent_sections`,
`embedding_cache`, `sync_runs`, `sources`, `index_state`, the keyword leg's `keyword_*`,
`sentence_vectors`) and the bot's (`query_log`, `feedback`, `admin_actions`, `slack_deliveries`,
`answer_messages`, `handovers`, `answered_gaps`) — is created here and nowhere else. The SQLModel classes
(`indexing.storage.index_tables`, `bot.records.question_log`, `bot.slack.store`) are the
Python view of these tables and create nothing; tests/test_migrations.py checks that they and the
migrations describe the same columns. The one exception is PGVectorStore's own chunk table
(`data_docent_chunks`), which LlamaIndex creates and shapes (`indexing.storage.store`).

The migrations are SQL, not SQLModel metadata, so that indexing can make the bot's tables without
importing bot (imports point connectors ← sources ← indexing ← bot), and so that a migration says exactly
what it does to a database that already has rows.

How it runs
-----------
`migrate(engine)` runs when the index opens (`indexing.index.Index`), in one transaction under
one advisory lock: it creates `_docent_migrations(name, applied_at)` if missing, then applies, in
order, each migration whose name is not recorded there, and records it. Replicas starting at the
same moment wait for each other on the lock and the later ones find nothing left to do (without
the lock, two CREATE TABLE IF NOT EXISTS at once fail with a duplicate key in Postgres' catalog).
A migration that fails rolls the whole transaction back — nothing half-applied, nothing recorded —
and the index does not open.

Databases made before named migrations
--------------------------------------
Releases up to this one made their tables with `SQLModel.metadata.create_all` (the index's when
it opened, the bot's when the bot started) and then ran an unnamed list of idempotent SQL, so an
older database holds some mix of those — and which mix also depended on the installed sqlmodel
(up to 0.0.2x a `datetime` field was `timestamp without time zone`). Such a database has no
`_docent_migrations` table, so every migration runs on it. That is why the migrations in
`BASELINE` are written to be idempotent: they create what is missing (IF NOT EXISTS) and bring
what exists to the same shape (ADD COLUMN IF NOT EXISTS, SET DEFAULT, timestamptz conversion,
enum values), so an older database and an empty one end with exactly the same tables, columns,
types, defaults, indexes and constraints, the older one keeping its rows. tests/test_migrations.py
checks this on a dump of every distinct schema main's history made (tests/data/schemas, made
by its make_dumps.py). Column *order* can differ (Postgres appends added columns and cannot
reorder them); nothing in Docent reads columns by position.

Adding a migration
------------------
1. Append a function to this module, decorated with `@migration`, named `mNNN_what_it_does`
   with the next number. Its name is recorded in every database it runs on, so never rename,
   reorder, edit or remove a migration that has shipped: write a new one.
2. It receives the migration transaction's `Connection`; run SQL with `conn.exec_driver_sql`
   (no `:name` parameter parsing, so `::` casts and `$$` bodies pass as written). It runs once
   per database, after every migration before it, so it need not be idempotent.
3. Think of the rows already there: a NOT NULL column added to a table with rows needs a DEFAULT;
   a type change needs a USING that keeps the values.
4. Change the matching SQLModel class in the same commit (tests/test_migrations.py fails while
   they disagree), and run `pytest tests/test_migrations.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

LOCK = 7317710012  # the advisory lock the unnamed migrations of earlier releases took too: an older
# replica starting next to a newer one waits for it rather than racing it
TABLE = "_docent_migrations"


class MigrationFailed(RuntimeError):
    """A migration raised: nothing of this run was applied (one transaction). The message is one
    line naming it (`kb` prints it as its `error:` line, not a traceback)."""


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[Connection], None]


MIGRATIONS: list[Migration] = []  # indexing's own set; names `mNNN_…`


def registry(target: list[Migration]) -> Callable[[Callable[[Connection], None]], Callable[[Connection], None]]:
    """A decorator that appends each function it decorates to `target`, one migration set, under
    its function name. Indexing's set is `MIGRATIONS` (`@migration`); `bot.migrations` keeps the
    bot's own (names `bot_mNNN_…`), run by `migrate(engine, BOT_MIGRATIONS, owner="bot_")`."""

    def register(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
        if any(m.name == fn.__name__ for m in target):
            raise ValueError(f"migration {fn.__name__} is defined twice")
        target.append(Migration(fn.__name__, fn))
        return fn

    return register


migration = registry(MIGRATIONS)


def _run(conn: Connection, *statements: str) -> None:
    for statement in statements:
        conn.exec_driver_sql(statement)


def migrate(engine: Engine, migrations: Sequence[Migration] | None = None, *, owner: str = "m") -> list[str]:
    """Apply the migrations of one set this database has not had, in order, in one transaction under
    the migration lock; returns their names (empty when it was up to date).

    `migrations`: indexing's `MIGRATIONS` by default, or another owner's set (`bot.migrations`);
    `owner`: the prefix of that set's names, so that a set warns only of recorded names of its own
    it does not know (another owner's are not its business). Every set is recorded in the one
    `_docent_migrations` table and serialised by the one lock."""
    migrations = MIGRATIONS if migrations is None else migrations
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK})
        conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {TABLE} (name VARCHAR PRIMARY KEY, "
                             "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        done = set(conn.exec_driver_sql(f"SELECT name FROM {TABLE}").scalars())
        unknown = {name for name in done if name.startswith(owner)} - {m.name for m in migrations}
        if unknown:  # said, not refused: the newer release's changes may or may not suit this one
            log.warning("the database has migrations this Docent does not know (%s): it was opened by a newer "
                        "version", ", ".join(sorted(unknown)))
        ran = []
        for m in migrations:
            if m.name in done:
                continue
            try:
                m.apply(conn)
            except Exception as exc:
                first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
                raise MigrationFailed(f"database migration {m.name} failed, nothing was changed: "
                                      f"{type(exc).__name__}: {first.strip()[:300]}") from exc
            conn.execute(text(f"INSERT INTO {TABLE} (name) VALUES (:name)"), {"name": m.name})
            ran.append(m.name)
    if ran:
        log.info("database migrated: %s", ", ".join(ran))
    return ran


def applied(engine: Engine) -> list[str]:
    """The migrations recorded in this database, oldest first ([] before the first `migrate`)."""
    with engine.connect() as conn:
        if conn.exec_driver_sql(f"SELECT to_regclass('{TABLE}')").scalar() is None:
            return []
        return list(conn.exec_driver_sql(f"SELECT name FROM {TABLE} ORDER BY applied_at, name").scalars())


# -- the baseline: idempotent, so that databases made before named migrations converge ------------


@migration
def m001_index_tables(conn: Connection) -> None:
    """indexing.storage.index_tables's tables. Older databases: sync_runs gained columns after it shipped
    (migrations 1-5 and 12 of the old list); they carry a DEFAULT so existing rows (and an older
    replica's inserts) get a value — runs recorded before the guard existed read as ok, counting
    nothing — and the SET DEFAULTs give the same defaults to a table create_all made with them."""
    _run(conn,
         "DO $$ BEGIN CREATE TYPE status AS ENUM ('PENDING', 'PROCESSING', 'SUCCESS', 'FAILED', 'SKIPPED'); "
         "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
         "ALTER TYPE status ADD VALUE IF NOT EXISTS 'SKIPPED'",  # empty pages are SKIPPED, not FAILED
         """CREATE TABLE IF NOT EXISTS documents (
             id VARCHAR NOT NULL PRIMARY KEY,
             source VARCHAR NOT NULL,
             path VARCHAR NOT NULL,
             title VARCHAR NOT NULL,
             url VARCHAR NOT NULL,
             access VARCHAR NOT NULL,
             content_hash VARCHAR NOT NULL,
             status status NOT NULL,
             error TEXT,
             chunk_count INTEGER NOT NULL,
             updated_at TIMESTAMPTZ,
             indexed_at TIMESTAMPTZ)""",
         "CREATE INDEX IF NOT EXISTS ix_documents_source ON documents (source)",
         "CREATE INDEX IF NOT EXISTS ix_documents_status ON documents (status)",
         """CREATE TABLE IF NOT EXISTS parent_sections (
             id VARCHAR NOT NULL PRIMARY KEY,
             doc_id VARCHAR NOT NULL,
             position INTEGER NOT NULL,
             heading_path JSON,
             url VARCHAR NOT NULL,
             text TEXT)""",
         "CREATE INDEX IF NOT EXISTS ix_parent_sections_doc_id ON parent_sections (doc_id)",
         "CREATE TABLE IF NOT EXISTS embedding_cache (key VARCHAR NOT NULL PRIMARY KEY, vector BYTEA)",
         """CREATE TABLE IF NOT EXISTS sync_runs (
             id SERIAL NOT NULL PRIMARY KEY,
             source VARCHAR NOT NULL,
             trigger VARCHAR NOT NULL,
             runner VARCHAR NOT NULL DEFAULT '',
             started_at TIMESTAMPTZ NOT NULL,
             finished_at TIMESTAMPTZ,
             added INTEGER NOT NULL,
             updated INTEGER NOT NULL,
             unchanged INTEGER NOT NULL,
             deleted INTEGER NOT NULL,
             failed INTEGER NOT NULL,
             skipped INTEGER NOT NULL DEFAULT 0,
             guarded_deletes INTEGER NOT NULL DEFAULT 0,
             result VARCHAR NOT NULL DEFAULT 'ok',
             reason TEXT,
             errors JSON)""",
         "CREATE INDEX IF NOT EXISTS ix_sync_runs_source ON sync_runs (source)",
         "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS runner VARCHAR NOT NULL DEFAULT ''",
         "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS skipped INTEGER NOT NULL DEFAULT 0",
         "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS guarded_deletes INTEGER NOT NULL DEFAULT 0",
         "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS result VARCHAR NOT NULL DEFAULT 'ok'",
         "ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS reason TEXT",
         "ALTER TABLE sync_runs ALTER COLUMN runner SET DEFAULT '', ALTER COLUMN skipped SET DEFAULT 0, "
         "ALTER COLUMN guarded_deletes SET DEFAULT 0, ALTER COLUMN result SET DEFAULT 'ok'",
         """CREATE TABLE IF NOT EXISTS sources (
             name VARCHAR NOT NULL PRIMARY KEY,
             kind VARCHAR NOT NULL,
             location VARCHAR NOT NULL,
             origin VARCHAR NOT NULL,
             settings JSON,
             first_synced_at TIMESTAMPTZ NOT NULL,
             last_synced_at TIMESTAMPTZ NOT NULL)""",
         "CREATE TABLE IF NOT EXISTS index_state (key VARCHAR NOT NULL PRIMARY KEY, value VARCHAR NOT NULL)",
         )


@migration
def m002_keyword_tables(conn: Connection) -> None:
    """The keyword leg in Postgres (indexing.keyword.keyword_versions): which documents changed at which
    generation, the published versions, and saved bases readers start from."""
    _run(conn,
         "CREATE TABLE IF NOT EXISTS keyword_changes (generation BIGINT NOT NULL, doc_id VARCHAR NOT NULL)",
         "CREATE INDEX IF NOT EXISTS keyword_changes_generation_idx ON keyword_changes (generation)",
         "CREATE TABLE IF NOT EXISTS keyword_versions (generation BIGINT PRIMARY KEY, "
         "published_at TIMESTAMPTZ NOT NULL DEFAULT now(), runner VARCHAR NOT NULL DEFAULT '')",
         "CREATE TABLE IF NOT EXISTS keyword_bases (generation BIGINT PRIMARY KEY, terms_version VARCHAR NOT NULL, "
         "chunks INTEGER NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), payload BYTEA NOT NULL)",
         )


@migration
def m003_sentence_vectors(conn: Connection) -> None:
    """The lead's sentence vectors, embedded at sync time (indexing.vectors.sentence_vectors): read by
    section, deleted and backfilled by document."""
    _run(conn,
         "CREATE TABLE IF NOT EXISTS sentence_vectors (parent_id VARCHAR NOT NULL, model VARCHAR NOT NULL, "
         "dim INTEGER NOT NULL, position INTEGER NOT NULL, doc_id VARCHAR NOT NULL, text_md5 VARCHAR(32) NOT NULL, "
         "vector BYTEA NOT NULL, PRIMARY KEY (parent_id, model, dim, position))",
         "CREATE INDEX IF NOT EXISTS sentence_vectors_doc_idx ON sentence_vectors (doc_id, model)",
         )


@migration
def m004_query_log_feedback_admin_actions(conn: Connection) -> None:
    """bot.records.question_log' tables. Older databases: query_log gained the outcome (answered / uncertain /
    not_found) and where it was asked (bot.records.question_log.ChannelKind) after it shipped — older rows get
    '' for both, which reads as "not known" and never as a public channel — and the two indexes
    behind the thread lookup of follow-ups."""
    _run(conn,
         """CREATE TABLE IF NOT EXISTS query_log (
             id SERIAL NOT NULL PRIMARY KEY,
             created_at TIMESTAMPTZ NOT NULL,
             answer_id VARCHAR UNIQUE,
             surface VARCHAR NOT NULL,
             user_id VARCHAR NOT NULL,
             channel_id VARCHAR,
             channel_kind VARCHAR NOT NULL DEFAULT '',
             thread_ts VARCHAR,
             message_ts VARCHAR,
             question TEXT NOT NULL,
             context_question TEXT,
             found BOOLEAN NOT NULL,
             outcome VARCHAR NOT NULL DEFAULT '',
             answer_text TEXT NOT NULL,
             note TEXT,
             doc_ids JSON,
             scores JSON,
             sources JSON,
             signals JSON,
             timings_ms JSON,
             llm_used BOOLEAN NOT NULL,
             error_ref VARCHAR)""",
         "ALTER TABLE query_log ADD COLUMN IF NOT EXISTS outcome VARCHAR NOT NULL DEFAULT ''",
         "ALTER TABLE query_log ADD COLUMN IF NOT EXISTS channel_kind VARCHAR NOT NULL DEFAULT ''",
         "ALTER TABLE query_log ALTER COLUMN outcome SET DEFAULT '', ALTER COLUMN channel_kind SET DEFAULT ''",
         "CREATE INDEX IF NOT EXISTS ix_query_log_created_at ON query_log (created_at)",
         "CREATE INDEX IF NOT EXISTS ix_query_log_user_id ON query_log (user_id)",
         "CREATE INDEX IF NOT EXISTS ix_query_log_error_ref ON query_log (error_ref)",
         "CREATE INDEX IF NOT EXISTS ix_query_log_channel_thread ON query_log (channel_id, thread_ts)",
         "CREATE INDEX IF NOT EXISTS ix_query_log_channel_message ON query_log (channel_id, message_ts)",
         """CREATE TABLE IF NOT EXISTS feedback (
             id SERIAL NOT NULL PRIMARY KEY,
             answer_id VARCHAR NOT NULL,
             user_id VARCHAR NOT NULL,
             vote VARCHAR NOT NULL,
             reason TEXT,
             created_at TIMESTAMPTZ NOT NULL,
             updated_at TIMESTAMPTZ NOT NULL,
             CONSTRAINT uq_feedback_answer_user UNIQUE (answer_id, user_id))""",
         "CREATE INDEX IF NOT EXISTS ix_feedback_answer_id ON feedback (answer_id)",
         "CREATE INDEX IF NOT EXISTS ix_feedback_updated_at ON feedback (updated_at)",
         """CREATE TABLE IF NOT EXISTS admin_actions (
             id SERIAL NOT NULL PRIMARY KEY,
             created_at TIMESTAMPTZ NOT NULL,
             user_id VARCHAR NOT NULL,
             action VARCHAR NOT NULL,
             argument VARCHAR NOT NULL,
             allowed BOOLEAN NOT NULL,
             result TEXT NOT NULL,
             finished_at TIMESTAMPTZ)""",
         "CREATE INDEX IF NOT EXISTS ix_admin_actions_created_at ON admin_actions (created_at)",
         "CREATE INDEX IF NOT EXISTS ix_admin_actions_user_id ON admin_actions (user_id)",
         )


@migration
def m005_slack_tables(conn: Connection) -> None:
    """The Slack app's own tables: once-only delivery claims (bot.slack.dedupe), which message
    answers which question (bot.slack.answer_messages), and hand-overs in help channels, one per
    thread, counted per channel per hour (bot.slack.handover)."""
    _run(conn,
         "CREATE TABLE IF NOT EXISTS slack_deliveries (key VARCHAR NOT NULL PRIMARY KEY, seen_at TIMESTAMPTZ NOT NULL)",
         "CREATE INDEX IF NOT EXISTS ix_slack_deliveries_seen_at ON slack_deliveries (seen_at)",
         """CREATE TABLE IF NOT EXISTS answer_messages (
             channel_id VARCHAR NOT NULL,
             question_ts VARCHAR NOT NULL,
             answer_ts VARCHAR NOT NULL,
             thread_ts VARCHAR,
             surface VARCHAR NOT NULL,
             user_id VARCHAR NOT NULL,
             answer_id VARCHAR NOT NULL,
             created_at TIMESTAMPTZ NOT NULL,
             PRIMARY KEY (channel_id, question_ts))""",
         "CREATE INDEX IF NOT EXISTS ix_answer_messages_answer_ts ON answer_messages (answer_ts)",
         "CREATE TABLE IF NOT EXISTS handovers (channel VARCHAR NOT NULL, thread_ts VARCHAR NOT NULL, "
         "question TEXT NOT NULL DEFAULT '', created_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
         "PRIMARY KEY (channel, thread_ts))",
         "CREATE INDEX IF NOT EXISTS handovers_channel_created_idx ON handovers (channel, created_at)",
         )


DOCENT_TABLES = ("documents", "parent_sections", "embedding_cache", "sync_runs", "sources", "index_state",
                 "keyword_changes", "keyword_versions", "keyword_bases", "sentence_vectors", "query_log",
                 "feedback", "admin_actions", "slack_deliveries", "answer_messages", "handovers",
                 "answered_gaps", "keyword_base_parts")


@migration
def m006_timestamps_with_time_zone(conn: Connection) -> None:
    """Every timestamp column is timestamptz. Older databases stored UTC wall times without a zone
    (the embedded server runs in UTC, and Docent's sessions set timezone=UTC), so they are read as
    UTC — explicitly, since `AT TIME ZONE 'UTC'` does not depend on the session's zone. Only
    columns still without a zone change: which ones depended on the release and on the installed
    sqlmodel, which made a plain `datetime` field zoneless up to 0.0.2x."""
    columns = conn.execute(text(
        "SELECT table_name::text, column_name::text FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND data_type = 'timestamp without time zone' "
        "AND table_name::text = ANY(:tables) ORDER BY 1, 2"), {"tables": list(DOCENT_TABLES)}).all()
    for table, column in columns:
        conn.exec_driver_sql(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE timestamptz '
                             f'USING "{column}" AT TIME ZONE \'UTC\'')


BASELINE = [m.name for m in MIGRATIONS]
"""The migrations written to be idempotent (see the module docstring): every database made before
named migrations runs all of them, whatever it already had. Migrations after these run only on
databases that have recorded these, so they are ordinary one-time changes."""


@migration
def m007_answered_gaps(conn: Connection) -> None:
    """The loop back to the wiki (bot.slack.answered_gaps): a hand-over remembers who asked and,
    once a person answers in its thread, that Docent offered the answer as a gap (once per thread);
    `answered_gaps` keeps the questions people answered that the wiki does not (bot.records.question_log).
    Written idempotent although it need not be (tests/test_slack_limits.py re-runs every
    migration on a migrated database whose migrations table it dropped)."""
    _run(conn,
         "ALTER TABLE handovers ADD COLUMN IF NOT EXISTS asker VARCHAR NOT NULL DEFAULT '', "
         "ADD COLUMN IF NOT EXISTS offered_at TIMESTAMPTZ, "
         "ADD COLUMN IF NOT EXISTS answered_by VARCHAR NOT NULL DEFAULT '', "
         "ADD COLUMN IF NOT EXISTS answer_ts VARCHAR NOT NULL DEFAULT '', "
         "ADD COLUMN IF NOT EXISTS answer_text TEXT NOT NULL DEFAULT ''",
         """CREATE TABLE IF NOT EXISTS answered_gaps (
             channel_id VARCHAR NOT NULL,
             thread_ts VARCHAR NOT NULL,
             question TEXT NOT NULL,
             answer TEXT NOT NULL,
             answered_by VARCHAR NOT NULL,
             asked_by VARCHAR NOT NULL,
             answer_ts VARCHAR NOT NULL,
             permalink VARCHAR NOT NULL,
             scopes JSON,
             answered_at TIMESTAMPTZ NOT NULL,
             added_by VARCHAR NOT NULL,
             added_at TIMESTAMPTZ NOT NULL,
             PRIMARY KEY (channel_id, thread_ts))""",
         "CREATE INDEX IF NOT EXISTS ix_answered_gaps_added_at ON answered_gaps (added_at)",
         )


@migration
def m008_answered_gaps_channel_kind(conn: Connection) -> None:
    """An answered gap keeps the kind of channel it was said in (public / private), so a private
    channel's stay out of the digest and App Home unless the operator opts in (bot.records.gap_listing).
    Gaps added before this are '' (unknown), which counts as private."""
    _run(conn, "ALTER TABLE answered_gaps ADD COLUMN IF NOT EXISTS channel_kind VARCHAR NOT NULL DEFAULT ''")


@migration
def m009_keyword_base_parts(conn: Connection) -> None:
    """A saved keyword base over `keyword_versions.PART_BYTES` is written in parts: the first in
    `keyword_bases.payload`, the rest here, deleted with their base. Postgres refuses a message
    over 1 GB, which a base of a million-chunk index came to in its earlier layout (docs/scaling.md)."""
    _run(conn,
         "CREATE TABLE IF NOT EXISTS keyword_base_parts (generation BIGINT NOT NULL "
         "REFERENCES keyword_bases (generation) ON DELETE CASCADE, part INTEGER NOT NULL, payload BYTEA NOT NULL, "
         "PRIMARY KEY (generation, part))")
