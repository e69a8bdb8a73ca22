"""The span reader: reads a question with a section and points at the words that answer it — or
abstains, when the section does not say it.

A pair classifier (the older built-in reader, `indexing.search.reader`) learnt *topic*: a section about
holiday pay looks as good as one that gives the number of holidays. A reader trained the SQuAD
2.0 way must name the answer's first and last word-piece, and it has a "no answer" choice (the
[CLS] position) to beat; it was trained on crowd-written questions that look answerable from
their paragraph but are not (`training.span_data`). Its score for a section is
`best span − no answer` (start logit + end logit of each): above zero it would rather point at a
span than abstain.

The model is MiniLM-L6 with a two-logit (start, end) head, fine-tuned by `training.span_train` and
exported to int8 ONNX by `training.span_export`; its card is `indexing/models/README.md`. It runs
on ONNX Runtime, not torch. A section longer than one window is read in overlapping windows
(`STRIDE`) and its best window counts.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from indexing.vectors.onnx_embedding import padded_batch

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

    from indexing.values.hits import Hit
    from indexing.vectors.onnx_embedding import OnnxSession

MODEL = Path(__file__).parents[1] / "models" / "span-reader-int8.onnx"
# The fused top sections read. Three, not five: out of corpus the top 3 order better on every handbook
# (hit@1 clef 0.65 → 0.68, sample 0.68 → 0.76, sg 0.71 → 0.78; squad 0.99 → 0.98) and gate about as
# well (AUC up on sample and sg, down on clef; docs/tuning.md) at 3/5 of the cost (issue 34's ≤ 60 ms).
TOP_N = 3
SCALE = 4.0  # a span score s (logits) is put on the gate's 0–1 scale as sigmoid(s / SCALE)
# (refuse_below, answer_from) of the best squashed score among the top `TOP_N` for the shipped model
# (r3), fitted on every public English set by bot.quality.gate_fit's rules (`python -m
# training.span_eval report --span r3 --top-n 3` prints them; 0.27 / 0.56 for the top 5);
# `KB_RERANK_REFUSE_BELOW` / `KB_RERANK_ANSWER_FROM` override them.
THRESHOLDS: tuple[float, float] = (0.19, 0.54)
MAX_LENGTH = 256  # question + section word-pieces per window (the training length)
MAX_QUESTION = 48  # word-pieces of the question kept: a pasted wall of text must not crowd the section out
STRIDE = 96  # word-pieces two windows of one section share
MAX_ANSWER = 30  # word-pieces of the longest span considered
MAX_WINDOWS = 4  # of one section: ~700 words read at most (its start, where the heading path and first facts are)
# Windows per model run, shortest first. Two, not eight: a batch pads every window to its longest,
# and at this size the padding costs more than the extra runs (p95 97 → 68 ms for 5 sections on 2
# cores, benchmarks.reader_latency). The int8 graph quantises activations per run, so a score can move
# in its last digits with the company it is read in, as before.
BATCH = 2


@dataclass(frozen=True)
class Span:
    """The reader's verdict on one (question, passage) pair."""

    score: float  # best span − no answer, in logits: > 0 means it would rather answer than abstain
    text: str  # the span's characters in the passage ("" when the passage was empty)
    start: int  # character offsets of the span in the passage
    end: int

    @property
    def confidence(self) -> float:
        """The score on the gate's 0–1 scale (what the rerank stage's thresholds cut)."""
        return squash(self.score)


def passage(title: str, heading: str, chunk: str) -> str:
    """What the span reader reads of a section: its place, then its best-matching chunk — one
    window, as in training (a SQuAD paragraph under its article's title)."""
    where = " › ".join(p for p in (title, heading) if p)
    return f"{where}\n{chunk}" if where else chunk


def squash(score: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, score / SCALE))))


