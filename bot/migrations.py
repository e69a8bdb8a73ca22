"""The bot's own tables, made by the bot's own ordered list of named migrations.

Indexing owns the index's schema (`indexing.storage.migrations`); what only the bot keeps — for
now the verified answers (`bot.verified.records`) — is the bot's to make, here, so that indexing
never has to know of it (imports point connectors ← sources ← indexing ← bot). The bot's older
tables (query log, votes, Slack's) are still made by indexing's set: moving them is issue 47's.

Both sets run through the one `migrate` (one transaction, the one advisory lock, the one
`_docent_migrations` table); the bot's names start `bot_m`, so neither set mistakes the other's
for a newer release's. `KnowledgeBase` runs this set when it is built, on the primary: every
process that answers or records has it.

Adding a migration: as `indexing.storage.migrations` says, with `@bot_migration` and the next
`bot_mNNN_` name; never edit one that has shipped.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection, Engine

from indexing.storage import Migration, migrate, registry

OWNER = "bot_m"
BOT_MIGRATIONS: list[Migration] = []
BOT_TABLES = ("verified_answers", "verified_questions")  # the tables this set makes (it also changes query_log)
bot_migration = registry(BOT_MIGRATIONS)


def migrate_bot(engine: Engine) -> list[str]:
    """Apply the bot's migrations this database has not had; returns their names."""
    return migrate(engine, BOT_MIGRATIONS, owner=OWNER)


@bot_migration
def bot_m001_verified_answers(conn: Connection) -> None:
    """Verified answers (`bot.verified.records`): an answer people gave, verified once, and the
    questions it answers. `revision` comes from one sequence and changes on every write, so a
    process knows its cached copy is current with one indexed `max()` (`bot.verified.lookup`).
    A question's vector is float32 bytes with the embedder's name and length beside it, as the
    embedding cache keeps them: a different model's rows are embedded again, never compared."""
    for statement in (
        "CREATE SEQUENCE verified_revision",
        """CREATE TABLE verified_answers (
            id SERIAL NOT NULL PRIMARY KEY,
            answer TEXT NOT NULL,
            verified_by VARCHAR NOT NULL,
            verified_at TIMESTAMPTZ NOT NULL,
            scopes VARCHAR[] NOT NULL,
            cites JSON NOT NULL,
            review_by DATE NOT NULL,
            retired_at TIMESTAMPTZ,
            retired_by VARCHAR,
            updated_at TIMESTAMPTZ NOT NULL,
            channel_id VARCHAR,
            message_ts VARCHAR,
            revision BIGINT NOT NULL DEFAULT nextval('verified_revision'))""",
        "CREATE INDEX ix_verified_answers_revision ON verified_answers (revision)",
        "CREATE INDEX ix_verified_answers_review_by ON verified_answers (review_by)",
        """CREATE TABLE verified_questions (
            id SERIAL NOT NULL PRIMARY KEY,
            answer_id INTEGER NOT NULL REFERENCES verified_answers (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            question TEXT NOT NULL,
            model VARCHAR NOT NULL,
            dim INTEGER NOT NULL,
            vector BYTEA NOT NULL)""",
        "CREATE INDEX ix_verified_questions_answer_id ON verified_questions (answer_id)",
    ):
        conn.exec_driver_sql(statement)


@bot_migration
def bot_m002_query_log_verified_id(conn: Connection) -> None:
    """The query log says which verified answer was given (`bot.records.question_log.QueryLog.verified_id`):
    votes on it reach its verifier, and the gaps report can tell people's answers from the wiki's.
    No foreign key: the log outlives what it mentions (retention deletes log rows, never answers)."""
    conn.exec_driver_sql("ALTER TABLE query_log ADD COLUMN verified_id INTEGER")
    conn.exec_driver_sql("CREATE INDEX ix_query_log_verified_id ON query_log (verified_id)")
