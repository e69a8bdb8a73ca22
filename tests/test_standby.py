"""Reading from a hot standby (`DATABASE_READ_URL`), with two real Postgres servers: a primary and a
streaming standby of it made from the embedded server's binaries (tests/support/standby.py).

- a question is answered from the standby: with the primary stopped, the same answer;
- a Slack question's reads go to the standby and its question log row to the primary (each
  engine's statements observed);
- a page synced on the primary is answerable through a replica reading the standby, keyword leg
  included, within a bounded time and before anyone asks;
- a notice of a keyword version that outruns the standby's replay is not served early, and is
  caught up the moment the standby replays it, without a question;
- `kb status` names the server answering reads; a read URL that is unreachable, unreadable, another
  cluster or another database stops `kb` and `kb serve` with one line, no password in it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, text

from tests.support.corpora import REPO, SAMPLE_WIKI
from tests.support.replica_worker import Replica
from tests.support.slack_harness import PARENTAL, bot_settings, mention, new_channel, posts_in, query_rows, running_bot
from tests.support.standby import Pair, free_port, missing, primary_and_standby

from bot.knowledge import KnowledgeBase
from bot.metrics import exposition
from bot.serve import StartupError, say_where_reads_go, serve, start_listening
from bot.settings import Settings
from bot.wiring import ConfigurationError, Root
from sources import Audience
from connectors.markdown import MarkdownFolder
from indexing.config import IndexConfig
from indexing.index import Index
from indexing.ingest.sync import sync_documents
from indexing.keyword import keyword_versions

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(missing() is not None, reason=f"no primary and standby here: {missing()}")]

PASSWORD = "s3cret-standby-pw"
FOLLOW_SECONDS = 10.0  # a published version is held by a replica reading the standby within this


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with primary_and_standby() as made:
        yield made


@pytest.fixture(scope="module")
def writer(pair, index, tmp_path_factory) -> Iterator[Index]:
    """An index on the primary alone (what `kb sync` opens): the sample wiki synced as source
    "sample", scope "sample", with the session's loaded model."""
    opened = Index(IndexConfig(home=tmp_path_factory.mktemp("writer"), database_url=pair.primary.url_text()),
                   embedder=index.embedder)
    wiki = MarkdownFolder(SAMPLE_WIKI, source="sample", exclude=["*.jsonl"], access="sample")
    assert sync_documents(opened, wiki.documents(), "sample").added > 10
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def publisher(pair, writer, tmp_path_factory) -> Iterator[Replica]:
    """Another Docent process on the primary alone, which syncs on command: its keyword
    publications reach the replica as they would from `kb sync` or another `kb serve` (a process
    ignores its own notices, so the syncing process cannot be the test's)."""
    started = Replica(tmp_path_factory.mktemp("publisher"), pair.primary.url_text(), "http://127.0.0.1:9/api/")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def replica(pair, writer, index, tmp_path_factory) -> Iterator[Index]:
    """A serving replica as `kb serve` opens one with both URLs set, listening for notices."""
    pair.wait_replayed()
    opened = Index(IndexConfig(home=tmp_path_factory.mktemp("replica"), database_url=pair.primary.url_text(PASSWORD),
                               database_read_url=pair.standby.url_text(PASSWORD)), embedder=index.embedder)
    listener = start_listening(opened)
    assert listener.connected.wait(10), "the replica listens on the primary"
    yield opened
    listener.stop()
    opened.close()


def _published(index: Index) -> int:
    with index.session() as s:
        return keyword_versions.published(s) or 0


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value


def _sync(publisher: Replica, folder: Path, source: str) -> dict:
    return publisher.ask(op="sync", path=str(folder), source=source)


# -- reads from the standby --------------------------------------------------------------------


