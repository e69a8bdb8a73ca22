"""Following a keyword version the server this process reads from has not replayed yet.

A notice of a new version comes from the primary (LISTEN/NOTIFY works only there) the moment the
publishing transaction commits; a hot standby replays that commit a little later. A process
reading from the standby that catches up on the notice finds the version not there yet. It must
not serve it before the standby has it (the chunks and sections a hit needs are read from the
standby too), nor wait for the next question to notice it: a `Follower` retries the catch-up on
a thread of its own — quickly at first, then once a second — until the version is there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

FIRST_RETRY_SECONDS = 0.05
MAX_RETRY_SECONDS = 1.0  # a version reaches the replica at most this long after its standby replays it
LAG_WARN_SECONDS = 30.0  # behind this long: said once in the log (a standby that stopped replaying?)


class Follower:
    """Calls `step()` — catch up, return the version now held — until it returns at least the
    version asked for by `follow`. The thread starts on the first `follow` and ends with `stop`."""

    def __init__(self, step: Callable[[], int]) -> None:
        self._step = step
        self._wanted = 0
        self._held = 0
        self._stopped = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def follow(self, version: int) -> None:
        """Catch up until `version` is held (in the background; returns at once)."""
        with self._changed:
            if self._stopped or version <= self._wanted:
                return
            self._wanted = version
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="docent-keyword-follow", daemon=True)
                self._thread.start()
            self._changed.notify()

    @property
    def wanted(self) -> int:
        """The newest version asked for (0: none)."""
        with self._changed:
            return self._wanted

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._stopped and self._held >= self._wanted:
                    self._changed.wait()
                if self._stopped:
                    return
            self._until_held()

    def _until_held(self) -> None:
        started, delay, said = time.monotonic(), FIRST_RETRY_SECONDS, False
        while True:
            try:
                held = self._step()
            except Exception as exc:  # the standby away for a moment: keep trying, say it once
                if not said:
                    log.warning("catching up with keyword version %d failed (%s); retrying", self._wanted,
                                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
                    said = True
                held = self._held
            with self._changed:
                self._held = max(self._held, held)
                if self._stopped or self._held >= self._wanted:
                    return
                if not said and time.monotonic() - started > LAG_WARN_SECONDS:
                    log.warning("the server answers are read from has not replayed keyword version %d after %.0f s; "
                                "serving version %d until it has", self._wanted, LAG_WARN_SECONDS, self._held)
                    said = True
                self._changed.wait(delay)
            delay = min(delay * 2, MAX_RETRY_SECONDS)
