"""From documents to the index: sections and chunks, sentences, syncs (skip / replace / delete by
content hash), the sources in the index, and what starts a sync (runner, watcher, scheduler)."""
