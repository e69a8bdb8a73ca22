"""Sources file, watcher, scheduler (with a second process) and crash safety, on the real index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from sources import SourceConfig, SourcesError, load_sources, parse_schedule
from indexing.storage.index_tables import DocumentRecord, ParentSection, Status, SyncRun
from indexing.search.retrieval import retrieve
from indexing.ingest.runner import SyncRunner
from indexing.ingest.scheduler import start_scheduler, stop_scheduler
from indexing.ingest.watcher import Watcher

KB = str(Path(sys.executable).parent / "kb")


def wait_for(predicate, timeout: float = 15.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


# -- the sources file ---------------------------------------------------------------------------


def test_sources_file_toml_and_yaml(tmp_path):
    (tmp_path / "wiki").mkdir()
    (tmp_path / "kb.toml").write_text(
        '[[source]]\nname = "handbook"\nlocation = "wiki"\nexclude = ["drafts/**"]\n'
        'url_template = "https://git.example/{path}"\naccess = "staff"\nschedule = "every 15m"\n'
        '[[source]]\nname = "conf"\nkind = "confluence-html"\nlocation = "/srv/export.zip"\n'
        'base_url = "https://acme.atlassian.net/wiki"\nschedule = "0 3 * * *"\n'
    )
    handbook, conf = load_sources(tmp_path / "kb.toml")
    assert handbook.location == (tmp_path / "wiki").resolve() and handbook.access == "staff"
    assert handbook.exclude == ["drafts/**"] and handbook.resolved_kind == "markdown" and handbook.watchable
    assert conf.kind == "confluence-html" and conf.base_url.endswith("/wiki") and not conf.watchable
    (tmp_path / "kb.yaml").write_text("sources:\n  - name: handbook\n    location: wiki\n")
    assert load_sources(tmp_path / "kb.yaml")[0].name == "handbook"
    assert parse_schedule("every 90s").interval_seconds == 90 and parse_schedule("every 2h").interval_seconds == 7200
    assert str(handbook.schedule) == "every 15m" and conf.schedule.interval_seconds is None


@pytest.mark.parametrize(
    "body, message",
    [
        ('[[source]]\nname = "a"\n', "location is required"),
        ('[[source]]\nname = "a"\nlocation = "."\nkind = "notion"\n', "kind must be one of"),
        ('[[source]]\nname = "a"\nlocation = "."\ncolour = "red"\n', "unknown setting(s) colour"),
        ('[[source]]\nname = "a b"\nlocation = "."\n', "must be letters"),
        ('[[source]]\nname = "a"\nlocation = "."\n[[source]]\nname = "a"\nlocation = "."\n', "unique"),
        ('[[source]]\nname = "a"\nlocation = "."\nschedule = "hourly"\n', "neither"),
        ("[[source]\n", "kb.toml"),
        ("", "no sources defined"),
    ],
)
def test_sources_file_errors_say_what_is_wrong(tmp_path, body, message):
    (tmp_path / "kb.toml").write_text(body)
    with pytest.raises(SourcesError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_sources(tmp_path / "kb.toml")


# -- the watcher --------------------------------------------------------------------------------


@pytest.fixture
def watched(index, wiki_copy):
    """The sample wiki copy as source 'watched-<n>', synced, with a running watcher."""
    name = f"watched-{os.getpid()}-{time.monotonic_ns() % 100000}"
    source = SourceConfig(name=name, location=wiki_copy, kind="markdown", access=name)
    runner = SyncRunner(index, [source])
    runner.sync(name)
    watcher = Watcher(runner, [source], debounce=0.2).start()  # returns with the watches in place
    yield source, watcher
    watcher.stop()


@pytest.mark.slow
def test_importing_the_watcher_does_not_load_watchdog():
    """watchdog is loaded when a watcher starts (`kb serve`, `kb watch`), not with the module."""
    code = "import sys, indexing.ingest.watcher; print('watchdog' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "False", run.stderr[-2000:]


def _top_paths(index, source, question):
    return [h.path for h in retrieve(index, question, scopes=[source.name], top_k=5).hits]


def _runs(index, name, trigger):
    with index.session() as s:
        runs = select(func.count()).select_from(SyncRun).where(SyncRun.source == name, SyncRun.trigger == trigger)
        return s.execute(runs).scalar_one()


def test_watcher_reflects_create_edit_rename_and_delete(index, watched):
    source, _ = watched
    root = source.location
    page = root / "it" / "aquarium.md"
    page.write_text("# Aquarium\n\nThe office aquarium is fed by the axolotl rota every Tuesday.\n")
    wait_for(lambda: "it/aquarium.md" in _top_paths(index, source, "axolotl rota aquarium"))

    page.write_text("# Aquarium\n\nThe office aquarium is fed by the narwhal rota every Thursday.\n")
    wait_for(lambda: _bm25_docs(index, source, "narwhal") == {f"{source.name}:it/aquarium.md"})
    assert _bm25_docs(index, source, "axolotl") == set()

    page.rename(root / "it" / "fish-tank.md")
    wait_for(lambda: _bm25_docs(index, source, "narwhal") == {f"{source.name}:it/fish-tank.md"})

    (root / "it" / "fish-tank.md").unlink()
    wait_for(lambda: _bm25_docs(index, source, "narwhal") == set())
    with index.session() as s:
        assert s.get(DocumentRecord, f"{source.name}:it/fish-tank.md") is None
        assert s.get(DocumentRecord, f"{source.name}:it/aquarium.md") is None


def _bm25_docs(index, source, question):
    return {h.metadata["doc_id"] for h in index.bm25.search(question, [source.name], 10)}


def test_burst_of_100_writes_is_one_sync_of_exactly_those_files(index, watched):
    source, watcher = watched
    before = _runs(index, source.name, "watcher")
    folder = source.location / "burst"
    folder.mkdir()
    for n in range(100):
        (folder / f"page-{n:03}.md").write_text(f"# Burst page {n}\n\nBurst fact number {n} is zq{n}x.\n")
    wait_for(lambda: _count_docs(index, source.name, "burst/") == 100, timeout=120)
    runs = wait_for(lambda: _finished_watcher_runs(index, source.name)[before:] or None, timeout=60)
    assert watcher.wait_idle(), "a second run, if the burst were split, is waiting or running"
    runs = _finished_watcher_runs(index, source.name)[before:]
    assert _runs(index, source.name, "watcher") == before + 1
    assert [(r.added, r.updated, r.unchanged) for r in runs] == [(100, 0, 0)]  # only the changed files were read


def _finished_watcher_runs(index, name):
    with index.session() as s:
        return s.exec(select(SyncRun).where(SyncRun.source == name, SyncRun.trigger == "watcher",
                                            SyncRun.finished_at.is_not(None)).order_by(SyncRun.id)).scalars().all()


def _count_docs(index, name, prefix):
    with index.session() as s:
        return s.execute(select(func.count()).select_from(DocumentRecord).where(
            DocumentRecord.source == name, DocumentRecord.path.startswith(prefix),
            DocumentRecord.status == Status.SUCCESS)).scalar_one()


def test_a_broken_save_leaves_the_previous_version_searchable(index, watched):
    source, _ = watched
    page = source.location / "finance" / "corporate-card.md"
    page.write_bytes(page.read_bytes() + b"\n\xff\xfe half-written")
    doc_id = f"{source.name}:finance/corporate-card.md"

    def failed():
        with index.session() as s:
            record = s.get(DocumentRecord, doc_id)
            return record is not None and record.status == Status.FAILED and record

    record = wait_for(failed)
    assert "UTF-8" in record.error
    assert "finance/corporate-card.md" in _top_paths(index, source, "monthly limit on the corporate card")


# -- the scheduler ------------------------------------------------------------------------------


def test_scheduler_runs_syncs_and_two_processes_elect_one(index, kb_home, wiki_copy, tmp_path):
    name = "scheduled"
    source = SourceConfig(name=name, location=wiki_copy, kind="markdown", access=name, schedule="every 1s")
    runner = SyncRunner(index, [source])
    runner.sync(name)  # first sync here, so the other process never needs the model
    (tmp_path / "kb.toml").write_text(f'[[source]]\nname = "{name}"\nlocation = "{wiki_copy}"\naccess = "{name}"\n'
                                      'schedule = "every 1s"\n')
    log = tmp_path / "other.log"
    scheduler = start_scheduler(runner, [source])
    with log.open("w") as out:
        watch_env = {**os.environ, "KB_HOME": str(kb_home), "KB_SOURCES": str(tmp_path / "kb.toml"), "KB_LOG_LEVEL": "INFO"}
        other = subprocess.Popen([KB, "watch"], env=watch_env,
                                 stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(lambda: _runs(index, name, "schedule") >= 3, timeout=60)
            # The other process runs its own scheduler on the same sources; it must keep skipping.
            wait_for(lambda: log.read_text().count("another Docent process is the scheduler") >= 2, timeout=120, interval=0.2)
        finally:
            stop_scheduler(scheduler)
            other.send_signal(signal.SIGTERM)
            other.wait(timeout=60)
    with index.session() as s:
        runners = set(s.execute(select(SyncRun.runner).where(SyncRun.source == name, SyncRun.trigger == "schedule")).scalars())
    assert len(runners) == 1, runners  # one process ran every scheduled sync


def test_two_sources_due_at_the_same_moment_both_run(index, tmp_path, caplog):
    """apscheduler runs due jobs on its thread pool: both sources ask the leader lock at once, and
    both must be told this process leads (one used to open a second session and be refused)."""
    import logging
    import threading

    from indexing.storage.locks import LeaderLock

    caplog.set_level(logging.INFO, logger="indexing.ingest.scheduler")
    names = ["due-a", "due-b"]
    sources = []
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "page.md").write_text(f"# {name}\n\nA page of source {name}.\n")
        sources.append(SourceConfig(name=name, location=tmp_path / name, kind="markdown", access=name, schedule="every 1s"))
    scheduler = start_scheduler(SyncRunner(index, sources), sources)  # both jobs first due 1 s from now
    try:
        wait_for(lambda: all(_runs(index, name, "schedule") >= 1 for name in names), timeout=60)
    finally:
        stop_scheduler(scheduler)
    assert not [r for r in caplog.records if "another Docent process is the scheduler" in r.getMessage()]

    # The same race, pinned down: many threads asking one fresh lock at the same instant.
    for _ in range(10):
        leader = LeaderLock(index.engine, "race-" + names[0])
        start, answers = threading.Barrier(4), []

        def ask(start=start, answers=answers, leader=leader) -> None:
            start.wait()
            answers.append(leader.is_leader())

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        leader.release()
        assert answers == [True] * 4


# -- crash safety -------------------------------------------------------------------------------


def _write_corpus(root: Path, version: str, n: int = 200) -> None:
    for i in range(n):
        (root / f"doc-{i:03}.md").write_text(f"# Crash page {i}\n\nCrash page {i} is at {version} with token cr{i}{version}.\n")


def test_a_killed_sync_leaves_old_or_new_versions_and_the_next_sync_completes(index, kb_home, tmp_path):
    name = "crash"
    root = tmp_path / "crash"
    root.mkdir()
    _write_corpus(root, "vone")
    runner = SyncRunner(index, [SourceConfig(name=name, location=root, kind="markdown", access=name)])
    first = runner.sync(name)
    assert first.added == 200
    per_page = first.embedded / 200  # texts the model embeds for one page (its chunk and its sentences)
    _write_corpus(root, "vtwo")
    child = subprocess.Popen([KB, "sync", str(root), "--source", name, "--access", name],
                             env={**os.environ, "KB_HOME": str(kb_home), "KB_SYNC_BATCH": "8"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _versions(index, name).count("vtwo") >= 20, timeout=90, interval=0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    versions = _versions(index, name)
    assert len(versions) == 200 and set(versions) == {"vone", "vtwo"}  # each page old or new, none half
    assert versions.count("vtwo") < 200  # the kill really landed mid-sync
    _assert_consistent(index, name)

    report = runner.sync(name)
    assert report.updated + report.unchanged == 200 and report.failed == 0
    # resumed, not redone: the pages written before the kill cost a hash lookup each, and nothing
    # they embedded is embedded again (vectors are committed to the cache with their batch)
    done = versions.count("vtwo")
    assert report.unchanged == done and report.embedded <= per_page * (200 - done)
    assert set(_versions(index, name)) == {"vtwo"}
    _assert_consistent(index, name)
    assert not index.bm25.stale()
    assert {h.metadata["doc_id"] for h in index.bm25.search("cr7vtwo", [name], 3)} == {f"{name}:doc-007.md"}


def _versions(index, name) -> list[str]:
    """Each page's indexed version, read from its chunks ('vone'/'vtwo'; 'mixed' if both)."""
    table = index.store.table
    with index.session() as s:
        rows = s.execute(select(table.metadata_["ref_doc_id"].astext, table.text).where(
            table.metadata_["ref_doc_id"].astext.startswith(f"{name}:"))).all()
    seen: dict[str, set[str]] = {}
    for doc_id, text in rows:
        seen.setdefault(doc_id, set()).update(v for v in ("vone", "vtwo") if v in text)
    return [next(iter(v)) if len(v) == 1 else "mixed" for v in seen.values()]


def _assert_consistent(index, name) -> None:
    """Registry, parents and chunks agree for every document of the source."""
    table = index.store.table
    with index.session() as s:
        records = {r.id: r for r in s.exec(select(DocumentRecord).where(DocumentRecord.source == name)).scalars()}
        chunks = dict(s.execute(select(table.metadata_["ref_doc_id"].astext, func.count()).where(
            table.metadata_["ref_doc_id"].astext.startswith(f"{name}:")).group_by(table.metadata_["ref_doc_id"].astext)).all())
        parents = dict(s.execute(select(ParentSection.doc_id, func.count()).where(
            ParentSection.doc_id.startswith(f"{name}:")).group_by(ParentSection.doc_id)).all())
    assert set(chunks) == set(parents) == set(records)
    for doc_id, record in records.items():
        assert record.chunk_count == chunks[doc_id], doc_id
