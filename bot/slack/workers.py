"""The Slack app's two thread pools, as `kb serve` runs them.

- `listeners`: Bolt's listener pool. Bolt acks an event before running its listener here; slash
  commands, buttons and forms are acked *by* their listener, so this pool must never be busy
  with slow work, or `/kb` waits past Slack's 3 seconds.
- `answers`: the pool questions are answered on (retrieval, the LLM, the reply). A burst of
  questions queues here, not in front of the acks (benchmarks.slack_load showed HTTP 404s from
  Slack's point of view when the two shared one pool).

Both count the work in flight, so a shutdown can let the answers being written finish
(`wait_idle`) — and a test can wait until the app is idle before asserting that something did
*not* happen.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

LISTENER_THREADS = 5  # Bolt's own default
ANSWER_THREADS = 4

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


class CountingPool(ThreadPoolExecutor):
    """A thread pool that knows how much of its work is queued or running."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
        self._pending = 0
        self._idle = threading.Condition()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """ThreadPoolExecutor's, counted; typed with `fn`'s parameters, as the base class is, so the
        arguments a listener hands to the answers pool are checked against the function they go to."""
        with self._idle:
            self._pending += 1
        try:
            return super().submit(self._run, fn, args, kwargs)
        except BaseException:  # shut down: the work never starts
            self._done()
            raise

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        try:
            return fn(*args, **kwargs)
        except Exception:  # nobody reads these futures: an error would vanish without this line
            log.exception("unhandled error in %s work (%s)", self._thread_name_prefix, getattr(fn, "__qualname__", fn))
            raise
        finally:
            self._done()

    def _done(self) -> None:
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    @property
    def pending(self) -> int:
        with self._idle:
            return self._pending

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or running (True), or `timeout` seconds pass (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)


@dataclass
class Workers:
    listeners: CountingPool = field(default_factory=lambda: CountingPool(LISTENER_THREADS, "docent-listener"))
    answers: CountingPool = field(default_factory=lambda: CountingPool(ANSWER_THREADS, "docent-answer"))

    def wait_idle(self, timeout: float = 20.0) -> bool:
        """Until both pools are idle at once: a listener may hand a question to the answers pool
        as it finishes, so the listeners are waited for first, and the pair re-checked."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if not (self.listeners.wait_idle(max(remaining, 0)) and self.answers.wait_idle(max(deadline - time.monotonic(), 0))):
                return False
            if self.listeners.pending == 0 and self.answers.pending == 0:
                return True

    def shutdown(self, wait: bool = True) -> None:
        self.listeners.shutdown(wait=wait)
        self.answers.shutdown(wait=wait)
