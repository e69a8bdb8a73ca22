"""No restricted word can be learnt from a public reply: the keyword leg counts only what the
audience may see, and a page relabelled to a restricted scope is relabelled in the keyword leg too.

A rare word of a restricted page ("zorblax") must neither be offered as a typo repair
("zorblx" → "zorblax", which the "Searched for …" line would print in the channel), nor move a
document frequency, an IDF weight, a BM25 score, the gate's signals or outcome, the ranking or the
reply. The strongest check is a comparison: the same public questions against an index of its own
built without the restricted pages must give bit-for-bit the same retrieval and the same Slack
reply — whether the pages were restricted from the start, or moved there by a scope change whose
new version FAILS (the version still serving is relabelled, not re-indexed).
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from bot.knowledge import KnowledgeBase
from bot.slack.blocks import answer_blocks
from tests.support.corpora import SAMPLE_WIKI
from tests.support.databases import scratch_database
from sources import AccessConfig, ScopeRule, audience_for
from connectors.markdown import MarkdownFolder
from indexing.ingest import indexed_sources
from indexing.keyword import keyword_versions
from indexing.keyword.bm25 import Bm25Index, tokens
from indexing.search.retrieval import retrieve
from indexing.ingest.sync import sync_documents

PUBLIC_CHANNEL, HR_CHANNEL = "C0GENERAL1", "C0HRONLY1"
ACCESS = AccessConfig(scopes={"hr": ScopeRule(channels=frozenset({HR_CHANNEL}))})  # as `_sources` says it
PUBLIC = audience_for(ACCESS, PUBLIC_CHANNEL, "U0ASKER1", (), is_dm=False, is_shared=False)  # scopes ("public",)
HR = audience_for(ACCESS, HR_CHANNEL, "U0ASKER1", (), is_dm=False, is_shared=False)  # ("hr", "public")

# Two HR pages (typo repair wants a word in at least two chunks) that share the public on-call
# page's words, so that counting them would move those words' statistics.
ROTA = {
    "rota.md": "# Zorblax rota\n\nThe zorblax rota for on-call swaps is kept by the people team. A secondary "
               "on-call engineer swaps a rotation week through the zorblax form before Thursday.\n",
    "reviews.md": "# Zorblax reviews\n\nEvery zorblax review of a primary or secondary on-call engineer is "
                  "confidential and kept by the people team.\n",
}
TYPO = "who keeps the zorblx rota?"
QUESTIONS = [
    TYPO,
    "what is the zorblax form?",  # the restricted word itself
    "how does the on-call rotation work for the secondary engineer?",  # words the HR pages share
    "do we get paid extra for being on call?",
    "how do I connect to the VPN?",
]


@pytest.fixture(scope="module")
def twins(index, tmp_path_factory):
    """(with, without): two indexes of their own holding the sample wiki as "public", synced the
    same way (same batches, so the same vectors); tests add the HR pages to `with` only. Their
    own databases, since BM25's statistics are what is compared."""
    from indexing.config import IndexConfig
    from indexing.index import Index

    with scratch_database(index, "docent_kwa") as with_url, scratch_database(index, "docent_kwb") as without_url:
        made = []
        try:
            for name, url in (("kwa", with_url), ("kwb", without_url)):
                own = Index(IndexConfig(home=tmp_path_factory.mktemp(name),
                                        database_url=url.render_as_string(hide_password=False)),
                            embedder=index.embedder)
                made.append(own)
                wiki = MarkdownFolder(SAMPLE_WIKI, source="wiki", exclude=["*.jsonl"], access="public")
                report = sync_documents(own, wiki.documents(), "wiki")
                assert report.failed == 0 and report.added > 10
            yield made[0], made[1]
        finally:
            for own in made:
                own.close()


def _sync_rota(index, folder, access: str):
    return sync_documents(index, MarkdownFolder(folder, source="rota", access=access).documents(), "rota")


def _write_rota(folder, broken: bool = False):
    folder.mkdir(exist_ok=True)
    for name, text in ROTA.items():
        (folder / name).write_bytes(text.encode() + (b"\xff\xfe not UTF-8" if broken else b""))


def what_the_channel_sees(index, question: str, audience) -> dict:
    """Everything a question's asker could observe, and what it was computed from: the repair,
    the gate's terms, signals and outcome, each section's scores in order, the keyword leg's
    candidates with their scores, and the reply as Slack would get it."""
    scopes = audience.search_scopes
    found = retrieve(index, question, scopes)
    answer = KnowledgeBase(index, []).ask(question, audience)
    answer = dataclasses.replace(answer, id="-", timings_ms={})
    return {
        "repair": found.repair,
        "terms": found.terms,
        "signals": found.signals,
        "outcome": found.outcome,
        "hits": [(h.parent_id, h.score, h.cosine, h.bm25) for h in found.hits],
        "keyword": [(h.node_id, h.score) for h in index.bm25.search(found.searched, scopes, 50)],
        "answer": answer,
        "reply": json.dumps(answer_blocks(answer), sort_keys=True, default=str),
    }