def test_a_question_is_answered_from_the_standby_with_the_primary_stopped(pair, replica):
    reads = replica.reads()
    assert reads.standby and reads.in_recovery and f":{pair.standby.port}/" in reads.location
    kb = KnowledgeBase(replica)
    before = kb.ask(PARENTAL)
    assert before.found and before.sources[0].path == "people/leave.md"

    pair.primary.stop()
    try:
        assert replica.chunk_count() > 0  # the health check's read, too
        during = kb.ask(PARENTAL)
    finally:
        pair.primary.start()
    assert during.outcome == before.outcome
    assert [s.doc_id for s in during.sources] == [s.doc_id for s in before.sources]
    assert during.text == before.text


def test_a_slack_question_reads_from_the_standby_and_logs_on_the_primary(pair, replica, slack):
    """Every statement each engine runs while Slack's question is answered and logged: the index's
    tables are read through the standby's engine only, and the log row is written through the
    primary's — and lands there."""
    statements: dict[str, list[str]] = {"primary": [], "standby": []}

    def recorder(name: str):
        def record(conn, cursor, statement, parameters, context, executemany) -> None:
            statements[name].append(" ".join(statement.split()).lower())
        return record

    hooks = [(replica.engine, recorder("primary")), (replica.read_engine, recorder("standby"))]
    for engine, hook in hooks:
        event.listen(engine, "before_cursor_execute", hook)
    try:
        with running_bot(bot_settings(slack), replica) as bot:
            channel = new_channel()
            asked = mention(PARENTAL, channel)
            assert bot.event(asked).status_code == 200
            post = slack.wait_for(lambda: posts_in(slack, channel))[0]
            [row] = _wait_for(lambda: query_rows(replica, message_ts=asked["ts"]), 20, "the question log row")
    finally:
        for engine, hook in hooks:
            event.remove(engine, "before_cursor_execute", hook)

    assert "16 weeks" in post.params["text"]
    assert row.found and row.doc_ids[0] == "sample:people/leave.md"
    index_tables = ("data_docent_chunks", "parent_sections", "documents", "sentence_vectors")
    for table in index_tables:
        assert any(f"from {table}" in s or f"from public.{table}" in s for s in statements["standby"]), table
        assert not any(f"from {table}" in s or f"from public.{table}" in s for s in statements["primary"]), table
    assert any(s.startswith("insert into query_log") for s in statements["primary"])
    assert not any(s.startswith(("insert", "update", "delete")) for s in statements["standby"])
    logged = pair.primary.sql(f"SELECT question FROM query_log WHERE message_ts = '{asked['ts']}'")
    assert logged == [PARENTAL]


# -- freshness through the standby ---------------------------------------------------------------


def test_a_page_synced_on_the_primary_is_answered_through_the_standby_keyword_leg_included(publisher, writer, replica,
                                                                                            tmp_path):
    folder = tmp_path / "fresh"
    folder.mkdir()
    (folder / "turbine.md").write_text("# Zephyrine turbine\n\nThe zephyrine turbine manual is kept in room 7741, "
                                       "on the shelf beside the fire door.\n")
    scope = Audience.limited(["standby-fresh"])
    kb = KnowledgeBase(replica)
    kb.ask("where is the zephyrine turbine manual?", scope)  # the replica holds a version before the sync
    assert not replica.bm25.behind
    assert _sync(publisher, folder, "standby-fresh")["added"] == 1
    synced, version = time.monotonic(), _published(writer)

    _wait_for(lambda: (replica.bm25.version or 0) >= version, FOLLOW_SECONDS, "the replica to hold the new version")
    assert time.monotonic() - synced < FOLLOW_SECONDS  # on the notice, before anyone asked
    hits = replica.bm25.search("zephyrine turbine", ["standby-fresh"], 5)
    assert [h.metadata["doc_id"] for h in hits] == ["standby-fresh:turbine.md"]
    answer = kb.ask("where is the zephyrine turbine manual?", scope)
    assert answer.found and answer.sources[0].doc_id == "standby-fresh:turbine.md"


