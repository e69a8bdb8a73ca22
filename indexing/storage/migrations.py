"""The index's schema: every table indexing keeps, made by one ordered list of named migrations.

Every table of the index — `documents`, `parent_sections`, `embedding_cache`, `sync_runs`,
`sources`, `index_state`, the keyword leg's `keyword_*`, `sentence_vectors` — is created here and
nowhere else; the bot's own tables are the bot's, made by its own set (`bot.migrations`) through
the same `migrate`. The SQLModel classes (`indexing.storage.index_tables`) are the Python view of
these tables and create nothing; tests/test_migrations.py checks that they and the migrations
describe the same columns. The one exception is PGVectorStore's own chunk table
(`data_docent_chunks`), which LlamaIndex creates and shapes (`indexing.vectors.store`).

The migrations are SQL, not SQLModel metadata, so that a migration says exactly what it does to a
database that already has rows.

How it runs
-----------
`migrate(engine)` runs when the index opens (`indexing.index.Index`), in one transaction under
one advisory lock (the bot's set runs right after, under the same lock): it creates
`_docent_migrations(name, applied_at)` if missing, then applies, in order, each migration whose
name is not recorded there, and records it. Replicas starting at the same moment wait for each
other on the lock and the later ones find nothing left to do (without the lock, two CREATE TABLE
IF NOT EXISTS at once fail with a duplicate key in Postgres' catalog).
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
    bot's own, run by `bot.migrations.migrate_bot`."""

    def register(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
        if any(m.name == fn.__name__ for m in target):
            raise ValueError(f"migration {fn.__name__} is defined twice")
        target.append(Migration(fn.__name__, fn))
        return fn

    return register


migration = registry(MIGRATIONS)


def run_sql(conn: Connection, *statements: str) -> None:
    """Each statement as written (`exec_driver_sql`: `::` casts and `$$` bodies pass untouched)."""
    for statement in statements:
        conn.exec_driver_sql(statement)


def migrate(engine: Engine, migrations: Sequence[Migration] | None = None, *,
            owns: Callable[[str], bool] | None = None) -> list[str]:
    """Apply the migrations of one set this database has not had, in order, in one transaction under
    the migration lock; returns their names (empty when it was up to date).

    `migrations`: indexing's `MIGRATIONS` by default, or another owner's set (`bot.migrations`);
    `owns`: which recorded names are that set's, so that a set warns only of names of its own it
    does not know (another owner's are not its business). Every set is recorded in the one
    `_docent_migrations` table and serialised by the one lock."""
    migrations = MIGRATIONS if migrations is None else migrations
    owns = owns or _indexing_owns
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK})
        conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {TABLE} (name VARCHAR PRIMARY KEY, "
                             "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        done = set(conn.exec_driver_sql(f"SELECT name FROM {TABLE}").scalars())
        unknown = {name for name in done if owns(name)} - {m.name for m in migrations}
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


def _indexing_owns(name: str) -> bool:
    return name.startswith("m") and name not in MOVED_TO_BOT


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
    run_sql(conn,
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
    run_sql(conn,
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
    run_sql(conn,
         "CREATE TABLE IF NOT EXISTS sentence_vectors (parent_id VARCHAR NOT NULL, model VARCHAR NOT NULL, "
         "dim INTEGER NOT NULL, position INTEGER NOT NULL, doc_id VARCHAR NOT NULL, text_md5 VARCHAR(32) NOT NULL, "
         "vector BYTEA NOT NULL, PRIMARY KEY (parent_id, model, dim, position))",
         "CREATE INDEX IF NOT EXISTS sentence_vectors_doc_idx ON sentence_vectors (doc_id, model)",
         )


INDEX_TABLES = ("documents", "parent_sections", "embedding_cache", "sync_runs", "sources", "index_state",
                "keyword_changes", "keyword_versions", "keyword_bases", "sentence_vectors", "keyword_base_parts")
# Every table a release before named migrations could have made, the bot's too: m006 brings their times to
# timestamptz, in an older database, before the bot's own set (bot.migrations) runs.
_ZONELESS_TABLES = (*INDEX_TABLES, "query_log", "feedback", "admin_actions", "slack_deliveries", "answer_messages",
                    "handovers", "answered_gaps")
# The bot's tables' migrations, which ran in this set until the bot got its own (bot.migrations): a database
# records them under these names, and they are the bot's to know now, not a newer release's.
MOVED_TO_BOT = frozenset({"m004_query_log_feedback_admin_actions", "m005_slack_tables", "m007_answered_gaps",
                          "m008_answered_gaps_channel_kind"})


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
        "AND table_name::text = ANY(:tables) ORDER BY 1, 2"), {"tables": list(_ZONELESS_TABLES)}).all()
    for table, column in columns:
        conn.exec_driver_sql(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE timestamptz '
                             f'USING "{column}" AT TIME ZONE \'UTC\'')


BASELINE = [m.name for m in MIGRATIONS]
"""The migrations written to be idempotent (see the module docstring): every database made before
named migrations runs all of them, whatever it already had. Migrations after these run only on
databases that have recorded these, so they are ordinary one-time changes."""


@migration
def m009_keyword_base_parts(conn: Connection) -> None:
    """A saved keyword base over `keyword_versions.PART_BYTES` is written in parts: the first in
    `keyword_bases.payload`, the rest here, deleted with their base. Postgres refuses a message
    over 1 GB, which a base of a million-chunk index came to in its earlier layout (docs/scaling.md)."""
    run_sql(conn,
         "CREATE TABLE IF NOT EXISTS keyword_base_parts (generation BIGINT NOT NULL "
         "REFERENCES keyword_bases (generation) ON DELETE CASCADE, part INTEGER NOT NULL, payload BYTEA NOT NULL, "
         "PRIMARY KEY (generation, part))")
