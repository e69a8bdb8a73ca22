"""Real PDF, Word and PowerPoint files, made in the tests (no binary fixtures to trust or license).

PDFs are written with pypdf's writer: each page a content stream drawing its lines in the
standard Helvetica font, which is what a text layer is; a page without one stands for a scan.
Word and PowerPoint files are written with python-docx and python-pptx.
"""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject


def pdf(pages: list[list[str]], *, password: str | None = None, title: str = "") -> bytes:
    """A PDF whose page n shows the lines `pages[n]` (an empty list: a page with no text layer)."""
    writer = PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    font_ref = writer._add_object(font)
    for lines in pages:
        page = writer.add_blank_page(width=612, height=792)
        if not lines:
            continue
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref}),
            NameObject("/ProcSet"): ArrayObject([NameObject("/PDF"), NameObject("/Text")])})
    if title:
        writer.add_metadata({"/Title": title})
    if password:
        writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")  # AES needs the cryptography package
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx(blocks: list[tuple[str, str]], *, table: list[list[str]] | None = None) -> bytes:
    """A Word file: (style, text) blocks, style "h1"/"h2" for headings, "p" for paragraphs."""
    import docx as python_docx

    document = python_docx.Document()
    for style, text in blocks:
        if style.startswith("h"):
            document.add_heading(text, level=int(style[1:]))
        else:
            document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx(slides: list[tuple[str, list[str]]]) -> bytes:
    """A PowerPoint deck: one (title, bullet lines) per slide."""
    from pptx import Presentation

    deck = Presentation()
    layout = deck.slide_layouts[1]  # "Title and Content"
    for title, bullets in slides:
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0] if bullets else ""
        for line in bullets[1:]:
            body.add_paragraph().text = line
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()
