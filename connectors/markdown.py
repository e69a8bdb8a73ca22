"""Markdown folders: Git wikis, MkDocs and Obsidian vaults, handbooks.

Every `.md`, `.markdown`, `.mdx` and `.txt` file under the root becomes one `SourceDocument`.
YAML front matter (`title`, `url`, `tags`) is parsed and removed; the title comes from front
matter, else the first `# H1`, else the file name. A file that cannot be read (bad encoding,
binary, empty, too big, broken front matter) becomes a document with `error` set: the sync
records it as FAILED and carries on.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from connectors.document import PUBLIC, SourceDocument

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx", ".txt"}
DEFAULT_MAX_BYTES = 10 * 1024 * 1024

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$")


@dataclass
class MarkdownFolder:
    """A folder of Markdown files and how to cite them."""

    root: Path
    source: str = "wiki"
    include: list[str] = field(default_factory=list)  # globs; empty means every Markdown file
    exclude: list[str] = field(default_factory=list)  # globs, e.g. "SOURCE.md", "drafts/**"
    url_template: str | None = None  # e.g. "https://github.com/acme/handbook/blob/main/{path}"
    access: str = PUBLIC
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def documents(self) -> Iterator[SourceDocument]:
        """Every wanted file under the root, read (or failed) one at a time."""
        for path in self.paths():
            yield self.read(path)

    def paths(self) -> Iterator[str]:
        """Relative paths of the wanted files, sorted, never leaving the root."""
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                full = Path(dirpath) / name
                rel = full.relative_to(self.root).as_posix()
                if self.wants(rel) and self._inside_root(full):
                    found.append(rel)
        yield from sorted(found)

    def wants(self, rel: str) -> bool:
        """Whether a relative path is a Markdown file this source should index."""
        pure = PurePosixPath(rel)
        if any(part.startswith(".") for part in pure.parts):
            return False
        if pure.suffix.lower() not in MARKDOWN_SUFFIXES:
            return False
        if self.include and not _matches_any(rel, self.include):
            return False
        return not _matches_any(rel, self.exclude)

    def read(self, rel: str) -> SourceDocument:
        """Read one file into a document; problems become the document's `error`."""
        full = self.root / rel
        doc = SourceDocument(source=self.source, path=rel, access=self.access, url=self.url_for(rel))
        try:
            stat = full.stat()
            doc.updated_at = datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc)
            if stat.st_size > self.max_bytes:
                raise ValueError(
                    f"file is {stat.st_size / 1e6:.1f} MB, over the {self.max_bytes / 1e6:.0f} MB limit"
                )
            raw = full.read_bytes()
            text = _decode(raw)
            meta, body = _split_front_matter(text)
        except (OSError, ValueError) as exc:
            doc.error = str(exc) or type(exc).__name__
            return doc
        if not body.strip():
            doc.error = "empty document: no text after front matter" if meta else "empty document"
            return doc
        doc.text = body
        doc.title = str(meta.get("title") or "").strip() or _first_h1(body) or _title_from_name(rel)
        if meta.get("url"):
            doc.url = str(meta["url"]).strip()
        tags = meta.get("tags") or []
        doc.metadata["tags"] = [t.strip() for t in tags.split(",")] if isinstance(tags, str) else [str(t) for t in tags]
        return doc

    def url_for(self, rel: str) -> str:
        """The citation URL of a page: the template filled in, else a file:// URL."""
        if self.url_template:
            return self.url_template.format(path=quote(rel))
        return (self.root / rel).as_uri()

    def _inside_root(self, full: Path) -> bool:
        """Symlinks are fine as long as they point inside the root (and are not loops)."""
        if not full.is_symlink():
            return True
        try:
            return full.resolve(strict=True).is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False


def _matches_any(rel: str, patterns: list[str]) -> bool:
    """Glob match against the whole relative path, or the file name for slash-free patterns."""
    name = PurePosixPath(rel).name
    for pattern in patterns:
        if fnmatch.fnmatch(rel, pattern) or ("/" not in pattern and fnmatch.fnmatch(name, pattern)):
            return True
        if pattern.endswith("/**") and rel.startswith(pattern[:-2]):
            return True
    return False


def _decode(raw: bytes) -> str:
    if b"\x00" in raw:
        raise ValueError("binary content (NUL bytes), not a text file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _split_front_matter(text: str) -> tuple[dict, str]:
    """Split off YAML front matter (python-frontmatter finds it); broken front matter is an error.

    The YAML is parsed here rather than by `frontmatter.loads`, which silently drops front
    matter that is not a mapping (a list, a bare string) instead of reporting it.
    """
    if not text.startswith("---"):
        return {}, text
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    try:
        raw, body = YAMLHandler().split(text)
    except ValueError:  # an opening "---" with no closing one: a horizontal rule, not front matter
        return {}, text
    try:
        meta = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"broken YAML front matter: {first}") from None
    body = body.lstrip("\n")
    if meta is None:
        return {}, body
    if not isinstance(meta, dict):
        raise ValueError("broken front matter: expected key: value pairs")
    return meta, body


def _first_h1(body: str) -> str:
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (match := _H1.match(line)):
            return match.group(1).strip()
    return ""


def _title_from_name(rel: str) -> str:
    stem = PurePosixPath(rel).stem
    return re.sub(r"[-_]+", " ", stem).strip() or stem
