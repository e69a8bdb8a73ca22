"""Shared fixtures: one embedded Postgres, one loaded model and one index for the whole run.

Tests keep out of each other's way by syncing into sources of their own names (a source's
sync only prunes its own documents), each with an access scope of the same name that their
questions are limited to, and by using temporary folders for anything they edit. A test whose
assertion depends on what else is in the index (rank order, scores, the gate's outcomes, counts
of logged questions) opens an index of its own on a scratch database: `own_index`.

Slack: `slack` (a local Web API, one per module) and `bot` (the app on the sample wiki, one per
module); what Slack sends and how to read the results are in tests/slack_harness.py. Helper
modules here (slack_harness, slack_api_server, db_proxy, gaps_wiki…) are imported by name:
tests/ is not a package, and pytest's default import mode puts it on sys.path.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# every `kb serve` a test starts gets a free metrics port: several may run at once on one machine
os.environ.setdefault("KB_METRICS_PORT", "0")
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

REPO = Path(__file__).resolve().parents[1]
SAMPLE_WIKI = REPO / "sample-wiki"
SHARED = Path(os.environ.get("KB_SHARED_CORPORA", REPO.parent / "shared" / "corpora"))
CORPUS_EXCLUDES = ["SOURCE.md", "LICENSE*", "*.jsonl"]


def shared_corpus(name: str) -> Path:
    """A corpus from ../shared, or skip with the reason (a user's own clone does not have it)."""
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"shared corpus {name!r} not found at {path} (set KB_SHARED_CORPORA)")
    return path


@pytest.fixture(scope="session")
def kb_home():
    """Not under pytest's tmp dir: as root, the embedded Postgres runs as the OS user `pgserver`,
    which must be able to reach its data directory (pytest's tmp dirs are private to root)."""
    home = Path(tempfile.mkdtemp(prefix="docent-test-"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def index(kb_home):
    """The one index of the test run (embedded Postgres in a temp dir, real bundled model)."""
    from indexing.config import IndexConfig
    from indexing.index import Index

    idx = Index(IndexConfig(home=kb_home))
    yield idx
    idx.close()


@pytest.fixture(scope="session")
def sample_synced(index):
    """The project's sample wiki, synced once as source 'sample'."""
    from connectors.markdown import MarkdownFolder
    from indexing.sync import sync_documents

    wiki = MarkdownFolder(SAMPLE_WIKI, source="sample", exclude=["*.jsonl"], access="sample")
    return sync_documents(index, wiki.documents(), "sample")


@contextmanager
def scratch_database(index, prefix: str):
    """A database of its own on the session's server, dropped afterwards: for tests that need
    tables as an older Docent made them, or settings of their own. Yields its URL."""
    import uuid

    from sqlalchemy import text

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield index.url.set(database=name)
    finally:
        with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def wiki_copy(tmp_path) -> Path:
    """A private, editable copy of the sample wiki."""
    target = tmp_path / "wiki"
    shutil.copytree(SAMPLE_WIKI, target, ignore=shutil.ignore_patterns("*.jsonl"))
    return target


@contextmanager
def own_index(index, folder: Path, prefix: str = "docent_own"):
    """An `Index` of its own on a scratch database of the session's server, with the session's
    loaded model (seconds, not a model load), closed and dropped afterwards.

    For tests whose assertions depend on what else the index holds: rank order, scores and the
    gate's outcomes on a corpus, or counts of logged questions. On the session's index those move
    with whatever other modules synced before (a Chinese test failed when run after
    tests/test_retrieval.py, when BM25 still ranked with the whole index's statistics). The
    keyword leg's statistics are per audience now, so a test searching only scopes of its own is
    safe from other scopes' pages there; the vector leg's HNSW graph still holds every scope's
    chunks. `folder` holds its home directory."""
    from indexing.config import IndexConfig
    from indexing.index import Index

    with scratch_database(index, prefix) as url:
        own = Index(IndexConfig(home=folder, database_url=url.render_as_string(hide_password=False)),
                    embedder=index.embedder)
        try:
            yield own
        finally:
            own.close()


# -- Slack (tests/slack_harness.py) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def slack():
    """A local Slack Web API (tests/slack_api_server.py), one per module."""
    from slack_api_server import FakeSlack

    server = FakeSlack().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bot(slack, index, sample_synced):
    """The app as `kb serve` runs it, on the session's index, the sample wiki visible everywhere."""
    from slack_harness import bot_settings, running_bot

    with running_bot(bot_settings(slack), index) as running:
        yield running


# -- the database lost on purpose (tests/db_proxy.py) ---------------------------------------------


@pytest.fixture
def db_proxy(index):
    from db_proxy import DbProxy, unix_socket_of

    proxy = DbProxy(unix_socket_of(index.url), database=index.url.database or "postgres").start()
    yield proxy
    proxy.stop()


@pytest.fixture
def proxied_index(index, kb_home, db_proxy):
    """The session's index, opened a second time through the proxy (same data, same BM25 files,
    same loaded model), so cutting the proxy loses the database for this Index alone."""
    from indexing.config import IndexConfig
    from indexing.index import Index

    proxied = Index(IndexConfig(home=kb_home, database_url=db_proxy.url), embedder=index.embedder)
    assert db_proxy.connections >= 1, "the index really connects through the proxy"
    yield proxied
    proxied.close()
