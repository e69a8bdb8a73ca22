"""Markdown read the way GitHub reads it: one CommonMark parser for every part of Docent.

Titles, front matter, sections, heading paths, heading anchors and the passages an answer
quotes all come from the tokens of one parser (markdown-it-py in CommonMark mode, with GitHub's
tables and strikethrough, and mdit-py-plugins' front matter), never from line patterns. So a
`# comment` inside a fenced block (``` or ~~~, of any length, or indented) is code, a four-backtick
fence may hold a three-backtick line, `Title` over `=====` is a heading, and a heading inside an
HTML block or a list item is read as GitHub renders it.

Anchors follow GitHub (and github-slugger, which mirrors it): the heading's rendered text,
lower-cased, with punctuation, symbols and other non-word characters removed and each space
turned into `-`; a repeated slug gets `-1`, `-2`, ... — skipping any slug the page already uses —
so every heading of a page has its own anchor (`#example`, `#example-1`).

Lines are counted the way the parser counts them: after `\\r\\n` and `\\r` become `\\n` (a U+2028
or a form feed is no line break in CommonMark).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType

_NEWLINES = re.compile(r"\r\n?")


@dataclass(frozen=True)
class Heading:
    """One heading of a page, where it stands in the source, and GitHub's anchor for it."""

    level: int  # 1-6
    text: str  # plain text as a reader sees it (markup, links and HTML tags removed)
    anchor: str  # GitHub's id for it, unique in the page ("" for a heading GitHub gives none)
    start: int  # first source line (0-based, in `Page.lines`)
    end: int  # the line after its last (a setext heading has two or more)
    top_level: bool  # a heading of the page itself, not one inside a list item or a quote
    source: str = ""  # its inline Markdown as written, without the `#`s or the setext underline


@dataclass(frozen=True)
class Fence:
    """A fenced code block (``` or ~~~, any length) outside quotes: its fence lines and whether
    it was closed (an unclosed fence runs to the end of the page, as CommonMark says)."""

    start: int  # the opening fence's line
    end: int  # the line after the block (the closing fence's line + 1 when closed)
    closed: bool


@dataclass
class Page:
    """A page parsed once: its source lines, front matter and headings, in page order."""

    lines: list[str]
    front_matter: str | None  # the YAML between the `---` fences; None when there is none
    body_start: int  # first line after the front matter (0 without any)
    headings: list[Heading]
    content_lines: set[int]  # first line of every top-level block that is not a heading
    fences: list[Fence]

    @property
    def body(self) -> str:
        """The text after the front matter, without the blank lines that separate them."""
        return "\n".join(self.lines[self.body_start:]).lstrip("\n")

    @property
    def title(self) -> str:
        """The text of the first top-level `#` (or `===`) heading, "" when there is none."""
        return next((h.text for h in self.headings if h.level == 1 and h.top_level), "")


