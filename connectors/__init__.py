"""Connectors: each source kind turned into `SourceDocument`s, told its own settings (the sources file is `sources`'s)."""
