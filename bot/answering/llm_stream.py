"""Streaming an LLM's answer: the model's text, checked as it comes, to a callback.

`StreamingLLM` wraps `bot.answering.llm.LLMClient` so `answer_question` streams without knowing it: its
`answer()` sends the model's deltas to `on_text` and returns the fully checked text, exactly as
`LLMClient.answer` would. A model failure part-way — or a stream that ends without a finish
reason (the connection dropped) — raises, so the caller's fallback (the extractive answer, with
a note) takes over and whoever showed the partial text replaces it.

The text sent on the way passes the same checks as the final reply, so nothing unchecked is
shown even for a moment — and a partial text left behind by a failure is as safe as a final one:

- the grounding check (`bot.answering.grounding`), a whole sentence at a time (`SentenceGate`):
  a sentence is sent only once it is complete and holds to the pages it cites; after the first
  one that does not, nothing more is sent (the final reply fails the same check, so the caller
  gives the extractive answer, which replaces the draft);
- `bot.answering.llm.checked_text` (citations naming no source, links to pages that are not the
  answer's sources, bare domains, Slack mentions), piece by piece (`StreamCheck`).
`KnowledgeBase.ask(..., on_text=...)` is the one user; where the text goes (a Slack stream, a
message updated in steps) is `bot.slack.streaming`'s business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from bot.answering.grounding import sentence_problem, sentence_spans, unfinished
from indexing.search import Hit, Outcome

if TYPE_CHECKING:
    from llama_index.core.base.llms.types import ChatResponse

    from bot.answering.lead import LeadSentence
    from bot.answering.llm import AllowedLinks, LLMClient

MID_LINE = "\u3000"  # put before a piece that continues a line, for the check only (never shown)
HOLD = 600  # characters an unclosed `[…](…` or `<…` may wait for its end before it is shown as text

# An unclosed link, Slack markup or citation (`[1,`) at the end of the text: it may still become one.
_OPEN = re.compile(rf"(?:<[^<>\n]{{0,{HOLD}}}|!?\[[^\[\]\n]{{0,{HOLD}}}(?:\](?:\([^()\n]{{0,{HOLD}}})?)?)\Z")
# A complete one, a `[1, 2]` too (what a word may end with, never cut inside it).
_CLOSED = re.compile(r"!?\[[^\[\]\n]*\](?:\([^()\n]*\))?|<[^<>\n]*>")
_BREAK = re.compile(r"[\s\u2e80-\U0010ffff]")  # where a word ends: a space, or any CJK character
_TICKS = re.compile(r"`+")  # a run of backticks: it may open or close a code span
_FENCE_START = re.compile(r" {0,3}(?:`{3,}|~{3,})")  # a line that may open or close a code block
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


class StreamCheck:
    """Streamed model text, each piece passed through `bot.answering.llm.checked_text` before anyone sees it.

    The check looks at words, links and markup whole, so a piece is released only up to a point
    none of them straddles: the text is held back from the whitespace before its last word (the
    word may still grow: `acme.okta.com` + `.evil.example`, `@her` + `e`; and a `[9]` that is
    removed takes the space before it), and from an unclosed `[…](…` or `<…` — with the word it
    is attached to — until it closes (or grows past `HOLD` characters), or the stream ends.
    Chinese and Japanese text, which has no spaces, is cut after any of its characters. Checking
    the pieces so released gives the same text as checking the whole reply at once."""

    def __init__(self, allowed: AllowedLinks) -> None:
        self.allowed = allowed
        self._held = ""
        self._fence: str | None = None  # the code block the text released so far has left open
        self._line_start = True  # whether the text released so far ends a line

    def feed(self, delta: str) -> str:
        from bot.answering.llm import without_controls

        delta = without_controls(delta)  # as the final reply is tidied
        text = self._held + delta
        if not _BREAK.search(delta):  # the held word only grew: no cut can have appeared (only a break makes one)
            self._held = text
            return ""
        cut = _safe_cut(text, self._line_start)
        self._held = text[cut:]
        return self._checked(text[:cut])

    def flush(self) -> str:
        text, self._held = self._held, ""
        return self._checked(text)

    def _checked(self, piece: str) -> str:
        """`checked_text` of one piece in its context: inside the code block it continues (opened
        again in front of it: inside code, file names stay verbatim), and, when it starts in the
        middle of a line, behind an ideographic space, so its first characters are not read as a
        line's start (a fence) — and, being a space, the space joins no word."""
        from bot.answering.llm import checked_text

        if not piece:
            return ""
        opener = f"{self._fence}\n" if self._fence else ""
        lead = "" if self._line_start else MID_LINE
        self._fence = _open_fence(lead + piece, self._fence)
        self._line_start = piece.endswith("\n")
        return checked_text(opener + lead + piece, self.allowed)[len(opener) + len(lead):]


def _safe_cut(text: str, line_start: bool) -> int:
    """Where `text` (which starts a line if `line_start`) may be cut: before the whitespace that
    precedes its last (or its unclosed) word — a link, markup or code span, open or closed,
    counts as one word with what it is attached to — and before a fence line still being written
    (whether "```setup.py" opens a code block is known at its line's end). Regular expressions
    only (no loop over characters): a 6,000-character word costs C speed."""
    from bot.answering.llm import CODE

    spans = [m for m in CODE.finditer(text) if m.group(2)]  # `code spans` (blocks: see StreamCheck._fence)
    opened = _OPEN.search(text)
    while opened and (within := [m.end() for m in spans if m.start() < opened.start() < m.end()]):
        opened = _OPEN.search(text, max(within))  # a `[` or `<` inside a code span opens nothing
    cut = opened.start() if opened else len(text)
    last_line = text.rfind("\n") + 1
    if (last_line or line_start) and _FENCE_START.match(text, last_line):
        cut = min(cut, last_line)
    ticks = (run.start() for run in _TICKS.finditer(text, text.rfind("\n") + 1)
             if not any(m.start() <= run.start() < m.end() for m in spans))
    tick = next(ticks, -1)  # a backtick run on the last line that no code span holds: it may still open one
    if tick != -1 and len(text) - tick <= HOLD:
        cut = min(cut, tick)
    closed = [(m.start(), m.end()) for m in [*_CLOSED.finditer(text, 0, cut), *spans] if m.end() <= cut]
    while True:  # the start of the word that ends at `cut`: after the last break not inside a link or span
        breaks = list(_BREAK.finditer(text, 0, cut))
        word = breaks[-1].end() if breaks else 0
        inside = [start for start, end in closed if start < word < end]
        if not inside:
            break
        cut = min(inside)  # the break was inside a link or span: the word starts before it
    return len(text[:word].rstrip())


