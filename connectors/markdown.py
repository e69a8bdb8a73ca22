"""Markdown folders: Git wikis, MkDocs and Obsidian vaults, handbooks.

Every `.md`, `.markdown`, `.mdx` and `.txt` file under the root becomes one `SourceDocument`,
read by the one CommonMark parser (`connectors.commonmark`). YAML front matter (`title`, `url`,
`tags`, and a date) is parsed and removed; the title comes from front matter, else the first
level-1 heading (`# Title`, or `Title` over `=====`; never a `#` line inside code), else the file
name. A page's `url` in front matter is its citation link (its sections link to their anchors on
it). Its "updated" time is its front matter date (`updated`, `last_modified`, `lastmod` or
`date`, in that order), else the last commit that touched it when the folder is a Git work tree
(`connectors.git_dates`: one `git log` for the folder), else the file's modification time.
A file that cannot be read (bad encoding, binary, too big, broken front matter, a date that is
no date) becomes a document with `error` set: the sync records it as FAILED and carries on. An
empty file (or one with only front matter) is `skipped`: nothing to index, nothing broken.

PDF, Word (.docx) and PowerPoint (.pptx) files kept beside the pages are read too when the
source's `include` globs name them (`include = ["**/*.md", "policies/*.pdf"]`; with no include,
only Markdown is read, as before), converted by `connectors.attachments` (a PDF's sections cite
`file.pdf#page=N`), within its limits (50 MiB a file) rather than the page's 10 MiB.

Files are not trusted: only regular files are read (a FIFO or a device named `x.md` would block or
never end), never more than `max_bytes`, and never through a link that leaves the root. Front
matter is at most `MAX_FRONT_MATTER_BYTES` of YAML, and only text, numbers and dates are taken
from it (a list as a title, or a YAML alias bomb, is broken front matter, not a hang).
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from connectors import attachments
from connectors.commonmark import Page, parse
from connectors.document import PUBLIC, SURROGATE, SourceDocument, Unreadable
from connectors.globs import GlobFilter
from connectors.git_dates import GitDates
from connectors.sizes import size_text

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx", ".txt"}
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
MAX_FRONT_MATTER_BYTES = 64 * 1024

DATE_KEYS = ("updated", "last_modified", "lastmod", "date")  # front matter dates, the first present wins

# Front matter as YAML parsed it: keys and values are whatever YAML made of them (a key can be a
# number or a date, a value a list or a mapping), so each value is checked where it is read.
FrontMatter = dict[object, object]


@dataclass(frozen=True)
class Listing:
    """What a walk of the folder found: the wanted files, and what it could not list."""

    paths: list[str]
    unreadable: list[Unreadable]


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


@dataclass
class MarkdownFolder:
    """A folder of Markdown files and how to cite them."""

    root: Path
    source: str = "wiki"
    include: list[str] = field(default_factory=list)  # gitignore-style globs; empty means every Markdown file
    exclude: list[str] = field(default_factory=list)  # e.g. "SOURCE.md", "drafts/**" (connectors.globs)
    url_template: str | None = None  # e.g. "https://github.com/acme/handbook/blob/main/{path}"
    access: str = PUBLIC
    max_bytes: int = DEFAULT_MAX_BYTES
    index_drafts: bool = False  # `draft: true` pages are indexed too (the source's `index_drafts`)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.globs = GlobFilter(tuple(self.include), tuple(self.exclude))
        self._git = GitDates(self.root)  # read once per connector: one `git log` for all its pages

    def documents(self) -> Iterator[SourceDocument | Unreadable]:
        """Every wanted file under the root, read (or failed) one at a time; first, each subfolder
        that could not be listed, as an `Unreadable` (the sync fails what it had indexed there).

        A root that is missing, not a folder or unreadable (an unmounted share, a typo, a mount
        denied to Docent) raises before the first document: yielding nothing would make the sync
        delete every page of the source."""
        if not self.root.is_dir():
            raise FileNotFoundError(f"{self.root} is not a folder (missing or unmounted?); nothing was read")
        listing = self.listing()
        yield from listing.unreadable
        for path in listing.paths:
            yield self.read(path)

    def paths(self) -> Iterator[str]:
        """Relative paths of the wanted files, sorted, never leaving the root."""
        yield from self.listing().paths

    def listing(self) -> Listing:
        """The wanted files under the root, and the paths that could not be listed or examined.

        `os.walk` without `onerror` drops a folder it cannot read (EACCES, ESTALE, EIO) as if it
        were empty, and the sync would then delete its pages; so the walk is our own, over
        `os.scandir`, and every such failure is kept with its reason. The root itself failing
        raises (`OSError`): nothing of the source could be read. Hidden entries are skipped and
        links to folders are not followed, as before."""
        found: list[str] = []
        unreadable: list[Unreadable] = []
        pending = [""]  # relative folders still to list; "" is the root
        while pending:
            rel = pending.pop()
            folder = self.root / rel if rel else self.root
            try:
                with os.scandir(folder) as it:
                    entries = list(it)
            except OSError as exc:
                if not rel:
                    raise OSError(f"cannot list {self.root}: {_reason(exc)}; nothing was read") from None
                unreadable.append(Unreadable(self.source, rel, f"folder {rel}/ cannot be read: {_reason(exc)}"))
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                child = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    is_folder = entry.is_dir()  # follows a link, as os.walk does, to know what it names
                    is_link = entry.is_symlink()
                except OSError as exc:
                    unreadable.append(Unreadable(self.source, child, f"{child} cannot be examined: {_reason(exc)}"))
                    continue
                if is_folder:
                    if not is_link:  # links to folders are not followed
                        pending.append(child)
                elif self.wants(child) and self._inside_root(Path(entry.path)):
                    found.append(child)
        return Listing(paths=sorted(found), unreadable=sorted(unreadable, key=lambda u: u.path))

    def gone(self, rel: str) -> bool:
        """Whether the file at `rel` is certainly no longer a page: nothing there (ENOENT, or a
        parent that is no folder now) or a folder in its place. A file that exists but cannot be
        examined (EACCES on its folder, ESTALE) is not gone: reading it fails it with the reason."""
        try:
            info = os.stat(self.root / rel)
        except (FileNotFoundError, NotADirectoryError):
            return True
        except OSError:
            return False
        return stat.S_ISDIR(info.st_mode)

    def wants(self, rel: str) -> bool:
        """Whether a relative path is a Markdown file this source should index."""
        pure = PurePosixPath(rel)
        if any(part.startswith(".") for part in pure.parts):
            return False
        if pure.suffix.lower() in MARKDOWN_SUFFIXES:
            return self.globs.wants(rel)
        return bool(self.include) and attachments.wanted(rel) and self.globs.wants(rel)

    def read(self, rel: str) -> SourceDocument:
        """Read one file into a document; problems become the document's `error`."""
        if SURROGATE.search(rel):  # a file name that is not UTF-8: no id or URL can be made of it
            shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            return SourceDocument(source=self.source, path=shown, access=self.access,
                                  error="file name is not valid UTF-8; rename the file")
        doc = SourceDocument(source=self.source, path=rel, access=self.access)
        if attachments.wanted(rel):
            return self._read_file(doc)
        try:
            doc.url = self.url_for(rel)
            raw, mtime = self._read_bytes(rel)
            doc.updated_at = datetime.fromtimestamp(mtime, tz=timezone.utc)
            meta, body, page = _split_front_matter(_decode(raw))
            if not body.strip():
                doc.title = _meta_text(meta, "title") or _title_from_name(rel)
                doc.skipped = "empty page: no text after front matter" if meta else "empty page"
                return doc
            doc.text = body
            doc.title = _meta_text(meta, "title") or page.title or _title_from_name(rel)
            if _is_draft(meta) and not self.index_drafts:
                doc.text = ""
                doc.skipped = "a draft (`draft: true` in front matter); set index_drafts = true on the source to index drafts"
                return doc
            _check_scopes(meta, self.access)
            doc.url = _meta_text(meta, "url") or doc.url
            doc.updated_at = _meta_date(meta) or self._git.last_change(rel) or doc.updated_at
            doc.metadata["tags"] = _meta_tags(meta.get("tags"))
        except (OSError, ValueError) as exc:
            doc.text, doc.title = "", ""
            doc.error = str(exc) or type(exc).__name__
        except Exception as exc:  # anything else one file causes fails that file, not the sync
            doc.text, doc.title = "", ""
            doc.error = f"could not be read ({type(exc).__name__}: {exc})"
        return doc

    def _read_file(self, doc: SourceDocument) -> SourceDocument:
        """A PDF, Word or PowerPoint file: converted, or FAILED (SKIPPED: no text) with the reason."""
        limits = attachments.FileLimits()
        doc.heading_ids = []
        try:
            doc.url = self.url_for(doc.path)
            raw, mtime = self._read_bytes(doc.path, limits.max_bytes)
            doc.updated_at = self._git.last_change(doc.path) or datetime.fromtimestamp(mtime, tz=timezone.utc)
            converted = attachments.convert(doc.path, raw, limits)
            doc.text, doc.heading_ids = converted.text, converted.heading_ids
            doc.title = converted.title or PurePosixPath(doc.path).name
        except attachments.NoText as exc:
            doc.title, doc.skipped = PurePosixPath(doc.path).name, str(exc)
        except (OSError, ValueError) as exc:  # FileRefused is a ValueError
            doc.error = str(exc) or type(exc).__name__
        return doc

    def _read_bytes(self, rel: str, max_bytes: int | None = None) -> tuple[bytes, float]:
        """At most `max_bytes + 1` bytes (default: a page's) of a regular file inside the root, and its mtime."""
        max_bytes = max_bytes or self.max_bytes
        try:
            real = (self.root / rel).resolve(strict=True)
        except RuntimeError:  # a symlink loop (Python 3.11 raises RuntimeError for it)
            raise ValueError("symlink loop") from None
        if not real.is_relative_to(self.root):
            raise ValueError("the file links outside the source folder; not read")
        # The resolved path, not followed again (a link swapped in now fails); O_NONBLOCK: opening
        # a FIFO must not wait for a writer (it is refused just below).
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(real, flags)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError("not a regular file (a FIFO, socket or device); not read")
            if info.st_size > max_bytes:
                raise ValueError(f"file is {size_text(info.st_size)}, over the {size_text(max_bytes)} limit")
            raw = fh.read(max_bytes + 1)
        if len(raw) > max_bytes:  # it grew since it was measured
            raise ValueError(f"file is over the {size_text(max_bytes)} limit")
        return raw, info.st_mtime

    def url_for(self, rel: str) -> str:
        """The citation URL of a page: the template filled in, else a file:// URL."""
        if self.url_template:
            try:
                return self.url_template.format(path=quote(rel))
            except (KeyError, IndexError, ValueError) as exc:  # e.g. "{page}" instead of "{path}"
                raise ValueError(f"url template {self.url_template!r} cannot be filled in ({exc!r})") from None
        return (self.root / rel).as_uri()

    def _inside_root(self, full: Path) -> bool:
        """Symlinks are fine as long as they point inside the root (and are not loops)."""
        if not full.is_symlink():
            return True
        try:
            return full.resolve(strict=True).is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False



