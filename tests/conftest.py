"""Shared fixtures: one embedded Postgres, one loaded model and one index for the whole run.

Tests keep out of each other's way by syncing into sources of their own names (a source's
sync only prunes its own documents), each with an access scope of the same name that their
questions are limited to, and by using temporary folders for anything they edit. A test whose
assertion depends on what else is in the index (rank order, scores, the gate's outcomes, counts
of logged questions) opens an index of its own on a scratch database:
`tests.support.databases.own_index`.

Slack: `slack` (a local Web API, one per module) and `bot` (the app on the sample wiki, one per
module); what Slack sends and how to read the results are in tests/support/slack_harness.py.
Everything shared that is not a fixture (local servers, harnesses, corpora paths, scratch
databases) is in tests/support/, imported as `tests.support.<module>` (pytest puts the repository
on sys.path: `pythonpath` in pyproject.toml).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

from tests.support.corpora import SAMPLE_WIKI

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# every `kb serve` a test starts gets a free metrics port: several may run at once on one machine
os.environ.setdefault("KB_METRICS_PORT", "0")
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def pytest_collection_modifyitems(config, items):
    """A test that uses the session's index needs a database and the embedding model: `integration`
    (so `make test-fast`, `-m "not integration and not slow"`, leaves it out without a list to keep)."""
    for item in items:
        if "index" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kb_home():
    """Not under pytest's tmp dir: as root, the embedded Postgres runs as the OS user `pgserver`,
    which must be able to reach its data directory (pytest's tmp dirs are private to root)."""
    from tests.support.databases import stop_embedded

    home = Path(tempfile.mkdtemp(prefix="docent-test-"))
    yield home
    stop_embedded(home)  # after `index` closed: stopped here, not left running without its folder
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def index(kb_home):
    """The one index of the test run (embedded Postgres in a temp dir, real bundled model), with the
    bot's tables too (as `kb` and `kb serve` open it: bot.wiring.open_index)."""
    from bot.migrations import migrate_bot
    from indexing.config import IndexConfig
    from indexing.index import Index

    idx = Index(IndexConfig(home=kb_home))
    migrate_bot(idx.engine)
    yield idx
    idx.close()


@pytest.fixture(scope="session")
def sample_synced(index):
    """The project's sample wiki, synced once as source 'sample'."""
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.sync import sync_documents

    wiki = MarkdownFolder(SAMPLE_WIKI, source="sample", exclude=["*.jsonl"], access="sample")
    return sync_documents(index, wiki.documents(), "sample")


@pytest.fixture
def wiki_copy(tmp_path) -> Path:
    """A private, editable copy of the sample wiki."""
    target = tmp_path / "wiki"
    shutil.copytree(SAMPLE_WIKI, target, ignore=shutil.ignore_patterns("*.jsonl"))
    return target


# -- Slack (tests/support/slack_harness.py) -------------------------------------------------------


@pytest.fixture(scope="module")
def slack():
    """A local Slack Web API (tests/support/slack_api_server.py), one per module."""
    from tests.support.slack_api_server import FakeSlack

    server = FakeSlack().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bot(slack, index, sample_synced):
    """The app as `kb serve` runs it, on the session's index, the sample wiki visible everywhere."""
    from tests.support.slack_harness import bot_settings, running_bot

    with running_bot(bot_settings(slack), index) as running:
        yield running


# -- the database lost on purpose (tests/support/db_proxy.py) -------------------------------------


@pytest.fixture
def db_proxy(index):
    from tests.support.db_proxy import DbProxy, unix_socket_of

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
