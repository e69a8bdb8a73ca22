"""Issue 45, the Confluence REST items: a hostile (or just broken) Confluence cannot steal the
token, loop a sync for ever, fill memory, drip a request out for an hour, publish a restricted page,
park a sync on a 429, smuggle a path or a host through an id, and sizes read in one unit.

Everything goes through the real connector (sources file → `open_connector` → `ConfluenceRest` →
`ConfluenceApi` → requests) against the local fake Confluence over HTTP on 127.0.0.1
(tests/support/confluence_server.py, its hostile knobs: `tamper`, `redirect_to`, `drip`,
`attach(…, endless=)`); a second fake on another port stands for "elsewhere" and must never be
asked anything. Waits that the unfixed code would make (an hour's Retry-After, a loop, a drip)
run in a thread with a bound, so such a test fails instead of hanging."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from connectors.attachments import FileLimits
from connectors.confluence.api import ApiSettings, ConfluenceUnavailable
from connectors.confluence.rest import RESTRICTED, ConfluenceRest
from connectors.sizes import MiB, size_text
from indexing.ingest import indexed_sources
from sources import read_sources_file
from tests.support.confluence_server import EMAIL, TOKEN, FakeConfluence

PDF = "application/pdf"


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("TEST_CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("TEST_CONFLUENCE_TOKEN", TOKEN)


@pytest.fixture
def elsewhere():
    """Another server (another port): anything it is asked is a leak."""
    with FakeConfluence() as server:
        yield server


def remote(tmp_path: Path, fake: FakeConfluence, extra: str = ""):
    auth = 'email_env = "TEST_CONFLUENCE_EMAIL"\n' if fake.cloud else ""
    path = tmp_path / "conf.toml"
    path.write_text(f'''[[source]]
name = "conf"
kind = "confluence"
url = "{fake.url}"
spaces = ["OPS", "PEOPLE"]
{auth}token_env = "TEST_CONFLUENCE_TOKEN"
access = {{ PEOPLE = "hr", "*" = "public" }}
retries = 2
{extra}
''')
    return read_sources_file(path).sources[0]


def read_all(tmp_path: Path, fake: FakeConfluence, settings: ApiSettings | None = None,
             limits: FileLimits | None = None) -> dict:
    source = remote(tmp_path, fake)
    connector = ConfluenceRest(source.remote, source=source.name, space_access={"PEOPLE": "hr", "*": "public"},
                               settings=settings or ApiSettings(retries=2, backoff=0), limits=limits)
    return {d.path: d for d in connector.documents()}


def within(seconds: float, work):
    """`work()`'s result, or its exception raised here; fails if it is still running after `seconds`."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def listing(path: str) -> bool:
    """A request of the pages' listing (not the bodies', not the attachments')."""
    query = unquote(path)
    return "/content/search" in path and "body.storage" not in query and "type = attachment" not in query


# -- 1. credentials go to the configured site only ------------------------------------------------


@pytest.mark.parametrize("where", ["port", "host", "scheme"])
@pytest.mark.parametrize("cloud", [True, False], ids=["cloud-basic", "datacenter-bearer"])
def test_an_absolute_next_off_the_site_is_refused_and_never_followed(tmp_path, elsewhere, cloud, where):
    with FakeConfluence(cloud=cloud) as fake:
        port = fake.server.server_address[1]
        target = {"port": f"http://127.0.0.1:{elsewhere.server.server_address[1]}",
                  "host": f"http://localhost:{port}", "scheme": f"https://127.0.0.1:{port}"}[where]

        def next_elsewhere(path, payload):
            if listing(path) and "_links" in payload:
                payload["_links"]["next"] = f"{target}{fake.context}/rest/api/content/search?start=200"
            return payload

        fake.tamper = next_elsewhere
        with pytest.raises(ConfluenceUnavailable, match="refused to follow a link the server gave .*not to the "
                                                        "configured site") as caught:
            read_all(tmp_path, fake)
        assert f"http://127.0.0.1:{port}" in str(caught.value)
        assert elsewhere.requests == [] and len(fake.requests) == 1  # "localhost" is this server: not asked again


def test_data_centers_own_links_base_is_not_trusted_relative_links_stay_on_the_configured_site(tmp_path, elsewhere):
    with FakeConfluence(cloud=False) as fake:
        for n in range(250):  # two listing pages: a relative _links.next to follow
            fake.add(str(5000 + n), f"Generated {n}", "OPS", f"<p>page {n}</p>", parent="200")

        def internal_base(path, payload):  # what a Data Center behind a proxy writes: its own configured base
            if isinstance(payload.get("_links"), dict):
                payload["_links"]["base"] = elsewhere.url
            return payload

        fake.tamper = internal_base
        docs = read_all(tmp_path, fake)
    assert len(docs) == 256 and any("start=200" in r for r in fake.requests)
    assert elsewhere.requests == []


