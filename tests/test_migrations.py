"""One schema, made by named migrations: an empty database and one made by any earlier release end
the same, and the SQLModel classes describe what the migrations made.

Each test makes databases of its own on the session's server (`scratch_database`), so nothing
touches the shared index's tables. The earlier releases' schemas are pg_dump files made by
tests/data/schemas/make_dumps.py, which ran each commit's own table creation (see its docstring
for which commits, and why twice).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import MetaData, create_engine, text
from sqlalchemy.engine import Engine

from tests.support.databases import scratch_database
from indexing.storage import migrations
from bot.migrations import BOT_MIGRATIONS, BOT_TABLES, migrate_bot
from indexing.storage.migrations import INDEX_TABLES, MIGRATIONS, MOVED_TO_BOT, TABLE, applied, migrate

REPO = Path(__file__).resolve().parents[1]
DUMPS = sorted((REPO / "tests" / "data" / "schemas").glob("*.sql"))
OWN_TABLES = "data\\_%"  # PGVectorStore's chunk table (and its sequence): LlamaIndex makes and shapes it

# Columns with a server default: those added to a table after it first shipped (older rows, and an
# older replica's inserts, get a value), the keyword leg's and hand-overs' (raw SQL from the
# start), and the serial ids. Every other column gets its value from the SQLModel class.
DEFAULTS = {
    ("sync_runs", "id"): "nextval('sync_runs_id_seq'::regclass)",
    ("sync_runs", "runner"): "''::character varying",
    ("sync_runs", "skipped"): "0",
    ("sync_runs", "guarded_deletes"): "0",
    ("sync_runs", "result"): "'ok'::character varying",
    ("query_log", "id"): "nextval('query_log_id_seq'::regclass)",
    ("query_log", "outcome"): "''::character varying",
    ("query_log", "channel_kind"): "''::character varying",
    ("feedback", "id"): "nextval('feedback_id_seq'::regclass)",
    ("admin_actions", "id"): "nextval('admin_actions_id_seq'::regclass)",
    ("keyword_versions", "published_at"): "now()",
    ("keyword_versions", "runner"): "''::character varying",
    ("keyword_bases", "created_at"): "now()",
    ("handovers", "question"): "''::text",
    ("handovers", "created_at"): "now()",
    ("handovers", "asker"): "''::character varying",
    ("handovers", "answered_by"): "''::character varying",
    ("handovers", "answer_ts"): "''::character varying",
    ("handovers", "answer_text"): "''::text",
    ("answered_gaps", "channel_kind"): "''::character varying",
    ("verified_answers", "id"): "nextval('verified_answers_id_seq'::regclass)",
    ("verified_answers", "revision"): "nextval('verified_revision'::regclass)",
    ("verified_questions", "id"): "nextval('verified_questions_id_seq'::regclass)",
    ("verified_suggestions", "id"): "nextval('verified_suggestions_id_seq'::regclass)",
    (TABLE, "applied_at"): "now()",
}


# -- reading a schema from the catalog ------------------------------------------------------------


def schema(engine: Engine) -> dict[str, dict]:
    """Everything that makes two schemas the same, from pg_catalog: per table its columns (type,
    NOT NULL, default), indexes, constraints; enum types with their labels in order; sequences.
    Column order is left out: Postgres appends added columns and cannot reorder them."""
    queries = {
        "columns": """
            SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_get_expr(d.adbin, d.adrelid)
            FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
              AND c.relname NOT LIKE :own""",
        "indexes": """
            SELECT tablename, indexname, indexdef FROM pg_indexes
            WHERE schemaname = current_schema() AND tablename NOT LIKE :own""",
        "constraints": """
            SELECT c.relname, co.conname, co.contype, pg_get_constraintdef(co.oid)
            FROM pg_constraint co JOIN pg_class c ON c.oid = co.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relname NOT LIKE :own""",
        "enums": """
            SELECT t.typname, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
            FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid JOIN pg_namespace n ON n.oid = t.typnamespace
            WHERE n.nspname = current_schema() GROUP BY t.typname""",
        "sequences": """
            SELECT sequencename, data_type::text, start_value, increment_by FROM pg_sequences
            WHERE schemaname = current_schema() AND sequencename NOT LIKE :own""",
    }
    keys = {"columns": 2, "indexes": 2, "constraints": 2, "enums": 1, "sequences": 1}  # the rest is the value
    out: dict[str, dict] = {}
    with engine.connect() as conn:
        for what, query in queries.items():
            n = keys[what]
            out[what] = {(row[:n] if n > 1 else row[0]): (row[n:] if len(row) > n + 1 else row[n])
                         for row in map(tuple, conn.execute(text(query), {"own": OWN_TABLES}))}
    return out


def differences(got: dict[str, dict], want: dict[str, dict]) -> list[str]:
    """What differs, one line each, for a readable failure."""
    lines = []
    for what in want:
        for key in sorted({*got[what], *want[what]}, key=str):
            if got[what].get(key) != want[what].get(key):
                lines.append(f"{what} {key}: {got[what].get(key)!r}, expected {want[what].get(key)!r}")
    return lines


def tables(s: dict[str, dict]) -> set[str]:
    return {table for table, _ in s["columns"]}


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture
def database(index):
    """An empty database of its own (with pgvector, as `indexing.storage.database.connect` leaves it)."""
    with scratch_database(index, "docent_migrate") as url:
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        yield engine
        engine.dispose()


@pytest.fixture(scope="module")
def target(index) -> dict[str, dict]:
    """S: the schema an empty database has after `migrate` and the bot's `migrate_bot` (as every
    process that answers runs them: the index opens, then `KnowledgeBase`)."""
    with scratch_database(index, "docent_target") as url:
        engine = create_engine(url)
        try:
            migrate(engine)
            migrate_bot(engine)
            return schema(engine)
        finally:
            engine.dispose()


def load(engine: Engine, dump: Path) -> None:
    """A pg_dump --schema-only file (make_dumps.py left out what is not plain SQL) into `engine`'s
    database, on a connection of its own: the dump's statements may change session settings."""
    raw = engine.raw_connection()
    try:
        with raw.cursor() as cur:
            cur.execute(dump.read_text())
        raw.commit()
    finally:
        raw.close()


