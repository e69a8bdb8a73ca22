"""The hot standby that questions read from (`DATABASE_READ_URL`): opened, checked, described.

With `DATABASE_READ_URL` set, a process reads what a question needs from that server — a
streaming (hot) standby of `DATABASE_URL`'s: the vector leg, the registry rows that re-check each
hit's scope, sections and their sentence vectors, and the keyword leg's published version, change
log and saved bases. Everything else stays on the primary (`DATABASE_URL`): every write (syncs,
keyword publications, migrations, the question log, votes, gaps, Slack's own tables), advisory
locks, and LISTEN/NOTIFY, which a standby refuses. Unset: the primary answers reads too.

The standby must be a copy of the primary — the same Postgres cluster and database, with the
primary's migrations replayed — or questions would be answered from another wiki. Opening checks
that (`connect_standby`), so a read URL pointing elsewhere stops Docent with one `error:` line.

A standby replays the primary's changes a little later (replication lag, usually well under a
second). A question reads from the standby alone, so what it is answered from is one state the
primary had, at most that lag old; the keyword leg never runs ahead of its standby either
(`indexing.keyword.bm25.Bm25Index.announced`: a notice that arrives before the standby has replayed
the version it announces is followed until the standby has it).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from indexing.storage.database import DatabaseUnsupported, engine_for, safe_url, unreachable
from indexing.storage.migrations import TABLE as MIGRATIONS_TABLE

log = logging.getLogger(__name__)

SETTING = "DATABASE_READ_URL"
SCHEMA_WAIT_SECONDS = 15.0  # how long opening waits for the standby to replay a migration the primary just ran


@dataclass(frozen=True)
class ServerIdentity:
    """What says two connections reach the same data: a physical standby shares its primary's
    `system_identifier` (one cluster) and its databases' names."""

    cluster: int | None  # None: pg_control_system() is not readable by this role
    database: str
    in_recovery: bool


@dataclass(frozen=True)
class ReadServer:
    """Which server answers a process's reads (`kb status`, `kb serve`'s start-up line)."""

    location: str  # its URL, password hidden
    standby: bool  # DATABASE_READ_URL is set (reads leave the primary)
    in_recovery: bool  # the server is a standby replaying WAL (pg_is_in_recovery())
    behind_bytes: int | None = None  # WAL the primary wrote that the standby has not replayed (None: unknown)

    def describe(self) -> str:
        if not self.standby:
            return "the primary (no DATABASE_READ_URL)"
        if not self.in_recovery:
            return f"{self.location} (DATABASE_READ_URL; not in recovery: a primary, not a standby)"
        behind = "" if self.behind_bytes is None else f", {self.behind_bytes} bytes of WAL behind the primary"
        return f"{self.location} (hot standby{behind})"

    def to_json(self) -> dict[str, object]:
        return {"location": self.location, "standby": self.standby, "in_recovery": self.in_recovery,
                "behind_bytes": self.behind_bytes}


def identity(engine: Engine) -> ServerIdentity:
    with engine.connect() as conn:
        database, in_recovery = conn.execute(text("SELECT current_database(), pg_is_in_recovery()")).one()
        try:
            cluster = conn.execute(text("SELECT system_identifier FROM pg_control_system()")).scalar()
        except DBAPIError as exc:
            if isinstance(exc, OperationalError):
                raise
            log.debug("pg_control_system() is not readable here (%s); the cluster is not compared", exc.orig)
            cluster = None
    return ServerIdentity(cluster, database, bool(in_recovery))


def connect_standby(url: URL, primary: Engine) -> Engine:
    """An engine on the standby at `url` (nothing is created there: a standby refuses every
    write, `CREATE … IF NOT EXISTS` included), or one line saying why it cannot serve: unreachable,
    another cluster or database than the primary's, or the primary's schema not replayed within
    `SCHEMA_WAIT_SECONDS` (opening just ran the primary's migrations)."""
    theirs, wanted = identity(primary), set(_migrations(primary))
    engine = engine_for(url)
    try:
        check_copy(engine, theirs, wanted, url)
    except OperationalError as exc:
        engine.dispose()
        raise unreachable(exc, url, f"the read server ({SETTING})") from None
    except BaseException:
        engine.dispose()
        raise
    return engine


def check_copy(engine: Engine, theirs: ServerIdentity, wanted: set[str], url: URL) -> None:
    """That `engine` reaches a copy of the primary's database (`theirs`), with its migrations (`wanted`)."""
    ours = identity(engine)
    where = safe_url(url)
    if ours.cluster is not None and theirs.cluster is not None and ours.cluster != theirs.cluster:
        raise DatabaseUnsupported(
            f"{SETTING} ({where}) is not a standby of DATABASE_URL's server: it is another Postgres cluster "
            f"(system identifier {ours.cluster}, the primary's {theirs.cluster}); point it at a streaming replica "
            "of the primary (pg_basebackup -R)")
    if ours.database != theirs.database:
        raise DatabaseUnsupported(
            f"{SETTING} names database {ours.database!r} and DATABASE_URL {theirs.database!r}: a standby holds the "
            "primary's databases under the same names, so both must name the same one")
    deadline = time.monotonic() + SCHEMA_WAIT_SECONDS
    while missing := sorted(wanted - set(_migrations(engine))):
        if time.monotonic() > deadline:
            raise DatabaseUnsupported(
                f"{SETTING} ({where}) has not replayed the primary's schema after {SCHEMA_WAIT_SECONDS:.0f} s "
                f"(missing {missing[0]}): is it a standby that is replaying? pg_stat_replication on the primary says")
        time.sleep(0.2)


def _migrations(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        if conn.exec_driver_sql(f"SELECT to_regclass('{MIGRATIONS_TABLE}')").scalar() is None:
            return []
        return list(conn.exec_driver_sql(f"SELECT name FROM {MIGRATIONS_TABLE}").scalars())


def read_server(primary: Engine, reader: Engine, url: URL) -> ReadServer:
    """Which server answers reads and, for a standby, how much WAL it has still to replay."""
    if reader is primary:
        return ReadServer(location=safe_url(url), standby=False, in_recovery=False)
    with reader.connect() as conn:
        in_recovery, replayed = conn.execute(text("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text")).one()
    behind = None
    if in_recovery and replayed:
        with primary.connect() as conn:
            behind = conn.execute(text("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), CAST(:r AS pg_lsn))::bigint"),
                                  {"r": replayed}).scalar()
    return ReadServer(location=safe_url(url), standby=True, in_recovery=bool(in_recovery),
                      behind_bytes=None if behind is None else max(int(behind), 0))
