"""A page cut for the index: its parent sections (what is quoted and cited) and their child
chunks (what is embedded and searched), as `indexing.ingest.chunking` cuts them and the stores
(`indexing.vectors.store`, `indexing.vectors.sentence_vectors`) write them."""

from __future__ import annotations

from dataclasses import dataclass, field

from indexing.values.heading_path import HeadingPath


@dataclass
class Child:
    id: str
    text: str  # the chunk as written in the page
    embed_text: str  # what the model and BM25 see: title > heading path + text


@dataclass
class Parent:
    id: str
    doc_id: str
    position: int
    heading_path: HeadingPath  # headings under the page title; () for a page's introduction
    url: str  # citation URL with the section anchor
    text: str
    children: list[Child] = field(default_factory=list)

    @property
    def heading(self) -> str:
        return str(self.heading_path)
