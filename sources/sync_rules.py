"""Sync rules of a source: when it re-syncs (`Schedule`) and how much it may delete in an hour (`DeletionLimit`).

Both are written in the sources file (`schedule = "every 30m"`, `max_delete = "50%"`) and parsed
when it is read, so a schedule that could never fire or a limit that makes no sense stops Docent
at start with a `SourcesError` saying where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sources.errors import SourcesError

if TYPE_CHECKING:
    from apscheduler.triggers.base import BaseTrigger

# Deletion guard defaults: a sync may not delete more than half of a source's pages when that is
# 10 pages or more (a vanished mount or a wrong glob), nor every page of a source (any number).
DEFAULT_DELETE_SHARE = 0.5
DELETE_FLOOR = 10
# The guard counts deletions over a rolling hour, not per sync: the watcher syncs every few seconds,
# and a slow `rm -rf` or a mirror tool flushing as it goes must not empty a source 9 pages at a time.
DELETE_WINDOW_SECONDS = 3600
MAX_DELETE_EXPECTED = "a number of pages (e.g. 25) or a share such as \"50%\""
# What a source that suddenly finds nothing most likely means, by where it reads from.
EMPTY_FOLDER = "an empty or unmounted folder, or include/exclude globs that match nothing?"
EMPTY_SITE = ("has Docent's account lost access to these spaces (its token revoked, its groups changed), "
              "or do spaces/cql now select nothing?")


@dataclass(frozen=True)
class DeletionLimit:
    """How much of its pages a source may lose within an hour (`max_delete` in the sources file):
    `pages` (at most that many) or `share` (at most that share, once it is `DELETE_FLOOR` pages
    or more). The hour is rolling and counts every sync of the source — the watcher's, the
    schedule's, `kb sync` in any process — so many small syncs cannot together delete more than
    one sync may (deletions let through with `--allow-deletes` are not counted). Whatever the limit,
    a sync that finds no page at all where there were some deletes nothing: that is what an
    unmounted share or a half-finished clone looks like."""

    share: float | None = DEFAULT_DELETE_SHARE
    pages: int | None = None
    empty: str = EMPTY_FOLDER  # the likely cause of finding nothing, said when refusing (EMPTY_SITE for REST)

    def refusal(self, deleting: int, indexed: int, found: int | None, recent: int = 0) -> str | None:
        """Why deleting `deleting` of `indexed` pages (having found `found`; None: not a full
        listing) is refused, when syncs of the last hour already deleted `recent`; None: allowed."""
        if deleting == 0:
            return None
        if found == 0 and indexed > 0:
            return f"found no pages where {indexed} were indexed ({self.empty}); deleting none of them"
        total, before = deleting + recent, indexed + recent  # `before`: the source's pages an hour ago
        counted = (f"would delete {deleting} of {indexed} pages" if not recent else
                   f"would delete {deleting} pages after {recent} deleted by syncs of the last hour: "
                   f"{total} of {before} pages")
        if self.pages is not None:
            if total > self.pages:
                return f"{counted}, more than max_delete = {self.pages}{' an hour' if recent else ''}; deleting none"
            return None
        share = self.share if self.share is not None else DEFAULT_DELETE_SHARE
        if total >= DELETE_FLOOR and total > share * before:
            return f"{counted}, more than {share:.0%} of the source{' in an hour' if recent else ''}; deleting none"
        return None

    def __str__(self) -> str:
        return f"{self.pages} pages" if self.pages is not None else f"{self.share:.0%}"


@dataclass(frozen=True)
class Schedule:
    """A re-sync schedule, parsed when the sources file is read: "every 30m" or a 5-field cron (UTC)."""

    text: str
    interval_seconds: int | None = None  # None: `text` is a cron expression

    def trigger(self) -> BaseTrigger:
        """The apscheduler trigger for it."""
        if self.interval_seconds is not None:
            from apscheduler.triggers.interval import IntervalTrigger

            return IntervalTrigger(seconds=self.interval_seconds, timezone="UTC")
        from apscheduler.triggers.cron import CronTrigger

        return CronTrigger.from_crontab(self.text, timezone="UTC")

    def __str__(self) -> str:
        return self.text


_INTERVAL = re.compile(r"^every\s+(\d+)\s*(s|m|h|d)$")
_SHARE = re.compile(r"^(\d+(?:\.\d+)?)\s*%$")


def parse_schedule(text: str, where: str = "schedule") -> Schedule:
    """"every 15m" (s, m, h, d) or a 5-field cron (UTC), checked now by apscheduler itself, so a
    schedule that could never fire stops Docent at start rather than when it first comes due."""
    text = text.strip()
    if match := _INTERVAL.match(text):
        seconds = int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
        if seconds <= 0:
            raise SourcesError(f"{where}: the interval must be positive")
        return Schedule(text=text, interval_seconds=seconds)
    if len(text.split()) == 5:
        schedule = Schedule(text=text)
        try:
            schedule.trigger()
        except ValueError as exc:
            raise SourcesError(f"{where}: cron {text!r} is not valid: {exc}") from None
        return schedule
    raise SourcesError(f"{where}: {text!r} is neither 'every <n>s|m|h|d' nor a 5-field cron")


def parse_max_delete(value: int | str | None, where: str = "max_delete") -> DeletionLimit:
    """`max_delete = 25` (pages), `"50%"` (a share of the source's pages), or unset: the default."""
    if value is None:
        return DeletionLimit()
    if isinstance(value, bool):
        raise SourcesError(f"{where}: must be {MAX_DELETE_EXPECTED}, not true/false")
    if isinstance(value, int):
        if value < 0:
            raise SourcesError(f"{where}: must not be negative")
        return DeletionLimit(share=None, pages=value)
    if match := _SHARE.match(value.strip()):
        share = float(match.group(1)) / 100
        if share > 1:
            raise SourcesError(f"{where}: a share is at most 100%")
        return DeletionLimit(share=share)
    raise SourcesError(f"{where}: must be {MAX_DELETE_EXPECTED}, not {value!r}")
