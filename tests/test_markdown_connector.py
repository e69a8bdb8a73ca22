"""MarkdownFolder: which files a wiki folder yields, and what each becomes as a SourceDocument.

Every test builds a real folder under tmp_path and reads it through the connector; nothing of
ours is mocked. No index, no embedding model: this file runs in about a second.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from connectors.document import PUBLIC, SourceDocument, heading_anchor
from connectors.markdown import DEFAULT_MAX_BYTES, MarkdownFolder
from indexing.ingest.chunking import chunk_document


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def read_all(folder: MarkdownFolder) -> dict[str, SourceDocument]:
    return {doc.path: doc for doc in folder.documents()}


# --- which files are read ---------------------------------------------------------------------


def test_reads_every_markdown_extension_recursively_and_nothing_else(tmp_path):
    for rel in [
        "index.md", "guide.markdown", "component.mdx", "notes.txt", "UPPER.MD",
        "people/leave.md", "people/uk/parental.md", "a/b/c/d/deep.md",
    ]:
        write(tmp_path, rel, f"# {rel}\n\ntext of {rel}\n")
    for rel in [
        "image.png", "doc.rst", "page.html", "data.jsonl", "README", "people/photo.jpg",
        "archive.md.bak", "config.yaml",
    ]:
        write(tmp_path, rel, "# not markdown\n\nshould never be read\n")

    paths = list(MarkdownFolder(tmp_path).paths())

    assert paths == [
        "UPPER.MD", "a/b/c/d/deep.md", "component.mdx", "guide.markdown", "index.md", "notes.txt",
        "people/leave.md", "people/uk/parental.md",
    ]


def test_hidden_folders_and_hidden_files_are_skipped(tmp_path):
    write(tmp_path, "visible.md", "# Visible\n\nyes\n")
    write(tmp_path, ".git/COMMIT_EDITMSG.md", "# git internals\n")
    write(tmp_path, ".git/refs/heads/notes.md", "# git internals\n")
    write(tmp_path, ".obsidian/workspace.md", "# obsidian settings\n")
    write(tmp_path, ".hidden.md", "# hidden file\n")
    write(tmp_path, "people/.draft.md", "# hidden file in a subfolder\n")
    write(tmp_path, "people/.trash/old.md", "# hidden folder deeper down\n")
    write(tmp_path, "people/leave.md", "# Leave\n\nyes\n")

    folder = MarkdownFolder(tmp_path)

    assert list(folder.paths()) == ["people/leave.md", "visible.md"]
    assert not folder.wants(".obsidian/workspace.md")
    assert not folder.wants("people/.draft.md")


def test_documents_yields_one_document_per_listed_path(tmp_path):
    write(tmp_path, "a.md", "# A\n\nalpha\n")
    write(tmp_path, "sub/b.txt", "beta\n")

    docs = list(MarkdownFolder(tmp_path, source="wiki").documents())

    assert [d.path for d in docs] == ["a.md", "sub/b.txt"]
    assert [d.text.strip() for d in docs] == ["# A\n\nalpha", "beta"]
    assert all(d.error is None for d in docs)


# --- include / exclude globs ------------------------------------------------------------------


def _glob_tree(root: Path) -> None:
    for rel in [
        "SOURCE.md", "LICENSE.md", "LICENSE-docs.txt", "README.md", "handbook.md",
        "people/leave.md", "people/benefits.md", "people/SOURCE.md",
        "drafts/wip.md", "drafts/deep/idea.md", "engineering/deploys.md",
    ]:
        write(root, rel, f"# {rel}\n\nbody\n")
    write(root, "QUESTIONS.jsonl", '{"q": "not a page"}\n')


def test_exclude_globs_drop_files_by_name_anywhere_and_whole_folders(tmp_path):
    _glob_tree(tmp_path)

    folder = MarkdownFolder(tmp_path, exclude=["SOURCE.md", "LICENSE*", "*.jsonl", "drafts/**"])

    assert list(folder.paths()) == [
        "README.md", "engineering/deploys.md", "handbook.md", "people/benefits.md", "people/leave.md",
    ]


def test_include_glob_limits_the_source_to_matching_paths(tmp_path):
    _glob_tree(tmp_path)

    folder = MarkdownFolder(tmp_path, include=["people/*"])

    assert list(folder.paths()) == ["people/SOURCE.md", "people/benefits.md", "people/leave.md"]


def test_exclude_wins_over_include(tmp_path):
    _glob_tree(tmp_path)

    folder = MarkdownFolder(tmp_path, include=["people/*"], exclude=["SOURCE.md"])

    assert list(folder.paths()) == ["people/benefits.md", "people/leave.md"]


def test_include_does_not_let_non_markdown_files_in(tmp_path):
    _glob_tree(tmp_path)

    folder = MarkdownFolder(tmp_path, include=["*.jsonl", "handbook.md"])

    assert list(folder.paths()) == ["handbook.md"]


# --- front matter and titles ------------------------------------------------------------------


def test_front_matter_title_url_and_tags_are_parsed_and_removed_from_the_text(tmp_path):
    write(tmp_path, "people/leave.md", (
        "---\n"
        "title: Leave policy\n"
        "url: https://wiki.example.com/people/leave\n"
        "tags: [people, leave]\n"
        "owner: hr@example.com\n"
        "---\n"
        "# Annual leave\n\nEveryone gets 25 days.\n"
    ))

    doc = MarkdownFolder(tmp_path, url_template="https://github.com/acme/h/blob/main/{path}").read("people/leave.md")

    assert doc.error is None
    assert doc.title == "Leave policy"  # front matter beats the H1
    assert doc.url == "https://wiki.example.com/people/leave"  # front matter beats the template
    assert doc.metadata["tags"] == ["people", "leave"]
    assert doc.text.startswith("# Annual leave")
    assert "---" not in doc.text and "title:" not in doc.text and "hr@example.com" not in doc.text


def test_comma_separated_tags_string_becomes_a_list(tmp_path):
    write(tmp_path, "a.md", "---\ntags: onboarding, it , laptops\n---\nbody\n")

    assert MarkdownFolder(tmp_path).read("a.md").metadata["tags"] == ["onboarding", "it", "laptops"]


def test_a_file_without_front_matter_has_no_tags_and_keeps_all_its_text(tmp_path):
    body = "# Expenses\n\nKeep receipts.\n\n---\n\nThat rule above is a thematic break.\n"
    write(tmp_path, "expenses.md", body)

    doc = MarkdownFolder(tmp_path).read("expenses.md")

    assert doc.error is None
    assert doc.text == body
    assert doc.metadata["tags"] == []


def test_front_matter_survives_a_byte_order_mark_and_windows_line_endings(tmp_path):
    raw = "\ufeff---\r\ntitle: Travel\r\ntags: [finance]\r\n---\r\n# Booking trips\r\n\r\nUse the portal.\r\n"
    write(tmp_path, "travel.md", raw.encode("utf-8"))

    doc = MarkdownFolder(tmp_path).read("travel.md")

    assert doc.error is None
    assert doc.title == "Travel"
    assert doc.metadata["tags"] == ["finance"]
    assert "\r" not in doc.text and "\ufeff" not in doc.text
    assert doc.text.startswith("# Booking trips\n\nUse the portal.")


def test_title_falls_back_to_the_first_h1_when_front_matter_has_none(tmp_path):
    write(tmp_path, "a.md", "---\ntags: [x]\n---\nIntro line.\n\n## Not this one\n\n# Security basics\n\n# Second H1\n")

    assert MarkdownFolder(tmp_path).read("a.md").title == "Security basics"


def test_title_ignores_h1_lines_inside_code_fences(tmp_path):
    write(tmp_path, "shell.md", (
        "Some intro.\n\n"
        "```bash\n# install the CLI\nbrew install kb\n```\n\n"
        "~~~\n# also a comment, in a tilde fence\n~~~\n\n"
        "# Using the CLI ##\n\ntext\n"
    ))

    assert MarkdownFolder(tmp_path).read("shell.md").title == "Using the CLI"


def test_title_falls_back_to_the_file_name_without_extension_or_separators(tmp_path):
    write(tmp_path, "people/parental-leave_policy.md", "No heading here.\n\n## Only an H2\n\n```\n# fenced\n```\n")
    write(tmp_path, "zh/年假.md", "没有标题。\n")

    docs = read_all(MarkdownFolder(tmp_path))

    assert docs["people/parental-leave_policy.md"].title == "parental leave policy"
    assert docs["zh/年假.md"].title == "年假"


def test_hash_without_space_is_not_an_h1(tmp_path):
    write(tmp_path, "tags.md", "#hashtag line\n\n# Real title\n")

    assert MarkdownFolder(tmp_path).read("tags.md").title == "Real title"


# --- ids, URLs, anchors -----------------------------------------------------------------------


def test_doc_id_is_source_name_and_relative_posix_path(tmp_path):
    write(tmp_path, "people/uk/parental.md", "# Parental\n\ntext\n")

    doc = MarkdownFolder(tmp_path, source="handbook").read("people/uk/parental.md")

    assert doc.source == "handbook"
    assert doc.path == "people/uk/parental.md"
    assert doc.doc_id == "handbook:people/uk/parental.md"


def test_url_template_fills_in_the_url_quoted_path(tmp_path):
    write(tmp_path, "people/Parental leave.md", "# Parental leave\n\ntext\n")
    write(tmp_path, "zh/年假 政策.md", "# 年假政策\n\n正文\n")
    folder = MarkdownFolder(tmp_path, url_template="https://github.com/acme/handbook/blob/main/{path}")

    docs = read_all(folder)

    assert docs["people/Parental leave.md"].url == (
        "https://github.com/acme/handbook/blob/main/people/Parental%20leave.md"
    )
    assert docs["zh/年假 政策.md"].url == (
        "https://github.com/acme/handbook/blob/main/zh/%E5%B9%B4%E5%81%87%20%E6%94%BF%E7%AD%96.md"
    )


def test_default_url_is_a_file_uri_of_the_real_path(tmp_path):
    write(tmp_path, "people/Parental leave.md", "# Parental leave\n\ntext\n")

    url = MarkdownFolder(tmp_path).read("people/Parental leave.md").url

    parsed = urlparse(url)
    assert parsed.scheme == "file"
    assert " " not in url
    assert Path(unquote(parsed.path)) == (tmp_path / "people/Parental leave.md").resolve()


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Parental leave (UK)", "parental-leave-uk"),
        ("Annual Leave", "annual-leave"),
        ("Q&A: who approves?", "qa-who-approves"),
        ("年假政策", "年假政策"),
        ("申请 年假（中国）", "申请-年假中国"),
        ("self-service", "self-service"),
    ],
)
def test_section_url_appends_a_github_style_anchor(heading, anchor):
    doc = SourceDocument(source="wiki", path="people/leave.md", url="https://wiki.example.com/leave")

    assert heading_anchor(heading) == anchor
    assert doc.section_url(heading_anchor(heading)) == f"https://wiki.example.com/leave#{anchor}"


def test_section_url_without_anchor_or_with_an_anchored_url_is_the_page_url():
    page = SourceDocument(source="wiki", path="a.md", url="https://wiki.example.com/a")
    anchored = SourceDocument(source="wiki", path="b.md", url="https://wiki.example.com/b#already")
    no_url = SourceDocument(source="wiki", path="c.md", url="")

    assert page.section_url(None) == "https://wiki.example.com/a"
    assert page.section_url("") == "https://wiki.example.com/a"
    assert anchored.section_url("other-heading") == "https://wiki.example.com/b#already"
    assert no_url.section_url("heading") == ""


def test_sections_link_to_anchors_on_the_front_matter_url(tmp_path):
    write(tmp_path, "leave.md", "---\nurl: https://intranet.example.com/hr/leave\n---\n# Leave\n\n## Annual leave\n\n25 days.\n")

    doc = MarkdownFolder(tmp_path, url_template="https://github.com/acme/h/blob/main/{path}").read("leave.md")

    assert [p.url for p in chunk_document(doc)] == ["https://intranet.example.com/hr/leave#annual-leave"]


# --- time stamps and access -------------------------------------------------------------------


def test_updated_at_is_the_file_mtime_in_utc(tmp_path):
    path = write(tmp_path, "a.md", "# A\n\ntext\n")
    when = datetime(2024, 3, 15, 9, 30, 0, tzinfo=timezone.utc)
    os.utime(path, (when.timestamp(), when.timestamp()))

    doc = MarkdownFolder(tmp_path).read("a.md")

    assert doc.updated_at == when
    assert doc.updated_at.tzinfo is not None
    assert doc.updated_at.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(("front_matter", "expected"), [
    ("updated: 2024-03-01", datetime(2024, 3, 1, tzinfo=timezone.utc)),  # a date: its midnight, UTC
    ("last_modified: 2024-03-01T10:15:00+02:00", datetime(2024, 3, 1, 8, 15, tzinfo=timezone.utc)),
    ("date: 2024-03-01 10:15:00", datetime(2024, 3, 1, 10, 15, tzinfo=timezone.utc)),  # no zone: UTC
    ("date: '2024-03-01T10:15:00Z'", datetime(2024, 3, 1, 10, 15, tzinfo=timezone.utc)),  # quoted: parsed as ISO
    ("date: 2020-01-01\nupdated: 2024-03-01", datetime(2024, 3, 1, tzinfo=timezone.utc)),  # `updated` wins over `date`
])
def test_updated_at_is_the_front_matter_date_when_there_is_one(tmp_path, front_matter, expected):
    path = write(tmp_path, "a.md", f"---\n{front_matter}\n---\n# A\n\ntext\n")
    os.utime(path, (1e9, 1e9))

    doc = MarkdownFolder(tmp_path).read("a.md")

    assert doc.error is None
    assert doc.updated_at == expected and doc.updated_at.utcoffset().total_seconds() == 0


@pytest.mark.parametrize("value", ["someday", "[2024, 2025]", "true"])
def test_a_front_matter_date_that_is_no_date_is_broken_front_matter(tmp_path, value):
    write(tmp_path, "a.md", f"---\nupdated: {value}\n---\n# A\n\ntext\n")

    doc = MarkdownFolder(tmp_path).read("a.md")

    assert doc.error is not None and doc.error.startswith("broken front matter: `updated`")


def git(root: Path, *args: str, when: str | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    if when:
        env |= {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.fixture
def git_wiki(tmp_path):
    """A Git work tree whose wiki folder is a subfolder: pages committed at known times, then one
    page changed without a commit and one never added. Every file's mtime is the checkout's."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    wiki = repo / "docs"
    write(wiki, "old.md", "# Old\n\nfirst\n")
    write(wiki, "people/leave.md", "# Leave\n\n25 days\n")
    write(repo, "outside.md", "# Not in the wiki folder\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first", when="2023-05-01T12:00:00+00:00")
    write(wiki, "people/leave.md", "# Leave\n\n26 days\n")
    git(repo, "commit", "-qam", "more leave", when="2024-02-10T08:00:00+00:00")
    write(wiki, "old.md", "# Old\n\nfirst, edited and not committed\n")
    write(wiki, "new.md", "# New\n\nnot added\n")
    return wiki


