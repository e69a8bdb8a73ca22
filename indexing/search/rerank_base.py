"""What a rerank backend is (`Reranker`), and the deadline it scores under.

Its own module so that a backend (`indexing.search.reader`, `span_reader`, `rerank_service`)
needs nothing of the stage that runs it (`indexing.search.rerank`), and the stage chooses its
backends from a table without the backends importing it back.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["Reranker", "RerankTimeout", "deadline", "scoring_until"]


class Reranker(Protocol):
    """Scores (query, text) pairs; higher is a better answer. Optional attributes the stage reads:
    `workers` (calls it may run at once, default 1), `thresholds` ((refuse_below, answer_from)
    fitted for it, used when the settings give none), `gate` ((weight, thresholds): its score is a veto
    on today's answered outcome instead of the gate — the built-in reader's, `indexing.search.gate.gate_outcome`),
    `floor` (with `gate`: below it the score alone vetoes; `KB_RERANK_FLOOR` overrides), `top_n` (the
    sections it was measured on, over `KB_RERANK_TOP_N`), `text_of(question, hit,
    max_chars)` (what it reads of a section, as it was trained), `reads_cjk` (False: mostly-CJK questions are
    not sent to it), `load()` (the slow part, run at start-up) and `close()`."""

    name: str

    def score(self, query: str, texts: list[str]) -> list[float]: ...


class RerankTimeout(TimeoutError):
    """The stage's deadline passed while the backend was still scoring."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("rerank_deadline", default=None)


def deadline() -> float | None:
    """The `time.monotonic()` instant the current `score` call must be done by (None outside the
    stage): a backend that can stop early, or pass a timeout on, reads it."""
    return _DEADLINE.get()


@contextmanager
def scoring_until(due: float) -> Iterator[None]:
    """`deadline()` is `due` inside: the stage wraps each backend call in it."""
    token = _DEADLINE.set(due)
    try:
        yield
    finally:
        _DEADLINE.reset(token)
