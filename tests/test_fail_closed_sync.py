"""Syncs fail closed: what cannot be read is never published under a guessed scope, and never deleted.

Tried as a user (or a broken mount) makes it happen, through the real `kb` command line — in this
process, or as a subprocess where the process itself matters — on the test index:

1. A Confluence export whose space cannot be determined (index.html missing, not UTF-8, over the
   tag cap, a layout without the Space Details table; an XML page whose space is missing), under
   a source whose access is per space: its pages FAIL with the reason, nothing new is indexed,
   and the versions serving keep their scope — never the "*" one.
2. The deletion guard counts over a rolling hour, across processes: syncs deleting a few pages
   each (the watcher's, then a `kb sync` in another process) cannot together delete more than
   `max_delete`; past it they are refused with the reason, shown by `kb status`, until
   `--allow-deletes`.
3. An unreadable folder fails the pages under it, and deletes none of them. Tests run as root in
   CI, where `chmod 000` stops nothing; so the `kb sync` subprocess runs as root *without* the
   capabilities that bypass file permissions (`setpriv` drops CAP_DAC_OVERRIDE and
   CAP_DAC_READ_SEARCH from its bounding and inheritable sets), and gets the real EACCES a
   non-root Docent gets. Where that cannot be done, those tests skip saying why; a folder replaced
   by a symlink loop (ELOOP, a real error of the filesystem for any user) covers the same code in
   process either way.
4. Overlapping sources with different access stop Docent at start (unless `allow_overlap`), and
   `kb sync PATH` inside (or around) a configured source's folder is refused, naming it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from bot.cli import app as kb_cli
from sources import DeletionLimit, SourceConfig, SourcesError, open_connector, read_sources_file
from connectors.document import UNKNOWN_SCOPE, SourceDocument
from indexing.ingest import indexed_sources
from indexing.storage.index_tables import DocumentRecord, Status, SyncRun
from indexing.search.retrieval import retrieve
from indexing.ingest.runner import SyncRunner
from indexing.ingest.sync_records import recent_deletions

from tests.support.db_proxy import DbProxy, unix_socket_of

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HTML_EXPORT = FIXTURES / "confluence" / "html-export"
XML_EXPORT = FIXTURES / "confluence" / "xml-export"
HR_CHANNEL, GENERAL_CHANNEL = "C0HRTEAM1", "C0GENERAL1"
DEPLOY_QUESTION = "are deploys frozen on fridays?"  # answered by the HB space's pages/1006
DROP_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search", "--"]


def unique() -> str:
    return uuid.uuid4().hex[:6]


def kb(kb_home: Path, *args: str, sources: Path | None = None):
    """The real `kb` command line, in this process (one loaded model for the run)."""
    env = {"KB_HOME": str(kb_home), "KB_SOURCES": str(sources) if sources else None, "KB_WIKI": None,
           "DATABASE_URL": None, "KB_LOG_LEVEL": "WARNING", "SLACK_BOT_TOKEN": None}
    return CliRunner().invoke(kb_cli, list(args), env=env)


def kb_process(index, kb_home: Path, *args: str, sources: Path, prefix: list[str] = (),
               database_url: str | None = None) -> subprocess.CompletedProcess:
    """`python -m bot.cli ARGS` in a process of its own (this checkout's code), on the test index's
    server (or `database_url`); `prefix` runs it under another program (setpriv)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KB_WIKI", "SLACK_BOT_TOKEN")}
    env.update(KB_HOME=str(kb_home), KB_SOURCES=str(sources), KB_LOG_LEVEL="WARNING",
               DATABASE_URL=database_url or index.url.render_as_string(hide_password=False), PYTHONPATH=str(REPO))
    return subprocess.run([*prefix, sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)


def pages(index, source: str) -> dict[str, DocumentRecord]:
    with index.session() as s:
        return {r.path: r for r in s.execute(select(DocumentRecord).where(DocumentRecord.source == source)).scalars()}


def runs(index, source: str) -> list[SyncRun]:
    with index.session() as s:
        return list(s.execute(select(SyncRun).where(SyncRun.source == source).order_by(SyncRun.id)).scalars())


def cited(result, source: str) -> list[str]:
    """The paths of `source`'s pages an answer (`kb ask --json`) cites or lists."""
    assert result.exit_code == 0, result.output
    return [s["doc_id"].split(":", 1)[1] for s in json.loads(result.stdout)["sources"]
            if s["doc_id"].startswith(f"{source}:")]


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


# -- 1. a Confluence export whose space cannot be determined ---------------------------------------


def per_space_sources(tmp_path: Path, export: Path, kind: str = "confluence-html") -> tuple[str, str, Path]:
    """A sources file reading `export` with access per space: HB restricted, the rest public."""
    name, scope = f"conf-{unique()}", f"hr-{unique()}"
    sources = tmp_path / f"{name}.toml"
    sources.write_text(f'[[source]]\nname = "{name}"\nkind = "{kind}"\nlocation = "{export}"\n'
                       f'access = {{ HB = "{scope}", "*" = "public" }}\n\n'
                       f'[scopes.{scope}]\nchannels = ["{HR_CHANNEL}"]\n')
    return name, scope, sources


def remove_index(export: Path) -> None:
    (export / "index.html").unlink()


def index_not_utf8(export: Path) -> None:
    path = export / "index.html"
    path.write_bytes(path.read_bytes().replace(b"Space Details", b"Space D\xe9tails"))


def index_over_the_tag_cap(export: Path) -> None:  # a space of ~50k pages: its page tree is huge
    path = export / "index.html"
    path.write_text(path.read_text().replace("</ul>", "<i></i>" * 200_001 + "</ul>", 1))


def index_in_another_layout(export: Path) -> None:  # a new Confluence version: no Space Details table
    path = export / "index.html"
    markup = path.read_text()
    path.write_text(markup[: markup.index("<table")] + markup[markup.index("</table>") + len("</table>"):])


def index_without_a_key_row(export: Path) -> None:  # localised labels, and no Key row: the name comes first
    path = export / "index.html"
    markup = re.sub(r"<tr>\s*<th[^>]*>Key</th>.*?</tr>", "", path.read_text(), count=1, flags=re.S)
    path.write_text(markup.replace(">Name<", ">Nom<").replace(">Description<", ">Description de l'espace<"))


@pytest.mark.parametrize("break_index", [remove_index, index_not_utf8, index_over_the_tag_cap, index_in_another_layout,
                                         index_without_a_key_row])
def test_an_export_whose_space_cannot_be_read_publishes_nothing_and_keeps_each_scope(index, kb_home, tmp_path,
                                                                                      break_index):
    export = tmp_path / f"export-{unique()}"
    shutil.copytree(HTML_EXPORT, export)
    name, scope, sources = per_space_sources(tmp_path, export)
    first = kb(kb_home, "sync", sources=sources)
    assert first.exit_code == 3, first.output  # the fixture's Broken_1007.html fails
    served = {path: r for path, r in pages(index, name).items() if r.status == Status.SUCCESS}
    assert len(served) == 7 and {r.access for r in served.values()} == {scope}
    assert "pages/1006" in cited(kb(kb_home, "ask", "--json", "--as-channel", HR_CHANNEL, DEPLOY_QUESTION,
                                    sources=sources), name)

    break_index(export)
    again = kb(kb_home, "sync", sources=sources)

    assert again.exit_code == 3, again.output
    assert "0 added, 0 updated" in again.stderr and "8 failed" in again.stderr
    after = pages(index, name)
    for path, before in served.items():
        row = after[path]
        assert row.status == Status.FAILED and row.error.startswith("space unknown: "), row.error
        assert (row.access, row.chunk_count, row.content_hash) == (scope, before.chunk_count, before.content_hash)
    assert not cited(kb(kb_home, "ask", "--json", "--as-channel", GENERAL_CHANNEL, DEPLOY_QUESTION,
                        sources=sources), name)
    assert "pages/1006" in cited(kb(kb_home, "ask", "--json", "--as-channel", HR_CHANNEL, DEPLOY_QUESTION,
                                    sources=sources), name)  # the version indexed before serves where it did
    assert not [h for h in retrieve(index, "deploy freeze friday Quokka", scopes=["public"]).hits if h.source == name]
    indexed_sources.forget(index, name)


def test_a_first_sync_of_an_export_without_index_html_indexes_nothing(index, sample_synced, kb_home, tmp_path):
    export = tmp_path / f"export-{unique()}"
    shutil.copytree(HTML_EXPORT, export)
    remove_index(export)
    name, _, sources = per_space_sources(tmp_path, export)
    result = kb(kb_home, "sync", sources=sources)
    assert result.exit_code == 3 and "0 added" in result.stderr and "8 failed" in result.stderr
    assert "space unknown: the export has no index.html, the only file that names its space key" in result.stderr
    rows = pages(index, name)
    assert len(rows) == 8 and {(r.status, r.chunk_count, r.access) for r in rows.values()} == {
        (Status.FAILED, 0, UNKNOWN_SCOPE)}
    assert not cited(kb(kb_home, "ask", "--json", "--as-channel", GENERAL_CHANNEL, DEPLOY_QUESTION,
                        sources=sources), name)
    indexed_sources.forget(index, name)


def test_an_xml_page_whose_space_is_missing_fails_instead_of_taking_the_default_scope(index, tmp_path):
    export = tmp_path / f"xml-{unique()}"
    shutil.copytree(XML_EXPORT, export)
    entities = export / "entities.xml"
    entities.write_text(re.sub(r'<object class="Space" package="[^"]*">.*?</object>', "", entities.read_text(),
                               flags=re.S))
    name = f"xml-{unique()}"
    source = SourceConfig(name=name, location=export, kind="confluence-xml", access={"PEOPLE": "hr", "*": "public"})
    docs = list(open_connector(source).documents())
    assert docs and all(isinstance(d, SourceDocument) for d in docs)
    assert {d.access for d in docs} == {UNKNOWN_SCOPE}
    assert all(re.match(r"space unknown: the page's space \(id \d+\) is not in entities.xml", d.error) for d in docs)
    report = SyncRunner(index, [source]).sync(name)
    assert (report.added, report.failed) == (0, len(docs))
    assert not [r for r in pages(index, name).values() if r.chunk_count or r.access == "public"]
    indexed_sources.forget(index, name)


def test_a_localised_index_still_gives_its_key_by_position(tmp_path):
    export = tmp_path / "export"
    shutil.copytree(HTML_EXPORT, export)
    index_html = export / "index.html"
    index_html.write_text(index_html.read_text().replace(">Key<", ">Schlüssel<").replace(">Name<", ">Name des Bereichs<"))
    source = SourceConfig(name="c", location=export, kind="confluence-html", access={"HB": "hr", "*": "public"})
    assert {(d.metadata["space"], d.access) for d in open_connector(source).documents()} == {("HB", "hr")}
    shutil.copy(HTML_EXPORT / "index.html", index_html)
    index_without_a_key_row(export)  # now the first row is the space's name: no key
    assert {d.access for d in open_connector(source).documents()} == {UNKNOWN_SCOPE}


def test_an_unknown_space_key_never_maps_to_the_default_but_other_spaces_do():
    source = SourceConfig(name="c", location=XML_EXPORT, kind="confluence-xml", access={"HB": "hr", "*": "public"})
    connector = open_connector(source)
    assert connector.scope_of("hb") == "hr" and connector.scope_of("ENG") == "public"
    assert connector.scope_of("") == connector.scope_of(None) == connector.scope_of("  ") == UNKNOWN_SCOPE


# -- 2. the deletion guard over a rolling hour -------------------------------------------------------


def write_pages(folder: Path, count: int, word: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"page-{n:02d}.md").write_text(f"# {word.title()} page {n}\n\nThe {word} handbook, part {n}.\n")


def guarded_source(tmp_path: Path, count: int, body: str = "") -> tuple[str, Path, Path]:
    name = f"window-{unique()}"
    folder = tmp_path / name
    write_pages(folder, count, "cormorant")
    sources = tmp_path / f"{name}.toml"
    sources.write_text(f'[[source]]\nname = "{name}"\nlocation = "{folder}"\n{body}')
    return name, folder, sources


def delete(folder: Path, numbers) -> None:
    for n in numbers:
        (folder / f"page-{n:02d}.md").unlink()


def test_small_syncs_cannot_together_delete_more_than_max_delete_in_an_hour(index, kb_home, tmp_path):
    name, folder, sources = guarded_source(tmp_path, 12, "max_delete = 5\n")
    assert kb(kb_home, "sync", sources=sources).exit_code == 0
    for numbers in ((0, 1), (2, 3)):  # two syncs of two deletions each: four in the hour, allowed
        delete(folder, numbers)
        result = kb(kb_home, "sync", sources=sources)
        assert result.exit_code == 0 and "2 deleted" in result.stderr, result.output
    assert recent_deletions(index, name) == 4 and len(pages(index, name)) == 8

    delete(folder, (4, 5))  # two more: six in the hour, over 5
    refused = kb(kb_home, "sync", sources=sources)
    assert refused.exit_code == 4 and len(error_lines(refused.stderr)) == 1, refused.output
    reason = "would delete 2 pages after 4 deleted by syncs of the last hour: 6 of 12 pages, more than max_delete = 5 an hour"
    assert reason in error_lines(refused.stderr)[0] and "--allow-deletes" in error_lines(refused.stderr)[0]
    assert len(pages(index, name)) == 8 and runs(index, name)[-1].result == "refused"
    assert reason in runs(index, name)[-1].reason and f"[REFUSED: {reason}" in kb(kb_home, "status", sources=sources).stdout

    allowed = kb(kb_home, "sync", "--allow-deletes", sources=sources)
    assert allowed.exit_code == 0 and "2 deleted" in allowed.stderr and len(pages(index, name)) == 6
    assert recent_deletions(index, name) == 4  # what --allow-deletes let through is not counted
    delete(folder, (6,))
    assert kb(kb_home, "sync", sources=sources).exit_code == 0 and len(pages(index, name)) == 5  # 5: at the limit
    delete(folder, (7,))
    assert kb(kb_home, "sync", sources=sources).exit_code == 4 and len(pages(index, name)) == 5
    indexed_sources.forget(index, name)


def test_watcher_syncs_and_a_kb_sync_in_another_process_share_the_window(index, kb_home, tmp_path):
    """The issue's slow `rm -rf`: 9 pages at a time stays under the default guard (10 pages) per
    sync; the window stops the second batch whichever process syncs it."""
    name, folder, sources = guarded_source(tmp_path, 24)
    source = SourceConfig(name=name, location=folder, kind="markdown")
    runner = SyncRunner(index, [source])
    assert runner.sync(name).added == 24
    delete(folder, range(9))
    first = runner.sync_paths(name, [f"page-{n:02d}.md" for n in range(9)], trigger="watcher")
    assert first.deleted == 9 and not first.refused

    delete(folder, range(9, 18))
    second = runner.sync_paths(name, [f"page-{n:02d}.md" for n in range(9, 18)], trigger="watcher")
    assert second.refused and second.deleted == 0 and "after 9 deleted by syncs of the last hour: 18 of 24" in second.refused
    elsewhere = kb_process(index, kb_home, "sync", sources=sources)  # `kb sync` in another shell
    assert elsewhere.returncode == 4, elsewhere.stderr
    assert "after 9 deleted by syncs of the last hour: 18 of 24 pages, more than 50% of the source in an hour" in \
        error_lines(elsewhere.stderr)[0]
    assert len(pages(index, name)) == 15 and [r.trigger for r in runs(index, name)][-1] == "cli"
    assert runner.sync(name, allow_deletes=True).deleted == 9 and len(pages(index, name)) == 6
    indexed_sources.forget(index, name)


def test_the_window_adds_recent_deletions_to_the_limit():
    limit, pages_limit = DeletionLimit(), DeletionLimit(share=None, pages=5)
    assert limit.refusal(deleting=9, indexed=24, found=None) is None
    assert "18 of 24 pages" in limit.refusal(deleting=9, indexed=15, found=None, recent=9)
    assert limit.refusal(deleting=3, indexed=15, found=None, recent=6) is None  # 9 in the hour: under the floor
    assert pages_limit.refusal(deleting=1, indexed=8, found=8, recent=4) is None
    assert "more than max_delete = 5 an hour" in pages_limit.refusal(deleting=2, indexed=8, found=6, recent=4)


# -- 3. an unreadable folder or file --------------------------------------------------------------------


def handbook_with_hr(tmp_path: Path) -> tuple[str, Path, Path]:
    """A source of 10 pages at the top and 3 under hr/ (and one in hr/2024/), in a sources file."""
    name, folder, sources = guarded_source(tmp_path, 10)
    write_pages(folder / "hr", 3, "salary")
    write_pages(folder / "hr" / "2024", 1, "bonus")
    return name, folder, sources


def can_drop_dac() -> str | None:
    """Why the permission tests cannot run here (None: they can)."""
    if os.geteuid() != 0:
        return None  # not root: chmod 000 stops reads as it is
    if shutil.which("setpriv") is None:
        return "running as root, and setpriv (util-linux) is not installed to drop CAP_DAC_OVERRIDE"
    probe = subprocess.run([*DROP_DAC, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"running as root, and setpriv cannot drop CAP_DAC_OVERRIDE here: {probe.stderr.strip()}"
    return None


@pytest.fixture
def as_user(index, kb_home):
    """`kb ARGS` in its own process with file permissions enforced (as root: without the DAC
    capabilities). The embedded server's socket lies in a folder only its own OS user may enter,
    so that process reaches it through a loopback TCP proxy (tests/support/db_proxy.py)."""
    why = can_drop_dac()
    if why:
        pytest.skip(why)
    proxy = DbProxy(unix_socket_of(index.url), database=index.url.database or "postgres",
                    user=index.url.username or "postgres").start()
    prefix = DROP_DAC if os.geteuid() == 0 else []
    yield lambda *args, sources: kb_process(index, kb_home, *args, sources=sources, prefix=prefix,
                                            database_url=proxy.url)
    proxy.stop()


def test_a_folder_denied_to_docent_fails_its_pages_and_deletes_none(index, kb_home, tmp_path, as_user):
    name, folder, sources = handbook_with_hr(tmp_path)
    assert kb(kb_home, "sync", sources=sources).exit_code == 0 and len(pages(index, name)) == 14
    os.chmod(folder / "page-03.md", 0)  # and one page denied too
    os.chmod(folder / "hr", 0)
    try:
        result = as_user("sync", sources=sources)
    finally:
        os.chmod(folder / "hr", 0o755)
        os.chmod(folder / "page-03.md", 0o644)
    assert result.returncode == 3, result.stderr
    assert "0 deleted, 5 failed" in result.stderr
    rows = pages(index, name)
    assert len(rows) == 14
    for path in ("hr/page-00.md", "hr/page-02.md", "hr/2024/page-00.md"):
        assert rows[path].status == Status.FAILED and rows[path].chunk_count
        assert rows[path].error == "folder hr/ cannot be read: Permission denied; the version indexed before keeps serving"
    assert rows["page-03.md"].status == Status.FAILED and "Permission denied" in rows["page-03.md"].error
    assert [h.path for h in retrieve(index, "salary handbook part 2", scopes=["public"]).hits
            if h.source == name][0] == "hr/page-02.md"  # still serving
    again = kb(kb_home, "sync", sources=sources)  # readable again: back to normal
    assert again.exit_code == 0 and "0 deleted, 0 failed" in again.stderr, again.output
    assert {r.status for r in pages(index, name).values()} == {Status.SUCCESS}

    os.chmod(folder, 0)  # the whole source denied: the sync stops before reading anything
    try:
        denied = as_user("sync", sources=sources)
    finally:
        os.chmod(folder, 0o755)
    assert denied.returncode == 1 and len(error_lines(denied.stderr)) == 1, denied.stderr
    assert f"source {name}: " in denied.stderr and "Permission denied" in denied.stderr
    assert len(pages(index, name)) == 14 and {r.status for r in pages(index, name).values()} == {Status.SUCCESS}
    indexed_sources.forget(index, name)


def test_a_confluence_export_with_a_folder_it_cannot_list_is_refused_whole(index, kb_home, tmp_path, as_user):
    export = tmp_path / f"export-{unique()}"
    shutil.copytree(HTML_EXPORT, export)
    name = f"conf-{unique()}"
    sources = tmp_path / f"{name}.toml"
    sources.write_text(f'[[source]]\nname = "{name}"\nkind = "confluence-html"\nlocation = "{export}"\n')
    assert kb(kb_home, "sync", sources=sources).exit_code == 3
    before = pages(index, name)
    shutil.move(export / "Deploying-the-Quokka-API_1006.html", export / "attachments")
    os.chmod(export / "attachments", 0)
    try:
        result = as_user("sync", sources=sources)
    finally:
        os.chmod(export / "attachments", 0o755)
    assert result.returncode == 1 and len(error_lines(result.stderr)) == 1, result.stderr
    assert "cannot list attachments/" in error_lines(result.stderr)[0] and "Permission denied" in result.stderr
    assert pages(index, name).keys() == before.keys() and [r.result for r in runs(index, name)] == ["ok"]
    indexed_sources.forget(index, name)


def test_a_folder_replaced_by_a_symlink_loop_fails_its_pages_in_full_and_watcher_syncs(index, tmp_path):
    """ELOOP is an error of the filesystem for root too; os.walk took such a folder for a file and
    the sync pruned its pages."""
    name, folder, _ = handbook_with_hr(tmp_path)
    source = SourceConfig(name=name, location=folder, kind="markdown")
    runner = SyncRunner(index, [source])
    assert runner.sync(name).added == 14
    shutil.move(folder / "hr", tmp_path / f"hr-{name}")
    (folder / "hr").symlink_to("hr")  # points at itself

    report = runner.sync(name)
    assert (report.deleted, report.failed, report.refused) == (0, 4, None)
    assert all("hr cannot be examined: Too many levels of symbolic links" in e for e in report.errors)
    watched = runner.sync_paths(name, ["hr/page-01.md"], trigger="watcher", folders=["hr"])
    assert (watched.deleted, watched.failed) == (0, 4)
    assert len(pages(index, name)) == 14 and pages(index, name)["hr/page-01.md"].chunk_count

    (folder / "hr").unlink()
    shutil.move(tmp_path / f"hr-{name}", folder / "hr")
    assert runner.sync(name).failed == 0
    shutil.rmtree(folder / "hr")  # really gone: the watcher deletes what it finds gone
    assert runner.sync_paths(name, [], trigger="watcher", folders=["hr"]).deleted == 4
    indexed_sources.forget(index, name)


# -- 4. overlapping sources --------------------------------------------------------------------------


def two_sources(tmp_path: Path, outer: str, inner: str, extra: str = "") -> Path:
    sources = tmp_path / f"overlap-{unique()}.toml"
    sources.write_text(f'[[source]]\nname = "wiki"\nlocation = "{outer}"\naccess = "public"\n\n'
                       f'[[source]]\nname = "hr"\nlocation = "{inner}"\naccess = "hr-private"\n{extra}')
    return sources


def test_a_public_folder_holding_a_restricted_source_stops_docent_at_start(kb_home, tmp_path):
    write_pages(tmp_path / "wiki" / "hr", 2, "salary")
    sources = two_sources(tmp_path, tmp_path / "wiki", tmp_path / "wiki" / "hr")
    with pytest.raises(SourcesError) as caught:
        read_sources_file(sources)
    message = str(caught.value)
    assert message.startswith(f"{sources}: [[source]] #2 (hr): location {tmp_path / 'wiki' / 'hr'} lies inside "
                              f"the location of [[source]] #1 (wiki)"), message
    assert "'public' where this one's is 'hr-private'" in message and "allow_overlap = true" in message
    result = kb(kb_home, "status", sources=sources)
    assert result.exit_code != 0 and error_lines(result.stderr) == [f"error: {message}"]


def test_the_same_export_twice_with_different_access_is_refused_and_allow_overlap_lets_it_through(tmp_path):
    same = two_sources(tmp_path, HTML_EXPORT, HTML_EXPORT)
    with pytest.raises(SourcesError, match=r"\(hr\): location .* is the same location as \[\[source\]\] #1 \(wiki\)"):
        read_sources_file(same)
    linked = tmp_path / "export-link"
    linked.symlink_to(HTML_EXPORT)
    with pytest.raises(SourcesError, match="is the same location as"):  # a link is the folder it names
        read_sources_file(two_sources(tmp_path, HTML_EXPORT, linked))
    allowed = read_sources_file(two_sources(tmp_path, HTML_EXPORT, linked, "allow_overlap = true\n"))
    assert [s.allow_overlap for s in allowed.sources] == [False, True]


def test_overlaps_that_publish_nothing_twice_are_fine(tmp_path):
    write_pages(tmp_path / "wiki" / "hr", 1, "salary")
    (tmp_path / "wiki" / "export.zip").write_bytes(b"")
    sources = tmp_path / "same-access.toml"  # the same access: nothing is shown where it was not
    sources.write_text(f'[[source]]\nname = "a"\nlocation = "{tmp_path / "wiki"}"\naccess = "eng"\n\n'
                       f'[[source]]\nname = "b"\nlocation = "{tmp_path / "wiki" / "hr"}"\naccess = "eng"\n')
    assert len(read_sources_file(sources).sources) == 2
    zipped = two_sources(tmp_path, tmp_path / "wiki", tmp_path / "wiki" / "export.zip")  # no folder reads a .zip
    assert len(read_sources_file(zipped).sources) == 2
    with pytest.raises(SourcesError, match="allow_overlap must be true or false"):
        read_sources_file(two_sources(tmp_path, tmp_path / "a", tmp_path / "b", 'allow_overlap = "yes"\n'))


def test_kb_sync_of_a_path_inside_or_around_a_configured_source_is_refused_naming_it(index, kb_home, tmp_path):
    name, folder, sources = handbook_with_hr(tmp_path)
    inside = kb(kb_home, "sync", str(folder / "hr"), sources=sources)
    assert inside.exit_code == 1 and len(error_lines(inside.stderr)) == 1, inside.output
    assert f"lies inside the location of the configured source {name!r}" in inside.stderr
    assert f"kb sync --source {name}" in inside.stderr
    around = kb(kb_home, "sync", str(tmp_path), sources=sources)
    assert around.exit_code == 1 and f"holds the location of the configured source {name!r}" in around.stderr
    assert not pages(index, "hr") and not pages(index, tmp_path.name)


def test_kb_sync_of_a_folder_holding_an_adhoc_restricted_source_is_refused(index, kb_home, tmp_path):
    wiki = tmp_path / f"wiki-{unique()}"
    write_pages(wiki / "hr", 2, "salary")
    write_pages(wiki, 2, "pelican")
    restricted = kb(kb_home, "sync", str(wiki / "hr"), "--source", f"hr-{wiki.name}", "--access", "hr-private")
    assert restricted.exit_code == 0, restricted.output
    public = kb(kb_home, "sync", str(wiki))
    assert public.exit_code == 1 and f"synced as source 'hr-{wiki.name}' with access 'hr-private'" in public.stderr
    assert not pages(index, wiki.name)
    indexed_sources.forget(index, f"hr-{wiki.name}")


# -- one document's unexpected exception fails that document (issue 33 item 5) -------------------


def test_a_date_out_of_range_fails_its_page_and_the_sync_goes_on(index, kb_home, tmp_path):
    """`updated: 0001-01-01T00:00:00+14:00` is before year 1 in UTC: Python raises OverflowError,
    which stopped the whole sync (traceback, exit 1, no page indexed, the run ABORTED)."""
    source = f"dates-{unique()}"
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "good.md").write_text("# Zebra crossings\n\nThe zebra crossing rota is pinned in the lobby.\n")
    (wiki / "early.md").write_text("---\nupdated: 0001-01-01T00:00:00+14:00\n---\n# Early\n\nBefore time began.\n")
    result = kb(kb_home, "sync", str(wiki), "--source", source)
    assert result.exit_code == 3 and "Traceback" not in result.output, result.output
    found = pages(index, source)
    assert found["good.md"].status == Status.SUCCESS
    assert found["early.md"].status == Status.FAILED and "out of range" in found["early.md"].error
    assert [r.result for r in runs(index, source)] == ["ok"]


def test_any_other_exception_reading_a_page_fails_the_page_with_its_reason(index, kb_home, tmp_path):
    """A URL template written as if `path` were a file path object ("{path.stem}") raises
    AttributeError, which nothing expected: every page FAILS saying so, the sync finishes."""
    source = f"template-{unique()}"
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "one.md").write_text("# One\n\nThe first page.\n")
    result = kb(kb_home, "sync", str(wiki), "--source", source, "--url-template", "https://wiki/{path.stem}")
    assert result.exit_code == 3 and "Traceback" not in result.output, result.output
    failed = pages(index, source)["one.md"]
    assert failed.status == Status.FAILED and "AttributeError" in failed.error and "stem" in failed.error
    assert [r.result for r in runs(index, source)] == ["ok"]
