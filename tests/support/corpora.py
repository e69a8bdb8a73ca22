"""Where the test data lives: the repository, the sample wiki, and the shared corpora (../shared,
which a user's own clone does not have: tests that need one skip with the reason)."""

from __future__ import annotations

import json
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


def eval_questions(path: Path) -> list[dict]:
    """The labelled questions of an `eval_public.jsonl` (one JSON object a line)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def synced_corpus(index, corpus: Path, source: str) -> Path:
    """Sync a corpus folder as `source` (its access scope named the same), every page indexed."""
    from connectors.markdown import MarkdownFolder
    from indexing.ingest.sync import sync_documents

    folder = MarkdownFolder(corpus, source=source, exclude=CORPUS_EXCLUDES, access=source)
    report = sync_documents(index, folder.documents(), source)
    assert report.failed == 0, report.errors
    return corpus


def page_rank(index, question: str, source: str, expected: list[str]) -> int | None:
    """The rank (1-based) of the first expected page among the distinct pages of the top 10 hits."""
    from indexing.search.retrieval import retrieve

    paths: list[str] = []
    for hit in retrieve(index, question, scopes=[source], top_k=10).hits:
        if hit.path not in paths:
            paths.append(hit.path)
    return next((i + 1 for i, p in enumerate(paths) if p in expected), None)
