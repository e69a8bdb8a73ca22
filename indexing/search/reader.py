"""The built-in reader (`KB_RERANK=builtin`, the default): a small cross-encoder shipped in the repo
that reads the question together with the fused top section, and can take the gate's confidence away.

Fusion and the gate's cosine compare the question with each chunk separately, so a section on
the right topic that does not hold the answer ("does the dental plan cover braces?" → "Dental
insurance is provided through …") looks as good as one that does. The reader reads the pair.
Measured leave-one-corpus-out (docs/tuning.md, *A built-in reader*), it orders sections worse
than fusion, and as a gate of its own, or added to today's, it answers more of everything —
unanswerable SQuAD questions too. What held on every public set is a **veto**: today's gate
decides, and a question it answers stays answered only if `gate_score + GATE_WEIGHT · reader`
reaches that sum's fitted `answer_from` (`THRESHOLDS[1]`) and the reader's own score reaches
`FLOOR` (below it, the reader reads the top section as not answering at all), else the reply is
"I'm not sure this answers it". So the reader scores only the fused top section (`TOP_N`, what the answer cites
first), leaves the order alone, and never makes an answer more confident. English questions only:
its base model reads Chinese poorly, so a mostly-CJK question is not read and keeps the CJK gate.

What it reads (`text_of`): the section's title and heading path, then a window of its
best-matching chunk around the sentence sharing most of the question's words
(`answer_window`) — the shape of its training passages; a chunk's first 128 word-pieces often
stop before the sentence that answers.

The model is MiniLM-L6 (the embedder's base) with a one-logit head, trained by
`training/reader_train.py` on 45,680 pairs built from SQuAD 1.1 *train* articles, then on
25,498 more with SQuAD 2.0-like unanswerable questions made from other train questions (negated,
an opposite word, a changed number: `training/reader_data.py --adversarial`), exported to int8
ONNX (`training/reader_export.py`); its card is `indexing/models/README.md`. It runs on ONNX Runtime, not torch.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from indexing.vectors.onnx_embedding import padded_batch

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from indexing.values.hits import Hit
    from indexing.vectors.onnx_embedding import OnnxSession

MODEL = Path(__file__).parents[1] / "models" / "reader-int8.onnx"
MAX_LENGTH = 128  # question + section window, in word-pieces (the training length)
# Word-pieces of the question kept: truncation cuts only the section ("only_second"), so a question
# over the whole length made the tokenizer refuse the pair and the veto was skipped; cut, it is read.
MAX_QUESTION = 48
BATCH = 16
WINDOW_WORDS = 75  # words of a section read around its best sentence (the training passages' size)
TOP_N = 1  # the fused top section: what the answer cites first (measured against the best of 5)
# Fitted on every public set by `python -m training.reader_eval ship --ce <scored model>` (the
# weight: best mean AUC over the English sets; the thresholds: `bot.quality.gate_fit`'s rule on the sum).
# The veto uses answer_from; refuse_below is kept for `kb eval --calibrate`'s report. The floor:
# `bot.quality.gate_fit.fit_floor` (at most 2% of confident right answers lose their confidence to it).
GATE_WEIGHT = 0.24
THRESHOLDS: tuple[float, float] = (0.3, 0.5)  # (refuse_below, answer_from) of gate_score + GATE_WEIGHT · reader
FLOOR = 0.05  # the reader's own score below which it vetoes (`KB_RERANK_FLOOR` overrides)


def passage(title: str, heading: str, chunk: str) -> str:
    """What the reader reads of a section: where it is, then its best-matching chunk (as trained)."""
    where = " › ".join(p for p in (title, heading) if p)
    return f"{where}: {chunk}"


def answer_window(question: str, text: str, max_words: int = WINDOW_WORDS) -> str:
    """The part of a section the reader reads: the sentence sharing most of the question's
    searched words, with its neighbours (after, then before) while they fit in `max_words` —
    the shape of its training passages (a window around the answer sentence). A section's first
    128 word-pieces often stop before the sentence that answers."""
    from indexing.keyword.bm25 import question_text, tokens
    from indexing.values.sentences import plain_sentences, word_count

    units = [s.text for s in plain_sentences(text)]
    if not units:
        return text
    asked = set(tokens(question_text(question)))
    shared = [len(asked & set(tokens(u))) for u in units]
    best = max(range(len(units)), key=lambda i: (shared[i], -i))
    first = last = best
    total = word_count(units[best])
    grown = True
    while grown:  # the next sentence, then the one before, while they fit
        grown = False
        for i in (last + 1, first - 1):
            if 0 <= i < len(units) and total + word_count(units[i]) <= max_words:
                total += word_count(units[i])
                first, last = min(first, i), max(last, i)
                grown = True
    return " ".join(units[first : last + 1])


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class OnnxReader:
    """Scores (question, text) pairs with an exported cross-encoder; loaded on first use.

    Pairs are tokenised with the bundled MiniLM tokenizer, question first, the section truncated
    to `MAX_LENGTH` word-pieces in all, as in training; the section's word-pieces are segment 1.
    The session runs with the embedder's thread rule (no spinning)."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = Path(path)
        self.threads = threads
        self._loaded: tuple[OnnxSession, Tokenizer, Tokenizer] | None = None
        self._lock = threading.Lock()
        if not self.path.is_file():
            raise FileNotFoundError(f"the reader model {self.path} is missing")

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """How likely each text answers `query`, in [0, 1], in the order of `texts`."""
        return [sigmoid(x) for x in self.logits(query, texts)]

    def logits(self, query: str, texts: Sequence[str]) -> list[float]:
        """The model's raw scores."""
        if not texts:
            return []
        session, tokenizer, plain = self.load()
        query = clip_question(plain, query)
        encodings = tokenizer.encode_batch([(query, t) for t in texts])
        out = np.zeros(len(texts), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            out[batch] = session.run(None, padded_batch([encodings[i] for i in batch]))[0][:, 0]
        return [float(x) for x in out]

    def load(self) -> tuple[OnnxSession, Tokenizer, Tokenizer]:
        """The session, the pair tokenizer, and the same tokenizer without truncation (to measure
        the question)."""
        with self._lock:
            if self._loaded is None:
                from tokenizers import Tokenizer

                from indexing.vectors.onnx_embedding import bundled_model_path, cpu_session

                session = cpu_session(self.path, self.threads)
                tokenizer = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
                tokenizer.no_padding()
                plain = Tokenizer.from_str(tokenizer.to_str())
                plain.no_truncation()
                tokenizer.enable_truncation(MAX_LENGTH, strategy="only_second")
                self._loaded = session, tokenizer, plain
            return self._loaded


def clip_question(tokenizer: Tokenizer, question: str) -> str:
    """The question's first `MAX_QUESTION` word-pieces, cut where that word-piece ends."""
    encoding = tokenizer.encode(question, add_special_tokens=False)
    if len(encoding.ids) <= MAX_QUESTION:
        return question
    return question[: encoding.offsets[MAX_QUESTION - 1][1]]


class BuiltinReader(OnnxReader):
    """The shipped reader as a rerank backend that gates and does not order (see the module
    docstring). The stage reads `top_n`, `text_of`, `reads_cjk`, `gate` and `floor` from it."""

    name = "builtin:reader"
    top_n = TOP_N
    reads_cjk = False
    floor = FLOOR

    def __init__(self, path: Path = MODEL) -> None:
        super().__init__(path)

    @property
    def gate(self) -> tuple[float, tuple[float, float]]:
        """(weight, thresholds): the gate cuts `gate_score + weight · score` by the thresholds."""
        return GATE_WEIGHT, THRESHOLDS

    @staticmethod
    def text_of(question: str, hit: Hit, max_chars: int) -> str:
        """The section's place, then the window of its best-matching chunk around the sentence
        sharing most of the question's words (as measured: docs/tuning.md, *A built-in reader*)."""
        chunk = hit.matched[0] if hit.matched else hit.text[:max_chars]
        return passage(hit.title, hit.heading, answer_window(question, chunk))

