"""What both Confluence connectors share: reading an export folder or .zip, and HTML → Markdown.

(The XML export's storage format is turned into that HTML by `connectors.confluence.storage`.)

Both export kinds arrive as a folder or as the .zip Confluence wrote. `ExportFiles` reads either
the same way, and refuses a .zip that could hurt us before reading any of it: too many members
or too many uncompressed bytes (a zip bomb), or member names that climb out of the archive
(`../`, absolute paths); a folder export with a subfolder it cannot list is refused as well. A
refused export raises `ExportError` before the first document, so a
sync stops without pruning anything instead of deleting the pages it could not read.

One page cannot hang or blow up a sync either: besides its size in bytes (`max_bytes`), a page is
refused over `MAX_TAGS` tags (parsing and converting cost per tag) or `MAX_DEPTH` levels of
nesting (the HTML → Markdown conversion recurses per level), and its cleaning and conversion stop
at a `Deadline` (`max_seconds`, checked per element) — each a `PageLimitExceeded`, which fails
that page with the reason. The limits are checked inside the conversion rather than by a watchdog:
Python cannot kill a thread, `signal.alarm` works only on the main thread (syncs run in the
watcher's, the scheduler's and `/kb resync`'s threads) and cannot interrupt C code such as a
parser or a regular expression, so a cooperative deadline on input that is bounded in size is the
limit that holds everywhere.

The HTML export (rendered pages) and the XML export (storage format) are cleaned into plain HTML
by their own modules; `to_markdown` then turns that into the one Markdown dialect the rest of
Docent reads: ATX `#` headings, fenced code with its language (`<pre data-language=…>`), pipe
tables, and text left unescaped so quotes and search terms read as they were written.
"""

from __future__ import annotations

import os
import re
import stat
import time
import warnings
import zipfile
from collections.abc import Callable
from datetime import datetime, tzinfo
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, PageElement, Tag
from markdownify import MarkdownConverter

from connectors.document import SURROGATE
from connectors.sizes import size_text

# A storage body that is only a URL or a file name is page text, not a mistake (bs4 warns per page).
warnings.filterwarnings("ignore", category=MarkupResemblesLocatorWarning)

DEFAULT_MAX_BYTES = 10 * 1024 * 1024  # one page (an HTML file, a storage body)
DEFAULT_MAX_SECONDS = 30.0  # one page: cleaning and converting (parsing is bounded by MAX_TAGS)
MAX_TAGS = 200_000  # one page; parsing and converting take ~0.1 ms per tag
MAX_DEPTH = 150  # elements nested inside one another; markdownify recurses ~3 frames per level
MAX_ARCHIVE_BYTES = 4 * 1024**3  # everything in a .zip, uncompressed, as its directory declares
MAX_ARCHIVE_MEMBERS = 200_000

PANEL_LABELS = {"info": "Info", "information": "Info", "tip": "Tip", "note": "Note", "warning": "Warning"}


class ExportError(ValueError):
    """The export as a whole cannot be read (missing, not an export, unsafe archive)."""


class PageLimitExceeded(ValueError):
    """One page is too large, too deeply nested or too slow to convert: that page fails, not the export."""


class Deadline:
    """A per-page time limit, checked cooperatively between elements (see the module docstring)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds if seconds is not None else None

    def check(self) -> None:
        if self.ends is not None and time.monotonic() > self.ends:
            raise PageLimitExceeded(f"conversion time limit exceeded ({self.seconds:g} s)")


def check_markup(markup: str, max_tags: int = MAX_TAGS) -> None:
    """Refuse markup with more tags than a page can have before parsing it (counting `<` is cheap)."""
    tags = markup.count("<")
    if tags > max_tags:
        raise PageLimitExceeded(f"page has {tags:,} tags, over the limit of {max_tags:,}")


def check_depth(root: Tag, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a tree nested deeper than `max_depth` elements, without recursing to find out."""
    depths = {id(root): 0}
    for node in root.descendants:  # document order: a parent always comes before its children
        if isinstance(node, Tag):
            depth = depths.get(id(node.parent), 0) + 1
            if depth > max_depth:
                raise PageLimitExceeded(f"page is nested more than {max_depth} elements deep")
            depths[id(node)] = depth


def page_url(base_url: str, page_id: str) -> str:
    """The citation link of a page: works on Server, Data Center and Cloud (`…/wiki` base)."""
    return f"{base_url.rstrip('/')}/pages/viewpage.action?pageId={page_id}"


