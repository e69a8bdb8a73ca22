"""Postgres as the one truth: the connection, the schema and its migrations, the document and
chunk tables and their store (pgvector), locks, cross-process notices, sync runs' status."""
