"""The bot's own tables, made by the bot's own ordered list of named migrations.

Indexing owns the index's schema (`indexing.storage.migrations`); what only the bot keeps — the
query log, votes and admin actions (`bot.records.question_log`), Slack's delivery claims, answer
messages and hand-overs (`bot.slack.store`), answered gaps, and verified answers
(`bot.verified.records`) — is the bot's to make, here, so that indexing never has to know of it
(imports point connectors ← sources ← indexing ← bot). The SQLModel classes are the Python view of
these tables and create nothing; tests/test_migrations.py checks that they agree.

Both sets run through the one `migrate` (one transaction, the one advisory lock, the one
`_docent_migrations` table). The first four migrations here ran in indexing's set until the bot
got its own: they keep their names (`m004_…`, recorded in every database they ran on, so they
never run twice) and indexing knows them as moved (`MOVED_TO_BOT`); new ones are named
`bot_mNNN_…`. The moved ones, and these, are idempotent, as indexing's baseline is: a database
from before named migrations runs them all.

When: the composition root runs this set right after the index opens (`bot.wiring.Root.index`),
and so does every `KnowledgeBase` (tests and benchmarks build their own): any process that answers
or records has the bot's tables.

Adding a migration: as `indexing.storage.migrations` says, with `@bot_migration` and the next
`bot_mNNN_` name; never edit one that has shipped.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection, Engine

from indexing.storage import Migration, migrate, registry, run_sql

BOT_MIGRATIONS: list[Migration] = []
BOT_TABLES = ("query_log", "feedback", "admin_actions", "slack_deliveries", "answer_messages", "handovers",
              "answered_gaps", "verified_answers", "verified_questions", "verified_suggestions")
bot_migration = registry(BOT_MIGRATIONS)


def migrate_bot(engine: Engine) -> list[str]:
    """Apply the bot's migrations this database has not had; returns their names."""
    return migrate(engine, BOT_MIGRATIONS, owns=lambda name: name.startswith("bot_m"))


@bot_migration
def m004_query_log_feedback_admin_actions(conn: Connection) -> None:
    """bot.records.question_log' tables. Older databases: query_log gained the outcome (answered / uncertain /
    not_found) and where it was asked (bot.records.question_log.ChannelKind) after it shipped — older rows get
    '' for both, which reads as "not known" and never as a public channel — and the two indexes
    behind the thread lookup of follow-ups."""
    run_sql(conn,
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


@bot_migration
def m005_slack_tables(conn: Connection) -> None:
    """The Slack app's own tables: once-only delivery claims (bot.slack.dedupe), which message
    answers which question (bot.slack.answer_messages), and hand-overs in help channels, one per
    thread, counted per channel per hour (bot.slack.handover)."""
    run_sql(conn,
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


@bot_migration
def m007_answered_gaps(conn: Connection) -> None:
    """The loop back to the wiki (bot.slack.listeners.answered_gaps): a hand-over remembers who asked and,
    once a person answers in its thread, that Docent offered the answer as a gap (once per thread);
    `answered_gaps` keeps the questions people answered that the wiki does not (bot.records.question_log).
    Written idempotent although it need not be (tests/test_slack_limits.py re-runs every
    migration on a migrated database whose migrations table it dropped)."""
    run_sql(conn,
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


@bot_migration
def m008_answered_gaps_channel_kind(conn: Connection) -> None:
    """An answered gap keeps the kind of channel it was said in (public / private), so a private
    channel's stay out of the digest and App Home unless the operator opts in (bot.records.gap_listing).
    Gaps added before this are '' (unknown), which counts as private."""
    run_sql(conn, "ALTER TABLE answered_gaps ADD COLUMN IF NOT EXISTS channel_kind VARCHAR NOT NULL DEFAULT ''")


@bot_migration
def bot_m001_verified_answers(conn: Connection) -> None:
    """Verified answers (`bot.verified.records`): an answer people gave, verified once, and the
    questions it answers. `revision` comes from one sequence and changes on every write, so a
    process knows its cached copy is current with one indexed `max()` (`bot.verified.lookup`).
    A question's vector is float32 bytes with the embedder's name and length beside it, as the
    embedding cache keeps them: a different model's rows are embedded again, never compared."""
    run_sql(
        conn,
        "CREATE SEQUENCE IF NOT EXISTS verified_revision",
        """CREATE TABLE IF NOT EXISTS verified_answers (
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
        "CREATE INDEX IF NOT EXISTS ix_verified_answers_revision ON verified_answers (revision)",
        "CREATE INDEX IF NOT EXISTS ix_verified_answers_review_by ON verified_answers (review_by)",
        """CREATE TABLE IF NOT EXISTS verified_questions (
            id SERIAL NOT NULL PRIMARY KEY,
            answer_id INTEGER NOT NULL REFERENCES verified_answers (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            question TEXT NOT NULL,
            model VARCHAR NOT NULL,
            dim INTEGER NOT NULL,
            vector BYTEA NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS ix_verified_questions_answer_id ON verified_questions (answer_id)",
    )


@bot_migration
def bot_m002_query_log_verified_id(conn: Connection) -> None:
    """The query log says which verified answer was given (`bot.records.question_log.QueryLog.verified_id`):
    votes on it reach its verifier, and the gaps report can tell people's answers from the wiki's.
    No foreign key: the log outlives what it mentions (retention deletes log rows, never answers)."""
    conn.exec_driver_sql("ALTER TABLE query_log ADD COLUMN IF NOT EXISTS verified_id INTEGER")
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_query_log_verified_id ON query_log (verified_id)")


@bot_migration
def bot_m003_verified_suggestions(conn: Connection) -> None:
    """Questions that took a verified answer when it was offered (`bot.verified.suggestions`): one
    row per answer and wording (lower-cased), so a question asked again is not suggested twice."""
    run_sql(
        conn,
        """CREATE TABLE IF NOT EXISTS verified_suggestions (
            id SERIAL NOT NULL PRIMARY KEY,
            answer_id INTEGER NOT NULL REFERENCES verified_answers (id) ON DELETE CASCADE,
            question TEXT NOT NULL,
            asked_by VARCHAR NOT NULL,
            channel_id VARCHAR,
            asked_at TIMESTAMPTZ NOT NULL,
            status VARCHAR NOT NULL,
            resolved_by VARCHAR,
            resolved_at TIMESTAMPTZ)""",
        "CREATE INDEX IF NOT EXISTS ix_verified_suggestions_answer_id ON verified_suggestions (answer_id)",
        "CREATE UNIQUE INDEX IF NOT EXISTS ux_verified_suggestions_wording ON verified_suggestions (answer_id, lower(question))",
    )
