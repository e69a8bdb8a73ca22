"""Files people attach to wiki pages — PDF, Word (.docx), PowerPoint (.pptx) — as Markdown.

Converters: pypdf, python-docx and python-pptx. Chosen by measurement (`benchmarks/
attachment_converters.py`): 3–6× faster than markitdown on the same files, and pypdf alone gives
page boundaries, which is what lets a PDF be cited to its page (`…/guide.pdf#page=3`, an anchor
every browser's PDF viewer follows). Each PDF page is a `# Page N` section whose anchor is
`page=N` (`Converted.heading_ids`); Word headings become Markdown headings, each slide a section.

Files are not trusted. Limits, checked before or while converting, each a `FileRefused` (the file
FAILS with the reason, its previous version keeps serving): `max_bytes` per file (50 MiB), at most
`max_pages` PDF pages or slides (500), and for the zip containers that .docx and .pptx are, at
most `max_unzipped` bytes declared uncompressed (200 MiB) and no member over 1 MiB packed tighter
than `max_ratio` (100:1): a zip bomb is refused before it is inflated (Python's zipfile never
inflates a member past its declared size). Text stops at `max_chars` (500,000, what a sync
indexes of a document): a PDF page by page, a Word file paragraph by paragraph as it is parsed
(`connectors.docx_text`), a deck slide by slide; past it the file is refused. Every conversion
runs in a child process (`connectors.conversion_budget`) that may take `max_seconds` (60) and
`max_memory_mb` (1 GiB) at most, a PDF page `max_page_seconds` of CPU (10): a small file that asks the
parser for minutes or gigabytes is stopped and refused with the reason, and the sync goes on. An
encrypted PDF or Office file, or one the library cannot parse, is refused too. A PDF with no text
layer (a scan) is `NoText`: SKIPPED with the reason, since nothing is broken but nothing can be
indexed without OCR, which Docent does not do.
"""

from __future__ import annotations

import io
import logging
import re
import signal
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from connectors.conversion_budget import Budget, OverBudget, run_within
from connectors.sizes import MiB, size_text

SUFFIXES = {".pdf", ".docx", ".pptx"}
MEDIA_TYPES = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
}
_RATIO_FLOOR = MiB  # members smaller than this may pack as tightly as they like


class FileRefused(ValueError):
    """The file cannot be read, or is over a limit: it FAILS with this reason."""


class NoText(ValueError):
    """The file is fine but holds no text (a scanned PDF): it is SKIPPED with this reason."""


@dataclass(frozen=True)
class FileLimits:
    max_bytes: int = 50 * 1024 * 1024
    max_pages: int = 500
    max_unzipped: int = 200 * 1024 * 1024
    max_ratio: int = 100  # uncompressed : compressed, per zip member over 1 MiB
    max_chars: int = 500_000  # of text; indexing.ingest.sync.MAX_TEXT_CHARS, which a sync indexes at most
    max_seconds: float = 60.0  # per file, wall clock, in the converting process
    max_page_seconds: float = 10.0  # of CPU, per PDF page
    max_memory_mb: int = 1024  # MiB per file, in the converting process


@dataclass
class Converted:
    """A file as Markdown: `heading_ids` pairs each section heading with the anchor to cite it by
    (PDF pages); an empty list cites the file itself."""

    text: str
    pages: int = 0  # PDF pages or slides; 0 for a Word file
    heading_ids: list[tuple[str, str]] = field(default_factory=list)
    title: str = ""  # the document's own title, where its properties hold one


def wanted(name: str) -> bool:
    """Whether a file name is one of the kinds converted here."""
    return PurePosixPath(name).suffix.lower() in SUFFIXES


def convert(name: str, data: bytes, limits: FileLimits | None = None) -> Converted:
    """A file's bytes as Markdown, by its extension; `FileRefused` or `NoText` otherwise. The
    conversion runs in a child process under the limits' time and memory budget."""
    limits = limits or FileLimits()
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise FileRefused(f"{suffix or 'no extension'}: not a PDF, Word (.docx) or PowerPoint (.pptx) file")
    if len(data) > limits.max_bytes:
        raise FileRefused(f"file is {size_text(len(data))}, over the {size_text(limits.max_bytes)} limit")
    try:
        return run_within(Budget(seconds=limits.max_seconds, memory_mb=limits.max_memory_mb),
                          convert_here, suffix, data, limits)
    except OverBudget as exc:
        raise FileRefused(f"converting this {suffix[1:].upper()} file {exc}: stopped, not indexed") from None