def test_a_notice_ahead_of_the_standby_is_served_once_the_standby_has_replayed_it(pair, publisher, writer, replica,
                                                                                   tmp_path):
    folder = tmp_path / "lag"
    folder.mkdir()
    page = folder / "valves.md"
    page.write_text("# Valves\n\nThe brass valve is serviced every spring.\n")
    _sync(publisher, folder, "standby-lag")
    _wait_for(lambda: (replica.bm25.version or 0) >= _published(writer), FOLLOW_SECONDS, "the first version")
    held = replica.bm25.version
    assert held is not None

    pair.pause_replay()
    try:
        page.write_text(page.read_text() + "\n## Heliotrope valve\n\nThe heliotrope valve is serviced in autumn.\n")
        assert _sync(publisher, folder, "standby-lag")["updated"] == 1
        version = _published(writer)
        assert version > held
        _wait_for(lambda: replica.bm25.behind, FOLLOW_SECONDS, "the notice of the new version")  # heard, not there
        time.sleep(1.5)  # the follower retries meanwhile
        kb = KnowledgeBase(replica)
        kb.ask("when is the heliotrope valve serviced?", Audience.limited(["standby-lag"]))  # a question, too
        assert replica.bm25.version == held, "a version the standby has not replayed is not served"
        assert replica.bm25.search("heliotrope", ["standby-lag"], 5) == []
        assert replica.reads().behind_bytes > 0  # what kb status and /metrics show
        assert re.search(r"^docent_standby_behind_bytes [1-9]", exposition(replica).decode(), re.MULTILINE)
    finally:
        pair.resume_replay()

    _wait_for(lambda: replica.bm25.version == version, FOLLOW_SECONDS, "the replayed version, without a question")
    assert not replica.bm25.behind
    hits = replica.bm25.search("heliotrope", ["standby-lag"], 5)
    assert [h.metadata["doc_id"] for h in hits] == ["standby-lag:valves.md"]


# -- what says where reads go, and what stops -----------------------------------------------------


def test_kb_serve_says_at_start_which_server_answers_reads(pair, replica, caplog):
    with caplog.at_level(logging.WARNING, logger="bot.serve"):
        say_where_reads_go(replica)
    [line] = [r.getMessage() for r in caplog.records if r.name == "bot.serve"]
    assert line.startswith(f"questions read from postgresql+psycopg2://postgres:***@127.0.0.1:{pair.standby.port}/docent "
                           "(hot standby, ")
    assert line.endswith(f"writes and notices go to postgresql+psycopg2://postgres:***@127.0.0.1:{pair.primary.port}/docent")


def _kb(*args: str, env: dict) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_READ_URL", "KB_SOURCES")}
    environment.update({"PYTHONPATH": str(REPO), "KB_LOG_LEVEL": "WARNING", **env})
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True, env=environment,
                          cwd=REPO, timeout=300)


def test_kb_status_names_the_server_answering_reads(pair, writer, tmp_path):
    pair.wait_replayed()
    env = {"KB_HOME": str(tmp_path), "DATABASE_URL": pair.primary.url_text(PASSWORD),
           "DATABASE_READ_URL": pair.standby.url_text(PASSWORD)}
    shown = _kb("status", env=env)
    assert shown.returncode == 0, shown.stderr
    [reads] = [line for line in shown.stdout.splitlines() if line.startswith("reads:")]
    assert reads.startswith(f"reads:     postgresql+psycopg2://postgres:***@127.0.0.1:{pair.standby.port}/docent "
                            "(hot standby, ")
    assert reads.endswith(" bytes of WAL behind the primary)")
    assert PASSWORD not in shown.stdout + shown.stderr
    as_json = json.loads(_kb("status", "--json", env=env).stdout)
    assert as_json["reads"]["standby"] and as_json["reads"]["in_recovery"]
    assert sum(as_json["documents"].values()) == _documents(writer)  # counted on the standby, all replayed

    alone = _kb("status", env={"KB_HOME": str(tmp_path), "DATABASE_URL": pair.primary.url_text()})
    assert "reads:     the primary (no DATABASE_READ_URL)" in alone.stdout.splitlines()


