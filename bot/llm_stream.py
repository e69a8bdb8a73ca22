"""Streaming an LLM's answer: the model's text, citation-checked as it comes, to a callback.

`StreamingLLM` wraps `bot.llm.LLMClient` so `answer_question` streams without knowing it: its
`answer()` sends the model's deltas to `on_text` and returns the fully checked text, exactly as
`LLMClient.answer` would. A model failure part-way — or a stream that ends without a finish
reason (the connection dropped) — raises, so the caller's fallback (the extractive answer, with
a note) takes over and whoever showed the partial text replaces it.

The text sent on the way is checked as it goes (`CitationFilter`): a `[n]` naming no source is
never shown, even for a moment. `KnowledgeBase.ask(..., on_text=...)` is the one user; where the
text goes (a Slack stream, a message updated in steps) is `bot.slack.streaming`'s business.
"""

from __future__ import annotations

import re
from collections.abc import Callable


class CitationFilter:
    """Streamed text with every `[n]` naming no source removed, before anyone sees it.

    Text is held back only from an unclosed `[` that could still become a citation (`[1`, `[1, `)
    — or an unclosed `<` or `@` that could still become a mention — to the end of the chunk;
    everything before it is released at once."""

    _OPEN = re.compile(r"(?:[ \t]?\[[\d,\s]{0,12}|<[^>\s]{0,40}|@\w{0,12})$")

    def __init__(self, allowed: set[int]) -> None:
        self.allowed = allowed
        self._held = ""

    def feed(self, delta: str) -> str:
        from bot.llm import check_citations

        text = self._held + delta
        open_ = self._OPEN.search(text)
        self._held, text = (text[open_.start():], text[:open_.start()]) if open_ else ("", text)
        return _keep_edges(text, check_citations(text, self.allowed))

    def flush(self) -> str:
        from bot.llm import check_citations

        text, self._held = self._held, ""
        return _keep_edges(text, check_citations(text, self.allowed))


def _keep_edges(raw: str, checked: str) -> str:
    """check_citations strips the text; a chunk's own leading/trailing spaces and newlines matter."""
    if not raw.strip():
        return raw  # a delta of only spaces or newlines separates words: keep it
    if not checked:
        return ""
    lead = raw[: len(raw) - len(raw.lstrip())]
    tail = raw[len(raw.rstrip()):]
    return lead + checked + tail


class StreamingLLM:
    """An `LLMClient` whose answer is streamed to `on_text` as the model writes it."""

    def __init__(self, client, on_text: Callable[[str], None]) -> None:
        self.client = client
        self.on_text = on_text

    def answer(self, question: str, hits, numbers: dict[str, int], lead=(), outcome: str = "answered") -> str:
        from bot.llm import MAX_ANSWER_CHARS, checked_reply, prompt_messages

        shown = CitationFilter(set(numbers.values()))
        written, length, finished = [], 0, None
        for chunk in self.client.llm.stream_chat(prompt_messages(question, hits, numbers, lead, outcome)):
            delta = chunk.delta or ""
            written.append(delta)
            length += len(delta)
            finished = finish_reason(chunk) or finished
            if length <= MAX_ANSWER_CHARS:
                self.on_text(shown.feed(delta))
        if finished is None:  # the connection closed before the model said it was done: a cut answer
            raise ConnectionError("the model's stream ended before the answer did")
        self.on_text(shown.flush())
        return checked_reply("".join(written), hits, numbers)

def finish_reason(chunk) -> str | None:
    """Why the model stopped ("stop", "length"…), on the stream's last chunk; None before it."""
    choices = getattr(getattr(chunk, "raw", None), "choices", None) or []
    return getattr(choices[0], "finish_reason", None) if choices else None
