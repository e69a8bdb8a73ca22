"""Where two sources overlap (one location inside another's, read under two access scopes), and
the name `kb sync PATH` gives a location.

Checked when the sources file is read (`sources.file`); `overlap` and `adhoc_name` serve
`kb sync PATH` too. A remote source (Confluence over REST) has no location on disk, so it never
overlaps a folder or an export.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from sources.errors import SourcesError
from sources.source import SourceConfig


def overlap(a: Path, b: Path) -> str | None:
    """How two source locations overlap: "same" (one folder or export), "inside" (`a` lies in
    folder `b`), "contains" (`b` lies in folder `a`), or None. Links are resolved first, so a
    symlinked path is the folder it names. An export .zip inside a folder is not an overlap: no
    connector reads a .zip it finds in a folder."""
    a, b = _real(a), _real(b)
    if a == b:
        return "same"
    if a.is_relative_to(b) and a.suffix.lower() != ".zip":
        return "inside"
    if b.is_relative_to(a) and b.suffix.lower() != ".zip":
        return "contains"
    return None


def _real(location: Path) -> Path:
    try:
        return Path(location).expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop: compared as written
        return Path(location).expanduser().absolute()


def check_overlaps(sources: Sequence[SourceConfig], where: str) -> None:
    """Two sources reading the same files under different access would index each page twice,
    once under each scope: a public wiki folder holding the restricted `hr/` folder of another
    source publishes HR's pages. Such overlaps stop Docent at start, unless one of the two sets
    `allow_overlap = true` (having excluded the inner folder from the outer source, say)."""
    for i, a in enumerate(sources):
        for j in range(i + 1, len(sources)):
            b = sources[j]
            if a.remote is not None or b.remote is not None:
                continue  # a server, not a place on disk
            how = overlap(b.location, a.location)
            if how is None or a.access == b.access or a.allow_overlap or b.allow_overlap:
                continue
            inner, outer, ni, no = (a, b, i, j) if how == "contains" else (b, a, j, i)
            relation = "is the same location as" if how == "same" else "lies inside the location of"
            raise SourcesError(
                f"{where}: [[source]] #{ni + 1} ({inner.name}): location {inner.location} {relation} "
                f"[[source]] #{no + 1} ({outer.name}), {outer.location}, whose access is {_shown(outer.access)} "
                f"where this one's is {_shown(inner.access)}: its pages would be indexed under both. Give them the "
                f"same access, or exclude the inner folder from {outer.name} and set allow_overlap = true")


def _shown(access: str | dict[str, str]) -> str:
    if isinstance(access, str):
        return repr(access)
    return "{ " + ", ".join(f"{k} = {v!r}" for k, v in access.items()) + " }"


def adhoc_name(location: Path, taken: dict[str, str]) -> str:
    """The source name `kb sync PATH` gives a folder or export of its own: the file or folder
    name as a source name ("exports/html-space" → "html-space"), with a short hash of the full
    path when that name already belongs to another location (`taken`: name → location).
    The same path always gets the same name, so re-syncing it updates the same pages."""
    location = Path(location).resolve()
    stem = location.stem if location.is_file() or location.suffix.lower() == ".zip" else location.name
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-._")[:48] or "wiki"
    if not base[0].isalnum():
        base = f"s{base}"
    for name, where in taken.items():
        if where == str(location):
            return name
    if base not in taken:
        return base
    return f"{base}-{hashlib.sha1(str(location).encode()).hexdigest()[:6]}"