def test_an_attachment_download_link_off_the_site_fails_that_file_alone_without_the_token(tmp_path, elsewhere):
    from tests.support import office_files

    with FakeConfluence(cloud=False) as fake:
        fake.attach("9001", "210", "benefits.pdf", office_files.pdf([["Dental cover", "Acme pays 90 percent."]]), PDF)
        elsewhere.attach("9001", "210", "benefits.pdf", office_files.pdf([["Stolen", "text"]]), PDF)

        def download_elsewhere(path, payload):
            for item in payload.get("results") or []:
                if item.get("type") == "attachment":
                    item["_links"]["download"] = elsewhere.url + item["_links"]["download"]
            return payload

        fake.tamper = download_elsewhere
        docs = read_all(tmp_path, fake)
    attachment = docs["pages/210/attachments/9001"]
    assert attachment.error.startswith("attachment download link refused: it points to http://127.0.0.1:")
    assert "not to the configured site" in attachment.error and attachment.text == ""
    assert docs["pages/210"].error is None and docs["pages/210"].text
    assert elsewhere.requests == []


@pytest.mark.parametrize("cloud", [True, False], ids=["cloud", "datacenter"])
def test_a_redirect_off_the_site_is_refused_and_its_answer_not_used(tmp_path, elsewhere, cloud):
    with FakeConfluence(cloud=cloud) as fake:
        root = "http://127.0.0.1:{port}{{path}}"  # the same request, on another server
        fake.redirect_to(root.format(port=elsewhere.server.server_address[1]))
        with pytest.raises(ConfluenceUnavailable, match="redirected elsewhere, refused: it points to"):
            read_all(tmp_path, fake)
        assert elsewhere.requests == []
        seen = len(fake.requests)
        fake.redirect_to(root.format(port=fake.server.server_address[1]))
        docs = read_all(tmp_path, fake)  # a redirect on the site is followed, with the credentials
        assert len(docs) == 6 and fake.requests[seen + 1] == fake.requests[seen]
        assert fake.authorizations[seen + 1] is not None


# -- 4. a sync is bounded: loops, pages, requests, bytes, time --------------------------------------


@pytest.mark.parametrize("loop", ["itself", "a cycle of two"])
def test_a_next_link_that_loops_ends_with_an_error(tmp_path, loop):
    with FakeConfluence(cloud=False) as fake:
        first = {}

        def looping(path, payload):
            if listing(path) and "_links" in payload:
                first.setdefault("path", path)
                if loop == "itself" or "start=" in path:
                    payload["_links"]["next"] = first["path"]  # back to the first page
                else:
                    payload["_links"]["next"] = first["path"] + "&start=1"
            return payload

        fake.tamper = looping
        with pytest.raises(ConfluenceUnavailable, match="_links.next points back to a page of this listing already "
                                                        "read, after [12] \\(a loop\\)"):
            within(20, lambda: read_all(tmp_path, fake))
        assert len([r for r in fake.requests if listing(r)]) == (1 if loop == "itself" else 2)


@pytest.mark.parametrize("cap, message", [
    ({"max_listing_pages": 2}, "more than 2 pages of results"),
    ({"max_results": 399}, "/rest/api/content/search: more than 399 results"),
    ({"max_requests": 2}, "this sync has made 2 requests, its cap"),
    ({"max_bytes": 4096}, "this sync has read 4 KiB, its cap"),
    ({"max_seconds": 0.0}, "this sync has run 0 s, its cap"),
])
def test_every_sync_is_bounded_in_pages_requests_bytes_and_time(tmp_path, cap, message):
    with FakeConfluence(cloud=False) as fake:
        for n in range(450):
            fake.add(str(5000 + n), f"Generated {n}", "OPS", f"<p>page {n}</p>", parent="200")
        with pytest.raises(ConfluenceUnavailable, match=message):
            read_all(tmp_path, fake, ApiSettings(retries=0, **cap))
        assert len(fake.requests) <= 3


# -- 5. sizes are capped while reading ---------------------------------------------------------------


def test_a_download_stops_at_the_cap_while_reading_whatever_its_listed_file_size(tmp_path):
    with FakeConfluence(cloud=False) as fake:
        fake.attach("9001", "210", "big.pdf", b"%PDF-1.4 small", PDF, endless=200 * MiB)  # fileSize: 14 bytes
        docs = read_all(tmp_path, fake, limits=FileLimits(max_bytes=1 * MiB))
    attachment = docs["pages/210/attachments/9001"]
    assert attachment.error.endswith("the file is over the 1 MiB limit; not read")
    assert fake.bytes_sent < 32 * MiB  # what the socket buffers took, not the 200 MiB it offered
    assert docs["pages/210"].text  # the page itself is read