def _decode(raw: bytes) -> str:
    """UTF-8 (with or without a byte order mark), or UTF-16 that says so with its BOM."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not raw.startswith(codecs.BOM_UTF32_LE):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not valid UTF-16 (byte {exc.start}: {exc.reason})") from None
        if "\x00" in text:
            raise ValueError("binary content (NUL characters), not a text file")
    elif b"\x00" in raw:
        raise ValueError("binary content (NUL bytes), not a text file")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _split_front_matter(text: str) -> tuple[FrontMatter, str, Page]:
    """The page parsed, its YAML front matter (as the parser finds it) and the body after it;
    broken front matter is an error.

    The YAML is parsed with `yaml.safe_load` rather than by a front matter library that silently
    drops front matter that is not a mapping (a list, a bare string) instead of reporting it. An
    opening `---` with no closing one is a horizontal rule, not front matter.
    """
    page = parse(text)
    if page.front_matter is None:
        return {}, text, page
    import yaml

    raw, body = page.front_matter, page.body
    if len(raw.encode("utf-8", "replace")) > MAX_FRONT_MATTER_BYTES:
        raise ValueError(f"broken front matter: over {MAX_FRONT_MATTER_BYTES // 1024} KB of YAML")
    try:
        meta = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"broken YAML front matter: {first}") from None
    except RecursionError:
        raise ValueError("broken YAML front matter: nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # a value YAML recognises but Python cannot hold (2001-02-30)
        raise ValueError(f"broken YAML front matter: {str(exc).split(';')[0]}") from None
    if meta is None:
        return {}, body, page
    if not isinstance(meta, dict):
        raise ValueError("broken front matter: expected key: value pairs")
    return meta, body, page


_SCALARS = (str, int, float, date)  # bool is an int; a datetime is a date


def _meta_text(meta: FrontMatter, key: str) -> str:
    """A front matter value as text; a list or mapping where text belongs is broken front matter."""
    value = meta.get(key)
    if value is None:
        return ""
    if not isinstance(value, _SCALARS):
        raise ValueError(f"broken front matter: `{key}` must be text, not a {_yaml_kind(value)}")
    return _scalar_text(value, key).strip()


def _meta_tags(tags: object) -> list[str]:
    """`tags: a, b`, `tags: [a, b]` or one scalar; anything nested is broken front matter."""
    if tags is None:
        return []
    if isinstance(tags, str):
        return [t.strip() for t in tags.split(",") if t.strip()]
    if isinstance(tags, _SCALARS):
        return [_scalar_text(tags, "tags")]
    if isinstance(tags, list) and all(isinstance(t, _SCALARS) for t in tags):
        return [_scalar_text(t, "tags") for t in tags]
    raise ValueError("broken front matter: `tags` must be a list of words")


def _scalar_text(value: object, key: str) -> str:
    try:
        return str(value)
    except ValueError:  # an integer too long to print (int → str refuses over 4,300 digits)
        raise ValueError(f"broken front matter: `{key}` is a number too long to show") from None


def _yaml_kind(value: object) -> str:
    names: dict[type, str] = {list: "list", dict: "mapping"}
    return names.get(type(value), type(value).__name__)


def _meta_date(meta: FrontMatter) -> datetime | None:
    """The first front matter date of `DATE_KEYS`, in UTC (a date is its midnight, a time without
    a zone is UTC); a value that is no date is broken front matter, not a silent file time."""
    for key in DATE_KEYS:
        value = meta.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, str):
            text = value
            try:
                value = datetime.fromisoformat(text.strip())
            except ValueError:
                raise ValueError(f"broken front matter: `{key}` is not a date ({text[:40]!r}; "
                                 "write e.g. 2024-03-01 or 2024-03-01T10:00:00Z)") from None
        if isinstance(value, datetime):
            try:
                return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
            except OverflowError:  # 0001-01-01T00:00:00+14:00 is before year 1 in UTC
                raise ValueError(f"broken front matter: `{key}` is out of range ({value.isoformat()})") from None
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
        raise ValueError(f"broken front matter: `{key}` must be a date, not a {_yaml_kind(value)}")
    return None


def _is_draft(meta: FrontMatter) -> bool:
    value = meta.get("draft")
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes"))


def _check_scopes(meta: FrontMatter, access: str) -> None:
    """`scopes:` in front matter (`kb gaps --drafts` writes the scopes of the channel a page's
    words were said in) means: show this page only where every one of them is visible. A page is
    shown wherever its source's scope is, so it is refused (FAILED) unless each listed scope is
    that scope or the public one, which every audience sees."""
    value = meta.get("scopes")
    if value is None:
        return
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(s, str) for s in listed):
        raise ValueError("broken front matter: `scopes` must be a list of scope names")
    beyond = sorted(set(listed) - {access, PUBLIC})
    if beyond:
        raise ValueError(f"front matter `scopes` says this page may be shown only where {', '.join(beyond)} "
                         f"{'is' if len(beyond) == 1 else 'are'} visible, and this source's pages are shown "
                         f"wherever `{access}` is: not indexed (move it to a source with that access, or edit `scopes`)")


def _title_from_name(rel: str) -> str:
    """The file name without extension or separators; a name of only those (` .md`) as it is."""
    pure = PurePosixPath(rel)
    return re.sub(r"[-_]+", " ", pure.stem).strip() or pure.stem.strip() or pure.name.strip() or rel