def zone(name: str | None) -> tzinfo:
    """A time zone by IANA name ("Europe/Berlin"); an unknown name is an export-level error."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise ExportError(f"unknown time zone {(name or '')[:100]!r}") from None


# --- reading a folder or a .zip ---------------------------------------------------------------


class ExportFiles:
    """The files of an export, by relative POSIX path, from a folder or a .zip."""

    def __init__(self, location: Path | str, *, max_archive_bytes: int = MAX_ARCHIVE_BYTES,
                 max_archive_members: int = MAX_ARCHIVE_MEMBERS) -> None:
        try:
            self.location = Path(location).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
            raise ExportError(f"cannot open {location}: {exc}") from None
        self._zip: zipfile.ZipFile | None = None
        self._sizes: dict[str, int] = {}
        if self.location.is_dir():
            self._list_folder()
        elif self.location.is_file() and zipfile.is_zipfile(self.location):
            try:
                self._zip = zipfile.ZipFile(self.location)
            except Exception as exc:  # BadZipFile, and the odd ValueError/NotImplementedError of a hostile zip
                raise ExportError(f"{location} is a damaged .zip: {exc}") from None
            try:
                self._list_zip(self._zip, max_archive_bytes, max_archive_members)
            except BaseException:
                self._zip.close()
                raise
        elif self.location.exists():
            raise ExportError(f"{location} is neither a folder nor a .zip file")
        else:
            raise ExportError(f"{location} does not exist")

    def __enter__(self) -> ExportFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._zip is not None:
            self._zip.close()

    @property
    def names(self) -> list[str]:
        return sorted(self._sizes)

    def size(self, name: str) -> int:
        return self._sizes[name]

    def open(self, name: str) -> IO[bytes]:
        """A binary stream; a zip member never yields more than its declared size."""
        if name not in self._sizes:
            raise FileNotFoundError(f"{name} is not in the export")
        if self._zip is not None:
            return self._zip.open(name)
        # Non-blocking, so a FIFO swapped in after listing cannot hang the read; then refused.
        fd = os.open(self.location / name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ValueError(f"{name} is not a regular file")
        return os.fdopen(fd, "rb")

    def read(self, name: str, max_bytes: int) -> bytes:
        """A file's bytes, refused (ValueError) over `max_bytes` without reading it."""
        size = self.size(name)
        if size > max_bytes:
            raise ValueError(f"file is {size_text(size)}, over the {size_text(max_bytes)} limit")
        with self.open(name) as fh:
            return fh.read(max_bytes + 1)

    def uri(self, name: str) -> str:
        """A link to the file: file:// in a folder; `archive.zip!/member` (the jar: convention) in a zip."""
        if self._zip is not None:
            return f"{self.location.as_uri()}!/{quote(name)}"
        return (self.location / name).as_uri()

    def find(self, filename: str) -> str | None:
        """The shallowest file of that name: exports are often zipped inside one top folder."""
        hits = [n for n in self._sizes if PurePosixPath(n).name == filename]
        return min(hits, key=lambda n: (n.count("/"), n)) if hits else None

    def _list_folder(self) -> None:
        """Every regular file of the folder. A folder of the export that cannot be listed (EACCES,
        ESTALE, EIO) refuses the whole export: os.walk would skip it silently, and an export is
        synced as a unit, so its missing pages would be deleted."""

        def refuse(exc: OSError) -> None:
            where = Path(exc.filename).relative_to(self.location).as_posix() if exc.filename else ""
            raise ExportError(f"cannot list {where or '.'}/ in {self.location}: {exc.strerror or exc}; "
                              f"nothing was read")

        for dirpath, dirnames, filenames in os.walk(self.location, followlinks=False, onerror=refuse):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for filename in filenames:
                full = Path(dirpath) / filename
                if filename.startswith("."):
                    continue
                try:
                    info = full.lstat()
                except OSError:  # vanished or unreadable: listed, so that reading it fails the page
                    info = None
                if info is not None and not stat.S_ISREG(info.st_mode):  # a link could point anywhere;
                    continue  # a FIFO or a device would block or never end
                self._sizes[full.relative_to(self.location).as_posix()] = info.st_size if info else 0

    def _list_zip(self, archive: zipfile.ZipFile, max_bytes: int, max_members: int) -> None:
        infos = archive.infolist()
        if len(infos) > max_members:
            raise ExportError(f"refusing {self.location.name}: {len(infos)} members, over the limit of {max_members}")
        total = 0
        for info in infos:
            if not _safe_member(info.filename):
                raise ExportError(f"refusing {self.location.name}: unsafe member path {info.filename!r}")
            total += info.file_size
            if total > max_bytes:
                raise ExportError(
                    f"refusing {self.location.name}: over {size_text(max_bytes)} uncompressed (zip bomb?)"
                )
            if info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
                continue
            self._sizes[info.filename] = info.file_size


def _safe_member(name: str) -> bool:
    """No absolute paths, drive letters, backslashes or `..`: a member must stay inside the archive."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return False
    return ".." not in PurePosixPath(name).parts


def decode_utf8(raw: bytes) -> str:
    """Exports are UTF-8; anything else is reported with the offending byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from None