def test_a_json_answer_over_its_cap_is_refused(tmp_path):
    with FakeConfluence(cloud=False) as fake:
        def padded(path, payload):
            payload["padding"] = "x" * (3 * MiB)
            return payload

        fake.tamper = padded
        with pytest.raises(ConfluenceUnavailable, match=r"/rest/api/content/search: the answer is over the 2 MiB "
                                                        r"limit \(it says 3 MiB\); not read"):
            read_all(tmp_path, fake, ApiSettings(retries=0, max_json_bytes=2 * MiB))


def test_a_compressed_answer_is_capped_on_what_it_inflates_to(tmp_path):
    with FakeConfluence(cloud=False) as fake:
        def padded(path, payload):
            payload["padding"] = " " * (64 * MiB)  # ~64 KiB gzipped: its Content-Length is under the cap
            return payload

        fake.tamper, fake.gzip = padded, True
        with pytest.raises(ConfluenceUnavailable, match=r"/rest/api/content/search: the answer is over the 4 MiB "
                                                        r"limit; not read"):
            read_all(tmp_path, fake, ApiSettings(retries=0, max_json_bytes=4 * MiB))


# -- 6. timeout is a deadline for the whole request ----------------------------------------------


@pytest.mark.parametrize("from_status_line", [False, True], ids=["body", "status-and-headers"])
def test_a_drip_fed_answer_fails_at_the_timeout_not_at_its_end(tmp_path, from_status_line):
    with FakeConfluence(cloud=False) as fake:
        fake.drip = 2.0  # one byte every two seconds: each read is quick, the answer takes an hour
        fake.drip_headers = from_status_line
        started = time.monotonic()
        with pytest.raises(ConfluenceUnavailable, match=r"did not answer in full within 5 s"):
            within(30, lambda: read_all(tmp_path, fake, ApiSettings(timeout=5, retries=2, backoff=0)))
        took = time.monotonic() - started
        assert 4.5 <= took < 9, took
        assert len(fake.requests) == 1  # a request that ran out of time is not retried


# -- 7. restrictions not given in full mean restricted --------------------------------------------


@pytest.mark.parametrize("shape, why", [
    ({"results": [], "start": 0, "limit": 200, "size": 3}, "incomplete (0 of 3 given)"),
    ({"results": [], "start": 0, "limit": 0, "size": 0, "_links": {"next": "/rest/x?start=0"}}, "incomplete"),
    ({"results": [], "size": "3"}, "unknown shape"),
])
@pytest.mark.parametrize("on", ["the page", "its parent"])
def test_read_restrictions_that_are_not_all_there_mean_restricted(tmp_path, shape, why, on):
    fake = FakeConfluence(cloud=False)
    restricted = "210" if on == "the page" else "201"  # Runbooks: 202 is under it

    def truncated(path, payload):
        for item in payload.get("results") or [payload]:
            if item.get("id") == restricted and "restrictions" in item:
                item["restrictions"]["read"]["restrictions"]["group"] = dict(shape)
        return payload

    fake.tamper = truncated
    with fake:
        docs = read_all(tmp_path, fake)
    hit = [p for p, d in docs.items() if d.access == RESTRICTED]
    assert hit == (["pages/210"] if on == "the page" else ["pages/201", "pages/202"])
    for doc in (docs[p] for p in hit):
        assert doc.text == "" and why in doc.skipped and "not indexed" in doc.skipped
    assert docs["pages/206"].access == "public"


# -- 9. one retry layer, our cap on Retry-After ---------------------------------------------------


def test_a_429_with_an_hours_retry_after_waits_our_cap_and_retries_exactly_retries_times(tmp_path):
    with FakeConfluence(cloud=True) as fake:
        fake.queue(*[429] * 10, retry_after="3600")
        started = time.monotonic()
        with pytest.raises(ConfluenceUnavailable, match="answered HTTP 429 after retries"):
            within(30, lambda: read_all(tmp_path, fake, ApiSettings(retries=3, backoff=0, max_retry_after=0.3)))
        assert 0.9 <= time.monotonic() - started < 5
        assert len(fake.requests) == 3 + 1


# -- 15. hostile ids -------------------------------------------------------------------------------


