"""Connectors: each source kind turned into `SourceDocument`s, the sources file, and the access rule."""