def test_updated_at_in_a_git_work_tree_is_the_last_commit_touching_the_page(git_wiki):
    docs = read_all(MarkdownFolder(git_wiki))

    assert docs["people/leave.md"].updated_at == datetime(2024, 2, 10, 8, 0, tzinfo=timezone.utc)
    # uncommitted changes and untracked pages have no commit that describes them: file time
    for rel in ("old.md", "new.md"):
        assert docs[rel].updated_at == datetime.fromtimestamp((git_wiki / rel).stat().st_mtime, tz=timezone.utc)


def test_a_front_matter_date_beats_the_commit_time(git_wiki):
    write(git_wiki, "dated.md", "---\nupdated: 2025-01-01\n---\n# Dated\n\ntext\n")
    git(git_wiki, "add", "dated.md")
    git(git_wiki, "commit", "-qm", "dated", when="2025-06-01T00:00:00+00:00")

    assert MarkdownFolder(git_wiki).read("dated.md").updated_at == datetime(2025, 1, 1, tzinfo=timezone.utc)


def test_a_whole_folder_costs_one_git_log_not_one_per_page(git_wiki, tmp_path, monkeypatch):
    """A `git` on PATH that records each call, then runs the real one."""
    for n in range(20):
        write(git_wiki, f"many/page-{n}.md", f"# Page {n}\n\ntext\n")
    git(git_wiki, "add", "-A")
    git(git_wiki, "commit", "-qm", "many", when="2024-06-01T00:00:00+00:00")
    calls, shim = tmp_path / "git-calls.txt", tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {shutil.which("git")} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")

    docs = read_all(MarkdownFolder(git_wiki))

    assert len(docs) == 23
    assert docs["many/page-7.md"].updated_at == datetime(2024, 6, 1, tzinfo=timezone.utc)
    logs = [line for line in calls.read_text().splitlines() if " log " in f" {line} "]
    assert len(logs) == 1


