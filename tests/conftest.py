"""Shared fixtures: one embedded Postgres, one loaded model and one index for the whole run.

Tests keep out of each other's way by syncing into sources of their own names (a source's
sync only prunes its own documents), each with an access scope of the same name that their
questions are limited to, and by using temporary folders for anything they edit.
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