def _documents(index: Index) -> int:
    with index.session() as s:
        return s.execute(text("SELECT count(*) FROM documents")).scalar_one()


def test_an_unreachable_standby_stops_kb_with_one_error_line(pair, tmp_path):
    port = free_port()
    env = {"KB_HOME": str(tmp_path), "DATABASE_URL": pair.primary.url_text(PASSWORD),
           "DATABASE_READ_URL": pair.standby.url.set(port=port, password=PASSWORD).render_as_string(hide_password=False)}
    failed = _kb("status", env=env)
    assert failed.returncode != 0 and failed.stdout == ""
    [line] = failed.stderr.strip().splitlines()
    assert line.startswith(f"error: the read server (DATABASE_READ_URL) unreachable at "
                           f"postgresql+psycopg2://postgres:***@127.0.0.1:{port}/docent: ")
    assert PASSWORD not in failed.stderr


@pytest.mark.parametrize("case", ["another cluster", "another database", "unreadable", "no primary"])
def test_a_read_url_that_is_not_the_primarys_standby_is_one_line(case, pair, index, tmp_path):
    read_url = {
        "another cluster": index.url.render_as_string(hide_password=False),  # the session's embedded server
        "another database": pair.standby.url.set(database="postgres", password=PASSWORD).render_as_string(
            hide_password=False),
        "unreadable": f"postgresql://docent:{PASSWORD}@x@127.0.0.1/docent",
        "no primary": pair.standby.url_text(PASSWORD),
    }[case]
    expected = {
        "another cluster": "DATABASE_READ_URL (postgresql+psycopg2://postgres:***@/postgres?host=",
        "another database": "DATABASE_READ_URL names database 'postgres' and DATABASE_URL 'docent'",
        "unreadable": "DATABASE_READ_URL has an @ after its user and password",
        "no primary": "DATABASE_READ_URL needs DATABASE_URL",
    }[case]
    primary = None if case == "no primary" else pair.primary.url_text(PASSWORD)
    root = Root(Settings(_env_file=None, kb_home=tmp_path, database_url=primary, database_read_url=read_url))
    with pytest.raises(ConfigurationError) as raised:
        _ = root.index
    message = str(raised.value)
    assert message.startswith(expected) and "\n" not in message and PASSWORD not in message
    if case == "another cluster":
        assert "is not a standby of DATABASE_URL's server: it is another Postgres cluster" in message


def test_kb_serve_with_an_unreachable_standby_stops_at_start(pair, slack, tmp_path):
    settings = bot_settings(slack, kb_home=tmp_path, database_url=pair.primary.url_text(PASSWORD),
                            database_read_url=pair.standby.url.set(port=free_port(), password=PASSWORD)
                            .render_as_string(hide_password=False))
    with pytest.raises(StartupError) as raised:
        serve(settings, port=0)
    assert str(raised.value).startswith("the read server (DATABASE_READ_URL) unreachable at ")
    assert "\n" not in str(raised.value) and PASSWORD not in str(raised.value)


def test_kb_sync_writes_to_the_primary_without_the_standby(pair, tmp_path):
    """A sync only writes: it opens no standby, so one that is away (here: nothing listens on its
    port) stops no sync."""
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "kiln.md").write_text("# Kiln\n\nThe kiln is fired on Thursdays.\n")
    env = {"KB_HOME": str(tmp_path / "home"), "DATABASE_URL": pair.primary.url_text(PASSWORD),
           "DATABASE_READ_URL": pair.standby.url.set(port=free_port()).render_as_string(hide_password=False)}
    synced = _kb("sync", str(folder), "--source", "standby-cli", env=env)
    assert synced.returncode == 0, synced.stderr
    assert pair.primary.sql("SELECT id FROM documents WHERE source = 'standby-cli'") == ["standby-cli:kiln.md"]