def test_a_folder_that_is_no_git_work_tree_uses_file_times(tmp_path):
    path = write(tmp_path, "a.md", "# A\n\ntext\n")
    os.utime(path, (1_700_000_000, 1_700_000_000))

    assert MarkdownFolder(tmp_path).read("a.md").updated_at == datetime.fromtimestamp(1_700_000_000, tz=timezone.utc)


def test_access_defaults_to_public_and_honours_the_access_argument(tmp_path):
    write(tmp_path, "a.md", "# A\n\ntext\n")
    write(tmp_path, "broken.md", b"\xff\xfe bad")

    public = read_all(MarkdownFolder(tmp_path))
    restricted = read_all(MarkdownFolder(tmp_path, access="hr-only"))

    assert {d.access for d in public.values()} == {PUBLIC} == {"public"}
    assert {d.access for d in restricted.values()} == {"hr-only"}  # failed documents too


# --- files that cannot be read ----------------------------------------------------------------

BAD_FILES = {
    "invalid-utf8.md": (b"# Caf\xe9\n\nLatin-1, not UTF-8.\n", "not valid UTF-8"),
    "binary.md": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", "binary"),
    "broken-yaml.md": (b"---\ntitle: [unclosed\n---\nbody\n", "front matter"),
}

EMPTY_FILES = {
    "empty.md": (b"", "empty page"),
    "whitespace.md": (b"  \n\t\n   \r\n\n", "empty page"),
    "only-front-matter.md": (b"---\ntitle: Nothing else\n---\n\n", "empty page: no text after front matter"),
}


