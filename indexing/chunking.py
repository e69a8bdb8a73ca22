"""Parent-child chunking: what the answer reads vs. what the search matches.

A *parent* is a heading-bounded section of a page (with its heading path, e.g.
`Benefits > Time off > Parental leave`); an oversized section is split on paragraph, line and
sentence boundaries into several parents. A *child* is a small window of a parent (≤ ~200
word-pieces for all-MiniLM-L6-v2, which silently truncates at 256) with some overlap. Children
are embedded and searched; their parent is what an answer quotes and cites.

Children are embedded and BM25-indexed with the page title and heading path in front of their
text, so a chunk that says "15 days" is still found by a question about "vacation".
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from connectors.document import SourceDocument

# Token counts use llama-index's default tokenizer (tiktoken cl100k); MiniLM's word-pieces run
# ~1.2x that for English, so 160 here stays under ~200 word-pieces.
CHILD_TOKENS = 160
CHILD_OVERLAP = 32
PARENT_TOKENS = 900

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


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
    heading_path: list[str]  # headings under the page title; [] for a page's introduction
    url: str  # citation URL with the section anchor
    text: str
    children: list[Child] = field(default_factory=list)

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)


@dataclass
class _Section:
    headings: list[str]
    lines: list[str]


def chunk_document(doc: SourceDocument) -> list[Parent]:
    """Split one document into parents (sections) and their children."""
    parents: list[Parent] = []
    for section in _sections(doc.text, doc.title):
        body = "\n".join(section.lines).strip()
        if not _has_content(body):
            continue
        for part in _split(body, PARENT_TOKENS, 0):
            position = len(parents)
            parent = Parent(
                id=_id(doc.doc_id, "p", position),
                doc_id=doc.doc_id,
                position=position,
                heading_path=section.headings,
                url=doc.section_url(section.headings[-1] if section.headings else None),
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


def _sections(text: str, title: str) -> list[_Section]:
    """Cut Markdown at headings (outside code fences), tracking the heading stack."""
    sections = [_Section(headings=[], lines=[])]
    stack: list[tuple[int, str]] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            sections[-1].lines.append(line)
            continue
        level, heading = len(match.group(1)), _plain(match.group(2))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        headings = [h for _, h in stack]
        if headings and headings[0].casefold() == title.casefold():
            headings = headings[1:]  # the page's own H1 repeats the title
        sections.append(_Section(headings=headings, lines=[line]))
    return sections


def _plain(heading: str) -> str:
    """Heading text without Markdown emphasis, links or inline code markers."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[*_`]", "", heading).strip()


def _has_content(body: str) -> bool:
    """A section with nothing but its heading line is not worth a parent of its own."""
    lines = [line for line in body.splitlines() if line.strip()]
    return any(not _HEADING.match(line) for line in lines)


def _split(text: str, tokens: int, overlap: int) -> list[str]:
    if _count_tokens(text) <= tokens:
        return [text]
    return [piece for piece in _splitter(tokens, overlap).split_text(text) if piece.strip()]


@lru_cache(maxsize=8)
def _splitter(tokens: int, overlap: int):
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=tokens, chunk_overlap=overlap, paragraph_separator="\n\n")


def _count_tokens(text: str) -> int:
    return len(_tokenizer()(text))


@lru_cache(maxsize=1)
def _tokenizer():
    from llama_index.core.utils import get_tokenizer

    return get_tokenizer()


def _id(base: str, kind: str, n: int) -> str:
    return hashlib.sha1(f"{base}|{kind}{n}".encode()).hexdigest()