def convert_here(suffix: str, data: bytes, limits: FileLimits) -> Converted:
    """The conversion itself, in this process and without the time and memory budget: what
    `convert` runs in its child process (and the benchmark runs to show what the budget saves)."""
    try:
        if suffix == ".pdf":
            return _pdf(data, limits)
        archive = _checked_zip(data, limits)
        return _docx(archive, limits) if suffix == ".docx" else _pptx(data, limits)
    except (FileRefused, NoText):
        raise
    except Exception as exc:  # the libraries raise their own zoo of errors on broken files
        if isinstance(exc, MemoryError) or "Memory allocation failed" in str(exc):
            raise  # the budget's to report
        raise FileRefused(f"cannot read this {suffix[1:].upper()} file: {type(exc).__name__}: {str(exc)[:200]}") from None


def _pdf(data: bytes, limits: FileLimits) -> Converted:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a broken file is one FAILED line, not a page of warnings
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:  # encrypted with an empty user password (only printing or copying restricted): readable
            opened = bool(reader.decrypt(""))
        except Exception:
            opened = False
        if not opened:
            raise FileRefused("the PDF is encrypted with a password")
    count = len(reader.pages)
    if count > limits.max_pages:
        raise FileRefused(f"the PDF has {count} pages, over the {limits.max_pages}-page limit")
    sections, ids, chars = [], [], 0
    read: dict[tuple[str, str], str] = {}  # pages drawn by the same content stream: read once
    for n, page in enumerate(reader.pages, start=1):
        key = _drawn_by(page)
        text = read.get(key) if key else None
        if text is None:
            text = _tidy(_page_text(page, n, limits))
            if key:
                read[key] = text
        chars += len(text)
        if chars > limits.max_chars:
            raise FileRefused(f"the PDF's text passes {limits.max_chars:,} characters at page {n} of {count}, "
                              "over the limit")
        if text:
            sections.append(f"# Page {n}\n\n{text}")
            ids.append((f"Page {n}", f"page={n}"))
    if not sections:
        raise NoText(f"the PDF's {count} page(s) hold no text layer (a scan?); Docent does not OCR")
    title = str(reader.metadata.get("/Title") or "").strip() if reader.metadata else ""
    return Converted(text="\n\n".join(sections), pages=count, heading_ids=ids, title=title)


def _drawn_by(page: Any) -> tuple[str, str] | None:
    """What a page's text depends on: its content streams (as object numbers) and its resources
    (fonts). Pages alike in both have the same text: a file of 500 pages sharing one stream is
    read once (issue 45: 128 s and 100 M characters before)."""
    from pypdf.generic import IndirectObject

    contents = page.raw_get("/Contents") if "/Contents" in page else None
    refs: list[Any] = contents if isinstance(contents, list) else [contents]
    if contents is None or not all(isinstance(r, IndirectObject) for r in refs):
        return None
    where = "/Resources" if "/Resources" in page else "/Parent"  # inherited from the page tree
    return ",".join(str(r.idnum) for r in refs), repr(page.raw_get(where) if where in page else None)


class _PageOverTime(BaseException):
    """Raised by the CPU timer inside pypdf: a BaseException, which its `except Exception` lets through."""


