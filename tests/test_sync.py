"""Incremental sync against the real index: hashes, batching, deletes, failures, old versions."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from sqlalchemy import select
from sqlmodel import col

from connectors.markdown import MarkdownFolder
from indexing.storage.index_tables import DocumentRecord, ParentSection, Status, SyncRun
from indexing.search.retrieval import retrieve
from indexing.ingest.sync import sync_documents


def _sync(index, root, source):
    return sync_documents(index, MarkdownFolder(root, source=source, access=source).documents(), source)


def _paths(index, question, source):
    return [h.path for h in retrieve(index, question, scopes=[source], top_k=10).hits]


def _chunk_rows(index, doc_id):
    table = index.store.table
    with index.session() as s:
        return s.execute(select(table.node_id).where(table.metadata_["ref_doc_id"].astext == doc_id)).all()


def _texts_asked_for_vectors(monkeypatch) -> list[str]:
    """Every text a sync asks a vector for, whether the vector cache has it or the model makes it.

    `report.embedded` counts only the model's share, and the session's cache already holds every
    text of the sample wiki (other tests synced it): a sync that re-embedded unchanged pages would
    still report 0."""
    from indexing.vectors import embedding

    asked: list[str] = []
    original = embedding.embed_with_cache

    def spy(session, embedder, texts):
        asked.extend(texts)
        return original(session, embedder, texts)

    for module in list(sys.modules.values()):
        if getattr(module, "embed_with_cache", None) is original:  # every module that imported it
            monkeypatch.setattr(module, "embed_with_cache", spy)
    return asked


def test_resync_of_unchanged_wiki_embeds_nothing(index, wiki_copy, monkeypatch):
    asked = _texts_asked_for_vectors(monkeypatch)
    first = _sync(index, wiki_copy, "inc-unchanged")
    assert first.added == 16 and first.failed == 0 and first.chunks > 50
    assert len(asked) >= first.chunks  # children and the lead's sentences
    asked.clear()
    second = _sync(index, wiki_copy, "inc-unchanged")
    assert (second.added, second.updated, second.deleted, second.unchanged) == (0, 0, 0, 16)
    assert second.embedded == 0 and asked == []  # no vector asked for, not even from the cache


def test_a_new_chunker_re_indexes_every_page_on_the_next_sync(index, wiki_copy, monkeypatch):
    """Pages that did not change are re-chunked too when the chunker changes (else they would stay
    cut the old way until edited); child texts that come out the same keep their cached vectors."""
    _sync(index, wiki_copy, "inc-chunker")
    monkeypatch.setattr("indexing.ingest.sync.CHUNKING_VERSION", "next")  # what a release with a new chunker sets
    report = _sync(index, wiki_copy, "inc-chunker")
    assert (report.updated, report.unchanged, report.failed) == (16, 0, 0)
    assert report.embedded == 0
    again = _sync(index, wiki_copy, "inc-chunker")
    assert (again.updated, again.unchanged) == (0, 16)
    with index.session() as s:
        statuses = {r.status for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == "inc-chunker")).scalars()}
    assert statuses == {Status.SUCCESS}
    assert _paths(index, "vpn server address and port", "inc-chunker")[0] == "it/vpn.md"


def test_editing_one_file_re_embeds_only_its_new_text(index, wiki_copy):
    _sync(index, wiki_copy, "inc-edit")
    page = wiki_copy / "it" / "vpn.md"
    page.write_text(page.read_text() + "\n\n## Zebra gateway\n\nThe zebra gateway is quokka-7 on port 4411.\n")
    before = index.embedder.texts_embedded
    report = _sync(index, wiki_copy, "inc-edit")
    assert (report.updated, report.unchanged, report.added) == (1, 15, 0)
    # Only the edited page's changed children reach the model; its untouched sections come from the cache.
    assert 1 <= index.embedder.texts_embedded - before == report.embedded <= 3
    assert _paths(index, "zebra gateway quokka-7 port", "inc-edit")[0] == "it/vpn.md"


def test_deleted_file_leaves_every_store(index, wiki_copy):
    _sync(index, wiki_copy, "inc-delete")
    doc_id = "inc-delete:engineering/on-call.md"
    assert _chunk_rows(index, doc_id)
    (wiki_copy / "engineering" / "on-call.md").unlink()
    report = _sync(index, wiki_copy, "inc-delete")
    assert report.deleted == 1
    assert _chunk_rows(index, doc_id) == []
    with index.session() as s:
        assert s.get(DocumentRecord, doc_id) is None
        assert s.exec(select(ParentSection).where(col(ParentSection.doc_id) == doc_id)).all() == []
    bm25_docs = {h.metadata["doc_id"] for h in index.bm25.search("on-call Beacon escalation pager", ["inc-delete"], 50)}
    assert doc_id not in bm25_docs
    assert "engineering/on-call.md" not in _paths(index, "who do I escalate to when on call pages go unanswered", "inc-delete")


def test_bad_files_fail_alone_and_the_sync_goes_on(index, wiki_copy):
    (wiki_copy / "broken.md").write_bytes(b"# Broken\n\xff\xfe not utf-8 \xc3\x28")
    (wiki_copy / "binary.md").write_bytes(b"\x00\x01\x02PNG\x00" * 100)
    (wiki_copy / "empty.md").write_text("")
    (wiki_copy / "bad-front-matter.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (wiki_copy / "placeholder.md").write_text("---\ntitle: To be written\n---\n")
    report = _sync(index, wiki_copy, "inc-bad")
    assert (report.added, report.failed, report.skipped) == (16, 3, 2)
    with index.session() as s:
        rows = s.exec(select(DocumentRecord).where(DocumentRecord.source == "inc-bad")).scalars().all()
    failed = {r.path: r.error for r in rows if r.status == Status.FAILED}
    skipped = {r.path: r.error for r in rows if r.status == Status.SKIPPED}
    assert set(failed) == {"broken.md", "binary.md", "bad-front-matter.md"}
    assert "UTF-8" in failed["broken.md"] and "binary" in failed["binary.md"] and "front matter" in failed["bad-front-matter.md"]
    # Empty is not broken: placeholder pages are SKIPPED with the reason, and stay so for free.
    assert skipped == {"empty.md": "empty page", "placeholder.md": "empty page: no text after front matter"}
    again = _sync(index, wiki_copy, "inc-bad")
    assert (again.unchanged, again.skipped, again.failed, again.embedded) == (16, 2, 3, 0)


def test_a_page_that_breaks_keeps_serving_its_previous_version(index, wiki_copy):
    _sync(index, wiki_copy, "inc-keep")
    page = wiki_copy / "finance" / "corporate-card.md"
    page.write_bytes(page.read_bytes() + b"\n\xff\xfe broken bytes")
    report = _sync(index, wiki_copy, "inc-keep")
    assert report.failed == 1 and report.deleted == 0
    with index.session() as s:
        record = s.get(DocumentRecord, "inc-keep:finance/corporate-card.md")
    assert record.status == Status.FAILED and "UTF-8" in record.error and record.chunk_count > 0
    assert _chunk_rows(index, record.id)
    assert "finance/corporate-card.md" in _paths(index, "monthly limit on the corporate card", "inc-keep")
    # Fixed again: the next sync indexes it and clears the failure.
    page.write_bytes(page.read_bytes().replace(b"\n\xff\xfe broken bytes", b""))
    assert _sync(index, wiki_copy, "inc-keep").updated == 1


def test_sync_runs_are_recorded(index, wiki_copy):
    _sync(index, wiki_copy, "inc-runs")
    with index.session() as s:
        run = s.exec(select(SyncRun).where(SyncRun.source == "inc-runs")).scalars().one()
    assert run.finished_at is not None and run.added == 16 and run.trigger == "cli"


def _openmp_wait_policy(wait_policy: str | None) -> str:
    """The wait policy the OpenMP runtime under torch really starts with, in a fresh process
    whose environment sets OMP_WAIT_POLICY to `wait_policy` (None: not at all)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if wait_policy is not None:
        env["OMP_WAIT_POLICY"] = wait_policy
    code = "from indexing.vectors.embedding import TorchEmbedder; TorchEmbedder().embed_query('hello')"
    run = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_DISPLAY_ENV": "TRUE"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r"OMP_WAIT_POLICY = '(\w+)'", run.stdout + run.stderr)
    assert found, "the OpenMP runtime printed no environment"
    return found.group(1)


@pytest.mark.slow
def test_embedding_threads_sleep_instead_of_spinning_unless_the_operator_says_otherwise():
    """Spinning OpenMP threads gave question embedding a 300-500 ms p95 whenever another process
    kept a core busy (docs/benchmarks.md): Docent asks for PASSIVE before torch loads; an
    operator's explicit setting wins."""
    assert _openmp_wait_policy(None) == "PASSIVE"
    assert _openmp_wait_policy("ACTIVE") == "ACTIVE"
