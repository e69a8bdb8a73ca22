"""The ground floor of indexing: the values every room passes along — a section's heading path,
a page's sections and chunks, its plain sentences, what retrieval finds — and the pure functions
that make them from text. It imports nothing else of indexing, so every room may import it
(the rooms' faces offer these names to bot: `indexing.ingest`'s HeadingPath, `indexing.search`'s Hit)."""