def _page_text(page: Any, n: int, limits: FileLimits) -> str:
    """One page's text, stopped after `max_page_seconds` of CPU time. pypdf parses a page's whole
    content stream before it looks at an operator (6 s for the slow file's first page), so no
    check between operators could stop that: a CPU timer (SIGPROF) does, in this process's main
    thread (the converting child's); CPU time, not wall time, so a busy machine refuses nothing more."""
    def over_time(*_: object) -> None:
        raise _PageOverTime

    previous = signal.signal(signal.SIGPROF, over_time)
    signal.setitimer(signal.ITIMER_PROF, limits.max_page_seconds)
    try:
        return str(page.extract_text() or "")
    except _PageOverTime:
        raise FileRefused(f"reading page {n} of the PDF took more than {limits.max_page_seconds:g} s of CPU: "
                          "stopped") from None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _checked_zip(data: bytes, limits: FileLimits) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        if data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":  # OLE2: an encrypted Office file (or .doc/.ppt)
            raise FileRefused("the file is encrypted with a password, or an old binary Office file") from None
        raise FileRefused("not a valid Office file (not a zip container)") from None
    members = archive.infolist()
    unzipped = sum(info.file_size for info in members)
    if unzipped > limits.max_unzipped:
        raise FileRefused(f"the file unpacks to {size_text(unzipped)}, over the {size_text(limits.max_unzipped)} limit")
    for info in members:
        if info.file_size > _RATIO_FLOOR and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            raise FileRefused(f"{info.filename} packs {size_text(info.file_size)} into {size_text(info.compress_size)} "
                              f"({info.file_size // max(info.compress_size, 1)}:1), "
                              f"over the {limits.max_ratio}:1 a document's parts compress to: a zip bomb?")
    return archive


def _docx(archive: zipfile.ZipFile, limits: FileLimits) -> Converted:
    from connectors import docx_text

    try:
        word = docx_text.read(archive, limits.max_chars)
    except docx_text.TooMuchText as exc:
        raise FileRefused(f"the Word file holds {exc}, over the limit") from None
    blocks: list[str] = []
    for block in word.blocks:
        if block.rows:
            blocks.append(_table([list(row) for row in block.rows]))
            continue
        text = _tidy(block.text)
        if not text:
            continue
        level = re.fullmatch(r"Heading (\d)", block.style)
        if level:
            blocks.append("#" * min(int(level.group(1)), 6) + " " + " ".join(text.split()))
        elif block.style == "Title":
            blocks.append("# " + " ".join(text.split()))
        elif block.style.startswith("List"):
            blocks.append(f"- {text}")
        else:
            blocks.append(text)
    text = "\n\n".join(b for b in blocks if b)
    if not text.strip():
        raise NoText("the Word file holds no text")
    return Converted(text=text, title=word.title)


def _pptx(data: bytes, limits: FileLimits) -> Converted:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    slides = list(deck.slides)
    if len(slides) > limits.max_pages:
        raise FileRefused(f"the deck has {len(slides)} slides, over the {limits.max_pages}-slide limit")
    sections, chars = [], 0
    for n, slide in enumerate(slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None and title_shape.has_text_frame else ""
        lines: list[str] = []
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_text_frame:
                lines.extend(_tidy(p.text) for p in shape.text_frame.paragraphs)
            elif getattr(shape, "has_table", False) and shape.has_table:
                lines.append(_table([[cell.text for cell in row.cells] for row in shape.table.rows]))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            lines.append(_tidy(slide.notes_slide.notes_text_frame.text))
        body = "\n\n".join(line for line in lines if line)
        chars += len(title) + len(body)
        if chars > limits.max_chars:
            raise FileRefused(f"the deck's text passes {limits.max_chars:,} characters at slide {n} of "
                              f"{len(slides)}, over the limit")
        if title or body:
            sections.append(f"# Slide {n}" + (f": {title}" if title else "") + (f"\n\n{body}" if body else ""))
    if not sections:
        raise NoText("the deck holds no text")
    return Converted(text="\n\n".join(sections), pages=len(slides), title=(deck.core_properties.title or "").strip())


def _table(rows: list[list[str]]) -> str:
    """A pipe table; the first row is the header."""
    cells = [[" ".join(c.split()).replace("|", "\\|") for c in row] for row in rows if any(c.strip() for c in row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)


def _tidy(text: str) -> str:
    """Extracted text: NULs gone, lines trimmed, runs of blank lines one, and a line that would
    read as a Markdown heading (`# 3 items`) kept as text."""
    lines = [re.sub(r"^(#+)", r"\\\1", line.strip()) for line in text.replace("\x00", "").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
