"""PDF, Word and PowerPoint files as documents: real files made in the tests (tests/support/office_files.py),
converted by pypdf / python-docx / python-pptx, cited to the page of a PDF, bounded, and — attached
to Confluence pages — synced with their page's scope through the fake Confluence."""

from __future__ import annotations

import io
import uuid
import zipfile

import pytest
from sqlmodel import select

from tests.support import office_files
from tests.support.confluence_server import EMAIL, TOKEN, FakeConfluence
from connectors.attachments import FileLimits, FileRefused, NoText, convert
from sources import read_sources_file
from indexing.ingest import indexed_sources
from indexing.storage.index_tables import DocumentRecord, ParentSection, Status
from indexing.search.retrieval import retrieve
from indexing.ingest.runner import SyncRunner

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
BENEFITS = [["Benefits guide", "Welcome to Acme benefits."], [],
            ["Dental cover", "Acme pays 80 percent of dental treatment costs."]]


def test_a_pdf_becomes_one_section_per_page_cited_by_page_number():
    converted = convert("guide.pdf", office_files.pdf(BENEFITS, title="Benefits 2026"))
    assert converted.pages == 3 and converted.title == "Benefits 2026"
    assert converted.heading_ids == [("Page 1", "page=1"), ("Page 3", "page=3")]  # page 2 has no text
    assert converted.text.startswith("# Page 1\n\nBenefits guide\nWelcome to Acme benefits.")
    assert "# Page 3\n\nDental cover" in converted.text


def test_word_headings_paragraphs_and_tables_become_markdown():
    data = office_files.docx([("h1", "Travel policy"), ("p", "Book economy class."), ("h2", "Hotels"),
                              ("p", "# of nights: up to 5")], table=[["City", "Rate"], ["Paris", "250 EUR"]])
    text = convert("travel.docx", data).text
    assert text.startswith("# Travel policy\n\nBook economy class.\n\n## Hotels")
    assert "\\# of nights" in text  # text that looks like a heading stays text
    assert "| City | Rate |\n| --- | --- |\n| Paris | 250 EUR |" in text


def test_each_slide_is_a_section_with_its_title_once():
    data = office_files.pptx([("Security standard", ["Use MFA everywhere", "Rotate keys yearly"]), ("Contacts", [])])
    converted = convert("security.pptx", data)
    assert converted.pages == 2
    assert converted.text == ("# Slide 1: Security standard\n\nUse MFA everywhere\n\nRotate keys yearly\n\n"
                              "# Slide 2: Contacts")


@pytest.mark.parametrize("name, data, limits, reason", [
    ("locked.pdf", office_files.pdf([["secret"]], password="pw"), FileLimits(), "encrypted with a password"),
    ("broken.pdf", b"%PDF-1.7\nnot really", FileLimits(), "cannot read this PDF file"),
    ("broken.docx", b"PK\x03\x04 torn", FileLimits(), "not a valid Office file"),
    ("big.pdf", office_files.pdf([["x"]]), FileLimits(max_bytes=100), "over the 0.1 KiB limit"),
    ("long.pdf", office_files.pdf([["a"], ["b"], ["c"]]), FileLimits(max_pages=2), "3 pages, over the 2-page limit"),
    ("deck.pptx", office_files.pptx([("a", []), ("b", []), ("c", [])]), FileLimits(max_pages=2), "3 slides"),
    ("old.doc", b"\xd0\xcf\x11\xe0", FileLimits(), "not a PDF, Word (.docx) or PowerPoint"),
])
def test_broken_encrypted_and_oversized_files_are_refused_with_the_reason(name, data, limits, reason):
    with pytest.raises(FileRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
        convert(name, data, limits)


def test_a_zip_bomb_is_refused_before_it_is_inflated():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (3 * 1024 * 1024))  # 3 MiB of zeros: ~3 KB packed
    assert len(out.getvalue()) < 10_000
    with pytest.raises(FileRefused, match="unpacks to 3 MiB, over the 1 MiB limit"):
        convert("bomb.docx", out.getvalue(), FileLimits(max_unzipped=1024 * 1024))


def test_a_scanned_pdf_has_no_text_and_is_skipped_not_failed():
    with pytest.raises(NoText, match="no text layer"):
        convert("scan.pdf", office_files.pdf([[], []]))