@pytest.mark.parametrize("name", sorted(EMPTY_FILES))
def test_an_empty_page_is_skipped_with_the_reason_not_failed(tmp_path, name):
    content, reason = EMPTY_FILES[name]
    write(tmp_path, name, content)
    [doc] = read_all(MarkdownFolder(tmp_path, source="wiki")).values()
    assert (doc.error, doc.skipped, doc.text) == (None, reason, "") and doc.title


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_unreadable_file_becomes_a_document_with_an_error_and_neighbours_still_read(tmp_path, name):
    content, reason = BAD_FILES[name]
    write(tmp_path, "a-good.md", "# Good before\n\nfine\n")
    write(tmp_path, name, content)
    write(tmp_path, "z-good.md", "# Good after\n\nfine\n")

    docs = read_all(MarkdownFolder(tmp_path, source="wiki"))

    assert list(docs) == sorted(["a-good.md", name, "z-good.md"])
    bad = docs[name]
    assert bad.error and reason in bad.error
    assert bad.text == "" and bad.title == ""
    assert bad.doc_id == f"wiki:{name}"  # still identifiable, so the sync can mark it FAILED
    assert bad.updated_at is not None
    for good in ("a-good.md", "z-good.md"):
        assert docs[good].error is None
        assert docs[good].text.strip().endswith("fine")