# -- an empty database ----------------------------------------------------------------------------


def test_an_empty_database_gets_every_docent_table_and_records_every_migration(database, target):
    assert migrate(database) == [m.name for m in MIGRATIONS]
    assert migrate_bot(database) == [m.name for m in BOT_MIGRATIONS]
    assert schema(database) == target
    assert tables(target) == {*INDEX_TABLES, *BOT_TABLES, TABLE}
    assert applied(database) == [m.name for m in MIGRATIONS] + sorted(m.name for m in BOT_MIGRATIONS)  # by when, then name
    assert target["enums"] == {"status": "PENDING,PROCESSING,SUCCESS,FAILED,SKIPPED"}
    defaults = {key: default for key, (_, _, default) in target["columns"].items() if default is not None}
    assert defaults == DEFAULTS
    timestamps = {key: kind for key, (kind, _, _) in target["columns"].items() if kind.startswith("timestamp")}
    assert set(timestamps.values()) == {"timestamp with time zone"}, timestamps


def test_the_sqlmodel_classes_describe_the_migrated_tables(index, target):
    """Models and migrations cannot drift: what `create_all` would make from every SQLModel class
    (and the sentence_vectors table's description) has the migrated columns — names, types,
    NOT NULL —, indexes, constraints and enum types. Server defaults are the migrations' alone
    (DEFAULTS above): the classes give every value themselves."""
    import importlib

    from sqlmodel import SQLModel

    from indexing.vectors.sentence_vectors import TABLE as SENTENCE_VECTORS

    for package in ("connectors", "sources", "indexing", "bot"):  # importing a module registers its table classes
        for path in sorted((REPO / package).rglob("*.py")):
            if "table=True" in path.read_text():
                importlib.import_module(".".join(path.relative_to(REPO).with_suffix("").parts))
    described = {t.name for t in SQLModel.metadata.sorted_tables} | {SENTENCE_VECTORS.name}
    assert described <= tables(target), described - tables(target)
    with scratch_database(index, "docent_models") as url:
        engine = create_engine(url)
        try:
            SQLModel.metadata.create_all(engine)
            SENTENCE_VECTORS.to_metadata(MetaData()).create(engine)
            models = schema(engine)
        finally:
            engine.dispose()
    strip = {"columns": lambda v: v[:2], "indexes": lambda v: v, "constraints": lambda v: v}
    for what, part in strip.items():
        got = {k: part(v) for k, v in target[what].items() if k[0] in described}
        want = {k: part(v) for k, v in models[what].items()}
        assert got == want, differences({what: got}, {what: want})
    assert models["enums"] == target["enums"]


# -- earlier releases -----------------------------------------------------------------------------


VALUES = {  # a value for a column of each type the earlier schemas have
    "integer": 7, "bigint": 7, "boolean": True, "json": '["x"]', "bytea": b"\x01\x02", "status": "SUCCESS",
    "timestamp without time zone": "2024-03-01 10:00:00", "timestamp with time zone": "2024-03-01 10:00:00+00",
}


