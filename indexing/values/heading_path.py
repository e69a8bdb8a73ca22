"""A section's heading path: the headings above it, under its page's title — e.g.
`Benefits > Time off > Parental leave`; empty for a page's introduction.

One type from the chunker to the reply (`Parent`, `Hit`, `Source`), kept in two stored forms that
do not change: a JSON list (`parent_sections.heading_path`) and the headings joined by " > " (the
chunks' `heading_path` metadata, which BM25 also indexes; a source's `heading_path` in the query
log and in `kb ask --json` / `kb eval --json`). `str(path)` is that one join and
`HeadingPath.parse` its one split.
"""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = " > "


class HeadingPath(tuple[str, ...]):
    """The headings over a section, outermost first: a tuple of their texts."""

    __slots__ = ()

    def __new__(cls, headings: Iterable[str] = ()) -> HeadingPath:
        return super().__new__(cls, headings)

    @classmethod
    def parse(cls, text: str | None) -> HeadingPath:
        """The path `str()` wrote; empty parts are dropped, so "" and None read as no headings."""
        return cls(part for part in (text or "").split(SEPARATOR) if part)

    def __str__(self) -> str:
        return SEPARATOR.join(self)

    def __repr__(self) -> str:
        return f"HeadingPath({tuple(self)!r})"
