"""What a folder or .zip holds at its top and one folder down, read cheaply, and the signs of a
Confluence export in it: `kb sync PATH` asks which kind of source it was given before it reads it.

- an XML export: an `entities.xml` with an `exportDescriptor.properties` beside it;
- an HTML export: an `index.html` that mentions Confluence (its footer does), with page files
  named `<Title>_<id>.html` or `<id>.html` beside it;
- a Markdown folder: any other folder or .zip.
Exports may sit at the top or one folder down (a zip of the `SPACEKEY/` folder). Only a .zip's
directory and at most one small `index.html` are read, so detecting is cheap and zip-bomb safe.
Which kind each sign stands for, and in which order they are asked, is `connectors.registry`'s.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

_SNIFF_BYTES = 64 * 1024  # the footer sits at the end of a few-KB index.html


@dataclass(frozen=True)
class Shallow:
    """The files at the top of a folder or .zip and one folder down, by folder ("." for the top),
    and a way to read the first bytes of one of them (by its path from the top)."""

    folders: dict[str, set[str]]
    head: Callable[[str], bytes]


@contextmanager
def shallow(path: Path | str) -> Iterator[Shallow]:
    """What a folder or a .zip holds near its top; a damaged .zip, a path that is neither, or a
    missing one is a `ValueError` or `FileNotFoundError` saying so."""
    path = Path(path)
    if path.is_dir():
        names = [p.relative_to(path).as_posix() for p in _shallow_files(path)]
        yield _held(names, lambda name: _head(lambda: (path / name).open("rb")))
        return
    if path.is_file() and zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except Exception as exc:  # BadZipFile and the like: the export's reader says the same, later
            raise ValueError(f"{path} is a damaged .zip: {exc}") from None
        with archive:
            names = [n for n in archive.namelist() if n.count("/") <= 1 and not n.endswith("/")]
            yield _held(names, lambda name: _head(lambda: archive.open(name)))
        return
    if path.exists():
        raise ValueError(f"{path} is neither a folder nor a .zip file")
    raise FileNotFoundError(f"{path} does not exist")


def is_xml_export(held: Shallow) -> bool:
    """An `entities.xml` with an `exportDescriptor.properties` beside it."""
    return any({"entities.xml", "exportDescriptor.properties"} <= files for files in held.folders.values())


def is_html_export(held: Shallow) -> bool:
    """An `index.html` that mentions Confluence, with page files beside it."""
    from connectors.confluence.html_export import PAGE_FILE  # bs4 behind it: only when a path is detected

    for folder, files in held.folders.items():
        if "index.html" in files and any(PAGE_FILE.search(f) for f in files if f != "index.html"):
            if b"Confluence" in held.head(str(PurePosixPath(folder) / "index.html").removeprefix("./")):
                return True
    return False


def is_any_folder(held: Shallow) -> bool:
    """Any folder or .zip: what no export claims is a Markdown folder."""
    return True


def is_never_a_path(held: Shallow) -> bool:
    """A server is not a path: it is configured in the sources file with its url."""
    return False


def _held(names: list[str], head: Callable[[str], bytes]) -> Shallow:
    folders: dict[str, set[str]] = {}
    for name in names:
        pure = PurePosixPath(name)
        folders.setdefault(str(pure.parent), set()).add(pure.name)
    return Shallow(folders, head)


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
