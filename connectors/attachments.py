"""Files people attach to wiki pages — PDF, Word (.docx), PowerPoint (.pptx) — as Markdown.

Converters: pypdf, python-docx and python-pptx. Chosen by measurement (`benchmarks/
attachment_converters.py`): 3–6× faster than markitdown on the same files, and pypdf alone gives
page boundaries, which is what lets a PDF be cited to its page (`…/guide.pdf#page=3`, an anchor
every browser's PDF viewer follows). Each PDF page is a `# Page N` section whose anchor is
`page=N` (`Converted.heading_ids`); Word headings become Markdown headings, each slide a section.

Files are not trusted. Limits, checked before or while converting, each a `FileRefused` (the file
FAILS with the reason, its previous version keeps serving): `max_bytes` per file (50 MB), at most
`max_pages` PDF pages or slides (500), and for the zip containers that .docx and .pptx are, at
most `max_unzipped` bytes declared uncompressed (200 MB: a zip bomb is refused before it is
inflated). An encrypted PDF or Office file, or one the library cannot parse, is refused too. A
PDF with no text layer (a scan) is `NoText`: SKIPPED with the reason, since nothing is broken
but nothing can be indexed without OCR, which Docent does not do.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

SUFFIXES = {".pdf", ".docx", ".pptx"}
MEDIA_TYPES = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
}


class FileRefused(ValueError):
    """The file cannot be read, or is over a limit: it FAILS with this reason."""


class NoText(ValueError):
    """The file is fine but holds no text (a scanned PDF): it is SKIPPED with this reason."""


@dataclass(frozen=True)
class FileLimits:
    max_bytes: int = 50 * 1024 * 1024
    max_pages: int = 500
    max_unzipped: int = 200 * 1024 * 1024


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
    """A file's bytes as Markdown, by its extension; `FileRefused` or `NoText` otherwise."""
    limits = limits or FileLimits()
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise FileRefused(f"{suffix or 'no extension'}: not a PDF, Word (.docx) or PowerPoint (.pptx) file")
    if len(data) > limits.max_bytes:
        raise FileRefused(f"file is {len(data) / 1e6:.1f} MB, over the {limits.max_bytes / 1e6:.0f} MB limit")
    try:
        if suffix == ".pdf":
            return _pdf(data, limits)
        _check_zip(data, limits)
        return _docx(data) if suffix == ".docx" else _pptx(data, limits)
    except (FileRefused, NoText):
        raise
    except Exception as exc:  # the libraries raise their own zoo of errors on broken files
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
    sections, ids = [], []
    for n, page in enumerate(reader.pages, start=1):
        text = _tidy(page.extract_text() or "")
        if text:
            sections.append(f"# Page {n}\n\n{text}")
            ids.append((f"Page {n}", f"page={n}"))
    if not sections:
        raise NoText(f"the PDF's {count} page(s) hold no text layer (a scan?); Docent does not OCR")
    title = str(reader.metadata.get("/Title") or "").strip() if reader.metadata else ""
    return Converted(text="\n\n".join(sections), pages=count, heading_ids=ids, title=title)


def _check_zip(data: bytes, limits: FileLimits) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        if data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":  # OLE2: an encrypted Office file (or .doc/.ppt)
            raise FileRefused("the file is encrypted with a password, or an old binary Office file") from None
        raise FileRefused("not a valid Office file (not a zip container)") from None
    unzipped = sum(info.file_size for info in archive.infolist())
    if unzipped > limits.max_unzipped:
        raise FileRefused(f"the file unpacks to {unzipped / 1e6:.0f} MB, over the "
                          f"{limits.max_unzipped / 1e6:.0f} MB limit")


def _docx(data: bytes) -> Converted:
    import docx

    document = docx.Document(io.BytesIO(data))
    # Style names by id, read once: python-docx's `paragraph.style` scans every style per paragraph
    # (18 s for 880 paragraphs, measured), this is a dictionary lookup.
    names = {style.style_id: style.name or "" for style in document.styles}
    blocks: list[str] = []
    for item in document.iter_inner_content():
        if isinstance(item, docx.table.Table):
            blocks.append(_table([[cell.text for cell in row.cells] for row in item.rows]))
            continue
        text = _tidy(item.text)
        if not text:
            continue
        style_id = item._p.pPr.pStyle.val if item._p.pPr is not None and item._p.pPr.pStyle is not None else None
        style = names.get(style_id, "") if style_id else ""
        level = re.fullmatch(r"Heading (\d)", style)
        if level:
            blocks.append("#" * min(int(level.group(1)), 6) + " " + " ".join(text.split()))
        elif style == "Title":
            blocks.append("# " + " ".join(text.split()))
        elif style.startswith("List"):
            blocks.append(f"- {text}")
        else:
            blocks.append(text)
    text = "\n\n".join(b for b in blocks if b)
    if not text.strip():
        raise NoText("the Word file holds no text")
    return Converted(text=text, title=(document.core_properties.title or "").strip())


def _pptx(data: bytes, limits: FileLimits) -> Converted:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    slides = list(deck.slides)
    if len(slides) > limits.max_pages:
        raise FileRefused(f"the deck has {len(slides)} slides, over the {limits.max_pages}-slide limit")
    sections = []
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
