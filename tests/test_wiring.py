"""The composition root (`bot.wiring.Root`): built once, stopped in order, SIGTERM a normal exit.

Real parts throughout: the root opens its own index on the test run's embedded Postgres (same
data directory), a real watcher on a folder and a real scheduler.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.knowledge import sync_counts
from bot.settings import Settings
from bot.wiring import ConfigurationError, Root
from indexing.ingest.sync_records import SyncReport

REPO = Path(__file__).resolve().parents[1]


def _settings(kb_home: Path, wiki: Path, **extra) -> Settings:
    return Settings(_env_file=None, kb_home=kb_home, kb_wiki=wiki, kb_source_name="wiring", **extra)


@pytest.fixture
def wiki(tmp_path) -> Path:
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "page.md").write_text("# Wiring\n\nA page for the composition root's tests.\n")
    return folder


def test_each_part_is_built_once_and_shared(index, kb_home, wiki):
    root = Root(_settings(kb_home, wiki))
    try:
        assert root.index is root.index
        kb = root.knowledge_base()
        assert kb.index is root.index and kb.runner is root.runner  # the watcher's and scheduler's runner
        assert [s.name for s in kb.configured] == ["wiring"]
        own = root.knowledge_base(sources=[])  # kb ask / kb eval: no configured sources needed
        assert own.index is root.index and own.runner is not root.runner and own.configured == []
    finally:
        root.close()


def test_close_stops_the_watcher_then_the_scheduler_then_the_index(index, kb_home, wiki):
    root = Root(_settings(kb_home, wiki))
    opened = root.index
    seen: dict[str, tuple] = {}

    def state() -> tuple:
        watcher, scheduler = root.watcher, root.scheduler
        return (watcher._thread.is_alive(), watcher._observer.is_alive(), scheduler.running)

    # registered before indexing starts, so it runs after the watcher and scheduler stopped
    root.on_close(lambda: seen.setdefault("after indexing", (*state(), opened.chunk_count())))
    root.start_indexing()
    root.on_close(lambda: seen.setdefault("first", state()))  # started last: stopped first
    assert opened.engine.pool.checkedin() >= 1  # the index holds connections while running
    chunks = opened.chunk_count()

    root.close()

    assert seen["first"] == (True, True, True)  # nothing stopped before what was started last
    assert seen["after indexing"] == (False, False, False, chunks)  # both stopped; the index still open and answering
    assert opened.engine.pool.checkedin() == 0  # then the index let every connection go
    root.close()  # a second close does nothing


def test_a_failing_stop_does_not_keep_the_rest_running(index, kb_home, wiki, caplog):
    root = Root(_settings(kb_home, wiki))
    opened = root.index
    root.start_indexing()
    opened.chunk_count()

    def broken() -> None:
        raise RuntimeError("this part could not stop")

    root.on_close(broken, "a broken part")
    root.close()
    assert not root.watcher._thread.is_alive() and not root.scheduler.running
    assert opened.engine.pool.checkedin() == 0
    assert "stopping a broken part failed" in caplog.text


def test_configuration_mistakes_are_one_line(kb_home, tmp_path):
    broken = tmp_path / "kb.toml"
    broken.write_text('[[source]]\nname = "x"\nlocation = "/nowhere"\nkind = "markdown"\nschedul = "daily"\n')
    root = Root(Settings(_env_file=None, kb_home=kb_home, kb_sources=broken))
    with pytest.raises(ConfigurationError) as raised:
        _ = root.sources
    assert str(raised.value).startswith(str(broken)) and "\n" not in str(raised.value)
    with pytest.raises(ConfigurationError):  # the runner reads the sources before trying the database
        _ = root.runner
    unreachable = Root(Settings(_env_file=None, kb_home=kb_home, kb_wiki=tmp_path,
                                database_url="postgresql+psycopg2://nobody:x@127.0.0.1:1/none"))
    with pytest.raises(ConfigurationError) as raised:
        _ = unreachable.index
    assert "\n" not in str(raised.value)


def test_kb_watch_stops_in_order_on_sigterm_and_exits_0(index, kb_home, wiki, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "KB_SOURCES")}
    env.update(KB_HOME=str(kb_home), KB_WIKI=str(wiki), KB_SOURCE_NAME="wiring", KB_LOG_LEVEL="INFO",
               PYTHONPATH=str(REPO))
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        child = subprocess.Popen([sys.executable, "-m", "bot.cli", "watch"], env=env, cwd=tmp_path,
                                 stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "Ctrl-C to stop" not in log.read_text():
            assert child.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "kb watch did not start"
            time.sleep(0.1)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 0, log.read_text()[-2000:]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
    text = log.read_text()
    assert "Traceback" not in text and "failed" not in text, text[-2000:]


def test_one_sync_counts_line():
    report = SyncReport(source="s", added=1, updated=2, unchanged=3, deleted=4, failed=5)
    assert sync_counts(report) == "1 added, 2 updated, 3 unchanged, 4 deleted, 5 failed, 0 skipped"
    assert sync_counts(report, zero_skipped=False) == "1 added, 2 updated, 3 unchanged, 4 deleted, 5 failed"
    report.skipped = 6
    assert sync_counts(report, zero_skipped=False).endswith("5 failed, 6 skipped")


def test_defaults_are_written_once_and_the_test_index_runs_what_kb_serve_ships(index, monkeypatch):
    """`RerankConfig.backend` defaulted to "off" and `KB_RERANK` to "builtin": the test index and
    the Slack fixtures ran without the reader `kb serve` ships. Every setting that maps onto a
    configuration field now takes its default from that field, and the test index has the reader."""
    import dataclasses

    from bot.settings import Settings
    from indexing.config import IndexConfig, RerankConfig

    for name in [n for n in Settings.model_fields if n.startswith("kb_")]:
        monkeypatch.delenv(name.upper(), raising=False)
    shipped = Settings(_env_file=None, kb_home=index.config.home).index_config()
    plain = IndexConfig(home=index.config.home)
    for field in dataclasses.fields(IndexConfig):
        if field.name not in ("home", "database_url", "synonyms"):
            assert getattr(shipped, field.name) == getattr(plain, field.name), field.name
    assert shipped.rerank == RerankConfig() and RerankConfig().backend == "builtin"
    assert shipped.embed_backend == "onnx" and type(index.embedder).__name__ == "OnnxEmbedder"
    assert index.rerank is not None and index.rerank.name == "builtin:reader"
