"""The text of a Word (.docx) file, read as a stream: paragraphs, headings, lists and tables.

python-docx parses `word/document.xml` whole into an lxml tree before it gives a paragraph: a
585 KB file declaring 180 MiB of XML took 143 s and 3.35 GB (issue 45). Here the part is
decompressed and parsed a piece at a time (`lxml.etree.iterparse`, no entities, no network, no
huge-tree mode), each body paragraph or table row becomes text and is dropped from the tree, and
reading stops as soon as the text passes `max_chars`: memory stays that of one paragraph or
table, time that of the text kept. What python-docx gave is kept: a paragraph's text is its runs'
(`w:t`, tabs, line breaks; text boxes and deleted text left out), a table is rows of cells
(merged cells repeated), a style is known by the name `word/styles.xml` gives its id.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from posixpath import dirname, join, normpath
from typing import IO, Any

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_OFFICE_DOCUMENT = "/officeDocument"
_CORE = "/metadata/core-properties"
_STYLES = "/styles"
_SKIPPED = {W + "drawing", W + "pict", W + "del", W + "moveFrom",
            "{http://schemas.openxmlformats.org/markup-compatibility/2006}AlternateContent"}


class TooMuchText(Exception):
    """The document's text passed the character cap; reading stopped there."""


@dataclass(frozen=True)
class Block:
    """A body paragraph (`style` names its style) or a table (`rows`)."""

    text: str = ""
    style: str = ""
    rows: tuple[tuple[str, ...], ...] = ()


@dataclass
class WordText:
    blocks: list[Block]
    title: str


def read(archive: zipfile.ZipFile, max_chars: int) -> WordText:
    """The body of the Word document in `archive`, paragraph by paragraph; `TooMuchText` past `max_chars`.
    `ValueError` when the zip holds no Word document."""
    package = _targets(archive, "", "_rels/.rels")
    main = package.get(_OFFICE_DOCUMENT)
    if main is None or main not in archive.namelist():
        raise ValueError("the zip holds no Word document (no main document part)")
    parts = _targets(archive, dirname(main), join(dirname(main), "_rels", main.rsplit("/", 1)[-1] + ".rels"))
    styles = _style_names(archive, parts.get(_STYLES))
    with archive.open(main) as stream:
        blocks = list(_body(stream, styles, max_chars))
    return WordText(blocks=blocks, title=_title(archive, package.get(_CORE)))


def _iterparse(stream: IO[bytes], tag: str | None = None, events: tuple[str, ...] = ("end",)) -> Any:
    from lxml import etree

    return etree.iterparse(stream, events=events, tag=tag, resolve_entities=False, no_network=True,
                           huge_tree=False, load_dtd=False, remove_comments=True, remove_pis=True)


def _targets(archive: zipfile.ZipFile, base: str, rels: str) -> dict[str, str]:
    """A relationships part as {relationship type's last segments: part name in the zip}."""
    if rels not in archive.namelist():
        return {}
    found: dict[str, str] = {}
    with archive.open(rels) as stream:
        for _, rel in _iterparse(stream, tag=_RELS):
            kind, target = rel.get("Type", ""), rel.get("Target", "")
            if rel.get("TargetMode") == "External" or not target:
                continue
            name = normpath(target.lstrip("/") if target.startswith("/") else join(base, target))
            for suffix in (_OFFICE_DOCUMENT, _CORE, _STYLES):
                if kind.endswith(suffix):
                    found.setdefault(suffix, name)
            rel.clear()
    return found


def _style_names(archive: zipfile.ZipFile, part: str | None) -> dict[str, str]:
    """Style id → name ("heading 1" as python-docx shows it: "Heading 1")."""
    if part is None or part not in archive.namelist():
        return {}
    names = {}
    with archive.open(part) as stream:
        for _, style in _iterparse(stream, tag=W + "style"):
            name = style.find(W + "name")
            if style.get(W + "styleId") and name is not None:
                value = name.get(W + "val") or ""
                names[style.get(W + "styleId")] = re.sub(r"^heading (\d)$", r"Heading \1", value)
            style.clear()
    return names