# -- attached to Confluence pages ---------------------------------------------------------------


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("TEST_CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("TEST_CONFLUENCE_TOKEN", TOKEN)
    with FakeConfluence() as server:
        yield server


def test_files_attached_to_confluence_pages_are_synced_under_their_pages_scope(index, tmp_path, fake):
    name = f"att-{uuid.uuid4().hex[:8]}"
    sources = tmp_path / "sources.toml"
    sources.write_text(f'''[[source]]
name = "{name}"
kind = "confluence"
url = "{fake.url}"
spaces = ["OPS", "PEOPLE"]
email_env = "TEST_CONFLUENCE_EMAIL"
token_env = "TEST_CONFLUENCE_TOKEN"
access = {{ PEOPLE = "hr", "*" = "public" }}
retries = 1
''')
    fake.attach("9001", "210", "benefits.pdf", office_files.pdf(BENEFITS), PDF)
    fake.attach("9002", "202", "scan.pdf", office_files.pdf([[]]), PDF)
    fake.attach("9003", "202", "locked.pdf", office_files.pdf([["x"]], password="pw"), PDF)
    fake.attach("9004", "202", "topology.png", b"\x89PNG", "image/png")  # not a document: not read
    fake.attach("9005", "201", "oncall.docx", office_files.docx([("h1", "On call"), ("p", "Pager rotates weekly.")]), DOCX)
    runner = SyncRunner(index, read_sources_file(sources).sources)
    report = runner.sync(name)
    with index.session() as s:
        docs = {r.path: r for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == name))}
        sections = [p for p in s.exec(select(ParentSection).where(ParentSection.doc_id == f"{name}:pages/210/attachments/9001"))]
    pdf = docs["pages/210/attachments/9001"]
    assert (pdf.status, pdf.access, pdf.title) == (Status.SUCCESS, "hr", "benefits.pdf (Overview)")
    assert {p.url.rsplit("#", 1)[-1] for p in sections} == {"page=1", "page=3"}
    assert all(p.url.startswith(f"{fake.url}/download/attachments/210/benefits.pdf?version=1") for p in sections)
    assert (docs["pages/202/attachments/9002"].status, docs["pages/202/attachments/9003"].status) == (
        Status.SKIPPED, Status.FAILED)
    assert "no text layer" in docs["pages/202/attachments/9002"].error
    assert "encrypted" in docs["pages/202/attachments/9003"].error
    assert "pages/202/attachments/9004" not in docs and docs["pages/201/attachments/9005"].access == "public"
    assert report.failed == 2  # the locked PDF, and the fixture's page without a title
    hits = retrieve(index, "how much of dental treatment does Acme pay", scopes=["hr"]).hits
    assert any(h.path == "pages/210/attachments/9001" and h.url.endswith("#page=3") for h in hits if h.source == name)
    assert not [h for h in retrieve(index, "dental treatment costs", scopes=["public"]).hits
                if h.source == name and h.path.startswith("pages/210/")]

    fake.attach("9001", "210", "benefits.pdf", office_files.pdf([["Dental cover", "Acme pays 90 percent now."]]), PDF)
    del fake.attachments["9005"]
    seen = len(fake.requests)
    again = runner.sync(name)
    assert (again.updated, again.deleted) == (1, 1)
    assert len([r for r in fake.requests[seen:] if "/download/" in r]) == 2  # the new version, the locked one retried
    indexed_sources.forget(index, name)


# -- kept in Markdown folders ---------------------------------------------------------------------


