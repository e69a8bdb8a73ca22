"""What search reads of an index: its settings, both legs, the rerank stage and a session where
questions read (`SearchedIndex`).

`indexing.index.Index` is one — typed against this Protocol, not the class, because the Index sits
above search (it opens the rerank stage, which is search's): search imports nothing above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlmodel import Session

    from indexing.config import IndexConfig
    from indexing.keyword.bm25 import Bm25Index
    from indexing.search.rerank import RerankStage
    from indexing.vectors.embedding import Embedder
    from indexing.vectors.store import ChunkStore


class SearchedIndex(Protocol):
    """The parts of an `Index` retrieval and typo repair use (read only)."""

    @property
    def config(self) -> IndexConfig: ...

    @property
    def bm25(self) -> Bm25Index: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def store(self) -> ChunkStore: ...

    @property
    def rerank(self) -> RerankStage | None: ...

    def read_session(self) -> Session: ...
