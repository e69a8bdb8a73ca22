"""A wiki section as plain sentences, in reading order, for choosing the ones that answer.

Deliberately small and forgiving: the lead only needs readable units, not a Markdown parser.
Headings and code blocks are dropped, links keep their text, emphasis marks go; each list item
and each table row is a unit of its own ("Column: cell · Column: cell"), and paragraphs are
cut after `.`, `!`, `?` (followed by a space and a capital, digit or quote) and after the CJK
full stops `。！？`, but not after common abbreviations ("e.g.", "Mr.", "U.S.").

It lives in `indexing` (on its ground floor) because both sides need the same sentences: the sync embeds each
section's sentences as the lead scores them (`in_context`, `indexing.vectors.sentence_vectors`), and
the lead (`bot.answering.lead`) reads those vectors back by the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][^>]{0,200}>")
_EMPHASIS = re.compile(r"(\*\*|__|\*|~~|`)(?=\S)(.+?)(?<=\S)\1")
_QUOTE = re.compile(r"^\s{0,3}>\s?")
_SPLIT = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[\"'“‘(\[]?[A-Z0-9$€£¥])|(?<=[。！？])\s*")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|nr|mr|mrs|ms|dr|st|jr|sr|inc|ltd|co|fig|cf|al)"
                           r"|\b[A-Z](?:\.[A-Z])*)\.$", re.IGNORECASE)


SHORT_WORDS = 6  # a sentence shorter than this gets its context: a neighbour to show (bot.answering.lead), its heading to score
HEADING_CONTEXT = True  # score short sentences with their section's heading (in_context)


@dataclass
class Sentence:
    text: str
    paragraph: int  # sentences of one paragraph, list item or table row share this number
    position: int  # order in the section


def plain_inline(text: str) -> str:
    """One line of Markdown as the words a reader sees."""
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m.group(1) or m.group(2), text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    for _ in range(2):  # nested emphasis: **_word_**
        text = _EMPHASIS.sub(r"\2", text)
    return " ".join(text.split())


def paragraphs(markdown: str) -> list[str]:
    """Plain paragraphs, list items and table rows of a Markdown section, headings and code out."""
    units: list[str] = []
    current: list[str] = []
    header: list[str] = []  # the current table's column names
    in_code = False

    def close() -> None:
        if current:
            units.append(plain_inline(" ".join(current)))
            current.clear()

    for line in markdown.splitlines():
        if _FENCE.match(line):
            close()
            in_code = not in_code
            continue
        if in_code or _HEADING.match(line) or _TABLE_RULE.match(line):
            close()
            continue
        line = _QUOTE.sub("", line)
        if not line.lstrip().startswith("|"):
            header = []
        if not line.strip():
            close()
        elif line.lstrip().startswith("|"):
            close()
            cells = [plain_inline(c) for c in line.strip().strip("|").split("|")]
            if not header:
                header = cells
                continue
            units.append(table_row(header, cells))
        elif _LIST_ITEM.match(line):
            close()
            current.append(_LIST_ITEM.sub("", line))
        else:
            current.append(line.strip())
    close()
    return [u for u in units if u]


def table_row(header: list[str], cells: list[str]) -> str:
    """A table row as one readable unit: "Grade: A · Limit: $200" (a bare "$200" says nothing)."""
    named = [f"{h}: {c}" if h else c for h, c in zip(header + [""] * len(cells), cells) if c]
    return " · ".join(named)


def split_sentences(paragraph: str) -> list[str]:
    """A paragraph cut into sentences (abbreviations do not end one)."""
    pieces: list[str] = []
    start = 0
    for match in _SPLIT.finditer(paragraph):
        head = paragraph[start:match.start()].rstrip()
        if not head or (_ABBREVIATION.search(head) and not head.endswith(("。", "！", "？"))):
            continue
        pieces.append(paragraph[start:match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        pieces.append(tail)
    return [p for p in pieces if p]


def plain_sentences(markdown: str, limit: int = 80) -> list[Sentence]:
    """The first `limit` sentences of a section, each knowing its paragraph."""
    out: list[Sentence] = []
    for p, paragraph in enumerate(paragraphs(markdown)):
        for text in split_sentences(paragraph):
            out.append(Sentence(text=text, paragraph=p, position=len(out)))
            if len(out) >= limit:
                return out
    return out


def word_count(text: str) -> int:
    """Words, counting each CJK character as one (a Chinese sentence has no spaces)."""
    cjk = sum(1 for c in text if "\u3400" <= c <= "\u9fff")
    return len(text.split()) + cjk // 2


def in_context(heading: str | None, text: str) -> str:
    """The text a sentence is scored (and embedded) as: a short one with its section's heading
    in front.

    A short sentence rarely stands alone — under "Q. Does Sourcegraph match my 401k?" the answer
    is "Not at this time." — so, as a chunk is embedded with its heading path, it is scored
    together with the heading that says what it is about (it is still shown as written).
    Applied to every sentence, headings would drown the sentences' own words: measured worse
    (docs/history.md, tuning log §9). `heading`: the section's last heading, else its page's title."""
    if HEADING_CONTEXT and heading and word_count(text) < SHORT_WORDS:
        return f"{heading}: {text}"
    return text
