"""Which connector reads a path: `kb sync PATH` asks before it knows what it was given.

- "confluence-xml": an `entities.xml` with an `exportDescriptor.properties` beside it;
- "confluence-html": an `index.html` that mentions Confluence (its footer does), with page files
  named `<Title>_<id>.html` or `<id>.html` beside it;
- "markdown": any other folder or .zip.
Exports may sit at the top or one folder down (a zip of the `SPACEKEY/` folder). Only a .zip's
directory and at most one small `index.html` are read, so detecting is cheap and zip-bomb safe.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from connectors.confluence_html import PAGE_FILE

CONFLUENCE_HTML = "confluence-html"
CONFLUENCE_XML = "confluence-xml"
MARKDOWN = "markdown"
_SNIFF_BYTES = 64 * 1024  # the footer sits at the end of a few-KB index.html


def detect_kind(path: Path | str) -> str:
    """"confluence-html", "confluence-xml" or "markdown" for a folder or a .zip."""
    path = Path(path)
    if path.is_dir():
        names = [p.relative_to(path).as_posix() for p in _shallow_files(path)]
        return _kind(names, lambda name: _head(lambda: (path / name).open("rb")))
    if path.is_file() and zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except Exception as exc:  # BadZipFile and the like: the export's reader says the same, later
            raise ValueError(f"{path} is a damaged .zip: {exc}") from None
        with archive:
            names = [n for n in archive.namelist() if n.count("/") <= 1 and not n.endswith("/")]
            return _kind(names, lambda name: _head(lambda: archive.open(name)))
    if path.exists():
        raise ValueError(f"{path} is neither a folder nor a .zip file")
    raise FileNotFoundError(f"{path} does not exist")


def _kind(names: list[str], read: Callable[[str], bytes]) -> str:
    folders: dict[str, set[str]] = {}
    for name in names:
        pure = PurePosixPath(name)
        folders.setdefault(str(pure.parent), set()).add(pure.name)
    for files in folders.values():
        if {"entities.xml", "exportDescriptor.properties"} <= files:
            return CONFLUENCE_XML
    for folder, files in folders.items():
        if "index.html" in files and any(PAGE_FILE.search(f) for f in files if f != "index.html"):
            if b"Confluence" in read(str(PurePosixPath(folder) / "index.html").removeprefix("./")):
                return CONFLUENCE_HTML
    return MARKDOWN


def _head(open_stream: Callable[[], IO[bytes]]) -> bytes:
    """The first bytes of a file; nothing if it cannot be read (encrypted or damaged member,
    unreadable file) — then it is simply not evidence of an export."""
    try:
        with open_stream() as stream:
            return stream.read(_SNIFF_BYTES)
    except Exception:
        return b""


def _shallow_files(root: Path) -> Iterator[Path]:
    """Regular files at the top and one folder down: where an export's own files are. An
    unreadable subfolder is skipped; a FIFO or device is never a candidate (reading it could block)."""
    for child in sorted(root.iterdir()):
        if child.is_file():
            yield child
        elif child.is_dir() and not child.name.startswith("."):
            try:
                yield from sorted(grandchild for grandchild in child.iterdir() if grandchild.is_file())
            except OSError:
                continue