def assert_as_without(with_, without, audience=PUBLIC):
    for question in QUESTIONS:
        seen = what_the_channel_sees(with_, question, audience)
        assert seen == what_the_channel_sees(without, question, audience), question


def test_a_restricted_page_changes_nothing_a_public_channel_sees(twins, tmp_path):
    with_, without = twins
    folder = tmp_path / "rota"
    _write_rota(folder)
    assert _sync_rota(with_, folder, "hr").added == 2
    try:
        zorblax = tokens("zorblax")[0]
        # Where HR pages are visible, the word is there: the typo is repaired into it...
        hr = what_the_channel_sees(with_, TYPO, HR)
        assert hr["repair"].corrections == [("zorblx", "zorblax")]
        assert hr["reply"].count("Searched for") == 1 and "zorblax" in hr["reply"]
        assert with_.bm25.doc_freq({zorblax}, ["hr", "public"])[zorblax] == 2
        # ...and the HR pages move the statistics of the words they share with public pages.
        shared = QUESTIONS[2]
        assert (what_the_channel_sees(with_, shared, HR)["keyword"]
                != what_the_channel_sees(without, shared, HR)["keyword"])
        # In a public channel: no repair, no count, and everything as if they were not indexed.
        public = what_the_channel_sees(with_, TYPO, PUBLIC)
        assert public["repair"].corrections == [] and "zorblax" not in public["reply"]
        assert with_.bm25.doc_freq({zorblax}, ["public"]) == {zorblax: 0}
        assert_as_without(with_, without)
    finally:
        indexed_sources.forget(with_, "rota")


def _sources(path, folder, access: str):
    """The sources file of `kb` for the twins: both scopes, the HR pages under `access`."""
    path.write_text(f"""
[[source]]
name = "wiki"
location = "{SAMPLE_WIKI}"
exclude = ["*.jsonl"]
access = "public"

[[source]]
name = "rota"
location = "{folder}"
access = "{access}"

[scopes.hr]
channels = ["{HR_CHANNEL}"]
""")
    return path


def kb(index, sources, *args: str):
    """The real `kb` command line, in this process, on one of the twins' databases."""
    from typer.testing import CliRunner

    from bot.cli import app

    env = {"KB_HOME": str(index.config.home), "DATABASE_URL": index.url.render_as_string(hide_password=False),
           "KB_SOURCES": str(sources), "KB_WIKI": None, "KB_LOG_LEVEL": "WARNING"}
    return CliRunner().invoke(app, list(args), env=env)


def asked(index, sources, channel: str, question: str) -> tuple[str, dict]:
    """`kb ask --as-channel`: what it prints (but its closing "… ms" line), and its `--json` answer
    without id and timings."""
    printed = kb(index, sources, "ask", "--as-channel", channel, question)
    as_json = kb(index, sources, "ask", "--json", "--as-channel", channel, question)
    assert printed.exit_code == 0 and as_json.exit_code == 0, printed.output + as_json.output
    answer = json.loads(as_json.stdout)
    del answer["id"], answer["timings_ms"]
    lines = printed.stdout.splitlines()
    assert re.fullmatch(r"\d+ ms", lines[-1]), lines[-1]
    return "\n".join(lines[:-1]), answer