@pytest.mark.parametrize("cloud", [True, False], ids=["cloud-v2-bodies", "datacenter"])
def test_hostile_ids_make_no_path_no_request_and_no_cql_of_their_own(tmp_path, cloud):
    fake = FakeConfluence(cloud=cloud)

    def hostile(path, payload):
        if listing(path):
            for item in payload["results"]:
                if item["id"] == "206":
                    item["id"] = "../../../etc/passwd"
                if item["id"] == "202":
                    item["ancestors"][0]["id"] = "../../admin"
        return payload

    fake.tamper = hostile
    with fake:
        docs = read_all(tmp_path, fake)
    assert all(re.fullmatch(r"pages/\d+(/attachments/(att)?\d+)?", p) for p in docs), sorted(docs)
    assert "pages/206" not in docs  # its listing entry had no page id: left out
    assert docs["pages/202"].access == RESTRICTED and "'../../admin' is not a page id" in docs["pages/202"].skipped
    assert not [r for r in fake.requests if "admin" in r or "passwd" in unquote(r) or ".." in r]


def test_a_webui_that_names_another_host_does_not_become_the_citation(tmp_path):
    fake = FakeConfluence(cloud=False)  # Data Center: the base has no path, so "@host" would be the host

    def webui(path, payload):
        for item in payload.get("results") or []:
            item.get("_links", {})["webui"] = "@127.0.0.2:9/spaces/OPS/pages/x"
        return payload

    fake.tamper = webui
    with fake:
        docs = read_all(tmp_path, fake)
        port = fake.server.server_address[1]
    for doc in docs.values():
        parts = urlsplit(doc.url)
        assert (parts.hostname, parts.port, parts.username) == ("127.0.0.1", port, None), doc.url
    assert docs["pages/202"].url.endswith("/pages/viewpage.action?pageId=202")


# -- 17. one unit for sizes; an empty listing's refusal says what it means for a site -----------------


def test_sizes_read_in_the_unit_the_caps_are_written_in():
    assert (size_text(50 * MiB), size_text(200 * MiB), size_text(52_428_800 + 400_000), size_text(4096)) == (
        "50 MiB", "200 MiB", "50.4 MiB", "4 KiB")


def test_a_file_size_refusal_and_the_caps_say_the_same_number(tmp_path):
    with FakeConfluence(cloud=False) as fake:
        fake.attach("9001", "210", "big.pdf", b"x" * (3 * MiB), PDF)
        docs = read_all(tmp_path, fake, limits=FileLimits(max_bytes=2 * MiB))
    assert docs["pages/210/attachments/9001"].error == "file is 3 MiB, over the 2 MiB limit"


def test_an_empty_listing_says_the_account_may_have_lost_access_not_a_folder(index, tmp_path):
    from indexing.ingest.runner import SyncRunner

    with FakeConfluence(cloud=False) as fake:
        source = remote(tmp_path, fake, "max_delete = 100")
        runner = SyncRunner(index, [source])
        runner.sync(source.name)
        for page in fake.pages.values():  # the account lost access: the search answers, with nothing
            page.space = "HIDDEN"
        fake.spaces["HIDDEN"] = "Hidden"
        for full in (False, True):
            refused = runner.sync(source.name, full=full).refused
            assert refused.startswith("found no pages where 6 were indexed (has Docent's account lost access")
            assert "folder" not in refused
    indexed_sources.forget(index, source.name)


# -- through `kb sync`: one clear line, no secret, nothing synced from elsewhere ---------------------


def test_kb_sync_refuses_a_next_link_elsewhere_and_a_loop_with_one_line_each(index, kb_home, tmp_path, elsewhere):
    from typer.testing import CliRunner

    from bot.cli import app as kb_cli

    with FakeConfluence(cloud=False) as fake:
        source = remote(tmp_path, fake)
        env = {"KB_HOME": str(kb_home), "KB_SOURCES": str(tmp_path / "conf.toml"), "KB_WIKI": None,
               "DATABASE_URL": None, "KB_LOG_LEVEL": "WARNING", "SLACK_BOT_TOKEN": None}
        for hostile, reason in [(elsewhere.url + "/rest/api/content/search?start=200", "refused to follow a link"),
                                ("{first}", "points back to a page of this listing already read")]:
            first: dict = {}

            def tampered(path, payload, hostile=hostile, first=first):
                if listing(path) and "_links" in payload:
                    payload["_links"]["next"] = hostile.format(first=first.setdefault("path", path))
                return payload

            fake.tamper = tampered
            result = within(60, lambda: CliRunner().invoke(kb_cli, ["sync", "--source", source.name], env=env))
            assert result.exit_code != 0 and reason in result.output, result.output
            assert result.output.startswith("error: source conf: ") and result.output.count("\n") == 1
            assert TOKEN not in result.output
        assert elsewhere.requests == [] and len([r for r in fake.requests if listing(r)]) == 2
    indexed_sources.forget(index, source.name)
