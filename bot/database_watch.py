"""The embedded Postgres watched while `kb serve` runs: started again if it dies, and `/livez` told.

With no `DATABASE_URL`, Docent's Postgres is a server of its own in `KB_HOME`
(`indexing.storage`), and nothing else restarts it: once the OOM killer or a stray `kill` ended
it, every question failed until a person restarted `kb serve`, while `/livez` still said 200
(issue 45). So `kb serve` checks it every `CHECK_SECONDS` and starts it again at once
(`revive_embedded`: a second or less; the connection pools reconnect by themselves). While it
cannot be started, `/livez` answers 503, so whatever runs `kb serve` (Kubernetes' liveness probe,
a supervisor) restarts the process, and the checks back off to once a minute. A configured
`DATABASE_URL` is not watched: that server is its operator's, and its outage is readiness'
business (`/healthz`), not a reason to restart Docent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from indexing.storage import revive_embedded

log = logging.getLogger(__name__)

CHECK_SECONDS = 5.0  # how long a dead embedded server can go unnoticed
MAX_WAIT_SECONDS = 60.0  # the longest wait between two attempts to start it again


class EmbeddedWatch:
    """A thread keeping the embedded Postgres of `home` running; `alive` is False while it is
    down and could not be started again."""

    def __init__(self, home: Path, revive: Callable[[Path], bool] = revive_embedded) -> None:
        self.home, self.revive = home, revive
        self.alive = True
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="docent-database-watch", daemon=True)

    def start(self) -> EmbeddedWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (before the server is stopped on purpose, at exit)."""
        self._stopping.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        wait = CHECK_SECONDS
        while not self._stopping.wait(wait):
            try:
                self.alive = self.revive(self.home)
            except Exception:  # a bug here must not end the watch
                log.exception("could not check the embedded Postgres")
                self.alive = False
            wait = CHECK_SECONDS if self.alive else min(wait * 2, MAX_WAIT_SECONDS)
