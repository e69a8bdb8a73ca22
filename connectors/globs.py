"""Which files of a folder a source reads: include/exclude globs with gitignore semantics.

Patterns are matched by the `pathspec` library the way `.gitignore` lines are: a pattern without
a slash matches a name at any depth (`SOURCE.md`, `*.jsonl`), `drafts/**` everything under
`drafts/`, `**/*.md` top-level pages too, and `!pattern` re-includes. One implementation for
the sources file, `KB_EXCLUDE` and `kb sync --include/--exclude`, so a glob means the same
everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


@dataclass(frozen=True)
class GlobFilter:
    """Include (empty: everything) and exclude globs over paths relative to a source's root."""

    include: tuple[str, ...] = field(default_factory=tuple)
    exclude: tuple[str, ...] = field(default_factory=tuple)

    @cached_property
    def _include(self) -> GitIgnoreSpec | None:
        return _spec(self.include) if self.include else None

    @cached_property
    def _exclude(self) -> GitIgnoreSpec | None:
        return _spec(self.exclude) if self.exclude else None

    def wants(self, rel: str) -> bool:
        """Whether a relative path (forward slashes) passes the include and exclude globs."""
        if self._include is not None and not self._include.match_file(rel):
            return False
        return self._exclude is None or not self._exclude.match_file(rel)


def _spec(patterns: tuple[str, ...]) -> GitIgnoreSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)