def test_invalid_utf8_error_names_the_offending_byte(tmp_path):
    write(tmp_path, "a.md", b"ok so far \xc3\x28 then broken")

    assert MarkdownFolder(tmp_path).read("a.md").error.startswith("not valid UTF-8 (byte 10")


def test_front_matter_that_is_a_list_is_an_error(tmp_path):
    write(tmp_path, "good.md", "# Good\n\nfine\n")
    write(tmp_path, "list.md", "---\n- people\n- leave\n---\nbody text\n")

    docs = read_all(MarkdownFolder(tmp_path))

    assert docs["good.md"].error is None
    assert docs["list.md"].error and "front matter" in docs["list.md"].error
    assert docs["list.md"].text == ""


def test_file_over_the_default_size_limit_is_refused_without_reading_it(tmp_path):
    write(tmp_path, "good.md", "# Good\n\nfine\n")
    huge = tmp_path / "huge.md"
    with huge.open("wb") as fh:  # 50 MiB sparse file: real size on disk, no time writing it
        fh.truncate(50 * 1024 * 1024)
    assert huge.stat().st_size > DEFAULT_MAX_BYTES == 10 * 1024 * 1024

    docs = read_all(MarkdownFolder(tmp_path))

    assert docs["huge.md"].error == "file is 50 MiB, over the 10 MiB limit"
    assert docs["huge.md"].text == ""
    assert docs["good.md"].error is None


