"""Nothing lost by ordinary mistakes, tried as a user makes them: through the real `kb` CLI, real
folders and sources files, the real watcher and scheduler, and the Slack app over signed HTTP.

- Each source keeps its own pages: two ad-hoc `kb sync PATH` of different folders keep both.
- A folder that is suddenly empty (an unmounted share), holds only excluded files, or a sources
  file whose `exclude` is a bare string deletes nothing and exits non-zero with one `error:` line;
  the watcher and the scheduler refuse the same way; `--allow-deletes` then deletes.
- A source dropped from the sources file is reported and keeps answering until `kb forget`.
- A page moved public → restricted whose new version is broken vanishes at once from a public
  channel, while the keyword index still holds its old row.
- Saves of files no source indexes start no sync.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from tests.support.corpora import SAMPLE_WIKI
from tests.support.slack_api_server import FakeSlack
from tests.support.slack_harness import (
    ADMIN, all_text, bot_settings, button, click, mention, message, new_channel, posts_in, running_bot)

from bot.slack import blocks
from bot.cli import app as kb_cli
from bot.messages import SHARE_REFUSED
from sources import DeletionLimit, SourceConfig, SourcesError, load_sources, read_sources_file
from indexing.ingest import indexed_sources
from indexing.storage.index_tables import DocumentRecord, Status, SyncRun
from indexing.search.retrieval import retrieve
from indexing.ingest.runner import SyncRunner
from indexing.ingest.scheduler import start_scheduler, stop_scheduler
from indexing.ingest.watcher import Watcher

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SOURCES_DOC = Path(__file__).resolve().parents[1] / "docs" / "sources.md"  # the sources file reference (was the README)


def kb(kb_home: Path, *args: str, sources: Path | None = None, answer: str | None = None):
    """The real `kb` command line, in this process (one loaded model for the run)."""
    env = {"KB_HOME": str(kb_home), "KB_SOURCES": str(sources) if sources else None, "KB_WIKI": None,
           "DATABASE_URL": None, "KB_LOG_LEVEL": "WARNING"}
    return CliRunner().invoke(kb_cli, list(args), env=env, input=answer)


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def pages(index, source: str, status: Status | None = None) -> dict[str, DocumentRecord]:
    with index.session() as s:
        query = select(DocumentRecord).where(DocumentRecord.source == source)
        if status is not None:
            query = query.where(DocumentRecord.status == status)
        return {r.path: r for r in s.execute(query).scalars()}


def runs(index, source: str) -> list[SyncRun]:
    with index.session() as s:
        return list(s.execute(select(SyncRun).where(SyncRun.source == source).order_by(SyncRun.id)).scalars())


def write_pages(folder: Path, count: int, word: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"page-{n:02d}.md").write_text(f"# {word.title()} page {n}\n\nThe {word} handbook, part {n}.\n")


def published_keyword_version(index) -> int | None:
    from indexing.keyword import keyword_versions

    with index.session() as s:
        return keyword_versions.published(s)


def unique() -> str:
    return uuid.uuid4().hex[:6]


# -- 1. sources own their pages ---------------------------------------------------------------------


def test_two_adhoc_syncs_of_different_folders_keep_both_and_forget_removes_exactly_one(index, kb_home, tmp_path):
    exports = tmp_path / f"exports-{unique()}"
    shutil.copytree(FIXTURES / "confluence" / "html-export", exports / "html-space")
    shutil.copytree(FIXTURES / "confluence" / "xml-export", exports / "xml-space")

    first = kb(kb_home, "sync", str(exports / "html-space"))
    second = kb(kb_home, "sync", str(exports / "xml-space"))
    assert first.exit_code == second.exit_code == 3, first.output + second.output  # the fixtures hold broken pages
    assert "as source 'html-space'" in first.stderr and "as source 'xml-space'" in second.stderr
    html, xml = pages(index, "html-space"), pages(index, "xml-space")
    assert html and xml and not pages(index, "wiki")
    again = kb(kb_home, "sync", str(exports / "html-space"))  # the same folder: the same name, nothing deleted
    assert again.exit_code == 3 and "html-space: 0 added, 0 updated" in again.stderr and "0 deleted" in again.stderr

    listed = {row["name"]: row for row in json.loads(kb(kb_home, "sources", "--json").stdout)}
    assert listed["html-space"]["pages"] == len(html) and listed["xml-space"]["pages"] == len(xml)
    assert listed["html-space"]["state"] == "ad hoc" and listed["html-space"]["location"] == str(exports / "html-space")
    assert listed["xml-space"]["kind"] == "confluence-xml" and listed["xml-space"]["last_sync"]["result"] == "ok"

    kept = kb(kb_home, "forget", "html-space", answer="n\n")  # asks first
    assert kept.exit_code != 0 and pages(index, "html-space") == html
    gone = kb(kb_home, "forget", "html-space", "--yes")
    assert gone.exit_code == 0 and f"{len(html)} pages removed" in gone.stderr
    assert not pages(index, "html-space") and pages(index, "xml-space").keys() == xml.keys()
    assert all(h.source != "html-space" for h in retrieve(index, "Zprovoznění Tomcat ROOT.war", scopes=["public"]).hits)
    assert "html-space" not in {row["name"] for row in json.loads(kb(kb_home, "sources", "--json").stdout)}
    assert kb(kb_home, "forget", "xml-space", "--yes").exit_code == 0


def test_adhoc_names_never_take_another_locations_name(index, kb_home, tmp_path):
    one, two = tmp_path / f"a-{unique()}" / "handbook", tmp_path / f"b-{unique()}" / "handbook"
    write_pages(one, 2, "walrus")
    write_pages(two, 2, "narwhal")
    assert kb(kb_home, "sync", str(one)).exit_code == 0
    second = kb(kb_home, "sync", str(two))  # same folder name, another place: a name of its own
    name = second.stderr.split("as source '")[1].split("'")[0]
    assert second.exit_code == 0 and name.startswith("handbook-") and len(pages(index, "handbook")) == 2
    taken = kb(kb_home, "sync", str(two), "--source", "handbook")
    assert taken.exit_code != 0 and error_lines(taken) and "kb forget handbook" in taken.stderr
    assert len(pages(index, "handbook")) == 2 and len(pages(index, name)) == 2
    sample = kb(kb_home, "sync", str(SAMPLE_WIKI), "--access", "other")  # the configured folder: its own settings
    assert sample.exit_code != 0 and "configured source 'sample'" in error_lines(sample)[0]
    for source in ("handbook", name):
        indexed_sources.forget(index, source)


# -- 2. the deletion guard ----------------------------------------------------------------------------


def guarded_source(tmp_path: Path, body: str = "") -> tuple[str, Path, Path]:
    """A fresh source of 12 pages in a sources file; returns (name, folder, sources file)."""
    name = f"guard-{unique()}"
    folder = tmp_path / name
    write_pages(folder, 12, "pelican")
    sources = tmp_path / f"{name}.toml"
    sources.write_text(f'[[source]]\nname = "{name}"\nlocation = "{folder}"\n{body}')
    return name, folder, sources


def empty_the_folder(folder: Path, sources: Path) -> None:
    """An unmounted share: the mount point is there, empty."""
    for path in folder.iterdir():
        path.unlink()


def only_excluded_files(folder: Path, sources: Path) -> None:
    """Every page moved under drafts/, which the source excludes, beside files no source reads."""
    (folder / "drafts").mkdir()
    for path in folder.glob("*.md"):
        path.rename(folder / "drafts" / path.name)
    (folder / "diagram.png").write_bytes(b"\x89PNG")
    (folder / "notes.md~").write_text("editor backup")


def exclude_as_a_bare_string(folder: Path, sources: Path) -> None:
    """`exclude = "drafts/**"`: once split into characters, "*" matched every file."""
    sources.write_text(sources.read_text() + 'exclude = "drafts/**"\n')


@pytest.mark.parametrize("mistake", [empty_the_folder, only_excluded_files, exclude_as_a_bare_string])
def test_a_folder_that_looks_empty_deletes_nothing_and_exits_non_zero(index, kb_home, tmp_path, mistake):
    name, folder, sources = guarded_source(tmp_path, 'exclude = ["drafts/**"]\n' if mistake is only_excluded_files else "")
    assert kb(kb_home, "sync", sources=sources).exit_code == 0
    before = pages(index, name)
    assert len(before) == 12

    mistake(folder, sources)
    result = kb(kb_home, "sync", sources=sources)

    assert result.exit_code != 0
    assert len(error_lines(result)) == 1, result.stderr
    assert pages(index, name).keys() == before.keys(), "nothing deleted"
    assert [h.path for h in retrieve(index, "pelican handbook part 3", scopes=["public"]).hits if h.source == name]
    if mistake is exclude_as_a_bare_string:
        assert "exclude must be a list of globs" in error_lines(result)[0]
        indexed_sources.forget(index, name)
        return
    assert result.exit_code == 4 and "--allow-deletes" in error_lines(result)[0]
    run = runs(index, name)[-1]
    assert run.result == "refused" and run.deleted == 0 and "deleting none" in run.reason
    status = kb(kb_home, "status", sources=sources).stdout
    assert f"last sync: {name} (cli)" in status and "[REFUSED: " in status
    assert "refused — found no pages" in kb(kb_home, "sources", sources=sources).stdout

    allowed = kb(kb_home, "sync", "--allow-deletes", sources=sources)
    assert allowed.exit_code == 0 and not pages(index, name) and runs(index, name)[-1].result == "ok"


def test_the_watcher_and_the_schedule_refuse_the_same_way(index, tmp_path):
    name, folder, _ = guarded_source(tmp_path)
    source = SourceConfig(name=name, location=folder, kind="markdown", schedule="every 1s")
    runner = SyncRunner(index, [source])
    assert runner.sync(name).added == 12
    watcher = Watcher(runner, [source], debounce=0.2).start()  # returns with the watches in place
    try:
        seen = watcher.events_seen
        for path in folder.glob("*.md"):  # a `git checkout` of an empty branch, or rm by mistake
            path.unlink()
        assert watcher.wait_idle(timeout=20, events_after=seen), "the watcher did not finish"
    finally:
        watcher.stop()
    watched = [r for r in runs(index, name) if r.trigger == "watcher"]
    assert [r.result for r in watched] == ["refused"] and watched[0].deleted == 0
    assert len(pages(index, name)) == 12

    scheduler = start_scheduler(runner, [source])
    try:
        deadline = time.monotonic() + 20
        while not [r for r in runs(index, name) if r.trigger == "schedule" and r.finished_at]:
            assert time.monotonic() < deadline, "the schedule ran no sync"
            time.sleep(0.1)
    finally:
        stop_scheduler(scheduler)
    scheduled = [r for r in runs(index, name) if r.trigger == "schedule" and r.finished_at]
    assert {r.result for r in scheduled} == {"refused"} and "found no pages" in scheduled[0].reason
    assert len(pages(index, name)) == 12
    assert runner.sync(name, allow_deletes=True).deleted == 12 and not pages(index, name)


def test_an_admin_resync_from_slack_obeys_the_guard_until_allow_deletes(index, tmp_path):
    name, folder, _ = guarded_source(tmp_path)
    slack = FakeSlack().start()
    try:
        settings = bot_settings(slack, kb_wiki=folder, kb_source_name=name)
        with running_bot(settings, index) as bot:
            def resync(text: str, tag: str) -> str:
                bot.command(f"resync {text}", user=ADMIN, response_url=slack.response_url(tag))
                calls = slack.wait_for(lambda: [c for c in slack.calls_to("response:" + tag)
                                                if "finished" in c.params["text"] or "deleted nothing" in c.params["text"]],
                                       timeout=90)
                return calls[0].params["text"]

            assert "12 added" in resync(name, "first")
            empty_the_folder(folder, folder)
            refused = resync(name, "refused")
            assert "deleted nothing" in refused and f"/kb resync {name} --allow-deletes" in refused
            assert len(pages(index, name)) == 12
            bot.command("status", user=ADMIN, response_url=slack.response_url("status"))
            status = slack.wait_for(lambda: slack.calls_to("response:status"))[0].params["text"]
            assert f"Last sync of `{name}` (admin)" in status and "refused, nothing deleted" in status
            assert "12 deleted" in resync(f"{name} --allow-deletes", "allowed") and not pages(index, name)
    finally:
        slack.stop()


def test_max_delete_sets_how_much_one_sync_may_delete(index, tmp_path):
    name, folder, sources = guarded_source(tmp_path, "max_delete = 3\n")
    [source] = load_sources(sources)
    assert source.max_delete == DeletionLimit(share=None, pages=3)
    runner = SyncRunner(index, [source])
    runner.sync(name)
    for n in range(4):
        (folder / f"page-{n:02d}.md").unlink()
    report = runner.sync(name)
    assert report.refused and "more than max_delete = 3" in report.refused and len(pages(index, name)) == 12
    (folder / "page-00.md").write_text("# Back\n\nThe pelican page is back.\n")
    assert runner.sync(name).deleted == 3 and len(pages(index, name)) == 9  # three is within the limit
    indexed_sources.forget(index, name)


def test_default_guard_lets_small_deletions_through_and_stops_mass_ones():
    limit = DeletionLimit()
    assert limit.refusal(deleting=9, indexed=10, found=1) is None  # under 10 pages: fine
    assert limit.refusal(deleting=10, indexed=30, found=20) is None  # a third: fine
    assert "16 of 30" in limit.refusal(deleting=16, indexed=30, found=14)  # over half, 10 or more
    assert "found no pages" in limit.refusal(deleting=2, indexed=2, found=0)  # empty where there were pages
    assert limit.refusal(deleting=2, indexed=2, found=None) is None  # the watcher's two deleted files


# -- 3. empty is not broken ---------------------------------------------------------------------------


def test_a_handbook_with_placeholder_pages_syncs_with_exit_0(index, kb_home, tmp_path):
    folder = tmp_path / f"placeholders-{unique()}"
    write_pages(folder, 2, "heron")
    (folder / "todo.md").write_text("")
    (folder / "soon.md").write_text("---\ntitle: Coming soon\n---\n")
    (folder / "headings-only.md").write_text("# Title\n\n## Later\n")
    result = kb(kb_home, "sync", str(folder), "--source", folder.name)
    assert result.exit_code == 0, result.output
    skipped = {path: r.error for path, r in pages(index, folder.name, Status.SKIPPED).items()}
    assert skipped == {"todo.md": "empty page", "soon.md": "empty page: no text after front matter",
                       "headings-only.md": "no indexable text (only headings, macros or whitespace)"}
    assert "3 skipped" in result.stderr and not pages(index, folder.name, Status.FAILED)
    (folder / "page-00.md").write_text("")  # a page emptied on purpose: its old text is withdrawn
    assert kb(kb_home, "sync", str(folder), "--source", folder.name).exit_code == 0
    assert pages(index, folder.name)["page-00.md"].status == Status.SKIPPED
    hits = retrieve(index, "heron handbook part 0", scopes=["public"]).hits
    assert [h.path for h in hits if h.source == folder.name] == ["page-01.md"]
    indexed_sources.forget(index, folder.name)


# -- 4. a typed sources file --------------------------------------------------------------------------


@pytest.mark.parametrize("body, message", [
    ('exclude = "drafts/**"\n', 'exclude must be a list of globs, e.g. exclude = ["drafts/**"]'),
    ('include = "*.md"\n', "include must be a list of globs"),
    ("access = 3\n", "access must be a scope name"),
    ('colour = "red"\n', "unknown setting(s) colour"),
    ('schedule = "61 * * * *"\n', "cron '61 * * * *' is not valid"),
    ('schedule = "every 0m"\n', "the interval must be positive"),
    ("max_delete = -1\n", "max_delete: must not be negative"),
    ('max_delete = "lots"\n', "max_delete: must be a number of pages"),
    ('kind = "confluence-xml"\nexclude = ["x"]\n', "include and exclude apply to Markdown folders"),
])
def test_sources_file_mistakes_stop_at_load_naming_file_table_and_key(tmp_path, body, message):
    path = tmp_path / "kb.toml"
    path.write_text(f'[[source]]\nname = "wiki"\nlocation = "."\n{body}')
    with pytest.raises(SourcesError) as caught:
        read_sources_file(path)
    assert str(caught.value).startswith(f"{path}: [[source]] #1 (wiki): ") and message in str(caught.value)


def test_globs_follow_gitignore_rules(tmp_path):
    from connectors.markdown import MarkdownFolder

    for rel in ("top.md", "team/deep/page.md", "drafts/wip.md", "team/SOURCE.md", "LICENSE.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# x\n\ny\n")
    folder = MarkdownFolder(tmp_path, include=["**/*.md"], exclude=["drafts/**", "SOURCE.md", "LICENSE*"])
    assert list(folder.paths()) == ["team/deep/page.md", "top.md"]  # **/*.md matches top-level pages too
    assert list(MarkdownFolder(tmp_path, exclude=["*", "!top.md"]).paths()) == ["top.md"]


def _readme_blocks(language: str) -> list[str]:
    text = SOURCES_DOC.read_text()
    blocks_found, inside, lines = [], False, []
    for line in text.splitlines():
        if line.strip() == f"```{language}":
            inside, lines = True, []
        elif inside and line.strip() == "```":
            inside = False
            blocks_found.append("\n".join(lines) + "\n")
        elif inside:
            lines.append(line)
    return blocks_found


@pytest.mark.parametrize("language", ["toml", "yaml"])
def test_every_sources_example_in_the_readme_loads_exactly_as_written(tmp_path, language):
    examples = [b for b in _readme_blocks(language) if "source" in b]
    assert examples, f"docs/sources.md has {language} examples of the sources file"
    for n, example in enumerate(examples):
        path = tmp_path / f"example-{n}.{language}"
        path.write_text(example)
        parsed = read_sources_file(path)
        assert parsed.sources and all(s.name for s in parsed.sources)


# -- 5. a source dropped from the configuration -------------------------------------------------------


def test_a_source_removed_from_the_sources_file_is_reported_and_answers_until_forgotten(index, kb_home, tmp_path):
    keep, drop = f"keep-{unique()}", f"drop-{unique()}"
    write_pages(tmp_path / keep, 2, "osprey")
    write_pages(tmp_path / drop, 2, "cormorant")
    sources = tmp_path / "kb.toml"
    sources.write_text("".join(f'[[source]]\nname = "{n}"\nlocation = "{tmp_path / n}"\n' for n in (keep, drop)))
    assert kb(kb_home, "sync", sources=sources).exit_code == 0
    sources.write_text(f'[[source]]\nname = "{keep}"\nlocation = "{tmp_path / keep}"\n')

    assert kb(kb_home, "sync", sources=sources).exit_code == 0  # syncing the others touches it not
    assert f"not configured: {drop}" in kb(kb_home, "status", sources=sources).stdout
    listed = {r["name"]: r for r in json.loads(kb(kb_home, "sources", "--json", sources=sources).stdout)}
    assert listed[drop]["state"] == "not configured" and listed[drop]["pages"] == 2
    assert any(h.source == drop for h in retrieve(index, "cormorant handbook part 1", scopes=["public"]).hits)
    from bot.serve import warn_unconfigured_sources

    assert drop in warn_unconfigured_sources(index, load_sources(sources))

    assert kb(kb_home, "forget", drop, "--yes", sources=sources).exit_code == 0
    assert not pages(index, drop) and all(h.source != drop for h in
                                          retrieve(index, "cormorant handbook part 1", scopes=["public"]).hits)
    indexed_sources.forget(index, keep)


# -- 6. access changes apply at once, in both legs ----------------------------------------------------

SALARY = "# Salary bands\n\nThe Quokka salary band for staff engineers tops out at 187,000 florins a year.\n"
SALARY_Q = "what does the Quokka salary band top out at for staff engineers?"
HR_CHANNEL = "C0HRONLY" + uuid.uuid4().hex[:4].upper()


def salary_sources(path: Path, folder: Path, name: str, access: str) -> Path:
    path.write_text(f"""
