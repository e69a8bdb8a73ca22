"""What retrieval finds: a child chunk one leg found (`ChunkHit`), and a ranked section (`Hit`) —
what retrieval returns and every later step reads: the gate, the rerank backends, the lead and
the reply.

On the ground floor (`indexing.values`) so that those steps need nothing of retrieval to name what
they read, and retrieval can use them without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from indexing.values.heading_path import HeadingPath

__all__ = ["ChunkHit", "Hit"]


@dataclass
class Hit:
    """One parent section, ranked, with everything needed to quote and cite it."""

    parent_id: str
    doc_id: str
    source: str
    path: str
    title: str
    heading_path: HeadingPath
    url: str
    text: str  # the whole parent section
    matched: list[str]  # its children that matched, best first
    updated_at: datetime | None
    score: float  # fused score (relative to this question; only for ordering)
    cosine: float | None  # best cosine similarity of its children, if the vector leg found one
    bm25: float | None  # best BM25 score of its children, if the keyword leg found one
    rerank: float | None = None  # the rerank stage's score, if it scored this section (indexing.search.rerank)
    answer_span: str | None = None  # the words a span reader points at in it (indexing.search.span_reader)

    def __post_init__(self) -> None:
        self.heading_path = HeadingPath(self.heading_path)  # a list as well

    @property
    def heading(self) -> str:
        return str(self.heading_path)


@dataclass
class ChunkHit:
    """A child chunk found by one retrieval leg, with the raw score that leg gave it."""

    node_id: str
    score: float
    metadata: dict[str, Any]  # the chunk's metadata in the vector store (JSON)