# Inline markup is parsed only where Docent reads it, in headings: paragraphs and table cells are
# kept as source text, and inline parsing is most of markdown-it's work (~80 us per `[` on a busy
# 2-core machine, and quadratic in a run of `[` before a `]`: a page of brackets would stall a sync
# for minutes). A heading is parsed from at most this many characters of its source (real ones are
# under ~250; the chunker clips heading paths to 300), and one of plain words needs no inline
# parse at all.
MAX_HEADING_SOURCE_CHARS = 2_000
MAX_HEADING_BRACKETS = 16  # more `[`s than this in a heading are read as text, not tried as links


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """Blocks only: front matter, headings, fences, HTML blocks, tables, lists, quotes."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    front_matter_plugin(md)
    md.core.ruler.disable(["inline", "text_join"])
    return md


@lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["strikethrough"])


def normalise(markdown: str) -> str:
    """Line ends as the parser sees them (`\\n` only) and NUL as U+FFFD, as CommonMark requires."""
    return _NEWLINES.sub("\n", markdown).replace("\x00", "\ufffd")


def parse(markdown: str) -> Page:
    """Read a page: its front matter, headings (with unique GitHub anchors) and content blocks."""
    source = normalise(markdown)
    env: EnvType = {}
    tokens = _parser().parse(source, env)  # env collects link reference definitions, used in headings
    lines = source.split("\n")
    front_matter, body_start = None, 0
    headings: list[Heading] = []
    blocks: set[int] = set()
    fences: list[Fence] = []
    slugs = _Slugger()
    for n, token in enumerate(tokens):
        if token.type == "front_matter" and _opens_front_matter(lines[0]):
            front_matter, body_start = token.content, _span(token)[1]
        elif token.type == "front_matter":  # `---x` on line 1: the plugin's reading, not YAML's
            blocks.add(_span(token)[0])
        elif token.type == "heading_open":
            start, end = _span(token)
            shown, slugged = _heading_text(tokens[n + 1].content, env)
            headings.append(Heading(
                level=int(token.tag[1]), text=shown, anchor=slugs.slug(slugged),
                start=start, end=end, top_level=token.level == 0, source=tokens[n + 1].content,
            ))
        elif token.type == "fence" and lines[_span(token)[0]].lstrip().startswith(token.markup):
            fences.append(_fence(token, lines))
            if token.level == 0:
                blocks.add(_span(token)[0])
        elif token.level == 0 and token.map is not None and token.nesting >= 0:
            blocks.add(token.map[0])
    return Page(lines=lines, front_matter=front_matter, body_start=body_start, headings=headings,
                content_lines=blocks, fences=fences)


def _span(token: Token) -> tuple[int, int]:
    """The lines a block token covers: (first, the line after its last). markdown-it maps every
    block token read here (front matter, headings, fences); only inline and closing ones have none."""
    assert token.map is not None, f"markdown-it gave a {token.type} token no source lines"
    start, end = token.map
    return start, end


def _fence(token: Token, lines: list[str]) -> Fence:
    start, end = _span(token)
    last = lines[end - 1].strip() if end - 1 > start else ""
    closed = len(last) >= len(token.markup) and set(last) == {token.markup[0]}
    return Fence(start=start, end=end, closed=closed)


def _opens_front_matter(first_line: str) -> bool:
    """Front matter opens with a line of only dashes (`---`), as YAML and python-frontmatter read it."""
    return first_line.rstrip() == "-" * len(first_line.rstrip()) and len(first_line.rstrip()) >= 3


_INLINE_MARKUP = frozenset("\\`*_[]!<>&~")  # characters that can start inline markup in a heading


def _heading_text(source: str, env: EnvType) -> tuple[str, str]:
    """A heading's text as shown and as slugged, from at most MAX_HEADING_SOURCE_CHARS of its
    source; plain words (most headings) need no inline parse at all."""
    clipped = source[:MAX_HEADING_SOURCE_CHARS]
    cut = len(clipped) < len(source)  # a cut heading keeps the spaces it was cut in
    markup = set(_INLINE_MARKUP.intersection(clipped))
    if "]" not in markup:  # no link or image can close: `[` and `!` are text (and `[[[[` is slow to try)
        markup -= {"[", "!"}
    if ">" not in markup:  # no HTML tag or autolink can close
        markup.discard("<")
    if not markup:
        return (clipped.lstrip() if cut else clipped.strip()), clipped
    if clipped.count("[") > MAX_HEADING_BRACKETS:  # no real heading has this many links; trying each is quadratic
        clipped = clipped.replace("[", "\\[")
    inline = _inline_parser().parseInline(clipped, env)
    return _inline_text(inline[0].children or [] if inline else [], cut)


def _inline_text(children: list[Token], cut: bool = False) -> tuple[str, str]:
    """A heading's text as shown (with image alt text) and as GitHub slugs it (the element's
    text content: no alt text, no HTML tags)."""
    shown: list[str] = []
    slugged: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            shown.append(child.content)
            slugged.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            shown.append(" ")
            slugged.append("\n")
        elif child.type == "image":
            shown.append(child.content)
    text = "".join(shown)
    return (text.lstrip() if cut else text.strip()), "".join(slugged)


# --- GitHub's anchors -----------------------------------------------------------------------

# What GitHub strips from a heading's text (github-slugger's generated pattern, by category):
# other numbers, all punctuation but connectors and the ASCII hyphen, symbols, controls, format
# and private-use characters, unassigned code points, separators other than the ASCII space.
_STRIPPED = ("No", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Cc", "Cf", "Co", "Cn",
             "Zs", "Zl", "Zp")
# ...except symbols that are also letters (Unicode's Other_Alphabetic): circled and squared Latin.
_ALPHABETIC_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


def github_slug(text: str) -> str:
    """GitHub's anchor for a heading's text, before it is made unique on the page."""
    return "".join(_slug_char(ch) for ch in text.lower())


@lru_cache(maxsize=4096)
def _slug_char(ch: str) -> str:
    if ch == " ":
        return "-"
    if ch == "-" or unicodedata.category(ch) not in _STRIPPED:
        return ch
    code = ord(ch)
    return ch if any(low <= code <= high for low, high in _ALPHABETIC_SYMBOLS) else ""


class _Slugger:
    """Unique slugs within one page, numbered as GitHub numbers them."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = slug = github_slug(text)
        while slug in self.seen:
            self.seen[base] += 1
            slug = f"{base}-{self.seen[base]}"
        self.seen[slug] = 0
        return slug


def heading_anchors(markdown: str) -> list[str]:
    """The anchors of a page's headings, in page order (GitHub's ids without `user-content-`)."""
    return [h.anchor for h in parse(markdown).headings]


# --- passages -------------------------------------------------------------------------------


def strip_headings(markdown: str) -> str:
    """A passage without its heading lines (ATX or setext, never a `#` line inside code), blank-line
    runs collapsed: what an answer quotes under the section's name."""
    page = parse(markdown)
    dropped = {line for h in page.headings if h.top_level for line in range(h.start, h.end)}
    kept = [line for n, line in enumerate(page.lines[page.body_start:], page.body_start) if n not in dropped]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