def _title(archive: zipfile.ZipFile, part: str | None) -> str:
    if part is None or part not in archive.namelist():
        return ""
    with archive.open(part) as stream:
        for _, element in _iterparse(stream, tag="{http://purl.org/dc/elements/1.1/}title"):
            return (element.text or "").strip()
    return ""


def _body(stream: IO[bytes], styles: dict[str, str], max_chars: int) -> Iterator[Block]:
    """Body paragraphs and tables in order, each dropped from the tree once read. Text is counted
    as it is parsed (`w:t`), so that one endless paragraph stops at the cap too."""
    rows: list[tuple[str, ...]] = []
    chars = 0
    for _, element in _iterparse(stream, tag=(W + "t", W + "p", W + "tr", W + "tbl")):  # type: ignore[arg-type]
        parent = element.getparent()
        if parent is None:
            continue
        if element.tag == W + "t":
            chars += len(element.text or "")
            if chars > max_chars:
                raise TooMuchText(f"more than {max_chars:,} characters of text")
        elif element.tag == W + "p" and (parent.tag == W + "body" or parent.tag == W + "sdtContent" and not _in_table(element)):
            yield Block(text=_paragraph(element), style=styles.get(_style_id(element), ""))
            _drop(element)
        elif element.tag == W + "tr" and _outer_table(element):
            rows.append(_row(element, rows[-1] if rows else ()))
            _drop(element)
        elif element.tag == W + "tbl" and _outer_table_itself(element):
            yield Block(rows=tuple(rows))
            rows = []
            _drop(element)


def _in_table(element: Any) -> bool:
    return any(a.tag == W + "tbl" for a in element.iterancestors())


def _outer_table(row: Any) -> bool:
    """A row of a body-level table (a nested table's rows belong to their cell)."""
    return [a.tag for a in row.iterancestors(W + "tbl")] == [W + "tbl"] and row.getparent().tag == W + "tbl"


def _outer_table_itself(table: Any) -> bool:
    return not any(True for _ in table.iterancestors(W + "tbl"))


def _style_id(paragraph: Any) -> str:
    style = paragraph.find(f"{W}pPr/{W}pStyle")
    return str(style.get(W + "val") or "") if style is not None else ""


def _paragraph(paragraph: Any) -> str:
    """A paragraph's runs as text: what python-docx's `Paragraph.text` gives."""
    out: list[str] = []
    _runs(paragraph, out)
    return "".join(out)


def _runs(element: Any, out: list[str]) -> None:
    for child in element:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIPPED or tag == W + "p":
            continue
        if tag == W + "t":
            out.append(child.text or "")
        elif tag in (W + "tab", W + "ptab"):
            out.append("\t")
        elif tag == W + "cr" or (tag == W + "br" and child.get(W + "type") in (None, "textWrapping")):
            out.append("\n")
        elif tag == W + "noBreakHyphen":
            out.append("-")
        else:
            _runs(child, out)


def _row(row: Any, above: tuple[str, ...]) -> tuple[str, ...]:
    """A row's cells: a cell spanning n grid columns counts n times, a vertically merged one repeats the cell above."""
    cells: list[str] = []
    for cell in row.iterchildren(W + "tc"):
        props = cell.find(W + "tcPr")
        span = props.find(W + "gridSpan") if props is not None else None
        merge = props.find(W + "vMerge") if props is not None else None
        width = max(1, min(int(span.get(W + "val", "1")) if span is not None and span.get(W + "val", "1").isdigit() else 1, 64))
        if merge is not None and merge.get(W + "val") in (None, "continue") and len(above) > len(cells):
            text = above[len(cells)]
        else:
            text = "\n".join(_paragraph(p) for p in cell.iterchildren(W + "p"))
        cells.extend([text] * width)
    return tuple(cells)


def _drop(element: Any) -> None:
    """Free what was read: the element's content and the siblings read before it."""
    element.clear()
    parent = element.getparent()
    while element.getprevious() is not None:
        del parent[0]
