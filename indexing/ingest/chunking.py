"""Parent-child chunking: what the answer reads vs. what the search matches.

A *parent* is a heading-bounded section of a page (with its heading path, e.g.
`Benefits > Time off > Parental leave`); an oversized section is split on paragraph, line and
sentence boundaries into several parents. A *child* is a small window of a parent (~200 tokens,
20% overlap). Children are embedded and searched; their parent is what an answer quotes and
cites. all-MiniLM-L6-v2 reads 256 word-pieces: with the title and heading path in front, 2.6% of
the Sourcegraph handbook's children are longer and their tail reaches only BM25 — the size was
chosen by a sweep of 96-256 tokens anyway (docs/history.md, tuning log §6).

Children are embedded and BM25-indexed with the page title and heading path in front of their
text, so a chunk that says "15 days" is still found by a question about "vacation".

Sections, heading paths and anchors come from the one CommonMark reading of the page
(`connectors.commonmark`): a `#` line inside a fence of any kind is code, setext headings are
headings, the front matter is no section, and each section links to its own anchor as GitHub
renders it (or, for a Confluence page, to the heading id the export gave it). A heading's text
is clipped to `MAX_HEADING_CHARS`, because it is repeated in front of every child of its sections.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from connectors.commonmark import parse
from connectors.document import SourceDocument
from indexing.values.heading_path import HeadingPath
from indexing.values.sections import Child, Parent

if TYPE_CHECKING:
    from llama_index.core.node_parser import SentenceSplitter

# Token counts use llama-index's default tokenizer (tiktoken cl100k); MiniLM's word-pieces run
# ~1.2x that for English. Swept on four labelled sets (docs/history.md, tuning log §6): 200 / 40 ranked best on
# the Sourcegraph handbook (MRR 0.824 at 160 / 32) and equal on the others.
CHILD_TOKENS = 200
CHILD_OVERLAP = 40
PARENT_TOKENS = 900
# A heading path is repeated in every child's embed text; real headings are under ~250 characters.
MAX_HEADING_CHARS = 300
# Bump whenever a change here cuts the same page differently: every page is then re-chunked on
# the next sync (unchanged child texts keep their cached vectors), not only the pages that change.
CHUNKING_VERSION = "3"  # 3: sections from CommonMark tokens, unique anchors; 2: children of 200 tokens


@dataclass
class _Section:
    headings: list[str]
    lines: list[str]
    anchor: str | None  # the section's anchor in the page's URL; None: link the page itself
    has_content: bool


def chunk_document(doc: SourceDocument) -> list[Parent]:
    """Split one document into parents (sections) and their children."""
    parents: list[Parent] = []
    for section in _sections(doc):
        body = "\n".join(section.lines).strip()
        if not section.has_content:
            continue
        for part in _split(body, PARENT_TOKENS, 0):
            position = len(parents)
            parent = Parent(
                id=_id(doc.doc_id, "p", position),
                doc_id=doc.doc_id,
                position=position,
                heading_path=HeadingPath(section.headings),
                url=doc.section_url(section.anchor),
                text=part,
            )
            # Confluence pages carry their place in the page tree: ancestors › page › section.
            breadcrumb = " > ".join([*doc.metadata.get("ancestors", []), doc.title, *section.headings])
            for n, piece in enumerate(_split(part, CHILD_TOKENS, CHILD_OVERLAP)):
                parent.children.append(
                    Child(id=_id(parent.id, "c", n), text=piece, embed_text=f"{breadcrumb}\n{piece}")
                )
            parents.append(parent)
    return parents


def _sections(doc: SourceDocument) -> list[_Section]:
    """Cut a page at its top-level headings (as CommonMark reads them), tracking the heading stack.

    The front matter is no section; a heading inside a list item or a quote belongs to the
    section around it (GitHub still gives it an anchor, so it counts for the others' numbering).
    """
    page = parse(doc.text)
    anchors = doc.section_anchors(page.headings)
    cuts = [(h, a) for h, a in zip(page.headings, anchors) if h.top_level]
    starts = sorted(page.content_lines)
    first = cuts[0][0].start if cuts else len(page.lines)
    sections = [_Section([], page.lines[page.body_start:first], None, _has_content(starts, page.body_start, first))]
    stack: list[tuple[int, str]] = []
    for n, (heading, anchor) in enumerate(cuts):
        end = cuts[n + 1][0].start if n + 1 < len(cuts) else len(page.lines)
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.text[:MAX_HEADING_CHARS]))
        headings = [h for _, h in stack]
        if headings and headings[0].casefold() == doc.title.casefold():
            headings = headings[1:]  # the page's own H1 repeats the title
        sections.append(_Section(headings, page.lines[heading.start:end], anchor,
                                 _has_content(starts, heading.end, end)))
    return sections


def _has_content(block_starts: list[int], start: int, end: int) -> bool:
    """Whether any block other than a heading starts in lines [start, end): a section with
    nothing but its heading is not worth a parent of its own."""
    at = bisect_left(block_starts, start)
    return at < len(block_starts) and block_starts[at] < end


def _split(text: str, tokens: int, overlap: int) -> list[str]:
    if _count_tokens(text) <= tokens:
        return [text]
    return [piece for piece in _splitter(tokens, overlap).split_text(text) if piece.strip()]


@lru_cache(maxsize=8)
def _splitter(tokens: int, overlap: int) -> SentenceSplitter:
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=tokens, chunk_overlap=overlap, paragraph_separator="\n\n")


def _count_tokens(text: str) -> int:
    return len(_tokenizer()(text))


@lru_cache(maxsize=1)
def _tokenizer() -> Callable[[str], Sequence[object]]:
    from llama_index.core.utils import get_tokenizer

    return get_tokenizer()


def _id(base: str, kind: str, n: int) -> str:
    return hashlib.sha1(f"{base}|{kind}{n}".encode()).hexdigest()
