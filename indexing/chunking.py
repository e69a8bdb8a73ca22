"""Parent-child chunking: what the answer reads vs. what the search matches.

A *parent* is a heading-bounded section of a page (with its heading path, e.g.
`Benefits > Time off > Parental leave`); an oversized section is split on paragraph, line and
sentence boundaries into several parents. A *child* is a small window of a parent (~200 tokens,
20% overlap). Children are embedded and searched; their parent is what an answer quotes and
cites. all-MiniLM-L6-v2 reads 256 word-pieces: with the title and heading path in front, 2.6% of
the Sourcegraph handbook's children are longer and their tail reaches only BM25 — the size was
chosen by a sweep of 96-256 tokens anyway (docs/tuning.md §6).

Children are embedded and BM25-indexed with the page title and heading path in front of their
text, so a chunk that says "15 days" is still found by a question about "vacation".

Every line of a page is tried as a heading, so reading one must cost time linear in the line,
whatever it holds (a page is untrusted input): headings are read with `str` methods, not a
backtracking pattern, and a heading's text is clipped to `MAX_HEADING_CHARS`, because it is
repeated in front of every child of its sections.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from connectors.document import SourceDocument

# Token counts use llama-index's default tokenizer (tiktoken cl100k); MiniLM's word-pieces run
# ~1.2x that for English. Swept on four labelled sets (docs/tuning.md §6): 200 / 40 ranked best on
# the Sourcegraph handbook (MRR 0.824 at 160 / 32) and equal on the others.
CHILD_TOKENS = 200
CHILD_OVERLAP = 40
PARENT_TOKENS = 900
# A heading path is repeated in every child's embed text; real headings are under ~250 characters.
MAX_HEADING_CHARS = 300
# Bump whenever a change here cuts the same page differently: every page is then re-chunked on
# the next sync (unchanged child texts keep their cached vectors), not only the pages that change.
CHUNKING_VERSION = "2"  # 2: children of 200 tokens (were 160)

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


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
        found = None if in_fence else _heading(line)
        if found is None:
            sections[-1].lines.append(line)
            continue
        level, heading = found[0], _plain(found[1])[:MAX_HEADING_CHARS]
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        headings = [h for _, h in stack]
        if headings and headings[0].casefold() == title.casefold():
            headings = headings[1:]  # the page's own H1 repeats the title
        sections.append(_Section(headings=headings, lines=[line]))
    return sections


def _heading(line: str) -> tuple[int, str] | None:
    r"""An ATX heading's level and raw text (`## Time off ##` → `(2, "Time off")`), or None.

    `line` is one line of `str.splitlines`. This reads a line exactly as the pattern
    `^(#{1,6})\s+(.+?)\s*#*\s*$` did, but in time linear in the line: that pattern backtracked
    cubically on a long run of whitespace and quadratically on a run of `#`s, and a single
    regex match cannot be interrupted. So: 1-6 `#`s, then whitespace, then the text, minus a
    closing run of `#`s (even one with no space before it: `## C#` reads as "C") and the
    whitespace around it, but never less than one character. Quirks included, so that no
    existing page's sections change.
    """
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or not line[level : level + 1].isspace():
        return None
    start = len(line) - len(line[level:].lstrip())  # the text's first character
    if start == len(line):
        # Nothing but whitespace after the #s: the pattern's `\s+` gave its last character to
        # the text when it had two or more (an empty heading once stripped); one it could not.
        return (level, line[-1]) if len(line) - level >= 2 else None
    end = len(line.rstrip().rstrip("#").rstrip())  # where the closing #s and whitespace start
    return level, line[start : max(end, start + 1)]


def _plain(heading: str) -> str:
    """Heading text without Markdown emphasis, links or inline code markers."""
    return re.sub(r"[*_`]", "", _unlink(heading)).strip()


def _unlink(text: str) -> str:
    r"""`[label](target)` → `label`, in one left-to-right pass.

    Exactly what `re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)` did, which is quadratic on a
    line of `[`s (every `[` scanned to the end for a `]`). Here no character is scanned twice: a
    `[` whose first `]` is not followed by `(` fails for every `[` before that `]` too, and with
    no `]` (or no `)`) left, nothing later can match.
    """
    out: list[str] = []
    done = 0  # text[:done] is already in `out`
    while (opening := text.find("[", done)) != -1:
        closing = text.find("]", opening + 1)
        if closing == -1:
            break
        if not text.startswith("(", closing + 1):
            out.append(text[done : closing + 1])
            done = closing + 1
            continue
        end = text.find(")", closing + 2)
        if end == -1:
            break
        out += [text[done:opening], text[opening + 1 : closing]]
        done = end + 1
    out.append(text[done:])
    return "".join(out)


def _has_content(body: str) -> bool:
    """A section with nothing but its heading line is not worth a parent of its own."""
    lines = [line for line in body.splitlines() if line.strip()]
    return any(_heading(line) is None for line in lines)


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
