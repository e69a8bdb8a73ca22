"""Pages read as GitHub reads them: sections, heading paths, texts and anchors from one parser.

Each fixture page under tests/fixtures/markdown/ holds one case a regex reading got wrong (or
might): it is read through the real Markdown connector and chunked by the real chunker, and its
sections' heading paths, anchors and texts are compared whole. No index, no model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.commonmark import github_slug, heading_anchors, parse, strip_headings
from connectors.document import SourceDocument
from connectors.markdown import MarkdownFolder
from indexing.ingest.chunking import chunk_document

FIXTURES = Path(__file__).parent / "fixtures" / "markdown"
BASE = "https://wiki.example.com"


def sections(name: str) -> list[tuple[list[str], str, str]]:
    """(heading path, URL fragment, text) of every parent section of a fixture page."""
    doc = MarkdownFolder(FIXTURES, url_template=BASE + "/{path}").read(name)
    assert doc.error is None
    return [(list(p.heading_path), p.url.partition("#")[2], p.text) for p in chunk_document(doc)]


def test_a_four_backtick_fence_keeps_its_three_backtick_lines_and_headings_inside():
    assert sections("four-backtick-fence.md") == [
        ([], "writing-docs", "# Writing docs\n\nHow to show a code block inside a code block."),
        (["Nesting fences"], "nesting-fences",
         "## Nesting fences\n\nUse four backticks around an example that itself has a fence:\n\n"
         "````markdown\nHere is a script:\n\n```bash\n# install the tools\nmake setup\n```\n\n"
         "## Not a heading, still the example\n````"),
        (["After the example"], "after-the-example",
         "## After the example\n\nThe section after the four-backtick block is its own section."),
    ]


def test_a_comment_inside_a_code_block_is_no_section():
    assert sections("comment-in-code.md") == [
        (["Steps"], "steps",
         "## Steps\n\nRun the deploy script:\n\n```bash\n# first, log in\nkubectl login\n# then roll out\n"
         "kubectl rollout restart deploy/quokka\n```"),
        (["Rollback"], "rollback", "## Rollback\n\nRun `kubectl rollout undo`."),
    ]


def test_a_tilde_fence_holds_backtick_lines_and_comments():
    assert sections("tilde-fence.md") == [
        (["Comments"], "comments",
         "## Comments\n\n~~~python\n# a comment, not a heading\n```\n# still inside the tilde fence\n~~~"),
        (["Imports"], "imports", "## Imports\n\nPut imports at the top."),
    ]


def test_setext_headings_are_headings_and_the_first_is_the_title():
    doc = MarkdownFolder(FIXTURES).read("setext-headings.md")
    assert doc.title == "Travel policy"
    assert sections("setext-headings.md") == [
        ([], "travel-policy", "Travel policy\n=============\n\nBook travel through the portal."),
        (["Flights"], "flights", "Flights\n-------\n\nEconomy for flights under six hours."),
        (["Hotels"], "hotels", "Hotels\n------\n\nUp to 150 EUR a night."),
    ]


def test_indented_code_is_code():
    assert sections("indented-code.md") == [
        (["Prompts"], "prompts", "## Prompts\n\nAn indented block is code too:\n\n    # this is a root prompt\n    whoami"),
        (["Pipes"], "pipes", "## Pipes\n\nJoin commands with a pipe."),
    ]


def test_hash_lines_inside_html_blocks_and_comments_are_html():
    assert sections("html-block.md") == [
        (["Door codes"], "door-codes",
         "## Door codes\n\n<details>\n<summary>Codes</summary>\n# 4711 is the front door\n</details>\n\n"
         "<!--\n# TODO: move the codes to the vault\n-->"),
        (["Parking"], "parking", "## Parking\n\nPark in level two."),
    ]


def test_a_table_stays_whole_in_its_section():
    assert sections("table.md") == [
        (["Rota"], "rota",
         "## Rota\n\n| # | Week | Engineer |\n|---|------|----------|\n| 1 | 1-7 | Ada |\n| 2 | 8-14 | Grace |"),
        (["Escalation"], "escalation", "## Escalation\n\nPage the manager after 30 minutes."),
    ]


def test_front_matter_is_no_section_and_its_url_is_the_citation_link():
    doc = MarkdownFolder(FIXTURES).read("front-matter.md")
    assert (doc.title, doc.url, doc.metadata["tags"]) == ("Expense policy", "https://handbook.example.com/finance/expenses",
                                                         ["finance", "money"])
    parents = chunk_document(doc)
    assert [(list(p.heading_path), p.url, p.text) for p in parents] == [
        ([], "https://handbook.example.com/finance/expenses", "Claim expenses within 30 days."),
        (["Receipts"], "https://handbook.example.com/finance/expenses#receipts", "## Receipts\n\nKeep every receipt."),
    ]


def test_the_chunker_itself_skips_front_matter_left_in_a_text():
    """A document from any connector may still carry its front matter: its YAML (with a `# comment`
    line, and `---` under a line that would otherwise be a setext heading) is not page text."""
    text = "---\ntitle: x\n# owner: finance\n---\nIntro.\n\n## Part\n\nBody.\n"
    parents = chunk_document(SourceDocument(source="s", path="p.md", title="P", text=text, url=BASE + "/p"))
    assert [(list(p.heading_path), p.url, p.text) for p in parents] == [
        ([], BASE + "/p", "Intro."),
        (["Part"], BASE + "/p#part", "## Part\n\nBody."),
    ]


def test_a_heading_path_keeps_its_stored_forms():
    """One type from chunker to reply; the forms stored in the index and the query log stay as
    they were: a JSON list (parent_sections) and the headings joined by " > " (chunk metadata,
    a source's JSON), read back by its one split."""
    import json

    from indexing.values.heading_path import HeadingPath

    text = "# Benefits\n\n## Time off\n\n### Parental leave\n\nSixteen weeks.\n"
    parent = chunk_document(SourceDocument(source="s", path="b.md", title="Benefits", text=text, url=BASE + "/b"))[-1]
    assert parent.heading_path == HeadingPath(["Time off", "Parental leave"])
    assert str(parent.heading_path) == parent.heading == "Time off > Parental leave"
    assert json.dumps(parent.heading_path) == '["Time off", "Parental leave"]'
    assert HeadingPath.parse(parent.heading) == parent.heading_path
    assert HeadingPath.parse("") == HeadingPath.parse(None) == HeadingPath() and str(HeadingPath()) == ""


def test_repeated_headings_get_githubs_numbered_anchors():
    assert sections("duplicate-headings.md") == [
        (["Example"], "example", "## Example\n\nThe first example."),
        (["Example"], "example-1", "## Example\n\nThe second example."),
        (["Example 1"], "example-1-1", "## Example 1\n\nA heading whose own slug is already taken."),
        (["Q&A: who approves?"], "qa-who-approves", "## Q&A: who approves?\n\nYour manager approves."),
    ]


def test_anchors_count_every_heading_of_the_page_as_github_does():
    """Headings in a list item or a quote are no section boundary, but GitHub gives them ids, so
    they take their number; an empty heading gets no anchor; the title H1 counts too."""
    text = "# Notes\n\n- ## Notes\n\n> ## Notes\n\n## Notes\n\nText.\n\n#\n\nMore.\n"
    assert heading_anchors(text) == ["notes", "notes-1", "notes-2", "notes-3", ""]
    parents = chunk_document(SourceDocument(source="s", path="n.md", title="Notes", text=text, url=BASE + "/n"))
    assert [(list(p.heading_path), p.url.partition("#")[2]) for p in parents] == [
        ([], "notes"), (["Notes"], "notes-3"), ([""], ""),
    ]


# GitHub's rules, as github-slugger's fixtures (generated by rendering on github.com) record them.
@pytest.mark.parametrize(("heading", "slug"), [
    ("Parental leave (UK)", "parental-leave-uk"),
    ("Q&A: who approves?", "qa-who-approves"),
    ("heading with a - dash", "heading-with-a---dash"),
    ("heading with an _ underscore", "heading-with-an-_-underscore"),
    ("exchange.bind_headers(exchange, routing [, bindCallback])", "exchangebind_headersexchange-routing--bindcallback"),
    ("apostrophe’s should be trimmed", "apostrophes-should-be-trimmed"),
    ("I ♥ unicode", "i--unicode"),
    ("en–dash", "endash"),
    ("😄 unicode emoji", "-unicode-emoji"),
    ("Привет non-latin 你好", "привет-non-latin-你好"),
    ("申请 年假（中国）", "申请-年假中国"),
    ("हिन्दी भाषा", "हिन्दी-भाषा"),  # combining vowel signs are kept (Python's \w would drop them)
    ("Ⓐ circled", "ⓐ-circled"),  # a symbol that is also a letter is kept, lower-cased
    ("a\u00a0b c", "ab-c"),  # a no-break space is removed, not turned into a dash
    ("½ price", "-price"),  # other numbers go; decimal digits stay
])
def test_github_slug_follows_githubs_character_rules(heading, slug):
    assert github_slug(heading) == slug


def test_repeated_slugs_are_numbered_skipping_taken_ones():
    headings = ["echo", "echo", "echo 1", "echo-1", "echo", "foxtrot-1", "foxtrot", "foxtrot"]
    text = "\n\n".join(f"## {h}" for h in headings)
    assert heading_anchors(text) == ["echo", "echo-1", "echo-1-1", "echo-1-2", "echo-2", "foxtrot-1", "foxtrot", "foxtrot-2"]


def test_anchor_text_is_the_rendered_text_of_the_heading():
    """Markup is not text (emphasis, code ticks, link targets, HTML tags); an image's alt text is
    shown in the heading path but, as on GitHub, is not part of the anchor."""
    page = parse("# The *new* `kb` [CLI](https://x.test) <kbd>Ctrl</kbd> ![logo](l.png) &amp; more\n")
    [heading] = page.headings
    assert heading.text == "The new kb CLI Ctrl logo & more"
    assert heading.anchor == "the-new-kb-cli-ctrl---more"  # three spaces around the image and the &


def test_closing_hashes_go_but_a_hash_glued_to_a_word_stays():
    page = parse("## Time off ##\n\n## C#\n\n## Issue #42\n")
    assert [(h.text, h.anchor) for h in page.headings] == [("Time off", "time-off"), ("C#", "c"), ("Issue #42", "issue-42")]


def test_strip_headings_drops_heading_lines_but_not_code_comments():
    passage = "## Steps\n\n```bash\n# log in\nkubectl login\n```\n\n\n\nSetext\n------\nDone.\n"
    assert strip_headings(passage) == "```bash\n# log in\nkubectl login\n```\n\nDone."


def test_slack_rendering_reads_fences_and_headings_as_the_chunker_does():
    from bot.slack.mrkdwn import to_mrkdwn

    text = (FIXTURES / "four-backtick-fence.md").read_text() + "\nTravel\n======\n\n~~~\n# tilde <code>\n"
    assert to_mrkdwn(text) == (
        "*Writing docs*\n\nHow to show a code block inside a code block.\n\n*Nesting fences*\n\n"
        "Use four backticks around an example that itself has a fence:\n\n"
        "```\nHere is a script:\n\n```bash\n# install the tools\nmake setup\n```\n\n## Not a heading, still the example\n```\n\n"
        "*After the example*\n\nThe section after the four-backtick block is its own section.\n\n"
        "*Travel*\n\n```\n# tilde &lt;code&gt;\n```"  # an unclosed fence is closed for Slack
    )
