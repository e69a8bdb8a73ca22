"""When a page last changed, by its Git history, for Markdown folders that are Git work trees.

A checkout gives every file the time of the checkout, so file times say nothing about a wiki
cloned from Git: the commit that last touched a page does. One `git log` lists, newest first,
the files of every commit under the folder, so the first time a path appears is its last change
(one process for the whole folder, not one per file). A file with uncommitted changes (or one
Git does not track) has no commit that describes it: it keeps its file time.

Git runs read-only and without the folder's own helpers: a wiki folder is not trusted, and its
`.git/config` could name an fsmonitor command to run; no optional locks are taken, so a sync never
competes with someone's `git commit` in the same folder. When Git is missing, the folder is no
work tree or Git fails, the answer is "no dates" and file times are used, with a log line.
"""

from __future__ import annotations

import logging
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

log = logging.getLogger(__name__)

GIT_TIMEOUT_SECONDS = 120.0  # a whole history of a large wiki lists in seconds; a hang must not stop a sync
_SAFE = ["-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "--no-pager"]


class GitDates:
    """Last-commit times of the files under one folder, read lazily and at most once per kind."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._committed: dict[str, datetime] | None = None  # every path's last commit, once listed
        self._dirty: set[str] | None = None
        self._usable: bool | None = None

    def last_change(self, rel: str) -> datetime | None:
        """The time of the last commit that touched `rel`, or None (no work tree, uncommitted
        changes, untracked, or Git unavailable): then the caller uses the file's own time."""
        if not self._is_work_tree() or rel in self._dirty_paths():
            return None
        if self._committed is None:
            self._committed = self._log()
        return self._committed.get(rel)

    def _is_work_tree(self) -> bool:
        if self._usable is None:
            out = self._git("rev-parse", "--is-inside-work-tree")
            self._usable = out is not None and out.strip() == b"true"
        return self._usable

    def _dirty_paths(self) -> set[str]:
        """Files whose content differs from the last commit (staged or not), relative to the root."""
        if self._dirty is None:
            out = self._git("diff", "HEAD", "--name-only", "-z", "--relative", "--no-renames", "--no-ext-diff")
            if out is None:  # no HEAD yet (a repository without commits): nothing is committed
                self._usable = False
                return set()
            self._dirty = {os.fsdecode(name) for name in out.split(b"\0") if name}
        return self._dirty

    def _log(self) -> dict[str, datetime]:
        """One `git log` of the folder: each path's newest commit time (the first time it is listed)."""
        out = self._git("log", "--format=%x1e%ct", "--name-only", "-z", "--relative", "--no-renames", "--", ".")
        if out is None:
            return {}
        committed: dict[str, datetime] = {}
        for record in out.split(b"\x1e")[1:]:
            stamp, *names = record.split(b"\0")
            when = datetime.fromtimestamp(int(stamp), tz=timezone.utc)
            for name in names:
                path = os.fsdecode(name.lstrip(b"\n"))
                if path and path not in committed:
                    committed[path] = when
        return committed

    def _git(self, *args: str) -> bytes | None:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        try:
            result = subprocess.run(["git", *_SAFE, *args], cwd=self.root, capture_output=True, env=env,
                                    timeout=GIT_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("git %s in %s failed (%s); page dates are file times", args[0], self.root, exc)
            return None
        if result.returncode != 0:
            reason = result.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
            if not reason or "not a git repository" not in reason[0]:  # the ordinary case: not worth a line
                # e.g. "detected dubious ownership" (the folder belongs to another user: see git's
                # safe.directory) or a repository without commits
                log.warning("git %s in %s: %s; page dates are file times", args[0], self.root,
                            reason[0] if reason else f"exit status {result.returncode}")
            return None
        return result.stdout