def test_files_in_a_markdown_folder_are_read_when_include_globs_name_them(tmp_path):
    from connectors.markdown import MarkdownFolder

    (tmp_path / "policies").mkdir()
    (tmp_path / "index.md").write_text("# Handbook\n\nSee the policies.\n")
    (tmp_path / "policies" / "benefits.pdf").write_bytes(office_files.pdf(BENEFITS, title="Benefits 2026"))
    (tmp_path / "policies" / "scan.pdf").write_bytes(office_files.pdf([[]]))
    (tmp_path / "policies" / "travel.docx").write_bytes(office_files.docx([("h1", "Travel"), ("p", "Economy.")]))
    (tmp_path / "policies" / "torn.pptx").write_bytes(b"PK\x03\x04 torn")
    assert [d.path for d in MarkdownFolder(tmp_path).documents()] == ["index.md"]  # no include: Markdown only
    folder = MarkdownFolder(tmp_path, include=["*.md", "policies/*.pdf", "policies/*.pptx"],
                            url_template="https://files.acme.example/{path}")
    docs = {d.path: d for d in folder.documents()}
    assert set(docs) == {"index.md", "policies/benefits.pdf", "policies/scan.pdf", "policies/torn.pptx"}
    pdf = docs["policies/benefits.pdf"]
    assert (pdf.title, pdf.url, pdf.error) == ("Benefits 2026", "https://files.acme.example/policies/benefits.pdf", None)
    assert pdf.section_url("page=3") == "https://files.acme.example/policies/benefits.pdf#page=3"
    assert "no text layer" in docs["policies/scan.pdf"].skipped
    assert "not a valid Office file" in docs["policies/torn.pptx"].error
    assert folder.wants("policies/benefits.pdf") and not folder.wants("policies/travel.docx")


# -- inside Confluence exports --------------------------------------------------------------------


def test_files_in_confluence_exports_become_documents_when_the_source_asks(tmp_path):
    """The HTML export's attachments/1006/2002.pdf ("runbook.pdf"), and an XML export's
    attachments/<page>/<attachment>/<version>, read with `attachments = true`; off by default."""
    import shutil
    from pathlib import Path

    from connectors.confluence.html_export import ConfluenceHtmlExport
    from connectors.confluence.xml_export import ConfluenceXmlExport

    fixtures = Path(__file__).resolve().parent / "fixtures" / "confluence"
    html = tmp_path / "html"
    shutil.copytree(fixtures / "html-export", html)
    assert not [d for d in ConfluenceHtmlExport(html).documents() if "/attachments/" in d.path]
    docs = {d.path: d for d in ConfluenceHtmlExport(html, attachments=True).documents()}
    broken = docs["pages/1006/attachments/runbook.pdf"]  # the fixture's file is "%PDF-1.4 not really a pdf"
    assert broken.error.startswith("cannot read this PDF file") and broken.title == "runbook.pdf (Deploying the Quokka API)"
    assert not [p for p in docs if p.endswith(".png")]
    (html / "attachments" / "1006" / "2002.pdf").write_bytes(office_files.pdf(BENEFITS))
    docs = {d.path: d for d in ConfluenceHtmlExport(html, attachments=True, base_url="https://wiki.acme.example").documents()}
    pdf = docs["pages/1006/attachments/runbook.pdf"]
    assert pdf.error is None and "Acme pays 80 percent" in pdf.text
    assert pdf.url == "https://wiki.acme.example/download/attachments/1006/runbook.pdf"
    assert pdf.section_url("page=3").endswith("runbook.pdf#page=3")
    assert pdf.metadata["space"] == docs["pages/1006"].metadata["space"]

    xml = tmp_path / "xml"
    shutil.copytree(fixtures / "xml-export", xml)
    entities = xml / "entities.xml"
    attachment = '''<object class="Attachment" package="com.atlassian.confluence.pages">
<id name="id">480</id>
<property name="title"><![CDATA[leave-policy.docx]]></property>
<property name="version">3</property>
<property name="originalVersionId"/><property name="contentStatus"><![CDATA[current]]></property>
<property name="containerContent" class="Page" package="com.atlassian.confluence.pages"><id name="id">210</id>
</property>
</object>
'''
    entities.write_text(entities.read_text().replace("</hibernate-generic>", attachment + "</hibernate-generic>"))
    (xml / "attachments" / "210" / "480").mkdir(parents=True)
    (xml / "attachments" / "210" / "480" / "3").write_bytes(
        office_files.docx([("h1", "Leave policy"), ("p", "Parental leave: twenty weeks.")]))
    docs = {d.path: d for d in ConfluenceXmlExport(xml, attachments=True).documents()}
    word = docs["pages/210/attachments/leave-policy.docx"]
    assert word.error is None and word.text == "# Leave policy\n\nParental leave: twenty weeks."
    assert word.metadata["space"] == "PEOPLE" and word.metadata["attached_to"] == "Overview"
