"""Never silent: apologies with a reference id, "temporarily unavailable", and quiet bookkeeping.

Every listener acknowledges first and does the slow work after; any failure past that point is
logged with a short reference id and the user is shown an apology carrying it — except a lost
database, which is not a bug: the user is told the knowledge base is temporarily unavailable, and
the next question after the database returns is answered (the connection pool reconnects). What
the user reads is in `bot.messages` (`apology`, `UNAVAILABLE`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from indexing.storage import is_unreachable

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


def reference_id() -> str:
    """A short id the user can quote and the log line carries."""
    return uuid.uuid4().hex[:8]


@contextmanager
def apology_on_error(what: str, apologise: Callable[[str], object],
                     unavailable: Callable[[], object] | None = None) -> Iterator[None]:
    """Any exception in the block is logged with a fresh reference id, and `apologise(ref)` tells
    the user — so a failure is never silence, and the user's reference finds the traceback.

    A lost database (`is_unreachable`) is not a bug to hunt down by reference: it is one warning
    line, and `unavailable()` (when given) tells the user to try again shortly. Nothing has to be
    restarted — the connection pool reconnects once the database is back."""
    try:
        yield
    except Exception as exc:
        ref = reference_id()
        tell: Callable[[], object] = lambda: apologise(ref)  # noqa: E731
        if is_unreachable(exc):
            log.warning("%s failed: the database cannot be reached [ref %s]: %s", what, ref, first_line(exc))
            tell = unavailable or tell
        else:
            log.exception("%s failed [ref %s]", what, ref)
        try:
            tell()
        except Exception:
            log.exception("could not deliver the apology [ref %s]", ref)


def unhandled(error: Exception, body: dict[str, Any]) -> None:
    """Bolt's last-resort error handler (`bot.slack.app` sets it): errors outside the listeners' own
    handling (e.g. in middleware)."""
    ref = reference_id()
    log.error("unhandled error [ref %s] for a %s request", ref, (body or {}).get("type"), exc_info=error)


def first_line(exc: BaseException) -> str:
    """An exception as one log line (SQLAlchemy's messages run to several)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def quietly(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """Bookkeeping (a log row, a progress message) that must not turn a delivered answer, or a
    running sync, into an error: a failure is logged, and None returned. Typed with `function`'s own
    parameters, so a wrong argument is a type error rather than a bookkeeping row quietly lost."""
    try:
        return function(*args, **kwargs)
    except Exception:
        log.exception("could not complete %s", getattr(function, "__name__", "a bookkeeping call"))
        return None
