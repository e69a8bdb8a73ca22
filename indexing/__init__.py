"""Indexing: chunking, embedding, the stores, sync, the keyword index, retrieval, watcher and scheduler."""
