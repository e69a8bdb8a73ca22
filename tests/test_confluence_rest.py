"""Confluence Cloud and Data Center over REST, against a local fake Confluence speaking the real v1
JSON (tests/support/confluence_server.py, built from the real XML export fixture): first sync, edits,
deletes, moves between spaces, restrictions added and lifted, pagination, 429s and 5xx, an outage
mid-sync, 401/403, a renamed space, a page that fails alone — through Docent's own sources file,
runner, sync and index (the session's Postgres and model)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from sqlmodel import select

from tests.support.confluence_server import EMAIL, TOKEN, FakeConfluence
from connectors.confluence.api import ApiSettings, ConfluenceUnavailable
from connectors.confluence.rest import RESTRICTED, ConfluenceRest
from connectors.confluence.xml_export import ConfluenceXmlExport
from connectors.connector import ChangesConnector
from sources import SourcesError, open_connector, read_sources_file
from indexing.ingest import indexed_sources
from indexing.storage.index_tables import DocumentRecord, RunResult, Status, SyncRun
from indexing.search.retrieval import retrieve
from indexing.ingest.runner import SyncRunner
from indexing.index import index_status

XML_EXPORT = Path(__file__).resolve().parent / "fixtures" / "confluence" / "xml-export"
PARENTAL = "how many weeks of parental leave"  # answered by PEOPLE's page 210


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("TEST_CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("TEST_CONFLUENCE_TOKEN", TOKEN)


@pytest.fixture
def fake():
    with FakeConfluence() as server:
        yield server


def sources_file(tmp_path: Path, fake: FakeConfluence, extra: str = "", name: str | None = None) -> tuple[str, Path]:
    name = name or f"conf-{uuid.uuid4().hex[:8]}"
    auth = 'email_env = "TEST_CONFLUENCE_EMAIL"\n' if fake.cloud else ""
    path = tmp_path / f"{name}.toml"
    path.write_text(f'''[[source]]
name = "{name}"
kind = "confluence"
url = "{fake.url}"
spaces = ["OPS", "PEOPLE"]
{auth}token_env = "TEST_CONFLUENCE_TOKEN"
access = {{ PEOPLE = "hr", "*" = "public" }}
retries = 2
max_delete = 100
{extra}
''')
    return name, path


def runner_for(index, path: Path) -> SyncRunner:
    return SyncRunner(index, read_sources_file(path).sources)


def rows(index, name: str) -> dict[str, DocumentRecord]:
    with index.session() as s:
        return {r.path: r for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == name))}


def cited(index, name: str, question: str, scopes: list[str]) -> set[str]:
    return {h.path for h in retrieve(index, question, scopes=scopes).hits if h.source == name}


def searches(fake: FakeConfluence, since: int = 0) -> list[str]:
    return [r for r in fake.requests[since:] if "/content/search" in r]


# -- the sources file ------------------------------------------------------------------------------


def test_the_sources_file_takes_cloud_and_data_center_and_names_variables_never_secrets(tmp_path, fake):
    name, path = sources_file(tmp_path, fake, 'restrictions = { "group:hr-staff" = "hr" }')
    (source,) = read_sources_file(path).sources
    assert source.kind == "confluence" and source.remote is not None and source.remote.cloud
    assert source.remote.restrictions == {"group:hr-staff": "hr"} and source.place == fake.url
    assert source.remote.filter_cql() == 'type = page and space in ("OPS", "PEOPLE")'
    assert isinstance(open_connector(source), ChangesConnector)
    assert TOKEN not in repr(source.remote.credentials())
    bad = {
        'token_env = "s3cret-api-token"': "must be the *name* of an environment variable",
        'location = "/srv/x"': "is read from its url; remove location",
        'restrictions = { "hr-staff" = "hr" }': 'must be "group:NAME" or "user:ACCOUNT-ID"',
        'spaces = "HR"': "spaces must be a list of space keys",
    }
    for line, message in bad.items():
        text = path.read_text()
        key = line.split(" =")[0]
        text = "\n".join(x for x in text.splitlines() if not x.startswith(f"{key} =")) + f"\n{line}\n"
        (tmp_path / "bad.toml").write_text(text)
        with pytest.raises(SourcesError, match=message.replace("*", r"\*").replace("(", r"\(")):
            read_sources_file(tmp_path / "bad.toml")
    (tmp_path / "md.toml").write_text('[[source]]\nname = "x"\nlocation = "."\nspaces = ["HR"]\n')
    with pytest.raises(SourcesError, match='apply to kind = "confluence"'):
        read_sources_file(tmp_path / "md.toml")


def test_a_missing_secret_names_its_variable_and_stops_the_sync_before_any_request(index, tmp_path, fake, monkeypatch):
    monkeypatch.delenv("TEST_CONFLUENCE_TOKEN")
    name, path = sources_file(tmp_path, fake)
    with pytest.raises(SourcesError, match="TEST_CONFLUENCE_TOKEN not set"):
        runner_for(index, path).sync(name)
    assert fake.requests == []


# -- reading -------------------------------------------------------------------------------------


def test_a_page_reads_the_same_from_rest_as_from_the_xml_export(tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    rest = {d.path: d for d in open_connector(read_sources_file(path).sources[0]).documents()}
    export = {d.path: d for d in ConfluenceXmlExport(XML_EXPORT, source=name, base_url=fake.url).documents()
              if d.path in rest and not d.error}  # the export's 206 has a broken date; a server's never do
    assert set(rest) == {"pages/200", "pages/201", "pages/202", "pages/206", "pages/207", "pages/210"}
    assert set(export) == {"pages/200", "pages/201", "pages/202", "pages/210"}
    for doc_path, doc in export.items():
        assert (rest[doc_path].text, rest[doc_path].title) == (doc.text, doc.title), doc_path
        assert rest[doc_path].metadata["ancestors"] == doc.metadata["ancestors"]
    assert rest["pages/202"].url == f"{fake.url}/spaces/OPS/pages/202/Overview"
    assert rest["pages/210"].access == "hr" and rest["pages/202"].access == "public"
    assert rest["pages/207"].error == "page has no title"


def test_an_ancestor_without_an_id_is_left_out_not_recorded_as_none(tmp_path, monkeypatch):
    fake = FakeConfluence(cloud=False)  # Data Center: the page's own v1 JSON carries its ancestors
    content = fake.content

    def without_first_ancestor_id(page, expand):  # the server's JSON, as a broken proxy might pass it on
        out = content(page, expand)
        if out.get("ancestors"):
            out["ancestors"][0].pop("id")
        return out

    monkeypatch.setattr(fake, "content", without_first_ancestor_id)
    with fake:
        _, path = sources_file(tmp_path, fake)
        docs = {d.path: d for d in open_connector(read_sources_file(path).sources[0]).documents()}
    nested = [d for d in docs.values() if d.metadata.get("ancestor_ids") or d.metadata.get("ancestors")]
    assert nested, "the fixture has pages under other pages"
    for doc in nested:
        assert "None" not in doc.metadata["ancestor_ids"]
        assert len(doc.metadata["ancestors"]) == len(doc.metadata["ancestor_ids"])


def test_first_sync_then_an_edit_costs_what_changed_and_asks_by_lastmodified(index, tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    first = runner.sync(name)
    assert (first.added, first.failed) == (5, 1)  # 207 has no title
    assert "pages/210" in cited(index, name, PARENTAL, ["hr"]) and "pages/210" not in cited(index, name, PARENTAL, ["public"])
    fake.edit("210", body="<p>Parental leave is twenty-six weeks on full pay.</p>")
    seen = len(fake.requests)
    again = runner.sync(name, trigger="schedule")
    assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 1, 0, 0)
    assert again.failed == 1  # 207 is retried: its last read failed
    asked = searches(fake, seen)
    assert len(asked) == 4  # listing, attachments, changed bodies by lastmodified, 207 by id
    assert "lastmodified" in asked[2]
    tables = __import__("indexing.storage.index_tables", fromlist=["ParentSection"])
    with index.session() as s:
        assert "twenty-six" in " ".join(r.text for r in s.exec(
            select(tables.ParentSection).where(tables.ParentSection.doc_id == f"{name}:pages/210")))
    indexed_sources.forget(index, name)


def test_deletes_archives_and_moves_between_spaces(index, tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    del fake.pages["206"]  # deleted (or archived: CQL lists current pages only)
    fake.move("202", "PEOPLE")  # into the HR-scoped space; the version does not change
    report = runner.sync(name)
    assert (report.deleted, report.updated) == (1, 1)
    after = rows(index, name)
    assert "pages/206" not in after and after["pages/202"].access == "hr"
    assert not cited(index, name, "ops role before you start", ["public"]) & {"pages/202"}
    full = runner.sync(name, full=True)
    assert (full.added, full.updated, full.deleted) == (0, 0, 0)
    indexed_sources.forget(index, name)


def test_restrictions_added_mapped_inherited_and_lifted(index, tmp_path, fake):
    name, path = sources_file(tmp_path, fake, 'restrictions = { "group:hr-staff" = "hr-private" }')
    runner = runner_for(index, path)
    runner.sync(name)
    fake.pages["201"].groups = ["platform-leads"]  # Runbooks, and so its child 202, now restricted: no mapping
    fake.pages["210"].groups = ["hr-staff", "managers"]  # mapped: published to hr-private only
    report = runner.sync(name)
    after = rows(index, name)
    for restricted in ("pages/201", "pages/202"):
        assert (after[restricted].status, after[restricted].access, after[restricted].chunk_count) == (
            Status.SKIPPED, RESTRICTED, 0)
        assert "map to no scope" in after[restricted].error
    assert "an ancestor page (group:platform-leads)" in after["pages/202"].error
    assert after["pages/210"].access == "hr-private" and after["pages/210"].status == Status.SUCCESS
    assert "pages/210" not in cited(index, name, PARENTAL, ["hr"]) and "pages/210" in cited(index, name, PARENTAL, ["hr-private"])
    assert report.skipped == 2
    shown = index_status(index)
    assert any(doc_id == f"{name}:pages/202" and "restrictions" in (why or "") for doc_id, why in shown.skipped)
    fake.pages["201"].groups = []  # lifted
    lifted = runner.sync(name)
    assert lifted.added + lifted.updated == 2
    assert {rows(index, name)[p].access for p in ("pages/201", "pages/202")} == {"public"}
    indexed_sources.forget(index, name)


def test_a_user_restriction_that_is_not_mapped_is_never_published(tmp_path, fake):
    fake.pages["210"].users = ["acc-ceo"]
    name, path = sources_file(tmp_path, fake, 'restrictions = { "group:hr-staff" = "hr" }')
    docs = {d.path: d for d in open_connector(read_sources_file(path).sources[0]).documents()}
    assert docs["pages/210"].access == RESTRICTED and docs["pages/210"].text == ""
    assert "user:acc-ceo" in docs["pages/210"].skipped


# -- a real server's limits ------------------------------------------------------------------------


@pytest.mark.parametrize("cloud", [True, False], ids=["cloud-cursor", "datacenter-start-limit"])
def test_listing_follows_next_links_with_cursors_and_start_limit(tmp_path, cloud):
    with FakeConfluence(cloud=cloud) as fake:
        for n in range(450):
            fake.add(str(5000 + n), f"Generated {n}", "OPS", f"<p>page {n}</p>", parent="200")
        name, path = sources_file(tmp_path, fake)
        docs = list(open_connector(read_sources_file(path).sources[0]).documents())
        assert len(docs) == 456
        listing = [r for r in searches(fake) if "body.storage" not in r and "attachment" not in r]
        bodies = [r for r in fake.requests if "body.storage" in r or "body-format" in r]
        if cloud:  # bodies over v2: 250 a request where the server allows it (real Cloud does)
            assert len(listing) == 3 and all("/wiki/api/v2/spaces/" in r for r in bodies)
            assert sum("cursor=" in r for r in bodies) == len(bodies) - 2  # OPS needs several, PEOPLE one
        else:
            assert (len(listing), len(bodies)) == (3, 10)  # 200 a listing, 50 bodies a request
        assert all(("cursor=" in r) == cloud and ("start=" in r) == (not cloud) for r in listing[1:])


def test_429_waits_retry_after_and_5xx_is_retried(tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    fake.queue(429, retry_after="1")
    fake.queue(503, 502)
    started = time.monotonic()
    docs = list(ConfluenceRest(read_sources_file(path).sources[0].remote, source=name, space_access={"*": "public"},
                               settings=ApiSettings(retries=3, backoff=0)).documents())
    assert len(docs) == 6 and time.monotonic() - started >= 1.0
    assert len(searches(fake)) == 3 + 2  # two searches answered (bodies over v2), the first after three faults retried


def test_an_outage_mid_sync_aborts_and_deletes_nothing(index, tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    before = {p: (r.status, r.chunk_count) for p, r in rows(index, name).items()}
    fake.edit("202", body="<p>new text</p>")
    fake.down_after(2)  # listing and attachments answer, then the server goes away
    with pytest.raises(ConfluenceUnavailable, match="cannot reach"):
        runner.sync(name)
    assert {p: (r.status, r.chunk_count) for p, r in rows(index, name).items()} == before
    with index.session() as s:
        last = s.exec(select(SyncRun).where(SyncRun.source == name).order_by(SyncRun.id.desc())).first()
    assert last.result == RunResult.ABORTED.value and "cannot reach" in last.reason
    fake.drop_after = None
    assert runner.sync(name).updated == 1  # the next sync, since the last *complete* one, still sees the edit
    indexed_sources.forget(index, name)


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_refuse_the_sync(index, tmp_path, fake, monkeypatch, status):
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    if status == 401:
        monkeypatch.setenv("TEST_CONFLUENCE_TOKEN", "revoked")
    else:
        fake.forbidden = True
    with pytest.raises(ConfluenceUnavailable, match=f"refused the credentials \\(HTTP {status}\\)") as caught:
        runner_for(index, path).sync(name, full=True)
    assert TOKEN not in str(caught.value) and "revoked" not in str(caught.value)
    assert len(rows(index, name)) == 6
    indexed_sources.forget(index, name)


def test_a_renamed_space_keeps_its_pages_and_a_listing_gone_empty_or_a_key_change_is_refused(index, tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    fake.spaces["OPS"] = "Platform Operations"
    renamed = runner.sync(name)
    assert (renamed.deleted, renamed.added) == (0, 0)
    for page in fake.pages.values():  # the account lost access: the search answers, with nothing
        page.space, page.was = "HIDDEN", page.space
    fake.spaces["HIDDEN"] = "Hidden"
    empty = runner.sync(name)
    assert "found no pages where 6 were indexed" in empty.refused and len(rows(index, name)) == 6
    for page in fake.pages.values():  # back, but OPS's key changed: its 5 pages leave the selection at once
        page.space = "PLAT" if page.was == "OPS" else page.was
    fake.spaces["PLAT"] = "Platform Operations"
    path.write_text(path.read_text().replace("max_delete = 100", "max_delete = 2"))
    refused = runner_for(index, path).sync(name)
    assert "would delete 5 of 6 pages, more than max_delete = 2" in refused.refused and refused.deleted == 0
    assert len(rows(index, name)) == 6
    indexed_sources.forget(index, name)


def test_a_page_that_fails_fails_alone_and_its_previous_version_serves(index, tmp_path, fake):
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    fake.edit("210", body="<div>" * 400 + "deep" + "</div>" * 400)  # over the nesting limit
    fake.edit("201", body="<p>All runbooks, now with an on-call section.</p>")
    report = runner.sync(name)
    assert report.updated == 1 and any("pages/210" in e and "nest" in e for e in report.errors)
    row = rows(index, name)["pages/210"]
    assert row.status == Status.FAILED and row.chunk_count > 0
    assert "pages/210" in cited(index, name, PARENTAL, ["hr"])
    indexed_sources.forget(index, name)


def test_kb_sync_full_and_status_through_the_command_line(index, kb_home, tmp_path, fake, monkeypatch):
    from typer.testing import CliRunner

    from bot.cli import app as kb_cli

    def kb(*args: str):
        env = {"KB_HOME": str(kb_home), "KB_SOURCES": str(path), "KB_WIKI": None, "DATABASE_URL": None,
               "KB_LOG_LEVEL": "WARNING", "SLACK_BOT_TOKEN": None}
        return CliRunner().invoke(kb_cli, list(args), env=env)

    fake.pages["210"].groups = ["payroll"]  # unmapped: not indexed, and said so
    name, path = sources_file(tmp_path, fake)
    first = kb("sync", "--source", name)
    assert first.exit_code == 3, first.output  # 207 FAILED (no title)
    assert "SKIPPED pages/210: read restrictions on it (group:payroll) map to no scope" in first.stderr
    status = kb("status")
    assert f"{name}:pages/210" in status.output and "map to no scope" in status.output
    seen = len(fake.requests)
    full = kb("sync", "--source", name, "--full")
    assert "0 added, 0 updated, 4 unchanged" in full.stderr
    assert any("/api/v2/spaces/" in r and "body-format=storage" in r for r in fake.requests[seen:])  # every body, over v2
    monkeypatch.setenv("TEST_CONFLUENCE_TOKEN", "revoked")
    refused = kb("sync", "--source", name)
    assert refused.exit_code != 0 and "refused the credentials (HTTP 401)" in refused.output
    assert "revoked" not in refused.output and TOKEN not in refused.output
    indexed_sources.forget(index, name)


# -- v2 (Cloud) ----------------------------------------------------------------------------------


def _comparable(docs) -> dict:
    return {d.path: (d.title, d.text, d.url, d.access, d.updated_at, d.skipped, d.error, d.metadata) for d in docs}


def test_cloud_reads_bodies_over_v2_across_cursor_pages_and_a_page_reads_as_over_v1(tmp_path, fake):
    fake.v2_body_cap = 2  # several cursor pages per space
    fake.pages["210"].labels = ["leave", "policy"]
    fake.add("900", "Travel", "PEOPLE", '<p>Book through <ac:link><ri:page ri:content-title="Overview" /></ac:link>.</p>',
             parent="210")
    name, path = sources_file(tmp_path, fake)
    v2 = list(open_connector(read_sources_file(path).sources[0]).documents())
    asked = [r for r in fake.requests if "/api/v2/" in r]
    listings = [r for r in asked if "/pages?" in r]
    assert asked[0].replace("%2C", ",").startswith("/wiki/api/v2/spaces?keys=OPS,PEOPLE")
    assert all(r.startswith("/wiki/api/v2/spaces/") and "body-format=storage" in r and "status=current" in r
               for r in listings)
    assert len(listings) >= 4 and sum("cursor=" in r for r in listings) == len(listings) - 2  # 2 a page here
    assert not [r for r in searches(fake) if "body.storage" in r]  # no v1 body search on a full Cloud read
    with FakeConfluence(cloud=False) as dc:  # the same wiki, read over v1 (Data Center has no v2)
        dc.pages, dc.spaces = fake.pages, fake.spaces
        _, dc_path = sources_file(tmp_path, dc, name=name)
        v1 = list(open_connector(read_sources_file(dc_path).sources[0]).documents())
        assert not [r for r in dc.requests if "/api/v2/" in r]
    ours, theirs = _comparable(v2), _comparable(v1)
    for got in (ours, theirs):  # the base URL differs between the two servers
        for key, value in got.items():
            got[key] = tuple(x.replace(fake.url, "SITE").replace(dc.url, "SITE") if isinstance(x, str) else x
                             for x in value)
    assert ours == theirs
    assert ours["pages/210"][7]["tags"] == ["leave", "policy"] and ours["pages/900"][7]["ancestors"] == ["Overview"]
    assert "(SITE/pages/viewpage.action?pageId=210)" in ours["pages/900"][1]  # a link resolved over v2 as over v1


def test_a_rejected_v2_cursor_or_an_outage_mid_listing_refuses_the_sync_and_deletes_nothing(index, tmp_path, fake):
    fake.v2_body_cap = 2
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    before = {p: (r.status, r.chunk_count) for p, r in rows(index, name).items()}
    assert len(before) == 6
    for page in list(fake.pages.values()):
        fake.edit(page.id)
    original = fake.v2

    def bad_cursor(path: str, query: dict[str, str]):
        if "cursor" in query:
            query = query | {"cursor": "not-a-cursor"}
        return original(path, query)

    fake.v2 = bad_cursor  # type: ignore[method-assign]
    with pytest.raises(ConfluenceUnavailable, match="HTTP 400"):
        runner.sync(name, full=True)
    assert {p: (r.status, r.chunk_count) for p, r in rows(index, name).items()} == before
    fake.v2 = original  # type: ignore[method-assign]
    seen = len(fake.requests)
    fake.down_after(5)  # listing, attachments, space ids, two v2 pages; then the server goes away
    with pytest.raises(ConfluenceUnavailable, match="cannot reach"):
        runner.sync(name, full=True)
    assert any("/api/v2/" in r and "cursor=" in r for r in fake.requests[seen:])
    assert {p: (r.status, r.chunk_count) for p, r in rows(index, name).items()} == before
    fake.drop_after = None
    indexed_sources.forget(index, name)


def test_data_center_and_incremental_cloud_syncs_stay_on_v1(index, tmp_path, fake):
    with FakeConfluence(cloud=False) as dc:
        dc_name, dc_path = sources_file(tmp_path, dc)
        assert runner_for(index, dc_path).sync(dc_name).added == 5
        assert not [r for r in dc.requests if "/api/v2/" in r]
        assert [r for r in searches(dc) if "body.storage" in r]
        indexed_sources.forget(index, dc_name)
    name, path = sources_file(tmp_path, fake)
    runner = runner_for(index, path)
    runner.sync(name)
    fake.edit("202", body="<p>new text</p>")
    seen = len(fake.requests)
    assert runner.sync(name, trigger="schedule").updated == 1
    assert not [r for r in fake.requests[seen:] if "/api/v2/" in r]  # v2 has no lastmodified: CQL
    assert any("lastmodified" in r for r in searches(fake, seen))
    indexed_sources.forget(index, name)