def parse_naive(text: str, formats: list[str], tz: tzinfo) -> datetime | None:
    """The first format that fits, in the export's zone; None when none does."""
    for fmt in formats:
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=tz)
        except ValueError:
            continue
    return None


# --- HTML → Markdown --------------------------------------------------------------------------


def attr(tag: Tag, name: str) -> str | None:
    """A single-valued attribute (href, id, ac:name, ...), None when the tag has none. bs4 types
    every value as maybe a list: only HTML's multi-valued attributes (class, rel, ...) are lists."""
    value = tag.get(name)
    return value if value is None or isinstance(value, str) else " ".join(value)


def new_tag(soup: BeautifulSoup, name: str, text: str | None = None, **attrs: str) -> Tag:
    tag = soup.new_tag(name, attrs=attrs)
    if text is not None:
        tag.string = text
    return tag


def labelled_block(soup: BeautifulSoup, label: str, body: list[PageElement], title: str = "") -> Tag:
    """A panel or expand section as plain blocks: a bold "Label: title" line, then its body."""
    box = _titled_box(soup, ": ".join(part for part in (label, title.strip()) if part))
    for child in list(body):
        box.append(child.extract())
    return box


def code_block(soup: BeautifulSoup, code: str, language: str = "", title: str = "") -> Tag:
    """Code as `<pre data-language>`, which `to_markdown` fences with the language."""
    box = _titled_box(soup, title.strip())
    language = language.strip().lower()
    box.append(new_tag(soup, "pre", code, **({"data-language": language} if language else {})))
    return box


def _titled_box(soup: BeautifulSoup, title: str) -> Tag:
    box = soup.new_tag("div")
    if title:
        line = new_tag(soup, "p")
        box.append(line)
        line.append(new_tag(soup, "strong", title))
    return box


def drop_hidden(root: Tag) -> None:
    """Scripts, styles and `display: none` blocks (e.g. docToolchain hash markers) are not page text."""
    for tag in root.find_all(["script", "style", "noscript"]):
        tag.decompose()
    for tag in root.find_all(style=re.compile(r"display\s*:\s*none", re.I)):
        tag.decompose()


# markdownify's conversion of one element: (the element, its children's Markdown, the enclosing
# tags' names) → its Markdown.
_ConvertFn = Callable[[Tag, str, set[str]], str]


class _Converter(MarkdownConverter):
    """markdownify with the choices Docent wants; see `to_markdown`."""

    deadline: Deadline | None = None

    def get_conv_fn_cached(self, tag_name: str) -> _ConvertFn | None:
        """Called once per element: the deadline's checkpoint, without adding a frame to markdownify's recursion."""
        if self.deadline is not None:
            self.deadline.check()
        found: _ConvertFn | None = super().get_conv_fn_cached(tag_name)  # type: ignore[misc]  # markdownify's stubs omit it
        return found

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:  # images are listed as attachments, not text
        return ""

    def convert_br(self, el: Tag, text: str, parent_tags: set[str]) -> str:  # a plain line break, no trailing-space syntax
        if "_inline" in parent_tags or "pre" in parent_tags:
            converted: str = super().convert_br(el, text, parent_tags)  # type: ignore[misc]  # markdownify's stubs omit it
            return converted
        return "\n" + text


def to_markdown(root: Tag, deadline: Deadline | None = None) -> str:
    """Clean HTML → Markdown: `#` headings, fenced code with language, pipe tables, no escaping.

    Non-breaking spaces become plain ones first: markdownify drops them at the edge of bold or
    italic text ("pridat&nbsp;</strong>next" would glue two words together). Empty table rows go.
    The tree must be at most `MAX_DEPTH` deep (`check_depth`); `deadline` bounds the time taken.
    """
    deadline = deadline or Deadline(None)
    for text in root.find_all(string=lambda s: "\xa0" in s):
        deadline.check()
        text.replace_with(type(text)(text.replace("\xa0", " ")))
    for row in root.find_all("tr"):  # an empty row (asciidoc exports have them) breaks a pipe table
        deadline.check()
        if not row.find(["td", "th"]):
            row.decompose()
    converter = _Converter(
        heading_style="atx",
        bullets="-",
        code_language_callback=lambda el: el.get("data-language") or "",
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
        table_infer_header=True,
    )
    converter.deadline = deadline
    return tidy(converter.convert_soup(root))


def tidy(markdown: str) -> str:
    """Non-breaking and zero-width spaces become plain text; no trailing blanks, no runs of blank
    lines; NUL (which no database text column takes) and lone surrogates go."""
    text = markdown.replace("\xa0", " ").replace("\u200b", "").replace("\r\n", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))  # not `[ \t]+\n`: quadratic on long runs
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = SURROGATE.sub("\ufffd", text)
    return text.strip() + "\n" if text.strip() else ""
