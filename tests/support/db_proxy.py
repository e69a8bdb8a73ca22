"""A TCP proxy in front of the tests' embedded Postgres, to lose the database on purpose.

The session-wide embedded server (tests/conftest.py) listens on a Unix socket and other tests
keep using it, so it cannot be stopped. A test that needs "the database is gone" opens its own
`Index` through this proxy instead:

    proxy = DbProxy(unix_socket_of(index.url)).start()
    lost = Index(IndexConfig(home=kb_home, database_url=proxy.url), embedder=index.embedder)
    proxy.cut()       # every live connection is closed, new ones are refused (ECONNREFUSED)
    proxy.restore()   # listening again on the same port
    proxy.hang()      # a database that stops answering: bytes are held, every caller waits
    proxy.resume()    # the held bytes go through, and everything after them

Loopback only. Bytes are copied as they are; Postgres sees Unix-socket clients (trust auth).
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from sqlalchemy.engine import URL


def unix_socket_of(url: URL) -> str:
    """The socket file of a `?host=<dir>` Postgres URL (the embedded server's)."""
    host = url.query.get("host")
    if isinstance(host, tuple):
        host = host[0]
    assert host and host.startswith("/"), f"not a Unix-socket URL: {url!r}"
    return str(Path(host) / f".s.PGSQL.{url.port or 5432}")


class DbProxy:
    """127.0.0.1:<port> → a Postgres Unix socket, with a switch that cuts the database off."""

    def __init__(self, upstream: str, database: str = "postgres", user: str = "postgres") -> None:
        self.upstream = upstream
        self.database, self.user = database, user
        self.port = 0
        self._listener: socket.socket | None = None
        self._live: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.connections = 0  # accepted so far: a test can check its Index really came through here
        self._flowing = threading.Event()  # cleared by hang(): the pumps hold what they read
        self._flowing.set()

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    def start(self) -> DbProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="db-proxy", daemon=True).start()
        return self

    def cut(self) -> None:
        """The database is lost: stop listening and drop every open connection mid-stream."""
        listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)
        with self._lock:
            live, self._live = self._live, set()
        for sock in live:
            _close(sock)

    def restore(self) -> None:
        """The database is back, at the same address."""
        assert self._listener is None, "the proxy is not cut"
        self.start()

    def hang(self) -> None:
        """The database stops answering (a stopped server, a partition): connections stay open,
        new ones are accepted, and nothing comes back — each caller waits out its own timeouts
        (a pooled connection's ping has none)."""
        self._flowing.clear()

    def resume(self) -> None:
        """The database answers again: what was held goes through, in order."""
        self._flowing.set()

    def stop(self) -> None:
        self._flowing.set()
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by cut()
            try:
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.connect(self.upstream)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:  # cut while connecting
                    _close(client)
                    _close(server)
                    return
                self._live.update((client, server))
                self.connections += 1
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True, name="db-proxy-pump").start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()
                target.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._live.discard(source)
                self._live.discard(target)
            _close(source)
            _close(target)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