[[source]]
name = "{name}"
location = "{folder}"
access = "{access}"

[[source]]
name = "sample"
location = "{SAMPLE_WIKI}"
exclude = ["*.jsonl"]
access = "sample"

[scopes.hr-only]
channels = ["{HR_CHANNEL}"]

[scopes.sample]
channels = ["*"]
users = ["*"]
""")
    return path


def shows_salary(call) -> bool:
    return "187,000" in json.dumps(call.params) or "Salary bands" in json.dumps(call.params)


def test_a_page_moved_to_a_restricted_scope_whose_new_version_is_broken_vanishes_at_once(index, sample_synced,
                                                                                          tmp_path):
    name = f"salary-{unique()}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "bands.md").write_text(SALARY)
    sources = salary_sources(tmp_path / "kb.toml", folder, name, "public")
    SyncRunner(index, load_sources(sources)).sync(name)
    doc_id = f"{name}:bands.md"
    slack = FakeSlack().start()
    try:
        with running_bot(bot_settings(slack, kb_sources=sources), index) as bot:
            channel = new_channel()
            question = mention(SALARY_Q, channel)
            bot.event(question)
            [before] = slack.wait_for(lambda: posts_in(slack, channel))
            assert shows_salary(before), "the public page is answered from before the move"
            url = slack.response_url("salary-ask")
            bot.command(f"ask {SALARY_Q}", channel=channel, response_url=url)
            [private] = slack.wait_for(lambda: slack.calls_to("response:salary-ask"))
            answer_id = button(private.params["blocks"], blocks.ACTION_SHARE)["value"]
            bot.wait_idle()
            version = published_keyword_version(index)

            # The page moves to HR, and its new version cannot be read.
            salary_sources(sources, folder, name, "hr-only")
            (folder / "bands.md").write_bytes(SALARY.encode() + b"\xff\xfe broken")
            report = SyncRunner(index, load_sources(sources)).sync(name)
            assert report.failed == 1 and report.relabelled == 1
            record = pages(index, name)["bands.md"]
            assert (record.status, record.access, record.chunk_count > 0) == (Status.FAILED, "hr-only", True)
            # The relabel is a keyword change, published by the sync: the keyword leg holds the page
            # under its new scope only...
            assert published_keyword_version(index) > version
            assert doc_id not in {h.metadata["doc_id"] for h in index.bm25.search(SALARY_Q, ["public", "sample"], 20)}
            assert doc_id in {h.metadata["doc_id"] for h in index.bm25.search(SALARY_Q, ["hr-only"], 20)}
            # ...and nothing in the public channel shows the page any more.
            bot.event(mention(SALARY_Q, channel))
            bot.event(message("and for principal engineers?", channel, thread_ts=question["ts"]))
            bot.event(mention("where do I find the office wifi password?", channel))  # nearest pages too
            url2 = slack.response_url("salary-ask-2")
            bot.command(f"ask {SALARY_Q}", channel=channel, response_url=url2)
            slack.wait_for(lambda: len(posts_in(slack, channel)) >= 4 and slack.calls_to("response:salary-ask-2"))
            share_url = slack.response_url("salary-share")
            bot.interaction(click(blocks.ACTION_SHARE, answer_id, user="U1", channel=channel, response_url=share_url,
                                  ephemeral=True))
            [shared] = slack.wait_for(lambda: slack.calls_to("response:salary-share"))
            bot.wait_idle()
            after = posts_in(slack, channel)[1:] + slack.calls_to("response:salary-ask-2")
            assert len(after) == 4 and not any(shows_salary(c) for c in after)
            assert shared.params["text"] == SHARE_REFUSED
            assert all(doc_id not in all_text(c.params.get("blocks") or []) for c in after)
            # Where HR pages are visible, the version still serving answers.
            bot.event(mention(SALARY_Q, HR_CHANNEL))
            [hr] = slack.wait_for(lambda: posts_in(slack, HR_CHANNEL))
            assert shows_salary(hr)
    finally:
        slack.stop()
        indexed_sources.forget(index, name)


# -- 7. watcher noise ---------------------------------------------------------------------------------


def test_saves_of_files_no_source_indexes_start_no_sync(index, wiki_copy):
    name = f"noise-{unique()}"
    source = SourceConfig(name=name, location=wiki_copy, kind="markdown", exclude=["drafts/**"])
    runner = SyncRunner(index, [source])
    runner.sync(name)
    before, version = len(runs(index, name)), published_keyword_version(index)
    watcher = Watcher(runner, [source], debounce=0.1).start()  # returns with the watches in place
    try:
        seen = watcher.events_seen
        (wiki_copy / "site").mkdir()
        (wiki_copy / "drafts").mkdir()
        for n in range(20):  # a burst of saves
            (wiki_copy / "img.png").write_bytes(b"\x89PNG" + bytes([n]))
            (wiki_copy / "notes.md~").write_text(f"backup {n}")
            (wiki_copy / "site" / "index.html").write_text(f"<p>{n}</p>")
            (wiki_copy / ".#notes.md").write_text("lock")
            (wiki_copy / ".notes.md.swp").write_text("swap")
            (wiki_copy / "4913").write_text("")
            (wiki_copy / "drafts" / "wip.md").write_text(f"# WIP {n}\n\nexcluded\n")
        (wiki_copy / "4913").unlink()
        shutil.rmtree(wiki_copy / "site")  # MkDocs rebuilding its output
        assert watcher.wait_idle(timeout=15, events_after=seen)  # the burst handled, any sync it started done
        assert len(runs(index, name)) == before and published_keyword_version(index) == version
        (wiki_copy / "people" / "noise.md").write_text("# Noise\n\nA real page, saved once.\n")
        deadline = time.monotonic() + 15
        while len(runs(index, name)) == before:  # the watcher is alive: a real page does sync
            assert time.monotonic() < deadline
            time.sleep(0.05)  # polling the database, not waiting for the watcher
        assert watcher.wait_idle(timeout=15)  # a late noise event's sync, if any, is counted below
    finally:
        watcher.stop()
    assert "people/noise.md" in pages(index, name)
    with index.session() as s:
        assert s.execute(select(func.count()).select_from(SyncRun).where(SyncRun.source == name)).scalar_one() == before + 1
    last = runs(index, name)[-1]  # the real page alone: no noise path read with it
    assert (last.trigger, last.added, last.updated, last.deleted, last.failed, last.skipped) == ("watcher", 1, 0, 0, 0, 0)
    indexed_sources.forget(index, name)
