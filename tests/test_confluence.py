"""Confluence HTML and XML space exports: what each page becomes as a SourceDocument.

Two kinds of input. The real samples in ../shared/corpora/confluence (skipped where absent),
whose expected values were read off the files by hand (see FORMAT.md there). And our own small
invented exports under tests/fixtures/confluence, for what the samples lack: code macros with a
language, info/warning/note/tip panels, expand sections, Jira and status macros, mentions,
attachments, labels, historical/draft/trashed versions, duplicate titles, malformed pages.
Zips are built from those folders in tmp_path. Only the last two tests touch the index.
"""

from __future__ import annotations

import shutil
import zipfile
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from connectors.confluence.common import ExportError
from connectors.confluence.html_export import ConfluenceHtmlExport
from connectors.confluence.xml_export import ConfluenceXmlExport
from connectors.registry import detect_kind
from connectors.document import SourceDocument
from tests.support.corpora import SAMPLE_WIKI, shared_corpus

FIXTURES = Path(__file__).parent / "fixtures" / "confluence"
HTML_FIXTURE = FIXTURES / "html-export"
XML_FIXTURE = FIXTURES / "xml-export"
BASE = "https://wiki.example.com/wiki"


def html_sample() -> Path:
    return shared_corpus("confluence") / "html-export-server-meridius"


def xml_sample() -> Path:
    return shared_corpus("confluence") / "xml-export-cloud-arc42"


@pytest.fixture(scope="session")
def samples() -> Path:
    """The samples' folder, or a skip. Session-scoped and asked for before `index`, so a clone
    without ../shared skips the index tests without starting Postgres and loading the model."""
    return shared_corpus("confluence")


def by_path(connector) -> dict[str, SourceDocument]:
    return {doc.path: doc for doc in connector.documents()}


