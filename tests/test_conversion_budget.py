"""Small files that ask the converters for minutes and gigabytes (issue 45, item 3), made here by
tests/support/hostile_inputs.py: each FAILS alone with its reason, within its budget, and the
files beside it are indexed.

- a 585 KB Word file declaring 180 MiB of XML (python-docx: 143 s, 3.35 GB): refused by its
  compression ratio before it is parsed, and — past that check — read as a stream that stops at
  the character cap;
- an 80 KB PDF of 500 pages sharing one content stream (128 s, 100 M characters): the stream is
  read once, and the text stops at the character cap on page 3;
- a 30 KB PDF of 3 pages of ~1 M text operators each (over a minute): stopped by the per-page
  CPU cap, by the per-file wall clock, by the memory budget.

Timing is not asserted, outcomes are; the budgets make them quick (seconds, not minutes).
"""

from __future__ import annotations

import re
import uuid

import pytest
from sqlmodel import select

from tests.support import hostile_inputs, office_files
from connectors.attachments import FileLimits, FileRefused, convert
from indexing.ingest import indexed_sources
from indexing.ingest.runner import SyncRunner
from indexing.storage.index_tables import DocumentRecord, Status
from sources import read_sources_file


def refused(name: str, data: bytes, **limits: float) -> str:
    with pytest.raises(FileRefused) as caught:
        convert(name, data, FileLimits(**limits))  # type: ignore[arg-type]
    return str(caught.value)


def test_a_word_file_declaring_180_mb_of_xml_is_refused_by_its_compression_ratio():
    data = hostile_inputs.bloated_docx()
    assert len(data) < 600_000
    assert re.fullmatch(r"word/document\.xml packs 180 MiB into 5\d\d\.\d KiB \(3\d\d:1\), over the 100:1 a "
                        r"document's parts compress to: a zip bomb\?", refused("bloated.docx", data))


def test_a_word_file_is_read_as_a_stream_that_stops_at_the_character_cap():
    """Past the ratio check (allowed here), a document of 115,000 one-letter paragraphs stops being
    read at 20,000 characters; python-docx parsed all 4 MiB of it first."""
    data = hostile_inputs.bloated_docx(declared_mib=4)
    reason = refused("bloated.docx", data, max_ratio=10**6, max_chars=20_000)
    assert reason == "the Word file holds more than 20,000 characters of text, over the limit"


def test_one_endless_word_paragraph_stops_at_the_character_cap_too():
    data = office_files.docx([("h1", "Minutes"), ("p", "word " * 3000)])
    assert refused("minutes.docx", data, max_chars=10_000) == (
        "the Word file holds more than 10,000 characters of text, over the limit")


def test_a_pdf_whose_500_pages_share_one_stream_stops_at_the_character_cap():
    data = hostile_inputs.shared_stream_pdf()
    assert len(data) < 100_000
    assert refused("shared.pdf", data) == "the PDF's text passes 500,000 characters at page 3 of 500, over the limit"


def test_a_slow_pdf_page_is_stopped_at_the_per_page_time_cap():
    reason = refused("slow.pdf", hostile_inputs.slow_pdf(pages=3, operators=300_000), max_page_seconds=0.5)
    assert reason == "reading page 1 of the PDF took more than 0.5 s of CPU: stopped"


def test_a_slow_pdf_is_stopped_at_the_per_file_wall_clock():
    """The wall clock, enforced by killing the converting process, stops what no check inside it
    can (a parser wedged in C code): here a file over 2 s whose pages are each under their 10 s."""
    reason = refused("slow.pdf", hostile_inputs.slow_pdf(), max_seconds=2)
    assert reason == "converting this PDF file took more than 2 s: stopped, not indexed"


def test_a_pdf_that_needs_more_memory_than_the_budget_is_stopped():
    reason = refused("slow.pdf", hostile_inputs.slow_pdf(pages=1), max_memory_mb=64)
    assert reason == "converting this PDF file needed more than 64 MiB of memory: stopped, not indexed"


def test_a_deck_stops_at_the_character_cap_slide_by_slide():
    data = office_files.pptx([(f"Slide {n}", ["quarterly numbers restated " * 4]) for n in range(10)])
    assert refused("deck.pptx", data, max_chars=500) == (
        "the deck's text passes 500 characters at slide 5 of 10, over the limit")


def test_a_stopped_conversion_leaves_no_process_behind():
    """The child killed at its deadline is gone (the fork server it was forked from stays: one per process)."""
    refused("slow.pdf", hostile_inputs.slow_pdf(pages=1), max_seconds=1)
    assert grandchildren() == []
    convert("guide.pdf", office_files.pdf([["Page one"]]))
    assert grandchildren() == []


def grandchildren() -> list[int]:
    """Processes whose parent is a child of this one (conversions forked by the fork server), zombies included."""
    import os
    from pathlib import Path

    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    children = {pid for pid, parent in parents.items() if parent == os.getpid()}
    return sorted(pid for pid, parent in parents.items() if parent in children)


def test_hostile_files_fail_alone_and_the_good_one_beside_them_is_indexed(index, tmp_path):
    """Through a real sync of a folder, default limits: the three files of the issue FAIL, each
    with its reason, and the PDF beside them is indexed and found."""
    name = f"budget-{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "index.md").write_text("# Files\n\nPolicies as files.\n")
    (folder / "benefits.pdf").write_bytes(office_files.pdf([["Dental cover", "Acme pays 80 percent of dental costs."]]))
    (folder / "bloated.docx").write_bytes(hostile_inputs.bloated_docx())
    (folder / "shared.pdf").write_bytes(hostile_inputs.shared_stream_pdf())
    (folder / "slow.pdf").write_bytes(hostile_inputs.slow_pdf())
    sources = tmp_path / "sources.toml"
    sources.write_text(f'[[source]]\nname = "{name}"\nkind = "markdown"\nlocation = "{folder}"\n'
                       'include = ["*.md", "*.pdf", "*.docx"]\n')
    report = SyncRunner(index, read_sources_file(sources).sources).sync(name)
    with index.session() as s:
        docs = {r.path: r for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == name))}
    assert docs["benefits.pdf"].status == Status.SUCCESS and docs["index.md"].status == Status.SUCCESS
    assert {path: docs[path].status for path in ("bloated.docx", "shared.pdf", "slow.pdf")} == dict.fromkeys(
        ("bloated.docx", "shared.pdf", "slow.pdf"), Status.FAILED)
    assert "343:1" in docs["bloated.docx"].error
    assert "passes 500,000 characters at page 3" in docs["shared.pdf"].error
    assert "took more than 10 s" in docs["slow.pdf"].error
    assert report.failed == 3
    indexed_sources.forget(index, name)
