"""Postgres advisory locks: one sync per source at a time, one scheduler leader per database.

Advisory locks belong to a database session, so they work across threads (each takes its own
connection) and across Docent processes sharing one database, and Postgres releases them when
a process dies — a killed sync never leaves a source locked.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)


def lock_key(name: str) -> int:
    """A stable signed 64-bit key for a lock name."""
    return int.from_bytes(hashlib.sha1(f"docent:{name}".encode()).digest()[:8], "big", signed=True)


@contextmanager
def advisory_lock(engine: Engine, name: str, wait: bool = True) -> Iterator[bool]:
    """Hold the named lock for the block; yields False (without waiting) if `wait` is off and it is taken."""
    key = lock_key(name)
    conn = engine.connect()
    try:
        if wait:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            got = True
        else:
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
        conn.commit()
        try:
            yield got
        finally:
            if got:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                conn.commit()
    finally:
        conn.close()


class LeaderLock:
    """A lock held for the life of the process: whoever holds it is the leader (e.g. runs schedules).

    apscheduler runs jobs on a thread pool, so two sources due at the same moment ask at once. The
    lock's one connection is used under a thread lock: otherwise both threads would find no
    connection yet, open one each, and the second — a different Postgres session — would be
    refused the lock its own process already holds, and skip its sync as if another process led.
    """

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.key = lock_key(name)
        self._conn: Connection | None = None
        self._mutex = threading.Lock()

    def is_leader(self) -> bool:
        """True if this process holds the lock, trying to take it if nobody does."""
        with self._mutex:
            if self._conn is not None:
                try:
                    self._conn.execute(text("SELECT 1"))
                    self._conn.commit()
                    return True
                except Exception:  # the connection died, and the lock with it
                    log.warning("lost the leader lock's connection; trying again")
                    self._close()
            conn = self.engine.connect()
            if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar():
                conn.commit()
                self._conn = conn
                return True
            conn.close()
            return False

    def release(self) -> None:
        with self._mutex:
            self._close()

    def _close(self) -> None:
        """Give the lock up. Closing the connection alone would not: it goes back to the pool with
        its Postgres session — and the session's advisory lock — still open."""
        if self._conn is not None:
            try:
                self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                self._conn.commit()
                self._conn.close()
            except Exception:  # a dead connection: drop it from the pool (its session is gone or going)
                try:
                    self._conn.invalidate()
                except Exception:
                    pass
            self._conn = None