def zip_folder(folder: Path, target: Path, top: str | None = None) -> Path:
    """Zip a folder the way people do: optionally inside one top-level folder (the space key)."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name not in ("LICENSE", "SOURCE.md"):
                rel = path.relative_to(folder).as_posix()
                archive.write(path, f"{top}/{rel}" if top else rel)
    return target


# --- HTML export: the real sample -------------------------------------------------------------


def test_html_sample_has_one_document_per_page_keyed_by_id_with_the_space_prefix_removed():
    docs = by_path(ConfluenceHtmlExport(html_sample(), source="conf"))

    assert {path: doc.title for path, doc in docs.items()} == {
        "pages/9273380": "Zprovoznění",  # bare <id>.html: the title has no ASCII form
        "pages/9273401": "JavaScript",
        # The uploader's anonymisation missed this file: its own title and breadcrumb say
        # "11. Clubspire" where the other pages say "11. My article" / "My article".
        "pages/9568346": "Clubspire",
        "pages/9568537": "Webclient",
    }
    assert all(doc.error is None for doc in docs.values())
    assert docs["pages/9273401"].doc_id == "conf:pages/9273401"
    assert docs["pages/9273401"].metadata["file"] == "JavaScript_9273401.html"
    assert list(ConfluenceHtmlExport(html_sample()).paths()) == list(docs)


def test_html_sample_hierarchy_comes_from_the_breadcrumbs_without_the_space():
    docs = by_path(ConfluenceHtmlExport(html_sample()))

    assert docs["pages/9273380"].metadata["ancestors"] == ["My article", "Webclient"]
    assert docs["pages/9273380"].metadata["ancestor_ids"] == ["9568346", "9568537"]
    assert docs["pages/9273401"].metadata["ancestors"] == ["My article", "Webclient"]
    assert docs["pages/9568537"].metadata["ancestors"] == ["My article"]
    assert docs["pages/9568346"].metadata["ancestors"] == []  # the space home page
    assert {doc.metadata["space"] for doc in docs.values()} == {"My article"}  # index.html "Key" (anonymised)
    assert {doc.metadata["space_name"] for doc in docs.values()} == {"11. My article"}


def test_html_sample_authors_and_last_modified_dates_come_from_the_metadata_line():
    docs = by_path(ConfluenceHtmlExport(html_sample(), timezone="Europe/Prague"))
    prague = ZoneInfo("Europe/Prague")

    expected = {  # (created by, last modified by, date): the three forms of the metadata line
        "pages/9273380": ("Some Dude", "Some Dude", datetime(2015, 1, 29, tzinfo=prague)),
        "pages/9273401": ("Václav", "Martin", datetime(2015, 2, 24, tzinfo=prague)),
        "pages/9568346": ("System Administrator", "System Administrator", datetime(2015, 2, 23, tzinfo=prague)),
        "pages/9568537": ("Martin", "Martin", datetime(2015, 2, 24, tzinfo=prague)),  # never edited
    }
    for path, (author, editor, when) in expected.items():
        doc = docs[path]
        assert (doc.metadata["author"], doc.metadata["last_modified_by"], doc.updated_at) == (author, editor, when)
        assert doc.updated_at.utcoffset() == timedelta(hours=1)  # winter in Prague, not the UTC default
    # The footer's "Document generated by Confluence on 08.09.2016 02:05" is the export time, not an edit.
    assert all(doc.updated_at.year == 2015 for doc in docs.values())
    assert next(ConfluenceHtmlExport(html_sample()).documents()).updated_at.utcoffset() == timedelta(0)  # UTC default


def test_html_sample_urls_come_from_the_base_url_and_page_id_else_the_exported_file():
    cited = by_path(ConfluenceHtmlExport(html_sample(), base_url=BASE + "/"))
    local = by_path(ConfluenceHtmlExport(html_sample()))

    assert cited["pages/9273380"].url == "https://wiki.example.com/wiki/pages/viewpage.action?pageId=9273380"
    assert local["pages/9273380"].url == (html_sample() / "9273380.html").resolve().as_uri()
    assert local["pages/9273401"].url == (html_sample() / "JavaScript_9273401.html").resolve().as_uri()


def test_html_sample_body_becomes_markdown_with_headings_nested_lists_and_a_fenced_code_block():
    docs = by_path(ConfluenceHtmlExport(html_sample()))
    setup, javascript = docs["pages/9273380"].text, docs["pages/9273401"].text

    assert setup.startswith("## Předpoklady\n")
    assert "\n## Postup\n" in setup
    assert "\n1. Vyzadat si aktualni build CSWC" in setup
    assert "\n   1. prihlaste se do Hudsonu" in setup  # nested ordered list
    assert (  # brush: text from data-syntaxhighlighter-params
        "```text\n   webClient.security.interceptUrl.access.timeline=permitAll\n"
        "   webClient.timeline.access.authenticatedOnly=false\n   ```"
    ) in setup
    assert [line for line in javascript.splitlines() if line.startswith("#")] == [
        "## Zakladni info", "## JS pro vyvoj", "## Kompilace",
    ]
    # A literal &nbsp; at the end of bold text must not glue two words together.
    assert "**upravit <tomcatDir>/conf/application.properties pridat** systemPreferences" in javascript


def test_html_sample_navigation_is_dropped_and_entities_are_decoded():
    docs = by_path(ConfluenceHtmlExport(html_sample()))
    setup = docs["pages/9273380"].text

    assert docs["pages/9568346"].text == ""  # the home page is only a children macro
    assert docs["pages/9568537"].text == ""  # an empty #main-content
    for doc in docs.values():
        assert "Document generated by Confluence" not in doc.text
        assert "11. My article" not in doc.text and "Atlassian" not in doc.text
        assert "&lt;" not in doc.text and "&quot;" not in doc.text and "&nbsp;" not in doc.text
    assert "**smazat slozku** <tomcatDir>/webapps/ROOT" in setup
    assert 'export SOME_SERVER="<tomcatDir>/jboss"' in setup
    assert "<https://192.168.0.242:18443/hudson/>" in setup  # external links stay links


# --- HTML export: our fixture -----------------------------------------------------------------


def test_html_panels_expand_code_table_and_jira_become_plain_markdown():
    doc = by_path(ConfluenceHtmlExport(HTML_FIXTURE))["pages/1006"]

    assert doc.title == "Deploying the Quokka API"
    assert "**Info: Good to know**\n\nDeploys are frozen on Fridays after 15:00." in doc.text
    assert "**Warning**\n\nNever deploy the Quokka API without a fresh database backup." in doc.text
    assert "**Note**\n\nA rollback takes about ten minutes." in doc.text
    assert (
        "**deploy.py**\n\n   ```py\n   import quokka\n\n   if quokka.version() < (2, 0):\n"
        '       raise SystemExit("upgrade first & retry")\n'
    ) in doc.text
    assert "**Troubleshooting a failed deploy**\n\nIf the health check fails, run `quokka rollback`" in doc.text
    assert "| Region | Deploy window |\n| --- | --- |\n| eu-west-1 | Tuesday 10:00 |" in doc.text
    assert "Tracked in OPS-42." in doc.text
    assert "Getting issue details" not in doc.text and "STATUS" not in doc.text
    assert "toc-macro" not in doc.text and "list-style" not in doc.text  # the TOC and its <style>
    assert [line for line in doc.text.splitlines() if line.startswith("#")] == [
        "## Prerequisites", "## Steps", "## Regions",
    ]


def test_html_children_macro_and_toc_are_navigation_not_text():
    home = by_path(ConfluenceHtmlExport(HTML_FIXTURE))["pages/1001"]

    assert home.text == "Welcome to the Acme handbook: how we work, written down.\n\n## Sections\n"
    assert home.metadata["author"] == "Ada Admin" and home.metadata["last_modified_by"] == "Bea Editor"
    assert home.updated_at == datetime(2022, 6, 28, tzinfo=ZoneInfo("UTC"))  # "Jun 28, 2022" form


def test_html_same_title_in_two_places_stays_two_documents_with_their_own_ancestors():
    docs = by_path(ConfluenceHtmlExport(HTML_FIXTURE, base_url=BASE))

    overviews = {path: doc for path, doc in docs.items() if doc.title == "Overview"}
    assert set(overviews) == {"pages/1003", "pages/1005"}
    assert overviews["pages/1003"].metadata["ancestors"] == ["Acme Handbook", "Engineering"]
    assert overviews["pages/1005"].metadata["ancestors"] == ["Acme Handbook", "People"]
    assert "Quokka API every Tuesday" in overviews["pages/1003"].text
    assert "parental leave" in overviews["pages/1005"].text
    assert overviews["pages/1003"].url != overviews["pages/1005"].url
    assert overviews["pages/1003"].content_hash != overviews["pages/1005"].content_hash


def test_html_attachments_are_listed_in_metadata_and_never_indexed():
    connector = ConfluenceHtmlExport(HTML_FIXTURE)
    docs = by_path(connector)

    assert docs["pages/1006"].metadata["attachments"] == [
        {"name": "topology.png", "path": "attachments/1006/2001.png", "media_type": "image/png"},
        {"name": "runbook.pdf", "path": "attachments/1006/2002.pdf", "media_type": "application/pdf"},
    ]
    assert all(path.startswith("pages/") for path in connector.paths())  # no attachment files
    assert "Attachments:" not in docs["pages/1006"].text and "runbook.pdf" not in docs["pages/1006"].text
    assert "topology" not in docs["pages/1006"].text  # the embedded image is not text either


def test_html_named_entities_are_decoded_in_titles_and_bodies():
    doc = by_path(ConfluenceHtmlExport(HTML_FIXTURE))["pages/1008"]  # bare 1008.html

    assert doc.title == "Café & Crème"
    assert doc.text == "Café opens at 08:00 — crème brûlée on Fridays…\n"
    prerequisites = by_path(ConfluenceHtmlExport(HTML_FIXTURE))["pages/1006"].text
    assert "You need the **deploy** role — ask in the platform channel." in prerequisites


def test_html_links_into_the_export_cite_the_page_when_a_base_url_is_known_else_keep_their_text():
    with_base = by_path(ConfluenceHtmlExport(HTML_FIXTURE, base_url=BASE))["pages/1006"].text
    without = by_path(ConfluenceHtmlExport(HTML_FIXTURE))["pages/1006"].text

    assert f"[Overview]({BASE}/pages/viewpage.action?pageId=1003)" in with_base
    assert "Read the Overview first" in without and "Overview_1003.html" not in without
    assert "[status page](https://status.example.com/quokka)" in with_base


def test_a_malformed_html_page_becomes_an_error_document_and_the_others_are_read(tmp_path):
    export = tmp_path / "export"
    shutil.copytree(HTML_FIXTURE, export)
    latin1_page = (HTML_FIXTURE / "1008.html").read_bytes().replace(b"Caf&eacute;", b"Caf\xe9")
    (export / "Latin1_1009.html").write_bytes(latin1_page)

    docs = by_path(ConfluenceHtmlExport(export, source="conf"))

    truncated, latin1 = docs["pages/1007"], docs["pages/1009"]
    assert truncated.error == "no #main-content: not a Confluence page, or a truncated file"
    assert truncated.title == "Broken" and truncated.text == ""  # still says which page failed
    assert truncated.doc_id == "conf:pages/1007"
    assert latin1.error.startswith("not valid UTF-8")
    assert [p for p, d in docs.items() if d.error] == ["pages/1007", "pages/1009"]
    assert len(docs) == 9

    small = by_path(ConfluenceHtmlExport(export, max_bytes=6000))
    assert "over the" in small["pages/1006"].error
    assert small["pages/1002"].error is None


def test_access_scope_defaults_to_public_and_is_configurable():
    assert {d.access for d in ConfluenceHtmlExport(HTML_FIXTURE).documents()} == {"public"}
    assert {d.access for d in ConfluenceXmlExport(XML_FIXTURE, access="ops").documents()} == {"ops"}


# --- XML export: the real sample --------------------------------------------------------------


def test_xml_sample_has_its_31_current_pages_with_titles_space_and_authors():
    docs = by_path(ConfluenceXmlExport(xml_sample(), source="arc42"))

    assert len(docs) == 31
    assert all(doc.error is None for doc in docs.values())
    assert docs["pages/1634596"].title == "arc42"  # the space home page
    assert docs["pages/1634922"].title == "4. Lösungsstrategie"
    assert docs["pages/1635168"].title == "6.1. <Bezeichnung Laufzeitszenario 1>"
    assert docs["pages/1635671"].title == "12. Glossar"
    assert {d.metadata["space"] for d in docs.values()} == {"HAFWUEARC42"}
    assert {d.metadata["space_name"] for d in docs.values()} == {"arc42 V7 structured German"}
    assert {d.metadata["author"] for d in docs.values()} == {"docToolchain"}
    assert list(ConfluenceXmlExport(xml_sample()).paths()) == sorted(docs, key=lambda p: int(p.split("/")[1]))


def test_xml_sample_ancestors_are_root_first_titles():
    docs = by_path(ConfluenceXmlExport(xml_sample()))

    assert docs["pages/1634596"].metadata["ancestors"] == []
    assert docs["pages/1634629"].metadata["ancestors"] == ["arc42"]
    assert docs["pages/1634661"].metadata["ancestors"] == ["arc42", "1. Einführung und Ziele"]
    assert docs["pages/1635414"].metadata["ancestors"] == ["arc42", "8. Querschnittliche Konzepte"]
    assert docs["pages/1635414"].metadata["ancestor_ids"] == ["1634596", "1635364"]
    assert sum(1 for d in docs.values() if len(d.metadata["ancestors"]) == 1) == 12  # chapters 1–12


def test_xml_sample_times_are_in_the_exports_time_zone_and_urls_are_built():
    docs = by_path(ConfluenceXmlExport(xml_sample(), base_url=BASE))
    berlin = ZoneInfo("Europe/Berlin")  # exportDescriptor.properties: timezoneId=Europe/Berlin

    strategy = docs["pages/1634922"]
    assert strategy.updated_at == datetime(2017, 1, 22, 19, 13, 44, 547000, tzinfo=berlin)
    assert strategy.updated_at.utcoffset() == timedelta(hours=1)
    assert docs["pages/1634596"].updated_at == datetime(2017, 1, 22, 19, 13, 25, 176000, tzinfo=berlin)
    assert strategy.url == "https://wiki.example.com/wiki/pages/viewpage.action?pageId=1634922"
    local = by_path(ConfluenceXmlExport(xml_sample()))["pages/1634922"].url
    assert local == (xml_sample() / "entities.xml").resolve().as_uri() + "#page-1634922"
    utc = by_path(ConfluenceXmlExport(xml_sample(), timezone="UTC"))["pages/1634922"]
    assert utc.updated_at == datetime(2017, 1, 22, 19, 13, 44, 547000, tzinfo=ZoneInfo("UTC"))


def test_xml_sample_storage_bodies_become_markdown_without_macros_or_markers():
    docs = by_path(ConfluenceXmlExport(xml_sample()))
    home, whitebox, glossary = docs["pages/1634596"].text, docs["pages/1635040"].text, docs["pages/1635671"].text

    assert home.startswith("**Über arc42**\n")  # &Uuml;
    assert "© We acknowledge" in home.replace("\n", " ")  # &copy;
    assert "Created by Dr. Peter Hruschka & Dr. Gernot Starke." in home
    assert "**Info**\n\nDiese Version des Templates enthält Hilfen und Erläuterungen." in home
    assert "# 5.1.1. <Name Blackbox 1>" in whitebox and "# 5.1.5. <Name Schnittstelle m>" in whitebox
    assert "| **Name** | **Verantwortung** |\n| --- | --- |\n| *<Blackbox 1>* | *<Text>* |" in whitebox
    assert "| Begriff | Definition |\n| --- | --- |" in glossary
    assert "**Info: arc42**" in docs["pages/1634954"].text  # info panel with a title, inside an expand
    for doc in docs.values():
        assert "ac:" not in doc.text and "ri:" not in doc.text
        assert "hash: #" not in doc.text  # docToolchain's display:none markers
        assert "&auml;" not in doc.text and "&uuml;" not in doc.text and "\u200b" not in doc.text


def test_xml_sample_attachments_are_listed_with_type_and_size():
    docs = by_path(ConfluenceXmlExport(xml_sample()))

    assert docs["pages/1634954"].metadata["attachments"] == [{
        "name": "05_building_blocks-DE.png", "media_type": "image/png", "size": 279631,
        "path": "attachments/1634954/1635005/1",
    }]
    assert docs["pages/1635364"].metadata["attachments"][0]["name"] == "08-Crosscutting-Concepts-Structure-DE.png"
    assert sum(len(d.metadata["attachments"]) for d in docs.values()) == 2
    assert "05_building_blocks" not in docs["pages/1634954"].text


# --- XML export: our fixture ------------------------------------------------------------------


def test_xml_only_current_pages_no_history_drafts_trash_or_blog_posts():
    docs = by_path(ConfluenceXmlExport(XML_FIXTURE))

    assert list(docs) == ["pages/200", "pages/201", "pages/202", "pages/206", "pages/207", "pages/210"]
    everything = " ".join(d.text for d in docs.values())
    for gone in ("zebra", "merger", "old VPN", "Lisbon"):  # historical, draft, trashed, blog post
        assert gone not in everything
    assert docs["pages/202"].metadata["version"] == 3


def test_xml_storage_macros_become_markdown():
    text = by_path(ConfluenceXmlExport(XML_FIXTURE))["pages/202"].text

    assert (
        "**restart.sh**\n\n```bash\n"
        'if [ "$LAG" -lt 5 ] && ping -c1 db2; then\n'
        "  systemctl restart postgresql   # safe: lag < 5s, &amp; stays literal\nfi\n```"
    ) in text  # CDATA (split around its own ]]> inside the export's CDATA) kept verbatim
    assert "**Info: Good to know**\n\nMaintenance windows are on Sundays." in text
    assert "**Warning**\n\nNever restart both database nodes at once." in text
    assert "**Note**\n\nFailover takes about ninety seconds." in text
    assert "**Tip**\n\nWatch replication lag on the dashboard." in text
    assert "**What if the node does not come back?**\n\nPromote the replica with `pg_ctl promote`" in text
    assert "**Info**\n\nNested panels survive too." in text  # a panel inside an expand
    assert "- [x] Announce in the ops channel\n- [ ] Check replication lag" in text
    assert "| Host | Role |\n| --- | --- |\n| db1 | primary |" in text
    assert "Tracked in OPS-77, status DONE." in text
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "# Before you start", "# Restarting a node", "## Checklist", "## Hosts",
    ]
    for gone in ("Type your notes here", "hash: #", "toc", "children", "Acme Jira", "Green"):
        assert gone not in text


def test_xml_links_mentions_and_entities():
    cited = by_path(ConfluenceXmlExport(XML_FIXTURE, base_url=BASE))["pages/202"].text
    plain = by_path(ConfluenceXmlExport(XML_FIXTURE))["pages/202"].text

    assert (
        f"Ask @asmith for the **ops** role — see [the runbook index]({BASE}/pages/viewpage.action?pageId=201), "
        "topology.png and [the status page](https://status.example.com/db). Grüße aus München…"
    ) in cited
    assert "see the runbook index, topology.png" in plain  # no base URL: the link's text
    people = by_path(ConfluenceXmlExport(XML_FIXTURE, base_url=BASE))["pages/210"].text
    # A link into another space is resolved by its key; a page not in the export keeps its title.
    assert f"see [Runbooks]({BASE}/pages/viewpage.action?pageId=201) and Holidays 2024." in people


def test_xml_same_title_in_two_spaces_stays_two_documents():
    docs = by_path(ConfluenceXmlExport(XML_FIXTURE))

    ops, people = docs["pages/202"], docs["pages/210"]
    assert ops.title == people.title == "Overview"
    assert (ops.metadata["space"], ops.metadata["ancestors"]) == ("OPS", ["Operations Home", "Runbooks"])
    assert (people.metadata["space"], people.metadata["space_name"], people.metadata["ancestors"]) == (
        "PEOPLE", "People Team", [])
    assert "parental leave" in people.text and "parental leave" not in ops.text


def test_xml_authors_labels_attachments_and_time_zone_with_daylight_saving():
    docs = by_path(ConfluenceXmlExport(XML_FIXTURE))
    new_york = ZoneInfo("America/New_York")
    overview = docs["pages/202"]

    assert (overview.metadata["author"], overview.metadata["last_modified_by"]) == ("jdoe", "asmith")
    assert overview.metadata["tags"] == ["databases", "runbook"]  # global + team labels; "my" favourites left out
    assert overview.metadata["attachments"] == [  # the current version only
        {"name": "topology.png", "media_type": "image/png", "size": 2048, "path": "attachments/202/400/2"},
    ]
    assert overview.updated_at == datetime(2023, 3, 12, 9, 30, tzinfo=new_york)
    assert overview.updated_at.utcoffset() == timedelta(hours=-4)  # DST began that morning
    assert docs["pages/210"].updated_at.utcoffset() == timedelta(hours=-5)


def test_malformed_xml_pages_become_error_documents_and_the_others_are_read():
    docs = by_path(ConfluenceXmlExport(XML_FIXTURE, source="ops"))

    assert docs["pages/206"].error == "unreadable modification date 'yesterday at noon'"
    assert docs["pages/206"].title == "Broken dates"
    assert docs["pages/207"].error == "page has no title"
    assert docs["pages/207"].doc_id == "ops:pages/207"
    assert [p for p, d in docs.items() if d.error] == ["pages/206", "pages/207"]

    small = by_path(ConfluenceXmlExport(XML_FIXTURE, max_bytes=1000))
    assert "over the" in small["pages/202"].error
    assert small["pages/201"].error is None


def test_broken_or_missing_entities_xml_raises_before_any_document(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(XML_FIXTURE, broken)
    xml = (broken / "entities.xml").read_text(encoding="utf-8")
    (broken / "entities.xml").write_text(xml[: len(xml) // 2], encoding="utf-8")

    with pytest.raises(ExportError, match="not well-formed XML"):
        next(ConfluenceXmlExport(broken).documents())
    (broken / "entities.xml").write_text('<hibernate-generic datetime="2023-03-13 10:00:00"/>', encoding="utf-8")
    with pytest.raises(ExportError, match="holds no current pages"):
        list(ConfluenceXmlExport(broken).paths())
    with pytest.raises(ExportError, match="no entities.xml"):
        next(ConfluenceXmlExport(HTML_FIXTURE).documents())
    with pytest.raises(ExportError, match="no Confluence page files"):
        next(ConfluenceHtmlExport(XML_FIXTURE).documents())
    with pytest.raises(ExportError, match="does not exist"):
        next(ConfluenceHtmlExport(tmp_path / "nowhere").documents())
    with pytest.raises(ExportError, match="unknown time zone"):
        next(ConfluenceXmlExport(XML_FIXTURE, timezone="Mars/Olympus").documents())


# --- zips -------------------------------------------------------------------------------------


def _comparable(doc: SourceDocument) -> tuple:
    return doc.path, doc.title, doc.text, doc.url, doc.updated_at, doc.metadata, doc.error


@pytest.mark.parametrize("kind", ["html-sample", "xml-sample", "html-fixture", "xml-fixture"])
@pytest.mark.parametrize("top", [None, "SPACE"], ids=["flat", "in-a-folder"])
def test_zip_and_folder_give_the_same_documents(tmp_path, kind, top):
    folder = {"html-sample": html_sample, "xml-sample": xml_sample,
              "html-fixture": lambda: HTML_FIXTURE, "xml-fixture": lambda: XML_FIXTURE}[kind]()
    connector = ConfluenceHtmlExport if kind.startswith("html") else ConfluenceXmlExport
    archive = zip_folder(folder, tmp_path / "export.zip", top)

    from_folder = [_comparable(d) for d in connector(folder, base_url=BASE).documents()]
    from_zip = [_comparable(d) for d in connector(archive, base_url=BASE).documents()]

    assert from_zip == from_folder and len(from_zip) >= 4
    assert list(connector(archive).paths()) == [d[0] for d in from_folder]


def test_without_a_base_url_a_zipped_page_links_into_the_archive(tmp_path):
    archive = zip_folder(HTML_FIXTURE, tmp_path / "export.zip", "HB")

    doc = by_path(ConfluenceHtmlExport(archive))["pages/1003"]

    assert doc.url == archive.resolve().as_uri() + "!/HB/Overview_1003.html"


def test_zip_bomb_is_refused_before_anything_is_read(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(HTML_FIXTURE / "index.html", "index.html")
        z.writestr("Zeros_1.html", b"\0" * (3 * 1024 * 1024))  # 3 MiB of zeros: ~3 KB compressed
    assert archive.stat().st_size < 20_000

    with pytest.raises(ExportError, match=r"refusing bomb.zip: over 2 MiB uncompressed \(zip bomb\?\)"):
        next(ConfluenceHtmlExport(archive, max_archive_bytes=2 * 1024 * 1024).documents())
    with pytest.raises(ExportError, match="zip bomb"):
        list(ConfluenceXmlExport(archive, max_archive_bytes=2_000_000).paths())


def test_zip_with_too_many_members_is_refused(tmp_path):
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for n in range(51):
            z.writestr(f"Page_{n}.html", "x")

    with pytest.raises(ExportError, match="51 members, over the limit of 50"):
        next(ConfluenceHtmlExport(archive, max_archive_members=50).documents())


@pytest.mark.parametrize(
    "name", ["../evil.html", "/etc/passwd", "a/../../b_1.html", "C:/x_2.html", "dir\\..\\x_3.html"],
)
def test_zip_member_paths_that_leave_the_archive_are_refused(tmp_path, name):
    archive = zip_folder(HTML_FIXTURE, tmp_path / "export.zip")
    with zipfile.ZipFile(archive, "a") as z:
        z.writestr(zipfile.ZipInfo(name), "<html></html>")

    with pytest.raises(ExportError, match="unsafe member path"):
        next(ConfluenceHtmlExport(archive).documents())


# --- detect_kind ------------------------------------------------------------------------------


def test_detect_kind_recognises_the_real_samples():
    assert detect_kind(html_sample()) == "confluence-html"
    assert detect_kind(xml_sample()) == "confluence-xml"


def test_detect_kind_tells_the_exports_from_markdown(tmp_path):
    assert detect_kind(HTML_FIXTURE) == "confluence-html"
    assert detect_kind(XML_FIXTURE) == "confluence-xml"
    assert detect_kind(SAMPLE_WIKI) == "markdown"
    assert detect_kind(zip_folder(HTML_FIXTURE, tmp_path / "h.zip", "HB")) == "confluence-html"
    assert detect_kind(zip_folder(XML_FIXTURE, tmp_path / "x.zip")) == "confluence-xml"
    assert detect_kind(zip_folder(SAMPLE_WIKI, tmp_path / "m.zip")) == "markdown"
    lookalike = tmp_path / "site"  # a static site with index.html and 404.html is not Confluence
    lookalike.mkdir()
    (lookalike / "index.html").write_text("<html>home</html>")
    (lookalike / "404.html").write_text("<html>not found</html>")
    assert detect_kind(lookalike) == "markdown"
    with pytest.raises(FileNotFoundError):
        detect_kind(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="neither a folder nor a .zip"):
        detect_kind(HTML_FIXTURE / "index.html")


# --- through the index ------------------------------------------------------------------------


def test_html_sample_synced_into_the_index_answers_a_question_about_one_page(samples, index):
    from indexing.search.retrieval import retrieve
    from indexing.ingest.sync import sync_documents

    connector = ConfluenceHtmlExport(html_sample(), source="conf-html", access="conf-html", base_url=BASE)
    report = sync_documents(index, connector.documents(), "conf-html")

    assert report.added == 2  # the two pages with text
    assert report.failed == 0 and report.skipped == 2  # two empty parent pages: nothing to index, nothing broken
    assert all("no indexable text" in skip for skip in report.skips)
    hits = retrieve(index, "Where do I get ROOT.war and how do I stop Tomcat?", scopes=["conf-html"]).hits
    assert hits[0].path == "pages/9273380"
    assert (hits[0].title, hits[0].heading) == ("Zprovoznění", "Postup")
    assert hits[0].url == f"{BASE}/pages/viewpage.action?pageId=9273380#Zprovoznění-Postup"  # the export's heading id


def test_xml_sample_synced_into_the_index_answers_a_question_about_one_page(samples, index):
    from indexing.search.retrieval import retrieve
    from indexing.ingest.sync import sync_documents

    connector = ConfluenceXmlExport(xml_sample(), source="conf-xml", access="conf-xml")
    report = sync_documents(index, connector.documents(), "conf-xml")

    assert (report.added, report.failed) == (31, 0)
    hits = retrieve(index, "Wozu dient das Glossar als Übersetzungsreferenz in mehrsprachigen Teams?",
                    scopes=["conf-xml"]).hits
    assert hits[0].path == "pages/1635671"
    assert hits[0].title == "12. Glossar"


# --- citation anchors -------------------------------------------------------------------------


def section_urls(doc: SourceDocument) -> list[tuple[list[str], str]]:
    from indexing.ingest.chunking import chunk_document

    return [(list(p.heading_path), p.url) for p in chunk_document(doc)]


def test_html_export_sections_cite_the_heading_ids_confluence_rendered():
    """`<h2 id="DeployingtheQuokkaAPI-Steps">` is the id Confluence's page view has too: the
    section links there, on the page URL and on the exported file alike."""
    page = f"{BASE}/pages/viewpage.action?pageId=1006"
    cited = by_path(ConfluenceHtmlExport(HTML_FIXTURE, base_url=BASE))["pages/1006"]
    assert [url for _, url in section_urls(cited)] == [
        f"{page}#DeployingtheQuokkaAPI-Prerequisites", f"{page}#DeployingtheQuokkaAPI-Steps",
        f"{page}#DeployingtheQuokkaAPI-Regions",
    ]
    local = by_path(ConfluenceHtmlExport(HTML_FIXTURE))["pages/1006"]
    file_uri = (HTML_FIXTURE / "Deploying-the-Quokka-API_1006.html").resolve().as_uri()
    assert section_urls(local)[1] == (["Steps"], f"{file_uri}#DeployingtheQuokkaAPI-Steps")


def test_an_html_export_heading_without_an_id_cites_the_page(tmp_path):
    export = tmp_path / "export"
    shutil.copytree(HTML_FIXTURE, export)
    page_file = export / "Deploying-the-Quokka-API_1006.html"
    page_file.write_text(page_file.read_text().replace(' id="DeployingtheQuokkaAPI-Steps"', ""))

    doc = by_path(ConfluenceHtmlExport(export, base_url=BASE))["pages/1006"]

    page = f"{BASE}/pages/viewpage.action?pageId=1006"
    assert section_urls(doc) == [
        (["Prerequisites"], f"{page}#DeployingtheQuokkaAPI-Prerequisites"),
        (["Steps"], page),  # never a GitHub-style "#steps", which Confluence would not resolve
        (["Regions"], f"{page}#DeployingtheQuokkaAPI-Regions"),
    ]


def test_xml_export_sections_cite_the_page_itself():
    """Storage format carries no heading ids, so no section anchor would resolve in Confluence."""
    docs = by_path(ConfluenceXmlExport(XML_FIXTURE, base_url=BASE))
    urls = {doc.path: {url for _, url in section_urls(doc)} for doc in docs.values() if doc.error is None and doc.text}
    assert urls and all(found == {f"{BASE}/pages/viewpage.action?pageId={path.split('/')[1]}"} for path, found in urls.items())
    assert any("#" in doc.text for doc in docs.values())  # the fixture does have headings


def test_xml_pages_with_view_restrictions_are_skipped_never_published_under_their_space(tmp_path):
    """A ContentPermissionSet of type View (as real exports write it) on Runbooks (201) restricts it
    and its child Overview (202): both SKIPPED with the reason, under no audience's scope — with
    one access scope or per space; an Edit restriction (who may change a page) restricts no reader."""
    from sources import SourceConfig, open_connector
    from connectors.document import RESTRICTED

    export = tmp_path / "xml"
    shutil.copytree(XML_FIXTURE, export)
    entities = export / "entities.xml"
    restriction = '''<object class="ContentPermissionSet" package="com.atlassian.confluence.security">
<id name="id">{id}</id>
<property name="type"><![CDATA[{kind}]]></property>
<collection name="contentPermissions" class="java.util.SortedSet">
<element class="ContentPermission" package="com.atlassian.confluence.security"><id name="id">{id}1</id>
</element>
</collection>
<property name="owningContent" class="Page" package="com.atlassian.confluence.pages"><id name="id">{page}</id>
</property>
</object>
'''
    extra = restriction.format(id=9100, kind="View", page=201) + restriction.format(id=9200, kind="Edit", page=210)
    entities.write_text(entities.read_text().replace("</hibernate-generic>", extra + "</hibernate-generic>"))
    for access in ("public", {"PEOPLE": "hr", "*": "public"}):
        source = SourceConfig(name="x", location=export, kind="confluence-xml", access=access)
        docs = {d.path: d for d in open_connector(source).documents()}
        for path in ("pages/201", "pages/202"):
            assert (docs[path].access, docs[path].text) == (RESTRICTED, ""), (access, path)
        assert docs["pages/201"].skipped.startswith("the page has view restrictions in the export")
        assert docs["pages/202"].skipped.startswith("its ancestor page 201 has view restrictions")
        assert docs["pages/210"].skipped is None and docs["pages/210"].text
        assert docs["pages/200"].access != RESTRICTED