class SpanReader:
    """Reads (question, passage) pairs with an exported span model; loaded on first use."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = Path(path)
        self.threads = threads
        self._loaded: tuple[OnnxSession, Tokenizer] | None = None
        self._lock = threading.Lock()
        if not self.path.is_file():
            raise FileNotFoundError(f"the span reader model {self.path} is missing")

    def read(self, question: str, passages: Sequence[str]) -> list[Span]:
        """The best span of each passage, in the order of `passages`."""
        if not passages:
            return []
        session, tokenizer = self.load()
        question = self._clip(tokenizer, question)
        windows: list[tuple[int, Encoding]] = []  # (passage index, encoding)
        for k, text in enumerate(passages):
            first = tokenizer.encode(question, text or " ")
            windows += [(k, e) for e in [first, *first.overflowing][:MAX_WINDOWS]]
        best = [Span(float("-inf"), "", 0, 0) for _ in passages]
        order = sorted(range(len(windows)), key=lambda i: len(windows[i][1].ids))
        for lo in range(0, len(order), BATCH):
            chunk = [windows[i] for i in order[lo : lo + BATCH]]
            starts, ends = session.run(None, padded_batch([e for _, e in chunk]))
            for row, (k, encoding) in enumerate(chunk):
                span = _best_span(encoding, starts[row], ends[row], passages[k])
                if span.score > best[k].score:
                    best[k] = span
        return best

    def scores(self, question: str, passages: Sequence[str]) -> list[float]:
        return [s.score for s in self.read(question, passages)]

    @staticmethod
    def _clip(tokenizer: Tokenizer, question: str) -> str:
        # Cut to MAX_LENGTH − 2 characters first: the tokenizer truncates pairs only ("only_second"),
        # so a single text longer than MAX_LENGTH word-pieces is an error, not a cut; a word-piece
        # covers at least one character, so this many characters always fit.
        question = question[: MAX_LENGTH - 2]
        encoding = tokenizer.encode(question, add_special_tokens=False)
        if len(encoding.ids) <= MAX_QUESTION:
            return question
        return question[: encoding.offsets[MAX_QUESTION - 1][1]]

    def load(self) -> tuple[OnnxSession, Tokenizer]:
        with self._lock:
            if self._loaded is None:
                from tokenizers import Tokenizer

                from indexing.vectors.onnx_embedding import bundled_model_path, cpu_session

                session = cpu_session(self.path, self.threads)
                tokenizer = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.enable_truncation(MAX_LENGTH, strategy="only_second", stride=STRIDE)
                self._loaded = session, tokenizer
            return self._loaded


def _best_span(encoding: Encoding, start_logits: np.ndarray, end_logits: np.ndarray, passage: str) -> Span:
    """The highest start + end over the passage's word-pieces (end after start, at most
    `MAX_ANSWER` apart), against [CLS]'s start + end (no answer)."""
    n = len(encoding.ids)
    in_passage = np.array([s == 1 for s in encoding.sequence_ids[:n]])
    if not in_passage.any():
        return Span(float("-inf"), "", 0, 0)
    start = np.where(in_passage, start_logits[:n], -np.inf)
    end = np.where(in_passage, end_logits[:n], -np.inf)
    pair = start[:, None] + end[None, :]
    allowed = np.triu(np.ones((n, n), dtype=bool)) & ~np.triu(np.ones((n, n), dtype=bool), MAX_ANSWER)
    pair = np.where(allowed, pair, -np.inf)
    i, j = np.unravel_index(int(np.argmax(pair)), pair.shape)
    null = float(start_logits[0] + end_logits[0])
    char_start, char_end = _whole_words(passage, encoding.offsets[i][0], encoding.offsets[j][1])
    return Span(round(float(pair[i, j]) - null, 4), passage[char_start:char_end], char_start, char_end)


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """The span widened to whole words: a word-piece span may start or stop inside one
    ("urer" of "insurer"), and a reader shows words."""
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end


class SpanBackend(SpanReader):
    """The span reader as a rerank backend (`KB_RERANK=span`): it reads the fused top `TOP_N`
    sections, orders them by their best span, and its best confidence is what the gate cuts
    (`THRESHOLDS`: no section with a span above `refuse_below` → not found). The stage also takes
    each section's span (`read`) for the answer's lead. English questions only (`reads_cjk`)."""

    name = "builtin:span"
    top_n = TOP_N
    reads_cjk = False
    thresholds = THRESHOLDS

    def __init__(self, path: Path = MODEL) -> None:
        super().__init__(path)
        if self.path != MODEL:
            self.name = f"span:{self.path.name}"  # another export (KB_RERANK_MODEL): the metrics and logs say which

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [span.confidence for span in self.read(query, texts)]

    @staticmethod
    def text_of(question: str, hit: Hit, max_chars: int) -> str:
        """`passage` of the section's best-matching chunk."""
        return passage(hit.title, hit.heading, hit.matched[0] if hit.matched else hit.text[:max_chars])
