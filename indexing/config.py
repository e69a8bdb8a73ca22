"""What the indexing layer needs to know, passed down from the edge (bot.settings).

A plain dataclass so tests and benchmarks can build one without environment variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class IndexConfig:
    home: Path  # Docent's data directory: embedded Postgres, BM25 files
    database_url: str | None = None  # None: start the embedded Postgres in home/pgdata
    embed_model: str | None = None  # a sentence-transformers folder; None: bundled all-MiniLM-L6-v2
    embed_batch_size: int = 32
    sync_batch_children: int = 256  # children embedded together across documents during a sync
    vector_candidates: int = 40  # children taken from each leg before fusion
    bm25_candidates: int = 40
    rrf_k: int = 60
    top_k: int = 5  # parents returned
    gate_threshold: float = 0.61  # not-found gate: best cosine + 0.5 × rare-term coverage below this

    def __post_init__(self) -> None:
        self.home = Path(self.home).expanduser()