def test_a_page_moved_to_hr_whose_new_version_fails_is_restricted_in_the_keyword_leg_at_once(twins, tmp_path):
    """Through `kb sync` and `kb ask --as-channel`: the sources file moves the pages to HR while
    their files turn unreadable."""
    with_, without = twins
    folder = tmp_path / "rota"
    _write_rota(folder)
    sources = _sources(tmp_path / "kb.toml", folder, "public")
    synced = kb(with_, sources, "sync", "--source", "rota")
    assert "rota: 2 added" in synced.output, synced.output
    try:
        # While public, the public channel is repaired into the word (it may be: it is public).
        printed, _ = asked(with_, sources, PUBLIC_CHANNEL, TYPO)
        assert "searched for: who keeps the zorblax rota?" in printed
        with with_.session() as s:
            version = keyword_versions.published(s)

        # The pages move to HR and their new versions cannot be read: the old ones keep serving, in HR.
        _write_rota(folder, broken=True)
        _sources(sources, folder, "hr")
        synced = kb(with_, sources, "sync", "--source", "rota")
        assert "0 updated, 0 unchanged, 0 deleted, 2 failed" in synced.output, synced.output
        with with_.session() as s:
            assert keyword_versions.published(s) > version  # the relabel was published
        assert {h.metadata["access"] for h in with_.bm25.search("zorblax", None, 10)} == {"hr"}
        assert with_.bm25.search("zorblax", ["public"], 10) == []

        # The public channel: as if the pages were not indexed at all, printed and in every detail.
        for question in QUESTIONS:
            assert asked(with_, sources, PUBLIC_CHANNEL, question) == asked(without, sources, PUBLIC_CHANNEL, question)
        printed, _ = asked(with_, sources, PUBLIC_CHANNEL, TYPO)
        assert "zorblax" not in printed.lower() and "searched for" not in printed
        assert_as_without(with_, without)
        # The HR channel: the version still serving, repair included.
        printed, answer = asked(with_, sources, HR_CHANNEL, TYPO)
        assert "searched for: who keeps the zorblax rota?" in printed
        assert answer["sources"][0]["path"] in ROTA
    finally:
        indexed_sources.forget(with_, "rota")


def test_a_relabel_reaches_the_keyword_rows_of_every_process(index, tmp_path):
    """Logged in the relabelling transaction, published by the sync, and caught up by a process
    that held the older version (re-reading only the relabelled page) and by one starting cold."""
    folder = tmp_path / "moved"
    folder.mkdir()
    (folder / "bands.md").write_text("# Quillworth bands\n\nThe quillworth bands are reviewed every March.\n")
    source = "kwa-moved"
    sync = lambda access: sync_documents(  # noqa: E731
        index, MarkdownFolder(folder, source=source, access=access).documents(), source)
    assert sync(f"{source}-public").added == 1
    term = tokens("quillworth")[0]
    replica = Bm25Index(tmp_path / "replica", index.engine, index.store)
    assert replica.doc_freq({term}, [f"{source}-public"]) == {term: 1}  # it holds this version in memory
    try:
        (folder / "bands.md").write_bytes(b"# Quillworth bands\n\n\xff\xfe broken")
        with index.session() as s:
            generation = keyword_versions.generation(s)
        report = sync(f"{source}-hr")
        assert (report.failed, report.relabelled) == (1, 1)
        with index.session() as s:
            changed = keyword_versions.changed_documents(s, generation, keyword_versions.generation(s))
            assert changed == [f"{source}:bands.md"]
            assert keyword_versions.published(s) == keyword_versions.generation(s)
        cold = Bm25Index(tmp_path / "cold", index.engine, index.store)
        for process in (index.bm25, replica, cold):
            assert process.doc_freq({term}, [f"{source}-public"]) == {term: 0}
            assert process.doc_freq({term}, [f"{source}-hr"]) == {term: 1}
            assert [h.metadata["access"] for h in process.search("quillworth bands", None, 5)
                    if h.metadata["doc_id"] == f"{source}:bands.md"] == [f"{source}-hr"]
        with index.session() as s:
            assert replica.last_tokenised == len(index.store.keyword_chunks(s, [f"{source}:bands.md"]))

        # A relabel that changes nothing (the same scope again) logs nothing.
        with index.session() as s:
            generation = keyword_versions.generation(s)
        assert sync(f"{source}-hr").relabelled == 0
        with index.session() as s:
            assert keyword_versions.generation(s) == generation
    finally:
        indexed_sources.forget(index, source)


def test_a_relabel_before_the_source_breaks_off_is_published_all_the_same(index, tmp_path):
    """A source that fails part-way (an export that cannot be read further) aborts its sync;
    pages relabelled before that point are restricted in the keyword leg nonetheless."""
    import dataclasses as dc

    folder = tmp_path / "aborted"
    folder.mkdir()
    (folder / "plan.md").write_text("# Quillmere plan\n\nThe quillmere plan is reviewed each quarter.\n")
    source = "kwa-aborted"
    [page] = MarkdownFolder(folder, source=source, access=f"{source}-public").documents()
    assert sync_documents(index, [page], source).added == 1
    term = tokens("quillmere")[0]

    def breaking_off():
        yield dc.replace(page, access=f"{source}-hr", error="not valid UTF-8")
        raise OSError("the export's next file cannot be read")

    try:
        with pytest.raises(OSError):
            sync_documents(index, breaking_off(), source)
        with index.session() as s:
            assert keyword_versions.published(s) == keyword_versions.generation(s)
        assert index.bm25.doc_freq({term}, [f"{source}-public"]) == {term: 0}
        assert index.bm25.doc_freq({term}, [f"{source}-hr"]) == {term: 1}
    finally:
        indexed_sources.forget(index, source)
