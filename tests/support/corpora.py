"""Where the test data lives: the repository, the sample wiki, and the shared corpora (../shared,
which a user's own clone does not have: tests that need one skip with the reason)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE_WIKI = REPO / "sample-wiki"
SHARED = Path(os.environ.get("KB_SHARED_CORPORA", REPO.parent / "shared" / "corpora"))
CORPUS_EXCLUDES = ["SOURCE.md", "LICENSE*", "*.jsonl"]


def shared_corpus(name: str) -> Path:
    """A corpus from ../shared, or skip with the reason (a user's own clone does not have it)."""
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"shared corpus {name!r} not found at {path} (set KB_SHARED_CORPORA)")
    return path