def fill(engine: Engine) -> dict[str, list[dict]]:
    """One row in every Docent table of an earlier release's database, every column set; returns
    the rows as read back (zoneless times as the UTC they were)."""
    with engine.begin() as conn:
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in conn.execute(text(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = ANY(:t)"), {"t": [*INDEX_TABLES, *BOT_TABLES]}):
            columns.setdefault(table, []).append((column, kind))
        for table, cols in columns.items():
            # the one user-defined type is the status enum; strings are short enough for VARCHAR(32)
            values = {c: VALUES["status"] if k == "USER-DEFINED" else VALUES.get(k, f"{table}.{c}"[:32])
                      for c, k in cols}
            names = ", ".join(f'"{c}"' for c in values)
            conn.execute(text(f'INSERT INTO "{table}" ({names}) VALUES ({", ".join(f":{c}" for c in values)})'), values)
    return rows(engine, {table: [c for c, _ in cols] for table, cols in columns.items()})


def rows(engine: Engine, columns: dict[str, list[str]]) -> dict[str, list[dict]]:
    def utc(value):
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return bytes(value) if isinstance(value, memoryview) else value

    with engine.connect() as conn:
        return {table: [{c: utc(v) for c, v in row._mapping.items()} for row in conn.execute(
                    text(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}"'))]
                for table, cols in columns.items()}


def test_the_earlier_schemas_are_there():
    """make_dumps.py, run on main up to 1a2eebb (the last commit before named migrations), tried 24
    commits and found 13 distinct schemas with today's sqlmodel and 14 with sqlmodel 0.0.22, plus
    a database upgraded through every one of those commits with each: 29 dumps."""
    assert len(DUMPS) >= 29, DUMPS


@pytest.mark.parametrize("dump", DUMPS, ids=[d.stem for d in DUMPS])
def test_an_earlier_releases_database_migrates_to_the_same_schema_keeping_its_rows(index, target, dump):
    """It has no migrations table, so every migration runs on it. The migration runs in a session
    set to Tokyo time: zoneless times are UTC wall times whatever the session says."""
    with scratch_database(index, "docent_release") as url:
        engine = create_engine(url)
        tokyo = create_engine(url, connect_args={"options": "-c timezone=Asia/Tokyo"})
        try:
            load(engine, dump)
            before = fill(engine)
            assert migrate(tokyo) == [m.name for m in MIGRATIONS]
            assert migrate_bot(tokyo) == [m.name for m in BOT_MIGRATIONS]
            assert migrate(tokyo) == [] and migrate_bot(tokyo) == []  # a second process starting: nothing left to do
            assert differences(schema(engine), target) == []
            after = rows(engine, {table: list(found[0]) for table, found in before.items()})
            assert after == before
        finally:
            tokyo.dispose()
            engine.dispose()


def test_a_zoneless_time_is_read_as_utc(index):
    """The first release, as sqlmodel 0.0.2x made it: zoneless times, converted as UTC."""
    dump = next(d for d in DUMPS if d.stem.endswith("sqlmodel0.0.22"))
    with scratch_database(index, "docent_zoneless") as url:
        engine = create_engine(url, connect_args={"options": "-c timezone=Asia/Tokyo"})
        try:
            load(engine, dump)
            with engine.begin() as conn:
                assert conn.execute(text("SELECT data_type FROM information_schema.columns WHERE table_name = "
                                         "'documents' AND column_name = 'updated_at'")).scalar_one() \
                    == "timestamp without time zone"
                conn.execute(text("INSERT INTO documents (id, source, path, title, url, access, content_hash, status, "
                                  "chunk_count, updated_at) VALUES ('wiki:a.md', 'wiki', 'a.md', '', '', 'public', '', "
                                  "'SUCCESS', 0, '2024-03-01 10:00:00')"))
            migrate(engine)
            with engine.connect() as conn:
                updated = conn.execute(text("SELECT updated_at FROM documents")).scalar_one()
            assert updated == datetime(2024, 3, 1, 10, 0, tzinfo=timezone.utc)
        finally:
            engine.dispose()


# -- running it more than once, at once -----------------------------------------------------------


def test_migrating_again_changes_nothing(database, target):
    migrate(database)
    migrate_bot(database)
    assert migrate(database) == [] and migrate_bot(database) == []
    assert schema(database) == target


MIGRATE = "import sys; from sqlalchemy import create_engine; from indexing.storage.migrations import migrate; " \
          "from bot.migrations import migrate_bot; e = create_engine(sys.argv[1]); print(len(migrate(e) + migrate_bot(e)))"


@pytest.mark.parametrize("start", ["empty", "earliest release"])
def test_processes_migrating_at_once_apply_each_migration_once(index, target, start):
    """Replicas starting together: for each set, one applies its migrations, the others wait on the
    lock and find nothing left to do — every migration applied once."""
    with scratch_database(index, "docent_race") as url:
        engine = create_engine(url)
        try:
            if start == "empty":
                with engine.begin() as conn:
                    conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            else:
                load(engine, DUMPS[0])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
            processes = [subprocess.Popen([sys.executable, "-c", MIGRATE, url.render_as_string(hide_password=False)],
                                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                         for _ in range(3)]
            results = [p.communicate(timeout=120) for p in processes]
            assert [p.returncode for p in processes] == [0, 0, 0], [err for _, err in results]
            # each set runs under the lock: one process applies indexing's, one (the same or another) the bot's
            assert sum(int(out) for out, _ in results) == len(MIGRATIONS) + len(BOT_MIGRATIONS)
            assert sorted(applied(engine)) == sorted(m.name for m in [*MIGRATIONS, *BOT_MIGRATIONS])
            assert differences(schema(engine), target) == []
        finally:
            engine.dispose()


def test_a_failing_migration_leaves_the_database_as_it_was(database, monkeypatch):
    """All pending migrations run in one transaction: one that fails undoes the others, and none
    is recorded, so the next start tries them all again."""
    def m999_fails(conn):
        raise RuntimeError("boom")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*MIGRATIONS, migrations.Migration("m999_fails", m999_fails)])
    with pytest.raises(RuntimeError, match="boom"):
        migrate(database)
    assert applied(database) == []
    with database.connect() as conn:
        assert conn.execute(text("SELECT to_regclass('documents')")).scalar() is None


def test_a_database_that_recorded_the_bots_migrations_in_indexings_set_runs_neither_again(database, caplog):
    """A database migrated before the bot had its own set recorded m004, m005, m007 and m008 under
    indexing: the bot's set knows them as its own and runs none again; indexing does not take them for
    a newer release's."""
    migrate(database)
    with database.begin() as conn:  # as such a database's migrations table reads
        for name in sorted(MOVED_TO_BOT):
            conn.execute(text(f"INSERT INTO {TABLE} (name) VALUES (:n)"), {"n": name})
        conn.execute(text("CREATE TABLE query_log (id SERIAL PRIMARY KEY)"))  # only what the moved ones made
    with caplog.at_level("WARNING", logger="indexing.storage.migrations"):
        assert migrate(database) == []
        assert migrate_bot(database) == [m.name for m in BOT_MIGRATIONS if m.name not in MOVED_TO_BOT]
    assert "newer version" not in caplog.text


def test_migrations_have_distinct_numbered_names_in_order():
    names = [m.name for m in MIGRATIONS]
    assert len(set(names)) == len(names)
    assert names == sorted(names) and all(n[0] == "m" and n[1:4].isdigit() and n[4] == "_" for n in names)
    bot = [m.name for m in BOT_MIGRATIONS]
    moved, own = bot[:len(MOVED_TO_BOT)], bot[len(MOVED_TO_BOT):]
    assert set(moved) == MOVED_TO_BOT and moved == sorted(moved) and not MOVED_TO_BOT & set(names)
    assert own == sorted(own) and all(n.startswith("bot_m") and n[5:8].isdigit() and n[8] == "_" for n in own)
    assert len(set(bot)) == len(bot)


def test_each_set_warns_only_of_its_own_unknown_names(database, caplog):
    """The bot's names are not a newer release's to indexing, nor indexing's to the bot; a name of
    its own this release does not know is (a newer release migrated this database)."""
    migrate(database)
    migrate_bot(database)
    with caplog.at_level("WARNING", logger="indexing.storage.migrations"):
        migrate(database)
        migrate_bot(database)
    assert "newer version" not in caplog.text
    with database.begin() as conn:
        conn.execute(text(f"INSERT INTO {TABLE} (name) VALUES ('bot_m999_from_the_future')"))
    with caplog.at_level("WARNING", logger="indexing.storage.migrations"):
        migrate(database)
        assert "newer version" not in caplog.text
        migrate_bot(database)
    assert "bot_m999_from_the_future" in caplog.text


def test_a_failing_migration_prints_one_error_line_naming_it(index, kb_home):
    """A database where `answered_gaps` is already a view: m007 cannot index it. `kb status`
    printed a ~200-line traceback; now one `error:` line naming the migration, exit 1."""
    from sqlalchemy import create_engine, text
    from typer.testing import CliRunner

    from bot.cli import app as kb_cli

    with scratch_database(index, "docent_failing_migration") as url:
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("CREATE VIEW answered_gaps AS SELECT 1 AS added_at"))
        engine.dispose()
        result = CliRunner().invoke(kb_cli, ["status"], env={
            "KB_HOME": str(kb_home), "DATABASE_URL": url.render_as_string(hide_password=False), "KB_SOURCES": None,
            "KB_WIKI": None, "SLACK_BOT_TOKEN": None})
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: database migration m007_answered_gaps failed"), line