def _open_fence(text: str, fence: str | None) -> str | None:
    """The fence (```, ~~~~) left open at the end of `text`, given the one open before it — the
    same rule as `bot.answering.llm`'s: a block closes at a line of exactly its fence."""
    for line in _FENCE_LINE.finditer(text):
        if fence is None:
            fence = line.group(1)
        elif line.group(1) == fence and not line.group(2).strip():
            fence = None
    return fence


_PARTIAL_CITATION = re.compile(r"\s*\[[\d,\s]*\Z")  # "[", "[1,": may still become the last sentence's citation


class SentenceGate:
    """Streamed model text released a sentence at a time, each once it is complete (the next one
    has begun, or the stream ended) and `bot.answering.grounding.sentence_problem` finds nothing
    wrong with it. The first sentence that fails closes the gate: nothing after it is released.

    Only the text not yet released is split again as more arrives (a released sentence is never
    read again: its citation had to arrive before the next sentence began), and a "sentence" that
    grows past `LONGEST_SENTENCE` without ending waits for the stream's end, so a long reply is not
    read again from its start at every piece."""

    def __init__(self, sources: Mapping[int, str], not_found: str, prompt_lines: Sequence[str]) -> None:
        self.sources, self.not_found, self.prompt_lines = sources, not_found, prompt_lines
        self.text = ""
        self.released = 0  # characters of `text` released so far
        self.closed = False

    def feed(self, delta: str) -> str:
        self.text += delta
        tail = self.text[self.released:]
        if self.closed or len(tail) > LONGEST_SENTENCE:
            return ""
        spans = sentence_spans(tail)
        done = len(spans) - 1  # the last sentence may still grow
        if done > 0 and _PARTIAL_CITATION.fullmatch(tail[spans[-1][0]:]):
            done -= 1  # what follows may be the citation of the one before
        return self._release(tail, spans[:max(done, 0)], to_end=False)

    def flush(self) -> str:
        tail = self.text[self.released:]
        spans = sentence_spans(tail)
        if spans and unfinished(tail[spans[-1][0]:spans[-1][1]]):
            self.closed = True  # "The answer is:" and nothing after it: the reply is set aside, nothing more shown
        return "" if self.closed else self._release(tail, spans, to_end=True)

    def _release(self, tail: str, complete: list[tuple[int, int]], to_end: bool) -> str:
        """`tail` up to the last of its `complete` sentences that pass (`to_end`: all of it, if all pass)."""
        upto = 0
        for start, stop in complete:
            if sentence_problem(tail[start:stop], self.sources, self.not_found, self.prompt_lines):
                self.closed = True
                break
            upto = stop
        if to_end and not self.closed:
            upto = len(tail)
        self.released += upto
        return tail[:upto]


LONGEST_SENTENCE = 1500  # characters a sentence may grow to while streamed; a longer one is checked at the end


class StreamingLLM:
    """An `LLMClient` whose answer is streamed to `on_text` as the model writes it."""

    def __init__(self, client: LLMClient, on_text: Callable[[str], None]) -> None:
        self.client = client
        self.on_text = on_text

    def answer(self, question: str, hits: list[Hit], numbers: dict[str, int], lead: Sequence[LeadSentence] = (),
               outcome: Outcome = Outcome.ANSWERED) -> str:
        from bot.answering.grounding import source_texts
        from bot.answering.llm import (
            MAX_ANSWER_CHARS, MAX_SECTION_CHARS, PROMPT_LINES, allowed_links, checked_reply, prompt_messages,
        )
        from bot.messages import NOT_FOUND_REPLY

        gate = SentenceGate(source_texts(hits, numbers, lead, MAX_SECTION_CHARS), NOT_FOUND_REPLY, PROMPT_LINES)
        shown = StreamCheck(allowed_links(hits, numbers))  # every source given: its citations are not known yet
        written, length, finished = [], 0, None
        for chunk in self.client.llm.stream_chat(prompt_messages(question, hits, numbers, lead, outcome)):
            delta = chunk.delta or ""
            written.append(delta)
            length += len(delta)
            finished = finish_reason(chunk) or finished
            if length <= MAX_ANSWER_CHARS:
                self.on_text(shown.feed(gate.feed(delta)))
        if finished is None:  # the connection closed before the model said it was done: a cut answer
            raise ConnectionError("the model's stream ended before the answer did")
        if length <= MAX_ANSWER_CHARS:
            self.on_text(shown.feed(gate.flush()))
        self.on_text(shown.flush())
        return checked_reply("".join(written), hits, numbers, lead)


def finish_reason(chunk: ChatResponse) -> str | None:
    """Why the model stopped ("stop", "length"…), on the stream's last chunk; None before it."""
    choices = getattr(getattr(chunk, "raw", None), "choices", None) or []
    return getattr(choices[0], "finish_reason", None) if choices else None