def test_max_bytes_argument_sets_the_size_limit(tmp_path):
    write(tmp_path, "small.md", "# Small\n\n" + "x" * 100)
    write(tmp_path, "big.md", "# Big\n\n" + "x" * 5000)

    docs = read_all(MarkdownFolder(tmp_path, max_bytes=1000))

    assert docs["small.md"].error is None
    assert "over the" in docs["big.md"].error


def test_a_file_deleted_between_listing_and_reading_becomes_an_error(tmp_path):
    write(tmp_path, "gone.md", "# Gone\n\nsoon\n")
    folder = MarkdownFolder(tmp_path)
    paths = list(folder.paths())
    (tmp_path / "gone.md").unlink()

    doc = folder.read(paths[0])

    assert doc.error and "No such file" in doc.error
    assert doc.updated_at is None and doc.text == ""


# --- symlinks ---------------------------------------------------------------------------------


@pytest.fixture
def wiki_with_outside(tmp_path) -> tuple[Path, Path]:
    root, outside = tmp_path / "wiki", tmp_path / "outside"
    write(root, "real.md", "# Real\n\nthe real page\n")
    write(outside, "secret.md", "# Secret\n\npayroll passwords\n")
    return root, outside


def test_symlink_pointing_outside_the_root_is_not_listed(wiki_with_outside):
    root, outside = wiki_with_outside
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "escape-relative.md").symlink_to("../outside/secret.md")
    (root / "outside-dir").symlink_to(outside, target_is_directory=True)

    folder = MarkdownFolder(root)

    assert list(folder.paths()) == ["real.md"]
    assert all("payroll" not in d.text for d in folder.documents())


def test_symlink_inside_the_root_is_listed_and_read(wiki_with_outside):
    root, _ = wiki_with_outside
    (root / "people").mkdir()
    (root / "people/alias.md").symlink_to("../real.md")

    docs = read_all(MarkdownFolder(root))

    assert list(docs) == ["people/alias.md", "real.md"]
    assert docs["people/alias.md"].error is None
    assert docs["people/alias.md"].text == docs["real.md"].text
    assert docs["people/alias.md"].doc_id == "wiki:people/alias.md"


def test_root_reached_through_a_symlink_still_lists_its_files(wiki_with_outside, tmp_path):
    root, _ = wiki_with_outside
    (root / "alias.md").symlink_to(root / "real.md")  # absolute link through the real path
    linked_root = tmp_path / "linked-wiki"
    linked_root.symlink_to(root, target_is_directory=True)

    assert list(MarkdownFolder(linked_root).paths()) == ["alias.md", "real.md"]


