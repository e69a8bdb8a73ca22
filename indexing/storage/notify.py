"""Replicas hear each other through Postgres LISTEN/NOTIFY on one channel, `docent_index`.

Two kinds of notice travel on it, as JSON: `keyword` (a new keyword version was published: catch
up now, so the next question does not wait) and `access` (a Slack event dropped cached access
details in one process: drop them everywhere). A notice is delivered when the transaction that
sent it commits, to every connection listening at that moment. Missing one is harmless: each
question still compares the published version, and access details expire on their own.
"""

from __future__ import annotations

import json
import logging
import select
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.orm import Session

from indexing.storage.index_tables import RUNNER_ID

if TYPE_CHECKING:
    from psycopg2.extensions import connection

log = logging.getLogger(__name__)
CHANNEL = "docent_index"
RECONNECT_SECONDS = 2.0


def notify(session_or_conn: Session | Connection, kind: str, **fields: object) -> None:
    """Send a notice in the caller's transaction (delivered at its commit)."""
    payload = json.dumps({"kind": kind, "from": RUNNER_ID, **fields}, ensure_ascii=False)
    session_or_conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": payload})


def notify_now(engine: Engine, kind: str, **fields: object) -> None:
    with engine.begin() as conn:
        notify(conn, kind, **fields)


Handler = Callable[[dict[str, Any]], None]  # a notice, as its JSON object


class Listener:
    """A daemon thread on its own connection, calling `handlers[kind](notice)` for each notice
    from *another* process. Reconnects (and calls `on_reconnect`, to catch up on what it may
    have missed) when the connection drops."""

    def __init__(self, url: URL, handlers: dict[str, Handler], on_reconnect: Callable[[], None] | None = None) -> None:
        self.url = url
        self.handlers = handlers
        self.on_reconnect = on_reconnect
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="docent-listen", daemon=True)
        self.connected = threading.Event()

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _connect(self) -> connection:
        import psycopg2

        args = self.url.translate_connect_args(username="user", database="dbname")
        query: dict[str, Any] = dict(self.url.query)
        conn: connection = psycopg2.connect(**args, **query, connect_timeout=5)
        conn.autocommit = True
        conn.cursor().execute(f"LISTEN {CHANNEL}")
        return conn

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                conn = self._connect()
            except Exception as exc:
                log.warning("cannot listen for index notices (%s); retrying", str(exc).splitlines()[0] if str(exc) else exc)
                self._stop.wait(RECONNECT_SECONDS)
                continue
            self.connected.set()
            if not first and self.on_reconnect:
                self._call(self.on_reconnect)
            first = False
            try:
                while not self._stop.is_set():
                    if select.select([conn], [], [], 1.0)[0]:
                        conn.poll()
                        while conn.notifies:
                            self._dispatch(conn.notifies.pop(0).payload)
            except Exception as exc:
                log.warning("lost the index notice connection (%s); reconnecting", exc)
            finally:
                self.connected.clear()
                try:
                    conn.close()
                except Exception:
                    pass

    def _dispatch(self, payload: str) -> None:
        try:
            notice = json.loads(payload)
        except ValueError:
            log.warning("ignoring a malformed index notice: %.200s", payload)
            return
        if notice.get("from") == RUNNER_ID:
            return  # our own: already applied here
        handler = self.handlers.get(notice.get("kind"))
        if handler is not None:
            self._call(handler, notice)

    @staticmethod
    def _call(fn: Callable[..., None], *args: object) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("an index notice handler failed")
