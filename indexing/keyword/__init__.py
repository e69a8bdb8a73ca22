"""The keyword leg: BM25 over term ids (bm25s's arithmetic), kept current in Postgres as a saved
base plus segments, published forward only by syncs; and the sources file's `[synonyms]`,
analysed as the keyword leg analyses text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from indexing.keyword import bm25

__all__ = ["bm25"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