@pytest.mark.timeout(10)
def test_symlink_loops_and_dangling_links_neither_hang_nor_crash(wiki_with_outside):
    root, _ = wiki_with_outside
    (root / "loop-a.md").symlink_to("loop-b.md")
    (root / "loop-b.md").symlink_to("loop-a.md")
    (root / "self.md").symlink_to("self.md")
    (root / "dangling.md").symlink_to("does-not-exist.md")
    (root / "sub").mkdir()
    (root / "sub/again").symlink_to("..", target_is_directory=True)  # directory cycle
    (root / "sub/here").symlink_to(".", target_is_directory=True)

    folder = MarkdownFolder(root)

    assert list(folder.paths()) == ["real.md"]
    assert [d.path for d in folder.documents() if isinstance(d, SourceDocument)] == ["real.md"]
    # A looping link cannot even be told a file from a folder: it is reported, so a page indexed
    # there FAILS (tests/test_fail_closed_sync.py) rather than being deleted; a dangling one is gone.
    assert [(u.path, u.reason) for u in folder.listing().unreadable] == [
        (name, f"{name} cannot be examined: Too many levels of symbolic links")
        for name in ("loop-a.md", "loop-b.md", "self.md")]


# --- content hash -----------------------------------------------------------------------------


def test_content_hash_is_stable_across_reads_and_ignores_mtime(tmp_path):
    path = write(tmp_path, "a.md", "---\ntags: [x]\n---\n# A\n\nsame text\n")
    folder = MarkdownFolder(tmp_path)
    first = folder.read("a.md")
    os.utime(path, (1_000_000_000, 1_000_000_000))

    second = folder.read("a.md")

    assert second.updated_at != first.updated_at
    assert second.content_hash == first.content_hash
    assert len(first.content_hash) == 64


@pytest.mark.parametrize(
    "new_content",
    [
        "---\ntags: [x]\n---\n# A\n\nsame text, edited\n",  # body
        "---\ntags: [x, y]\n---\n# A\n\nsame text\n",  # tags
        "---\ntags: [x]\ntitle: Renamed\n---\n# A\n\nsame text\n",  # title
        "---\ntags: [x]\nurl: https://elsewhere.example.com/a\n---\n# A\n\nsame text\n",  # url
    ],
    ids=["text", "tags", "title", "url"],
)
def test_content_hash_changes_when_what_is_indexed_changes(tmp_path, new_content):
    path = write(tmp_path, "a.md", "---\ntags: [x]\n---\n# A\n\nsame text\n")
    folder = MarkdownFolder(tmp_path)
    before = folder.read("a.md").content_hash

    path.write_text(new_content, encoding="utf-8")

    assert folder.read("a.md").content_hash != before


def test_content_hash_differs_by_access_scope(tmp_path):
    write(tmp_path, "a.md", "# A\n\ntext\n")

    public = MarkdownFolder(tmp_path).read("a.md")
    restricted = MarkdownFolder(tmp_path, access="hr-only").read("a.md")

    assert public.content_hash != restricted.content_hash


def test_a_draft_is_skipped_with_the_reason_unless_its_source_indexes_drafts(tmp_path):
    (tmp_path / "d.md").write_text("---\ndraft: true\n---\n# Offsite\n\nThe offsite is in Lisbon.\n")
    skipped = MarkdownFolder(tmp_path).read("d.md")
    assert "draft: true" in skipped.skipped and not skipped.text and not skipped.error
    indexed = MarkdownFolder(tmp_path, index_drafts=True).read("d.md")
    assert indexed.skipped is None and "Lisbon" in indexed.text


def test_front_matter_scopes_wider_than_the_sources_access_fail_the_page(tmp_path):
    (tmp_path / "p.md").write_text('---\nscopes: ["hr", "public"]\n---\n# Pay\n\nBands are reviewed in March.\n')
    assert "only where hr is visible" in MarkdownFolder(tmp_path, access="public").read("p.md").error
    assert MarkdownFolder(tmp_path, access="hr").read("p.md").error is None
