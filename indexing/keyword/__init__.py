"""The keyword leg: BM25 over term ids (bm25s's arithmetic), kept current in Postgres as a saved
base plus segments, published forward only by syncs."""
