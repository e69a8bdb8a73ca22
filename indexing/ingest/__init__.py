"""From documents to the index: sections and chunks, sentences, syncs (skip / replace / delete by
content hash), the sources in the index, and what starts a sync (runner, watcher, scheduler)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from indexing.ingest import indexed_sources
    from indexing.values.heading_path import HeadingPath
    from indexing.ingest.runner import SyncRunner
    from indexing.ingest.scheduler import start_scheduler, stop_scheduler
    from indexing.values.sentences import SHORT_WORDS, Sentence, in_context, plain_sentences, word_count
    from indexing.ingest.sync_records import SyncReport
    from indexing.ingest.watcher import Watcher

__all__ = ["HeadingPath", "SHORT_WORDS", "Sentence", "SyncReport", "SyncRunner", "Watcher", "in_context",
           "indexed_sources", "plain_sentences", "start_scheduler", "stop_scheduler", "word_count"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
