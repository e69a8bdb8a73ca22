"""One HTTP request to a Confluence site, bounded: a deadline for the whole request and a cap on
the bytes read.

`requests` bounds each socket operation (`timeout` is per connect and per read), so a server that
drips one byte every two seconds never times out: a listing of a few KB took ~50 minutes with
`timeout = 5` (issue 45). Here a request runs inside `Attempt(seconds)`, whose timer shuts the
request's socket down when the time is up, wherever the request is (waiting for the status line,
the headers or the body): the blocked read returns, and the caller sees `DeadlineExceeded`. The
socket is found through the connection classes of `deadline_session`'s adapter, which tell the
thread's current attempt which connection it is using.

Bodies are read streaming (`read_capped`): a `Content-Length` over the cap is refused before
reading, and reading stops at the cap whatever the server declared (a listing's `fileSize` is
not trusted either). Redirects are not followed here (`allow_redirects=False` at the caller):
`connectors.confluence.api` decides where a `Location` may go.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

CHUNK = 64 * 1024


class DeadlineExceeded(TimeoutError):
    """The request did not finish (answer read in full) within its deadline."""


class TooLarge(ValueError):
    """The answer is over the cap (`declared`: what its Content-Length said, None: found reading)."""

    def __init__(self, declared: int | None) -> None:
        super().__init__("over the size cap")
        self.declared = declared


_current = threading.local()  # .attempt: the Attempt of the request this thread is making


class Attempt:
    """One request's deadline (see the module docstring); use as a context manager around the
    request and the reading of its body."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Attempt:
        _current.attempt = self
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._timer.cancel()
        _current.attempt = None

    def bind(self, sock: socket.socket) -> None:
        """The socket this request uses (told by its connection). Kept here, not read from the
        connection later: http.client hands a closing connection's socket to the response."""
        with self._lock:
            self._socket = sock
            expired = self.expired
        if expired:
            _cut(sock)

    def check(self) -> None:
        if self.expired:
            raise DeadlineExceeded(f"no complete answer within {self.seconds:g} s")

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sock = self._socket
        if sock is not None:
            _cut(sock)


def _cut(sock: socket.socket) -> None:
    """Shut the socket down: a read blocked on it in another thread returns at once."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _bind(connection: HTTPConnection) -> None:
    attempt = getattr(_current, "attempt", None)
    sock = getattr(connection, "sock", None)
    if attempt is not None and sock is not None:
        attempt.bind(sock)


class _HTTPConnection(HTTPConnection):
    """Tells the thread's `Attempt` its socket: when connected, and when reused for a request."""

    def connect(self) -> None:
        super().connect()
        _bind(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _bind(self)
        super().request(*args, **kwargs)


class _HTTPSConnection(_HTTPConnection, HTTPSConnection):
    """The same over TLS: `_HTTPConnection`'s `super()` is `HTTPSConnection` here."""


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class _DeadlineAdapter(HTTPAdapter):
    """requests' adapter, on connection classes that report to the thread's `Attempt`; no retries
    (`connectors.confluence.api` retries, once, itself)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS pools are their own classes: body reads still check the time
            manager.pool_classes_by_scheme = _POOLS
        return manager


def deadline_session() -> requests.Session:
    """A requests session whose requests an `Attempt` can cut short; no retries of its own."""
    session = requests.Session()
    adapter = _DeadlineAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def read_capped(response: requests.Response, max_bytes: int, attempt: Attempt) -> bytes:
    """The answer's body, at most `max_bytes` (else `TooLarge`), read in chunks within `attempt`."""
    declared = response.headers.get("Content-Length", "").strip()
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(int(declared))
    body = bytearray()
    for chunk in response.iter_content(CHUNK):
        attempt.check()
        body += chunk
        if len(body) > max_bytes:
            raise TooLarge(None)
    attempt.check()
    return bytes(body)
